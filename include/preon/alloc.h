/* SPDX-License-Identifier: MIT */
#ifndef PREON_ALLOC_H
#define PREON_ALLOC_H

#include <stddef.h>

/*
 * The one allocator of preon's own code: like malloc and friends, but out of memory ends the process with a
 * message (as h2o's own allocations do), so that callers never check for NULL. Any thread.
 */
void *preon_malloc(size_t size);
void *preon_calloc(size_t n, size_t size);
/** Like realloc; `p` may be NULL. */
void *preon_realloc(void *p, size_t size);
char *preon_strdup(const char *s);
char *preon_strndup(const char *s, size_t n);

#endif
