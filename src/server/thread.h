/* SPDX-License-Identifier: MIT */
#ifndef PREON_THREAD_H
#define PREON_THREAD_H

/* The server's own: what one event-loop thread owns. Private to the server (src/server/server.c, src/server/dbreq.c): the service
 * sees none of it (include/preon/service.h is its way in). */
#include <h2o.h>
#include <pthread.h>
#include "preon/config.h"
#include "preon/db.h"
#include "preon/metrics.h"

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
    int fd_warned;                        /* "out of file descriptors" logged once */
    preon_db_pool_t *db;                  /* this thread's alone; freed by it when its loop ends */
    preon_db_counters_t db_counters;      /* what the pool counts: read by scrapes on any thread until every thread joined */
    preon_db_pool_t *db_read;             /* database.read_url's pool (reads; writes and fallback go to db), or NULL */
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
    h2o_linklist_t conns;          /* the client connections h2o has open (server.c's conn_t) */
} preon_thread_t;

/** The thread that owns `req` (its h2o context is the thread's first member). */
static inline preon_thread_t *preon__thread_of(h2o_req_t *req)
{
    return (preon_thread_t *)req->conn->ctx;
}

#endif
