/* SPDX-License-Identifier: MIT */
#include <string.h>
#include "preon/sink.h"

void preon_sink_init(preon_sink_t *s, h2o_mem_pool_t *pool, size_t cap)
{
    s->pool = pool;
    s->buf = h2o_mem_alloc_pool(pool, cap);
    s->len = 0;
    s->cap = cap;
}

static void reserve(preon_sink_t *s, size_t more)
{
    if (s->len + more <= s->cap)
        return;
    size_t cap = s->cap * 2;
    while (cap < s->len + more)
        cap *= 2;
    char *nb = h2o_mem_alloc_pool(s->pool, cap);
    memcpy(nb, s->buf, s->len);
    s->buf = nb;
    s->cap = cap;
}

void preon_sink_append(preon_sink_t *s, const char *data, size_t len)
{
    reserve(s, len);
    memcpy(s->buf + s->len, data, len);
    s->len += len;
}

void preon_sink_append_html(preon_sink_t *s, const char *text, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        const char *ent;
        switch (text[i]) {
        case '&':
            ent = "&amp;";
            break;
        case '<':
            ent = "&lt;";
            break;
        case '>':
            ent = "&gt;";
            break;
        case '"':
            ent = "&quot;";
            break;
        case '\'':
            ent = "&#39;";
            break;
        default:
            continue;
        }
        /* Runs of plain text go in one copy; only the special characters are replaced one by one. */
        preon_sink_append(s, text + start, i - start);
        preon_sink_append(s, ent, strlen(ent));
        start = i + 1;
    }
    preon_sink_append(s, text + start, len - start);
}
