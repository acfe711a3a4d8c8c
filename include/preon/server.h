/* SPDX-License-Identifier: MIT */
#ifndef PREON_SERVER_H
#define PREON_SERVER_H

#include <h2o.h>
#include <pthread.h>
#include "preon/config.h"
#include "preon/db.h"
#include "preon/metrics.h"
#include "preon/service.h"

/**
 * Everything one event-loop thread owns: its loop, h2o context, listener, database pool and counters. Nothing
 * in it is touched by another thread, except `receiver`, through which the main thread posts the shutdown
 * message.
 */
typedef struct st_preon_thread_t {
    h2o_context_t ctx; /* first: handlers find their thread from req->conn->ctx */
    h2o_accept_ctx_t accept_ctx;
    h2o_evloop_t *loop;
    const preon_config_t *cfg;
    unsigned index;
    pthread_t tid;
    h2o_socket_t *listener;
    int listen_fd;              /* the listener's descriptor, for shedding a connection when out of descriptors */
    int spare_fd;               /* a descriptor held in reserve for that (libuv's trick); -1 once draining */
    h2o_timeout_t accept_pause; /* out of descriptors and none to shed with: accepting pauses this long */
    h2o_timeout_entry_t accept_pause_entry;
    int fd_warned; /* "out of file descriptors" logged once */
    preon_db_pool_t *db;            /* this thread's alone; freed by it when its loop ends */
    preon_db_counters_t db_counters; /* what the pool counts: read by scrapes on any thread until every thread joined */
    preon_db_pool_t *db_read;            /* database.read_url's pool (reads; writes and fallback go to db), or NULL */
    preon_db_counters_t db_read_counters; /* its counters: its queries count in the metrics, not in readiness */
    h2o_multithread_queue_t *queue;
    h2o_multithread_receiver_t receiver;
    h2o_multithread_message_t stop_msg;
    h2o_multithread_receiver_t close_receiver; /* first stop phase: close the listener */
    h2o_multithread_message_t close_msg;
    int draining;                  /* SIGTERM seen: no new connections, finish what is in flight */
    uint64_t drain_deadline;       /* loop time after which the thread exits even with requests pending */
    size_t pending;                /* requests waiting for the database */
    void *app;                     /* the service's own state for this thread (its thread_init's) */
    preon_http_metrics_t http;     /* written by this thread, read by scrapes on any thread */
    h2o_timeout_t request_timeout; /* server.request_timeout_ms, for requests waiting on the database */
    uint64_t last_request_ns;      /* when the last request was dispatched, to let a drain settle */
} preon_thread_t;

/** The thread that owns `req`. */
static inline preon_thread_t *preon_thread_of(h2o_req_t *req)
{
    return (preon_thread_t *)req->conn->ctx;
}

/**
 * Binds the listeners, starts cfg->server.threads event loops (0: one per usable CPU) running `service`, serves until
 * SIGTERM or SIGINT, then drains (bounded by server.shutdown_timeout_ms) and returns 0; or returns a negative code
 * after printing why start-up failed. The server answers the health and metrics paths itself and counts every
 * request. Call from the main thread with `cfg` fully loaded; `cfg`, `target`, `read_target` (database.read_url's,
 * or NULL) and `service` are borrowed.
 */
int preon_server_run(const preon_config_t *cfg, const preon_db_target_t *target, const preon_db_target_t *read_target,
                     const preon_service_t *service);

#endif
