/* SPDX-License-Identifier: MIT */
#include <sys/random.h>
#include <time.h>
#include "preon/rand.h"

void preon_rand_seed(preon_rand_t *r)
{
    uint64_t s = 0;
    if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s) || s == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)r;
    }
    /* xorshift must never hold 0 */
    r->s = s != 0 ? s : 0x9E3779B97F4A7C15ULL;
}
