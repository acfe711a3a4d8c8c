/* SPDX-License-Identifier: MIT */
#include <string.h>
#include "preon/json.h"

/*
 * jansson's json_dumps mallocs; the response must live in the request's pool instead. json_dump_callback hands
 * us the output piece by piece, and we append it to a buffer from the pool, doubling it when full (the old
 * block is reclaimed with the pool, at the end of the request).
 */
typedef struct {
    h2o_mem_pool_t *pool;
    char *buf;
    size_t len, cap;
} sink_t;

static int append(const char *data, size_t size, void *_sink)
{
    sink_t *s = _sink;
    if (s->len + size > s->cap) {
        size_t cap = s->cap * 2;
        while (cap < s->len + size)
            cap *= 2;
        char *nb = h2o_mem_alloc_pool(s->pool, cap);
        memcpy(nb, s->buf, s->len);
        s->buf = nb;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, data, size);
    s->len += size;
    return 0;
}

h2o_iovec_t preon_json_dump(json_t *value, h2o_mem_pool_t *pool)
{
    sink_t s = {pool, h2o_mem_alloc_pool(pool, 512), 0, 512};
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
