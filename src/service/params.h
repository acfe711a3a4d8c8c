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
int preon__parse_id(const char *s, size_t len, int32_t *out, char *err, size_t errlen);

/**
 * Reads the integer parameter `name` of a query string (`qs`, `len` bytes, without the '?') and clamps it as
 * TechEmpower's tests demand: missing, empty, not an integer, or below `min` gives `min`; above `max` gives
 * `max`. The first occurrence of `name` counts.
 */
int preon__query_int_clamped(const char *qs, size_t len, const char *name, int min, int max);

/** GET /fruits' page: rows with id > after, at most limit of them (docs/api.md, "Paging"). */
typedef struct {
    int32_t after; /* 0 .. 2147483647; 0 = from the first row */
    int limit;     /* 1 .. PREON_PAGE_MAX_LIMIT */
} preon_page_t;

#define PREON_PAGE_DEFAULT_LIMIT 100
#define PREON_PAGE_MAX_LIMIT 1000

/**
 * Reads `limit` and `after` from a query string (`qs`, `len` bytes, without the '?'; NULL/0 for none). Each is
 * optional (defaults: PREON_PAGE_DEFAULT_LIMIT, 0); the first occurrence counts; other parameters are ignored.
 * A value must be decimal digits only and in range. Returns 0 with `*page` filled, or PREON_EINVAL with the
 * whole message the client gets ("limit: must be an integer from 1 to 1000") written to `err`; `*page` is
 * untouched then.
 */
int preon__query_page(const char *qs, size_t len, preon_page_t *page, char *err, size_t errlen);

#endif
