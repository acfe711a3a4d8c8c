/* SPDX-License-Identifier: MIT */
#ifndef PREON_METRICS_H
#define PREON_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/*
 * Counters and histograms written by one thread (their owner) and read by whichever thread answers a scrape.
 * The owner stores with relaxed atomics (a plain add and store on x86: no lock prefix, no fence), readers load
 * with relaxed atomics, so the hot path costs what a plain counter costs and there is no data race.
 */
static inline void preon_counter_add(uint64_t *c, uint64_t n)
{
    __atomic_store_n(c, *c + n, __ATOMIC_RELAXED);
}

static inline uint64_t preon_counter_read(const uint64_t *c)
{
    return __atomic_load_n(c, __ATOMIC_RELAXED);
}

static inline uint64_t preon_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/** Latency buckets' upper bounds in seconds (Prometheus `le`), shared by every histogram. */
#define PREON_HIST_BUCKETS 14
extern const uint64_t preon_hist_bounds_ns[PREON_HIST_BUCKETS]; /* in ns; printed in seconds */

typedef struct st_preon_hist_t {
    uint64_t bucket[PREON_HIST_BUCKETS]; /* not cumulative: observations whose bucket is exactly this one */
    uint64_t count;
    uint64_t sum_ns;
} preon_hist_t;

/** Records one duration. Owner thread only. */
void preon_hist_observe(preon_hist_t *h, uint64_t ns);

/** Adds `src` (another thread's, read with relaxed loads) into `dst`. */
void preon_hist_add(preon_hist_t *dst, const preon_hist_t *src);

#define PREON_METHODS 8 /* GET HEAD POST PUT DELETE PATCH OPTIONS other */
#define PREON_STATUSES 16

typedef struct st_preon_http_metrics_t {
    size_t nroutes;         /* the service's routes + PREON_ROUTE__EXTRA (the server's own and "no route") */
    uint64_t *requests;     /* [route][method][status index] */
    preon_hist_t *duration; /* [route] */
    uint64_t conns_open;    /* accepted minus closed */
    uint64_t conns_accepted;
    uint64_t conns_refused; /* over server.max_connections */
} preon_http_metrics_t;

#endif
