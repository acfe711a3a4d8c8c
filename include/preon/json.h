/* SPDX-License-Identifier: MIT */
#ifndef PREON_JSON_H
#define PREON_JSON_H

#include <h2o.h>
#include <jansson.h>
#include "preon/sink.h"

/*
 * Answers are written as a stream into a sink in the request's pool: no JSON value is built, nothing is allocated
 * per value and nothing needs freeing. The bytes are those jansson writes in compact mode (`{"id":1,"name":"Kiwi"}`:
 * no spaces, keys in the order written, UTF-8 kept as is, `"` and `\` escaped, control characters as \b \f \n \r \t
 * or \u00XX in upper-case hex, `/` not escaped), so that a client sees the same answer either way; the unit tests
 * check that against jansson itself. jansson remains the parser of request bodies.
 */

/**
 * Appends `len` bytes of UTF-8 as a JSON string. Returns 0; or PREON_EINVAL, with nothing appended, if they are not valid
 * UTF-8 as jansson's json_stringn judges it (overlong forms, surrogates and code points above U+10FFFF refused).
 */
int preon_json_string(preon_sink_t *out, const char *s, size_t len);

/** Appends `v` in decimal. */
void preon_json_int(preon_sink_t *out, long long v);

/** Writes `v` in decimal and a NUL into `buf` (at least 21 bytes); returns the length without the NUL. */
size_t preon_format_int(char *buf, long long v);

/** Appends one fruit row, {"id":id,"name":name}; returns 0, or PREON_EINVAL with nothing appended if `name` is not
 * valid UTF-8. */
int preon_json_fruit(preon_sink_t *out, long long id, const char *name, size_t len);

/** Appends one World row, {"id":id,"randomNumber":n}. */
void preon_json_world(preon_sink_t *out, long long id, long long random_number);

/** Appends the error body {"error":message,"status":status}; a message that is not valid UTF-8 is replaced by
 * "(message is not valid UTF-8)" (a database message in another encoding must not lose the body's "error" key). */
void preon_json_error(preon_sink_t *out, int status, const char *message);

/**
 * Serializes a jansson value compactly, with the same bytes as the writers above, into memory from `pool`. Borrows
 * `value`. Returns the bytes, or {NULL, 0} if jansson fails. For the few answers built as values (health checks).
 */
h2o_iovec_t preon_json_dump(json_t *value, h2o_mem_pool_t *pool);

#endif
