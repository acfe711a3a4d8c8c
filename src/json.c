/* SPDX-License-Identifier: MIT */
#include <string.h>
#include "preon/json.h"
#include "preon/sink.h"

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
