/* SPDX-License-Identifier: MIT */
#include "preon/params.h"
#include "preon/errors.h"

int preon_parse_id(const char *s, size_t len, int32_t *out, const char **why)
{
    if (len == 0) {
        *why = "must not be empty";
        return PREON_EINVAL;
    }
    if (s[0] == '-' && len > 1) {
        *why = "must be a positive integer";
        return PREON_EINVAL;
    }
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            *why = "must be a positive integer";
            return PREON_EINVAL;
        }
        v = v * 10 + (s[i] - '0');
        /* Stop early so that a long run of digits cannot overflow the accumulator. */
        if (v > INT32_MAX) {
            *why = "must be at most 2147483647";
            return PREON_EINVAL;
        }
    }
    if (v == 0) {
        *why = "must be a positive integer";
        return PREON_EINVAL;
    }
    *out = (int32_t)v;
    return 0;
}
