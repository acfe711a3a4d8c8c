/* SPDX-License-Identifier: MIT */
#ifndef PREON_PARAMS_H
#define PREON_PARAMS_H

#include <stddef.h>
#include <stdint.h>

/**
 * Parses a path segment as a positive 32-bit integer id (1 .. 2147483647): decimal digits only, no sign, no
 * spaces, no leading '+'. Leading zeros are accepted ("007" is 7). Returns 0 and stores the value in `*out`,
 * or PREON_EINVAL with the reason ("must be a positive integer", "must be at most 2147483647", "must not be
 * empty") written to `err`.
 */
int preon_parse_id(const char *s, size_t len, int32_t *out, char *err, size_t errlen);

/**
 * Reads the integer parameter `name` of a query string (`qs`, `len` bytes, without the '?') and clamps it as
 * TechEmpower's tests demand: missing, empty, not an integer, or below `min` gives `min`; above `max` gives
 * `max`. The first occurrence of `name` counts.
 */
int preon_query_int_clamped(const char *qs, size_t len, const char *name, int min, int max);

#endif
