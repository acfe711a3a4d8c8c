/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "preon/alloc.h"

/* No recovery is attempted: a server that cannot allocate a few bytes cannot answer anyway, and a half-built
 * object would be worse than a restart by the supervisor. write(2), not stdio: stdio may itself allocate. */
static void *check(void *p)
{
    static const char msg[] = "preon: out of memory\n";
    if (p == NULL) {
        ssize_t rv = write(STDERR_FILENO, msg, sizeof(msg) - 1);
        (void)rv;
        abort();
    }
    return p;
}

void *preon_malloc(size_t size)
{
    return check(malloc(size != 0 ? size : 1));
}

void *preon_calloc(size_t n, size_t size)
{
    return check(calloc(n != 0 ? n : 1, size != 0 ? size : 1));
}

void *preon_realloc(void *p, size_t size)
{
    return check(realloc(p, size != 0 ? size : 1));
}

void preon_bytes_append(char **buf, size_t *used, size_t *cap, size_t first, const void *data, size_t len)
{
    if (*used + len > *cap) {
        size_t n = *cap != 0 ? *cap : first;
        while (n < *used + len)
            n *= 2;
        *buf = preon_realloc(*buf, n);
        *cap = n;
    }
    memcpy(*buf + *used, data, len);
    *used += len;
}

void *preon_table_at(void **items, size_t *n, size_t size, size_t first, size_t index)
{
    if (index >= *n) {
        size_t m = *n != 0 ? *n : first;
        while (m <= index)
            m *= 2;
        *items = preon_realloc(*items, m * size);
        memset((char *)*items + *n * size, 0, (m - *n) * size);
        *n = m;
    }
    return (char *)*items + index * size;
}

char *preon_strdup(const char *s)
{
    return check(strdup(s));
}

char *preon_strndup(const char *s, size_t n)
{
    return check(strndup(s, n));
}
