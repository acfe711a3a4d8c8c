/* SPDX-License-Identifier: MIT */
#ifndef PREON_APP_H
#define PREON_APP_H

#include <h2o.h>
#include "preon/db.h"
#include "preon/router.h"
#include "preon/server.h"

/* The service itself: its statements, its routes, and the handlers behind them (src/handlers/). */

typedef enum {
    PREON_STMT_FRUITS_ALL,
    PREON_STMT_FRUIT_BY_ID,
    PREON_STMT__COUNT
} preon_stmt_id_t;

/** The statements every database connection prepares, indexed by preon_stmt_id_t. */
extern const preon_db_statement_t preon_statements[PREON_STMT__COUNT];

/** The route table. */
extern const preon_route_t preon_routes[];
extern const size_t preon_nroutes;

/** Routes `req` and answers it (404/405 itself, else through the route's handler). Returns 0. */
int preon_app_handle(preon_thread_t *thr, h2o_req_t *req);

/** Handlers. */
int preon_hello_get(preon_thread_t *thr, h2o_req_t *req, h2o_iovec_t param);
int preon_fruits_list(preon_thread_t *thr, h2o_req_t *req, h2o_iovec_t param);
int preon_fruits_get(preon_thread_t *thr, h2o_req_t *req, h2o_iovec_t param);

/** Called with the rows of a query made by preon_dbcall, only while the request is still open. `res` is borrowed. */
typedef void (*preon_dbcall_cb)(h2o_req_t *req, const preon_db_result_t *res, void *arg);

/**
 * Runs prepared statement `stmt` with `nparams` text parameters (copied) on the thread's pool for `req`. When the
 * rows come, on_rows(req, res, arg) answers the request; any failure (queue full, not connected, database
 * error, timeout) is answered here with its 5xx. If the client goes away first, the result is dropped.
 */
void preon_dbcall(h2o_req_t *req, unsigned stmt, int nparams, const char *const *params, preon_dbcall_cb on_rows, void *arg);

#endif
