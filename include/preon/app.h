/* SPDX-License-Identifier: MIT */
#ifndef PREON_APP_H
#define PREON_APP_H

#include <h2o.h>
#include "preon/db.h"
#include "preon/rand.h"
#include "preon/router.h"
#include "preon/server.h"
#include "preon/service.h"

/* The service itself: its statements, its routes, and the handlers behind them (src/handlers/). */

typedef enum {
    PREON_STMT_FRUITS_PAGE,
    PREON_STMT_FRUIT_BY_ID,
    PREON_STMT_FRUIT_INSERT,
    PREON_STMT_FRUIT_UPDATE,
    PREON_STMT_FRUIT_DELETE,
    PREON_STMT_WORLD_BY_ID,
    PREON_STMT_WORLD_ALL,
    PREON_STMT_WORLD_UPDATE,
    PREON_STMT_FORTUNES,
    PREON_STMT__COUNT
} preon_stmt_id_t;

/** The statements every database connection prepares, indexed by preon_stmt_id_t. */
extern const preon_db_statement_t preon_statements[PREON_STMT__COUNT];

/** The route table. */
extern const preon_route_t preon_routes[];
extern const size_t preon_nroutes;

/** The service the server runs (routes.c): the routes above, the statements, the handlers below. */
extern const preon_service_t preon_app;

/** What the handlers keep per thread (the service's thread state). */
typedef struct st_preon_app_thread_t {
    preon_rand_t rand;    /* ids and numbers for the TechEmpower endpoints */
    int32_t *world_cache; /* randomNumber by id for /cached-queries, filled on first use; NULL until then */
} preon_app_thread_t;

/** The calling thread's handler state. */
static inline preon_app_thread_t *preon_app_thread(h2o_req_t *req)
{
    return preon_thread_of(req)->app;
}

/** /fortunes' template, compiled once (fortunes.c): 0, or -1 with the reason in `err`. Main thread, start-up. */
int preon_fortunes_init(char *err, size_t errlen);
void preon_fortunes_dispose(void);

/** Handlers. */
void preon_hello_get(h2o_req_t *req, h2o_iovec_t param);
void preon_fruits_list(h2o_req_t *req, h2o_iovec_t param);
void preon_fruits_get(h2o_req_t *req, h2o_iovec_t param);
void preon_fruits_create(h2o_req_t *req, h2o_iovec_t param);
void preon_fruits_update(h2o_req_t *req, h2o_iovec_t param);
void preon_fruits_delete(h2o_req_t *req, h2o_iovec_t param);
/* TechEmpower's test types */
void preon_tfb_plaintext(h2o_req_t *req, h2o_iovec_t param);
void preon_tfb_json(h2o_req_t *req, h2o_iovec_t param);
void preon_tfb_db(h2o_req_t *req, h2o_iovec_t param);
void preon_tfb_queries(h2o_req_t *req, h2o_iovec_t param);
void preon_tfb_updates(h2o_req_t *req, h2o_iovec_t param);
void preon_tfb_cached_queries(h2o_req_t *req, h2o_iovec_t param);
void preon_tfb_fortunes(h2o_req_t *req, h2o_iovec_t param);

/** Rows in TFB's World table; ids and randomNumbers are uniform in 1..PREON_WORLD_ROWS. */
#define PREON_WORLD_ROWS 10000

/*
 * A request's database work: `n` queries sent together (one connection, one Sync), each result handed to
 * ops->on_result as it comes, then ops->on_done answers the request once every query succeeded. Any failure
 * (queue full, not connected, a database error, a timeout) is answered with its status instead. The dbreq
 * outlives its request if the client goes away: then on_done is skipped and the dbreq is freed once the last
 * callback has run.
 */
typedef struct st_preon_dbreq_t preon_dbreq_t;

typedef struct st_preon_dbreq_ops_t {
    /** One query's rows (`res` borrowed). Keep what is needed in preon_dbreq_data(). */
    void (*on_result)(preon_dbreq_t *r, size_t index, const preon_db_result_t *res);
    /** Every query succeeded and the request is still open: answer it. */
    void (*on_done)(preon_dbreq_t *r, h2o_req_t *req);
    /** Optional: frees what on_result kept; runs last, whatever happened. */
    void (*dispose)(preon_dbreq_t *r);
} preon_dbreq_ops_t;

/**
 * Creates a dbreq for `req` with room for `n` queries (at most PREON_DBREQ_MAX) and `datasize` zeroed bytes of
 * handler data. `ops` is borrowed (usually static).
 */
preon_dbreq_t *preon_dbreq_create(h2o_req_t *req, size_t n, size_t datasize, const preon_dbreq_ops_t *ops);
#define PREON_DBREQ_MAX 512

/** The handler's data area. */
void *preon_dbreq_data(preon_dbreq_t *r);

/** The thread the dbreq runs on. */
preon_thread_t *preon_dbreq_thread(preon_dbreq_t *r);

/** The request, while it is open (always so inside on_result and on_done); NULL once it is gone. */
h2o_req_t *preon_dbreq_req(preon_dbreq_t *r);

/** Sets query `i`: statement, flags (PREON_DB_WRITE) and text parameters, which are copied. */
void preon_dbreq_set(preon_dbreq_t *r, size_t i, unsigned stmt, unsigned flags, int nparams, const char *const *params);

/** For a dbreq that continues another's work (a second step): it inherits the request's deadline
 * (server.request_timeout_ms counts from the first step). Call from `prev`'s on_done. */
void preon_dbreq_continue(preon_dbreq_t *next, preon_dbreq_t *prev);

/** Sends the queries. If they cannot be queued, answers the request (503) and frees the dbreq at once. */
void preon_dbreq_run(preon_dbreq_t *r);

/** Creates, sets and runs a dbreq of one query with no handler data to fill in first. */
void preon_dbreq_run_one(h2o_req_t *req, unsigned stmt, int nparams, const char *const *params, size_t datasize,
                         const preon_dbreq_ops_t *ops);

/** Called from on_result: the request will be answered `status` with `message` instead of on_done. */
void preon_dbreq_fail(preon_dbreq_t *r, int status, const char *message);

#endif
