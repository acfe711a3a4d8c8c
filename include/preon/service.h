/* SPDX-License-Identifier: MIT */
#ifndef PREON_SERVICE_H
#define PREON_SERVICE_H

#include <h2o.h>
#include <stddef.h>
#include "preon/config.h"
#include "preon/db.h"

/*
 * What the server runs: an application given to it as a table of operations, as h2o runs handlers; and the one way
 * a handler reaches what the server owns (its per-thread state, the database) — the server's request context below.
 * The server owns threads, sockets, the database pools, the route a request took, its deadline, the count of requests
 * in flight, health, metrics and the request counters; the service owns its routes, statements and per-thread state.
 * The service includes this header, dbreq.h (the request context), db.h and its own, never the server's.
 */
typedef struct st_preon_service_t {
    /** The statements every database connection prepares; queries name them by index. */
    const preon_db_statement_t *statements;
    size_t nstatements;
    /** Route ids for the counters: [0, nroutes); route_label(i) names one ("/fruits/{id}"). */
    size_t nroutes;
    const char *(*route_label)(size_t route);
    /** Main thread, before any loop runs: 0, or a negative code with the reason in `err`. */
    int (*init)(const preon_config_t *cfg, char *err, size_t errlen);
    /** Each loop thread, before its first request: the thread's own state, or NULL (read with preon_service_state). */
    void *(*thread_init)(unsigned index);
    /**
     * Answers a request (now, or later from a callback) and returns the route it took: < nroutes, or nroutes when
     * none (404, 405). The server keeps it with the request, for the counters and the access log: routing runs once.
     * Loop thread.
     */
    size_t (*handle)(h2o_req_t *req);
    /** Each loop thread, after its loop ended: frees what thread_init made. */
    void (*thread_dispose)(void *state);
    /** Main thread, after every loop thread has ended. */
    void (*dispose)(void);
} preon_service_t;

/** The service's state for the thread that owns `req` (what its thread_init returned). Loop thread. */
void *preon_service_state(h2o_req_t *req);

#endif
