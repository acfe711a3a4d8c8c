/* SPDX-License-Identifier: MIT */
#ifndef PREON_DBREQ_H
#define PREON_DBREQ_H

#include <h2o.h>
#include <stddef.h>
#include "preon/db.h"

/*
 * A request's database work, the server's one way for a handler to wait on the database: `n` queries sent together,
 * each result handed to ops->on_result as it comes, then ops->on_done answers the request once every query
 * succeeded. Any failure (queue full, not connected, a database error, a timeout) is answered with its status
 * instead. The server counts the request as in flight (a drain waits for it) and bounds it by
 * server.request_timeout_ms (504). The dbreq outlives its request if the client goes away: then on_done is skipped
 * and the dbreq is freed once the last callback has run. Every function here: the request's loop thread.
 */
typedef struct st_preon_dbreq_t preon_dbreq_t;

/** Which setting places a dbreq's Syncs (each Sync ends one implicit transaction). */
typedef enum {
    PREON_DBREQ_SYNCS_API = 0, /* database.sync: the service's own API (default batch: reads may share a Sync) */
    PREON_DBREQ_SYNCS_STRICT,  /* database.strict_sync: routes held to a Sync after every query (TechEmpower's rule) */
} preon_dbreq_syncs_t;

typedef struct st_preon_dbreq_ops_t {
    /** One query's rows (`res` borrowed). Keep what is needed in preon_dbreq_data(). */
    void (*on_result)(preon_dbreq_t *r, size_t index, const preon_db_result_t *res);
    /** Every query succeeded and the request is still open: answer it. */
    void (*on_done)(preon_dbreq_t *r, h2o_req_t *req);
    /** Optional: frees what on_result kept; runs last, whatever happened. */
    void (*dispose)(preon_dbreq_t *r);
    /** Which setting places its Syncs. */
    preon_dbreq_syncs_t syncs;
} preon_dbreq_ops_t;

/**
 * Creates a dbreq for `req` with room for `n` queries (1 to PREON_DBREQ_MAX) and `datasize` zeroed bytes of handler
 * data. `ops` is borrowed (usually static).
 */
preon_dbreq_t *preon_dbreq_create(h2o_req_t *req, size_t n, size_t datasize, const preon_dbreq_ops_t *ops);
#define PREON_DBREQ_MAX 512

/** The handler's data area. */
void *preon_dbreq_data(preon_dbreq_t *r);

/** The service's state for the dbreq's thread (as preon_service_state). */
void *preon_dbreq_state(preon_dbreq_t *r);

/** The request, while it is open (always so inside on_result and on_done); NULL once it is gone. */
h2o_req_t *preon_dbreq_req(preon_dbreq_t *r);

/** Sets query `i`: statement, flags (PREON_DB_WRITE) and text parameters, which are copied. */
void preon_dbreq_set(preon_dbreq_t *r, size_t i, unsigned stmt, unsigned flags, int nparams, const char *const *params);

/** For a dbreq that continues another's work (a second step): it inherits the request's deadline
 * (server.request_timeout_ms counts from the first step), and its queries are not refused for the wait ahead of them
 * (the request was let in at its first step; PREON_DB_ADMITTED). Call from `prev`'s on_done. */
void preon_dbreq_continue(preon_dbreq_t *next, preon_dbreq_t *prev);

/** Sends the queries. If they cannot be queued, answers the request (503) and frees the dbreq at once. */
void preon_dbreq_run(preon_dbreq_t *r);

/** Creates, sets and runs a dbreq of one query with no handler data to fill in first. */
void preon_dbreq_run_one(h2o_req_t *req, unsigned stmt, int nparams, const char *const *params, size_t datasize,
                         const preon_dbreq_ops_t *ops);

/** Called from on_result: the request will be answered with `err`'s status (errors.h) and `message` instead of on_done.
 * The first failure stands. */
void preon_dbreq_fail(preon_dbreq_t *r, int err, const char *message);

#endif
