/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>
#include "preon/params.h"
#include "preon/errors.h"

int preon_parse_id(const char *s, size_t len, int32_t *out, char *err, size_t errlen)
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

int preon_query_int_clamped(const char *qs, size_t len, const char *name, int min, int max)
{
    size_t nlen = strlen(name);
    const char *p = qs, *end = qs + len;
    while (p < end) {
        const char *amp = memchr(p, '&', end - p);
        const char *pair_end = amp != NULL ? amp : end;
        if ((size_t)(pair_end - p) > nlen && memcmp(p, name, nlen) == 0 && p[nlen] == '=') {
            const char *v = p + nlen + 1;
            int neg = v < pair_end && *v == '-';
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
        p = pair_end + 1;
    }
    return min;
}
