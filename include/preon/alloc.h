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
/**
 * Appends `len` bytes to the growing byte buffer `*buf` (`*used` bytes in use of `*cap`; NULL and 0 to start),
 * doubling its capacity from `first` as needed. The buffer is the caller's to free.
 */
void preon_bytes_append(char **buf, size_t *used, size_t *cap, size_t first, const void *data, size_t len);
/**
 * Grows the array `*items` of `*n` elements of `size` bytes (realloc, doubling from `first`) until index `index`
 * exists; the new elements are zeroed. Returns the element at `index`. A table indexed by descriptor, say.
 */
void *preon_table_at(void **items, size_t *n, size_t size, size_t first, size_t index);
char *preon_strdup(const char *s);
char *preon_strndup(const char *s, size_t n);

#endif
