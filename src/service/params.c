/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>
#include "params.h"
#include "preon/errors.h"

int preon__parse_id(const char *s, size_t len, int32_t *out, char *err, size_t errlen)
{
    const char *why = "must be a positive integer";
    int64_t v = 0;
    if (len == 0) {
        why = "must not be empty";
        goto Invalid;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            goto Invalid;
        v = v * 10 + (s[i] - '0');
        /* Stop early so that a long run of digits cannot overflow the accumulator. */
        if (v > INT32_MAX) {
            why = "must be at most 2147483647";
            goto Invalid;
        }
    }
    if (v == 0)
        goto Invalid;
    *out = (int32_t)v;
    return 0;

Invalid:
    snprintf(err, errlen, "%s", why);
    return PREON_EINVAL;
}

/* Finds the first `name=value` (or bare `name`, an empty value) of a query string. Returns 1 with the value's
 * bytes, 0 when `name` is absent. */
static int query_value(const char *qs, size_t len, const char *name, const char **value, size_t *vlen)
{
    size_t nlen = strlen(name);
    const char *p = qs, *end = qs + len;
    while (p < end) {
        const char *amp = memchr(p, '&', end - p);
        const char *pair_end = amp != NULL ? amp : end;
        size_t plen = pair_end - p;
        if (plen >= nlen && memcmp(p, name, nlen) == 0 && (plen == nlen || p[nlen] == '=')) {
            *value = plen == nlen ? pair_end : p + nlen + 1;
            *vlen = pair_end - *value;
            return 1;
        }
        p = pair_end + 1;
    }
    return 0;
}

int preon__query_int_clamped(const char *qs, size_t len, const char *name, int min, int max)
{
    const char *v;
    size_t vlen;
    if (!query_value(qs, len, name, &v, &vlen) || vlen == 0)
        return min;
    const char *pair_end = v + vlen;
    int neg = *v == '-';
    const char *d = v + neg;
    if (d == pair_end)
        return min;
    long long n = 0;
    for (; d < pair_end; d++) {
        if (*d < '0' || *d > '9')
            return min;
        if (n <= max) /* saturate: a long run of digits must not overflow */
            n = n * 10 + (*d - '0');
    }
    if (neg || n < min)
        return min;
    return n > max ? max : (int)n;
}

/* Parses decimal digits (nothing else, at least one) into `*out` if the value lies in min..max; 0 or
 * PREON_EINVAL. */
static int parse_in_range(const char *s, size_t len, long min, long max, long *out)
{
    long v = 0;
    if (len == 0)
        return PREON_EINVAL;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return PREON_EINVAL;
        v = v * 10 + (s[i] - '0');
        if (v > max) /* stop early: a long run of digits cannot overflow */
            return PREON_EINVAL;
    }
    if (v < min)
        return PREON_EINVAL;
    *out = v;
    return 0;
}

/* Reads the optional parameter `name` into `*out` (left alone when absent); on a bad value writes the client's
 * message to `err`. */
static int page_param(const char *qs, size_t len, const char *name, long min, long max, long *out, char *err, size_t errlen)
{
    const char *v;
    size_t vlen;
    if (!query_value(qs, len, name, &v, &vlen))
        return 0;
    if (parse_in_range(v, vlen, min, max, out) == 0)
        return 0;
    snprintf(err, errlen, "%s: must be an integer from %ld to %ld", name, min, max);
    return PREON_EINVAL;
}

int preon__query_page(const char *qs, size_t len, preon_page_t *page, char *err, size_t errlen)
{
    long limit = PREON_PAGE_DEFAULT_LIMIT, after = 0;
    if (qs == NULL)
        qs = "", len = 0;
    if (page_param(qs, len, "limit", 1, PREON_PAGE_MAX_LIMIT, &limit, err, errlen) != 0 ||
        page_param(qs, len, "after", 0, INT32_MAX, &after, err, errlen) != 0)
        return PREON_EINVAL;
    page->limit = (int)limit;
    page->after = (int32_t)after;
    return 0;
}
