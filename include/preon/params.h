/* SPDX-License-Identifier: MIT */
#ifndef PREON_PARAMS_H
#define PREON_PARAMS_H

#include <stddef.h>
#include <stdint.h>

/**
 * Parses a path segment as a positive 32-bit integer id (1 .. 2147483647): decimal digits only, no sign, no
 * spaces, no leading '+'. Leading zeros are accepted ("007" is 7). Returns 0 and stores the value in `*out`,
 * or a negative code with a static reason ("not a number", "must be positive", "too large", "empty") in `*why`.
 */
int preon_parse_id(const char *s, size_t len, int32_t *out, const char **why);

#endif
