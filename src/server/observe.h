/* SPDX-License-Identifier: MIT */
#ifndef PREON_OBSERVE_H
#define PREON_OBSERVE_H

#include <h2o.h>
#include "preon/config.h"
#include "preon/db.h"
#include "preon/metrics.h"

/*
 * What each thread counts about HTTP, and the /metrics, /health/live and /health/ready answers. The answers are
 * rendered from a snapshot the server takes for them (its own copy of every thread's counters, summed): nothing
 * here reads another thread's objects. Route ids: the service's routes first, then the server's own below.
 */
enum {
    PREON_ROUTE_LIVE = 0, /* offsets after the service's routes */
    PREON_ROUTE_READY,
    PREON_ROUTE_METRICS,
    PREON_ROUTE_UNMATCHED,
    PREON_ROUTE__EXTRA
};

/** Allocates a thread's counters (zero) for `nroutes` route ids. */
void preon__http_metrics_init(preon_http_metrics_t *m, size_t nroutes);
void preon__http_metrics_dispose(preon_http_metrics_t *m);

/** Records process start (for process_start_time_seconds) and opens /proc/self/statm. Main thread, start-up. */
void preon__observe_init(void);

/**
 * Counts one request in `m` (its `route` id, method, status, and time since h2o began it) and writes its access line
 * if log.access is on. Called once per request, as h2o disposes of it, whatever answered it: a handler, a database
 * callback, a timeout; status 499 when nothing did. The thread that owns `m` only.
 */
void preon__observe_request(preon_http_metrics_t *m, const preon_config_t *cfg, unsigned thread, unsigned route, h2o_req_t *req);

/** Every thread's counters, summed into memory of the scrape's own. */
typedef struct st_preon_snapshot_t {
    const preon_config_t *cfg;
    size_t nroutes;                  /* route ids */
    const char *const *route_labels; /* [nroutes]: "/fruits/{id}", a health path, "unmatched" */
    uint64_t *requests;              /* [route][method][status index] */
    preon_hist_t *durations;         /* [route] */
    uint64_t conns_open, conns_accepted, conns_refused;
    const preon_db_statement_t *statements;
    size_t nstatements;
    uint64_t (*queries)[PREON_DB_OUTCOMES]; /* [statement][outcome] */
    preon_hist_t *query_durations;          /* [statement] */
    preon_db_stats_t db;                    /* database.url's pools, summed over threads */
    preon_db_stats_t db_read;               /* database.read_url's pools, summed over threads */
    int has_read_pool;                      /* database.read_url is set */
    unsigned nthreads;
    unsigned threads_without_db; /* threads with no connection ready */
    int draining;
} preon_snapshot_t;

/** Prepares `s` for `nroutes` routes and `nstatements` statements, zeroed, in `pool`. */
void preon__snapshot_init(preon_snapshot_t *s, h2o_mem_pool_t *pool, size_t nroutes, size_t nstatements);

/** Adds one thread's HTTP counters into `s` (relaxed reads of counters the owner writes). */
void preon__snapshot_add_http(preon_snapshot_t *s, const preon_http_metrics_t *m);

/** Answers the Prometheus scrape from `s`. */
void preon__metrics_reply(h2o_req_t *req, const preon_snapshot_t *s);

/** Answers liveness (always UP while the loop answers). */
void preon__health_live_reply(h2o_req_t *req);

/** Answers readiness from `s`: every thread has a database connection, and no drain is under way. */
void preon__health_ready_reply(h2o_req_t *req, const preon_snapshot_t *s);

#endif
