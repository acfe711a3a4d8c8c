/* SPDX-License-Identifier: MIT */
#ifndef PREON_SINK_H
#define PREON_SINK_H

#include <string.h>
#include <h2o.h>

/**
 * A byte buffer that grows in a memory pool (a request's), for building response bodies: nothing to free, the
 * pool reclaims every block at the end of the request. Growing doubles the block and copies.
 */
typedef struct st_preon_sink_t {
    h2o_mem_pool_t *pool;
    char *buf;
    size_t len, cap;
} preon_sink_t;

/** Starts an empty sink with `cap` bytes reserved from `pool`. */
void preon_sink_init(preon_sink_t *s, h2o_mem_pool_t *pool, size_t cap);

/**
 * Makes room for `more` bytes and returns where they go (s->buf + s->len): the caller writes up to `more` bytes there
 * and then sets s->len to their end.
 */
char *preon_sink_reserve(preon_sink_t *s, size_t more);

/** Appends `len` bytes. Inline: /fortunes appends about a hundred short runs per answer. */
static inline void preon_sink_append(preon_sink_t *s, const char *data, size_t len)
{
    memcpy(s->len + len <= s->cap ? s->buf + s->len : preon_sink_reserve(s, len), data, len);
    s->len += len;
}

/** Appends `len` bytes of text with & < > " ' replaced by their HTML entities. */
void preon_sink_append_html(preon_sink_t *s, const char *text, size_t len);

#endif
