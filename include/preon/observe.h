/* SPDX-License-Identifier: MIT */
#ifndef PREON_OBSERVE_H
#define PREON_OBSERVE_H

#include <h2o.h>
#include "preon/metrics.h"
#include "preon/server.h"

/*
 * What each thread counts about HTTP, and the /metrics, /health/live and /health/ready answers built from every
 * thread's counters. Route ids are the index in preon_routes, followed by the built-in ones below.
 */
enum {
    PREON_ROUTE_LIVE = 0, /* offsets after preon_nroutes */
    PREON_ROUTE_READY,
    PREON_ROUTE_METRICS,
    PREON_ROUTE_UNMATCHED,
    PREON_ROUTE__EXTRA
};

/** Allocates a thread's counters (zero). */
void preon_http_metrics_init(preon_http_metrics_t *m);
void preon_http_metrics_dispose(preon_http_metrics_t *m);

/** Records process start (for process_start_time_seconds) and opens /proc/self/statm. Main thread, start-up. */
void preon_observe_init(void);

/**
 * Counts one request on the calling thread (its route, method, status, and time since h2o began it) and writes its
 * access line if log.access is on. Called once per request, by h2o's logger as it disposes of the request, whatever
 * answered it: a handler, a database callback, a timeout; status 499 when nothing did (the client went away).
 * Owner thread only.
 */
void preon_observe_request(preon_thread_t *thr, h2o_req_t *req);

/** Answers the Prometheus scrape, summing every thread's counters. */
void preon_metrics_reply(h2o_req_t *req);

/** Answers liveness (always UP while the loop answers) and readiness (database and drain checks). */
void preon_health_live_reply(h2o_req_t *req);
void preon_health_ready_reply(h2o_req_t *req);

#endif
