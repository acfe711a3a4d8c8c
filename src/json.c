/* SPDX-License-Identifier: MIT */
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "preon/json.h"
#include "preon/sink.h"

/*
 * jansson allocates every value (and every object's hash table) with its own malloc. Inside a scope its blocks come
 * from the request's memory pool instead, all given back at once with the request, and json_decref frees
 * nothing there. A header in front of each block says where it came from, so a value made outside any scope is
 * still freed by free(). The scope is per thread: every event loop is one thread.
 */
static __thread h2o_mem_pool_t *scope;

typedef union {
    unsigned char from_pool;
    max_align_t align; /* keeps what follows aligned as malloc's blocks are */
} header_t;

static void *json_alloc(size_t size)
{
    header_t *h;
    if (scope != NULL) {
        /* h2o_mem_alloc_pool hands out unaligned bytes: ask for room to align */
        uintptr_t raw = (uintptr_t)h2o_mem_alloc_pool(scope, sizeof(header_t) + size + alignof(max_align_t) - 1);
        h = (header_t *)((raw + alignof(max_align_t) - 1) & ~(uintptr_t)(alignof(max_align_t) - 1));
        h->from_pool = 1;
    } else if ((h = malloc(sizeof(header_t) + size)) != NULL) {
        h->from_pool = 0;
    } else {
        return NULL;
    }
    return h + 1;
}

static void json_free(void *p)
{
    if (p == NULL)
        return;
    header_t *h = (header_t *)p - 1;
    if (!h->from_pool)
        free(h);
}

void preon_json_init(void)
{
    json_set_alloc_funcs(json_alloc, json_free);
}

h2o_mem_pool_t *preon_json_scope(h2o_mem_pool_t *pool)
{
    h2o_mem_pool_t *prev = scope;
    scope = pool;
    return prev;
}

/* jansson's json_dumps mallocs; the response must live in the request's pool instead, so the output is
 * collected piece by piece into a pool-backed sink. */
static int append(const char *data, size_t size, void *sink)
{
    preon_sink_append(sink, data, size);
    return 0;
}

h2o_iovec_t preon_json_dump(json_t *value, h2o_mem_pool_t *pool)
{
    preon_sink_t s;
    preon_sink_init(&s, pool, 512);
    if (json_dump_callback(value, append, &s, JSON_COMPACT | JSON_ENCODE_ANY) != 0)
        return h2o_iovec_init(NULL, 0);
    return h2o_iovec_init(s.buf, s.len);
}

json_t *preon_json_fruit(long long id, const char *name, size_t len)
{
    json_t *n = json_stringn(name, len);
    if (n == NULL)
        return NULL;
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(id));
    json_object_set_new(o, "name", n);
    return o;
}

json_t *preon_json_error(int status, const char *message)
{
    json_t *o = json_object();
    json_t *m = json_string(message);
    /* A database message in a non-UTF-8 locale must not leave the body without its "error" key. */
    json_object_set_new(o, "error", m != NULL ? m : json_string("(message is not valid UTF-8)"));
    json_object_set_new(o, "status", json_integer(status));
    return o;
}

json_t *preon_json_world(long long id, long long random_number)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(id));
    json_object_set_new(o, "randomNumber", json_integer(random_number));
    return o;
}
