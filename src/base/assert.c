/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include "preon/assert.h"

_Noreturn void preon_assert_fail(const char *expr, const char *file, int line, const char *func)
{
    fprintf(stderr, "preon: %s:%d: %s: assertion `%s' failed\n", file, line, func, expr);
    fflush(stderr);
    abort();
}
