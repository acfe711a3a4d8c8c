/* SPDX-License-Identifier: MIT */
#ifndef PREON_RAND_H
#define PREON_RAND_H

#include <stdint.h>

/**
 * A per-thread pseudo-random generator (xorshift64*): a few instructions, no lock, no system call. Not for
 * secrets. Each event-loop thread owns one, seeded once from the kernel.
 */
typedef struct st_preon_rand_t {
    uint64_t s;
} preon_rand_t;

/** Seeds from getrandom(2), falling back to time and address bits. */
void preon_rand_seed(preon_rand_t *r);

static inline uint64_t preon_rand_next(preon_rand_t *r)
{
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/** A uniform integer in 1..n (n >= 1), without modulo bias (Lemire's multiply-and-reject). */
static inline uint32_t preon_rand_range(preon_rand_t *r, uint32_t n)
{
    uint64_t m = (uint64_t)(uint32_t)(preon_rand_next(r) >> 32) * n;
    if ((uint32_t)m < n) {
        uint32_t t = (uint32_t)-n % n;
        while ((uint32_t)m < t)
            m = (uint64_t)(uint32_t)(preon_rand_next(r) >> 32) * n;
    }
    return (uint32_t)(m >> 32) + 1;
}

#endif
