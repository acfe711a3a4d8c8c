/* SPDX-License-Identifier: MIT */
#ifndef PREON_SERVICE_HANDLERS_H
#define PREON_SERVICE_HANDLERS_H

#include <h2o.h>
#include "preon/db.h"
#include "preon/rand.h"
#include "preon/router.h"
#include "preon/app.h"
#include "preon/dbreq.h"
#include "preon/service.h"

/* Inside the service (src/service/, never included from outside it): its statements, its routes, its per-thread
 * state and the handlers behind them. */

typedef enum {
    PREON_STMT_FRUITS_PAGE,
    PREON_STMT_FRUIT_BY_ID,
    PREON_STMT_FRUIT_INSERT,
    PREON_STMT_FRUIT_UPDATE,
    PREON_STMT_FRUIT_DELETE,
    /* TechEmpower's module: prepared only where modules.techempower mounts it */
    PREON_STMT_WORLD_BY_ID,
    PREON_STMT_WORLD_ALL,
    PREON_STMT_WORLD_UPDATE,
    PREON_STMT_FORTUNES,
    PREON_STMT__COUNT,
    PREON_STMT__API_COUNT = PREON_STMT_WORLD_BY_ID /* the service's own statements: those before the module's */
} preon_stmt_id_t;

/** The statements a database connection prepares, indexed by preon_stmt_id_t: the first PREON_STMT__API_COUNT
 * always, the rest where TechEmpower's module is mounted. */
extern const preon_db_statement_t preon_statements[PREON_STMT__COUNT];

/** The service's own route table (routes.c). */
extern const preon_route_t preon_routes[];
extern const size_t preon_nroutes;

/** TechEmpower's module (techempower.c): its routes, answered only where modules.techempower mounts it. */
#define PREON_TFB_NROUTES 7
extern const preon_route_t preon_tfb_routes[PREON_TFB_NROUTES];
extern const size_t preon_tfb_nroutes;

/** What the handlers keep per thread (the service's thread state). */
typedef struct st_preon_app_thread_t {
    preon_rand_t rand;    /* ids and numbers for the TechEmpower endpoints */
    int32_t *world_cache; /* randomNumber by id for /cached-queries, filled on first use; NULL until then */
} preon_app_thread_t;

/** The calling thread's handler state. */
static inline preon_app_thread_t *preon__app_thread(h2o_req_t *req)
{
    return preon_service_state(req);
}

/** /fortunes' template, compiled once (fortunes.c): 0, or PREON_EINVAL with the reason in `err`. Main thread,
 * start-up. */
int preon__fortunes_init(char *err, size_t errlen);
void preon__fortunes_dispose(void);

/** Handlers. */
void preon__hello_get(h2o_req_t *req, h2o_iovec_t param);
void preon__openapi_get(h2o_req_t *req, h2o_iovec_t param);
void preon__fruits_list(h2o_req_t *req, h2o_iovec_t param);
void preon__fruits_get(h2o_req_t *req, h2o_iovec_t param);
void preon__fruits_create(h2o_req_t *req, h2o_iovec_t param);
void preon__fruits_update(h2o_req_t *req, h2o_iovec_t param);
void preon__fruits_delete(h2o_req_t *req, h2o_iovec_t param);
/* TechEmpower's test types */
void preon__tfb_plaintext(h2o_req_t *req, h2o_iovec_t param);
void preon__tfb_json(h2o_req_t *req, h2o_iovec_t param);
void preon__tfb_db(h2o_req_t *req, h2o_iovec_t param);
void preon__tfb_queries(h2o_req_t *req, h2o_iovec_t param);
void preon__tfb_updates(h2o_req_t *req, h2o_iovec_t param);
void preon__tfb_cached_queries(h2o_req_t *req, h2o_iovec_t param);
void preon__tfb_fortunes(h2o_req_t *req, h2o_iovec_t param);

/** Rows in TFB's World table; ids and randomNumbers are uniform in 1..PREON_WORLD_ROWS. */
#define PREON_WORLD_ROWS 10000

#endif
