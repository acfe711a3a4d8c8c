/* SPDX-License-Identifier: MIT */
#ifndef PREON_JSON_H
#define PREON_JSON_H

#include <h2o.h>
#include <jansson.h>

/**
 * Routes jansson's allocations through preon's allocator: call once at start-up, before any other jansson call.
 * Without it everything still works, with a malloc per value.
 */
void preon_json_init(void);

/**
 * From now on, on this thread, JSON values are made in `pool` (NULL: with malloc again), with no malloc per value;
 * json_decref frees nothing of them, the pool frees all. Returns the previous scope, to restore. A value made in a
 * scope must not outlive its pool: build, serialize and drop it within the scope.
 */
h2o_mem_pool_t *preon_json_scope(h2o_mem_pool_t *pool);

/**
 * Serializes `value` compactly (`{"id":1,"name":"Kiwi"}`: no spaces, keys in insertion order, UTF-8 kept as is,
 * control characters, quotes and backslashes escaped) into memory from `pool`. Borrows `value`. Returns the
 * bytes, or {NULL, 0} if jansson fails.
 */
h2o_iovec_t preon_json_dump(json_t *value, h2o_mem_pool_t *pool);

/**
 * Builds the JSON object of one fruit row, {"id": id, "name": name}. `name` is `len` bytes of UTF-8. Returns a
 * new reference, or NULL if `name` is not valid UTF-8.
 */
json_t *preon_json_fruit(long long id, const char *name, size_t len);

/** Builds the JSON object of one World row, {"id": id, "randomNumber": n}. Returns a new reference. */
json_t *preon_json_world(long long id, long long random_number);

/** Builds the error body {"error": message, "status": status}. Returns a new reference. */
json_t *preon_json_error(int status, const char *message);

#endif
