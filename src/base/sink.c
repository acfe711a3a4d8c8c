/* SPDX-License-Identifier: MIT */
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include "preon/sink.h"

void preon_sink_init(preon_sink_t *s, h2o_mem_pool_t *pool, size_t cap)
{
    s->pool = pool;
    s->buf = h2o_mem_alloc_pool(pool, cap);
    s->len = 0;
    s->cap = cap;
}

char *preon_sink_reserve(preon_sink_t *s, size_t more)
{
    if (s->len + more <= s->cap)
        return s->buf + s->len;
    size_t cap = s->cap * 2;
    while (cap < s->len + more)
        cap *= 2;
    char *nb = h2o_mem_alloc_pool(s->pool, cap);
    memcpy(nb, s->buf, s->len);
    s->buf = nb;
    s->cap = cap;
    return s->buf + s->len;
}

/* The entity for each byte HTML must escape, and its length; NULL and 0 for every other byte. */
static const char *const entities[256] = {['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&#39;"};
static const unsigned char entity_lens[256] = {['&'] = 5, ['<'] = 4, ['>'] = 4, ['"'] = 6, ['\''] = 5};

#if defined(__SSE2__)
/* Bit k set where byte k of the 16 at `p` is one HTML must escape. */
static unsigned special_bits(const char *p)
{
    const __m128i amp = _mm_set1_epi8('&'), lt = _mm_set1_epi8('<'), gt = _mm_set1_epi8('>'), dq = _mm_set1_epi8('"'),
                  sq = _mm_set1_epi8('\'');
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, amp), _mm_cmpeq_epi8(v, lt)),
                               _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, gt), _mm_cmpeq_epi8(v, dq)), _mm_cmpeq_epi8(v, sq)));
    return (unsigned)_mm_movemask_epi8(hit);
}
#endif

/* The index of the first byte of text[i, len) that HTML must escape, or len. Sixteen bytes at a time where SSE2 is
 * there (the x86-64 baseline), the last partial block as the 16 bytes that end the text (read again, their bits
 * before i dropped): /fortunes' text went through a switch byte by byte, 7.5k instructions per answer, and then
 * its messages' tails did, 3.5k. Texts shorter than 16 bytes (the ids) are read byte by byte from a table. */
static size_t next_special(const char *text, size_t i, size_t len)
{
#if defined(__SSE2__)
    for (; i + 16 <= len; i += 16) {
        unsigned bits = special_bits(text + i);
        if (bits != 0)
            return i + (size_t)__builtin_ctz(bits);
    }
    if (i < len && len >= 16) {
        unsigned bits = special_bits(text + len - 16) >> (i - (len - 16));
        return bits != 0 ? i + (size_t)__builtin_ctz(bits) : len;
    }
#endif
    while (i < len && entities[(unsigned char)text[i]] == NULL)
        i++;
    return i;
}

void preon_sink_append_html(preon_sink_t *s, const char *text, size_t len)
{
    /* Runs of plain text go in one copy; only the special characters are replaced one by one. */
    size_t start = 0, i;
    while ((i = next_special(text, start, len)) < len) {
        unsigned char c = (unsigned char)text[i];
        preon_sink_append(s, text + start, i - start);
        preon_sink_append(s, entities[c], entity_lens[c]);
        start = i + 1;
    }
    preon_sink_append(s, text + start, len - start);
}
