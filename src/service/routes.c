/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include "preon/alloc.h"
#include "handlers.h"
#include "preon/errors.h"
#include "preon/reply.h"

const preon_db_statement_t preon_statements[PREON_STMT__COUNT] = {
    /* keyset paging: rows after an id, in id order (the primary key's index serves both) */
    [PREON_STMT_FRUITS_PAGE] = {"fruits_page", "SELECT id, name FROM fruits WHERE id > $1 ORDER BY id LIMIT $2", 2},
    [PREON_STMT_FRUIT_BY_ID] = {"fruit_by_id", "SELECT id, name FROM fruits WHERE id = $1", 1},
    [PREON_STMT_FRUIT_INSERT] = {"fruit_insert", "INSERT INTO fruits (name) VALUES ($1) RETURNING id, name", 1},
    [PREON_STMT_FRUIT_UPDATE] = {"fruit_update", "UPDATE fruits SET name = $2 WHERE id = $1 RETURNING id, name", 2},
    [PREON_STMT_FRUIT_DELETE] = {"fruit_delete", "DELETE FROM fruits WHERE id = $1", 1},
    [PREON_STMT_WORLD_BY_ID] = {"world_by_id", "SELECT id, randomNumber FROM World WHERE id = $1", 1},
    [PREON_STMT_WORLD_ALL] = {"world_all", "SELECT id, randomNumber FROM World", 0},
    /* One statement per request, rows locked in id order (the caller sorts): no deadlocks between requests. */
    [PREON_STMT_WORLD_UPDATE] = {"world_update",
                                 "UPDATE World AS w SET randomNumber = v.r FROM unnest($1::int[], $2::int[]) AS v(id, r) "
                                 "WHERE w.id = v.id",
                                 2},
    [PREON_STMT_FORTUNES] = {"fortunes", "SELECT id, message FROM Fortune", 0},
};

const preon_route_t preon_routes[] = {
    PREON_ROUTE("/hello", PREON_M_GET, preon_hello_get),
    PREON_ROUTE("/fruits", PREON_M_GET, preon_fruits_list),
    PREON_ROUTE("/fruits", PREON_M_POST, preon_fruits_create),
    PREON_ROUTE("/fruits/{id}", PREON_M_GET, preon_fruits_get),
    PREON_ROUTE("/fruits/{id}", PREON_M_PUT, preon_fruits_update),
    PREON_ROUTE("/fruits/{id}", PREON_M_DELETE, preon_fruits_delete),
    PREON_ROUTE("/plaintext", PREON_M_GET, preon_tfb_plaintext),
    PREON_ROUTE("/json", PREON_M_GET, preon_tfb_json),
    PREON_ROUTE("/db", PREON_M_GET, preon_tfb_db),
    PREON_ROUTE("/queries", PREON_M_GET, preon_tfb_queries),
    PREON_ROUTE("/updates", PREON_M_GET, preon_tfb_updates),
    PREON_ROUTE("/cached-queries", PREON_M_GET, preon_tfb_cached_queries),
    PREON_ROUTE("/fortunes", PREON_M_GET, preon_tfb_fortunes),
    PREON_ROUTE("/openapi", PREON_M_GET, preon_openapi_get),
};
const size_t preon_nroutes = sizeof(preon_routes) / sizeof(preon_routes[0]);

/* Finds the route of `req` once and answers through it (or 404, 405); returns the route id for the server's counters:
 * an index into preon_routes, or preon_nroutes for none. */
static size_t handle(h2o_req_t *req)
{
    preon_match_t m;
    h2o_iovec_t path = req->path_normalized;
    switch (preon_router_match(preon_routes, preon_nroutes, req->method.base, req->method.len, path.base, path.len, &m)) {
    case 0:
        m.route->handler(req, m.param);
        return (size_t)(m.route - preon_routes);
    case PREON_EMETHOD:
        preon_reply_method_not_allowed(req, m.allow);
        break;
    default:
        preon_reply_error(req, preon_err_http_status(PREON_ENOTFOUND), "no such resource");
        break;
    }
    return preon_nroutes;
}

static const char *route_label(size_t route)
{
    return preon_routes[route].pattern;
}

static int init(const preon_config_t *cfg, char *err, size_t errlen)
{
    (void)cfg;
    return preon_fortunes_init(err, errlen);
}

static void *thread_init(unsigned index)
{
    (void)index;
    preon_app_thread_t *t = preon_calloc(1, sizeof(*t));
    preon_rand_seed(&t->rand);
    return t;
}

static void thread_dispose(void *state)
{
    preon_app_thread_t *t = state;
    if (t != NULL)
        free(t->world_cache);
    free(t);
}

const preon_service_t preon_app = {
    .statements = preon_statements,
    .nstatements = PREON_STMT__COUNT,
    .nroutes = sizeof(preon_routes) / sizeof(preon_routes[0]),
    .route_label = route_label,
    .init = init,
    .thread_init = thread_init,
    .handle = handle,
    .thread_dispose = thread_dispose,
    .dispose = preon_fortunes_dispose,
};
