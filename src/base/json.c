/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>
#include "preon/errors.h"
#include "preon/json.h"

/* The length of the UTF-8 sequence at s[0..left), or 0 if it is not one jansson accepts (utf8.c: a lead byte of
 * 0xC2..0xF4, continuation bytes, no overlong form, no surrogate, nothing above U+10FFFF). */
static size_t utf8_len(const unsigned char *s, size_t left)
{
    unsigned char c = s[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    if (n > left)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static int valid_utf8(const char *s, size_t len)
{
    for (size_t i = 0, n; i < len; i += n)
        if ((n = utf8_len((const unsigned char *)s + i, len - i)) == 0)
            return 0;
    return 1;
}

/* The short escapes jansson writes for these characters; every other control character is \u00XX. */
static char short_escape(unsigned char c)
{
    switch (c) {
    case '"':
    case '\\':
        return (char)c;
    case '\b':
        return 'b';
    case '\f':
        return 'f';
    case '\n':
        return 'n';
    case '\r':
        return 'r';
    case '\t':
        return 't';
    default:
        return 0;
    }
}

int preon_json_string(preon_sink_t *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    if (!valid_utf8(s, len))
        return PREON_EINVAL;
    preon_sink_append(out, "\"", 1);
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        char e = short_escape(c);
        char esc[6] = {'\\', e, '0', '0', hex[c >> 4], hex[c & 0xF]};
        if (e == 0)
            esc[1] = 'u';
        /* Runs of plain text go in one copy; only what needs escaping is written piece by piece. */
        preon_sink_append(out, s + start, i - start);
        preon_sink_append(out, esc, e != 0 ? 2 : 6);
        start = i + 1;
    }
    preon_sink_append(out, s + start, len - start);
    preon_sink_append(out, "\"", 1);
    return 0;
}

/* "00" to "99": two digits per division (a /queries=20 answer and its parameters format some sixty numbers). */
static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                     "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                     "8081828384858687888990919293949596979899";

size_t preon_format_int(char *buf, long long v)
{
    /* Counted first, then written backwards in place, two digits at a time: no printf machinery (a third of /db's libc
     * instructions once) and no scratch copy. */
    static const unsigned long long pow10[20] = {1ULL,
                                                 10ULL,
                                                 100ULL,
                                                 1000ULL,
                                                 10000ULL,
                                                 100000ULL,
                                                 1000000ULL,
                                                 10000000ULL,
                                                 100000000ULL,
                                                 1000000000ULL,
                                                 10000000000ULL,
                                                 100000000000ULL,
                                                 1000000000000ULL,
                                                 10000000000000ULL,
                                                 100000000000000ULL,
                                                 1000000000000000ULL,
                                                 10000000000000000ULL,
                                                 100000000000000000ULL,
                                                 1000000000000000000ULL,
                                                 10000000000000000000ULL};
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    /* digits from the bit length: log10(2) ~ 1233 / 4096, then one comparison settles it */
    unsigned bits = 64 - (unsigned)__builtin_clzll(u | 1);
    unsigned t = (bits * 1233) >> 12;
    size_t digits = t + (u >= pow10[t]);
    digits += digits == 0; /* u == 0 */
    size_t len = (v < 0) + digits;
    if (v < 0)
        buf[0] = '-';
    buf[len] = '\0';
    char *p = buf + len;
    while (u >= 100) {
        unsigned d = (unsigned)(u % 100) * 2;
        u /= 100;
        *--p = digit_pairs[d + 1];
        *--p = digit_pairs[d];
    }
    if (u >= 10) {
        *--p = digit_pairs[u * 2 + 1];
        *--p = digit_pairs[u * 2];
    } else {
        *--p = (char)('0' + u);
    }
    return len;
}

void preon_json_int(preon_sink_t *out, long long v)
{
    char buf[24];
    preon_sink_append(out, buf, preon_format_int(buf, v));
}

int preon_json_fruit(preon_sink_t *out, long long id, const char *name, size_t len)
{
    if (!valid_utf8(name, len))
        return PREON_EINVAL;
    preon_sink_append(out, H2O_STRLIT("{\"id\":"));
    preon_json_int(out, id);
    preon_sink_append(out, H2O_STRLIT(",\"name\":"));
    preon_json_string(out, name, len);
    preon_sink_append(out, "}", 1);
    return 0;
}

void preon_json_world(preon_sink_t *out, long long id, long long random_number)
{
    /* The row's widest text, reserved once and written in place: TechEmpower's rows are most of /queries' answer. */
    static const char head[] = "{\"id\":", mid[] = ",\"randomNumber\":";
    char *p = preon_sink_reserve(out, sizeof(head) + sizeof(mid) + 2 * 21);
    memcpy(p, head, sizeof(head) - 1);
    p += sizeof(head) - 1;
    p += preon_format_int(p, id);
    memcpy(p, mid, sizeof(mid) - 1);
    p += sizeof(mid) - 1;
    p += preon_format_int(p, random_number);
    *p++ = '}';
    out->len = (size_t)(p - out->buf);
}

void preon_json_error(preon_sink_t *out, int status, const char *message)
{
    preon_sink_append(out, H2O_STRLIT("{\"error\":"));
    if (preon_json_string(out, message, strlen(message)) != 0)
        preon_sink_append(out, H2O_STRLIT("\"(message is not valid UTF-8)\""));
    preon_sink_append(out, H2O_STRLIT(",\"status\":"));
    preon_json_int(out, status);
    preon_sink_append(out, "}", 1);
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
