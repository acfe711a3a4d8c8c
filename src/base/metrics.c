/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include "preon/metrics.h"

/* 100 µs .. 5 s */
const uint64_t preon_hist_bounds_ns[PREON_HIST_BUCKETS] = {100000,    250000,    500000,     1000000,   2500000,
                                                           5000000,   10000000,  25000000,   50000000,  100000000,
                                                           250000000, 500000000, 1000000000, 5000000000};

void preon_hist_observe(preon_hist_t *h, uint64_t ns)
{
    /* a short linear scan: most observations land in the first few buckets */
    for (int i = 0; i < PREON_HIST_BUCKETS; i++) {
        if (ns <= preon_hist_bounds_ns[i]) {
            preon_counter_add(&h->bucket[i], 1);
            break;
        }
    }
    preon_counter_add(&h->count, 1);
    preon_counter_add(&h->sum_ns, ns);
}

void preon_hist_add(preon_hist_t *dst, const preon_hist_t *src)
{
    for (int i = 0; i < PREON_HIST_BUCKETS; i++)
        dst->bucket[i] += preon_counter_read(&src->bucket[i]);
    dst->count += preon_counter_read(&src->count);
    dst->sum_ns += preon_counter_read(&src->sum_ns);
}
