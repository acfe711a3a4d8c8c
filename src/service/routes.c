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
    /* TechEmpower's module (techempower.c): last, so that without it a connection prepares the rows above alone */
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
    PREON_ROUTE("/hello", PREON_M_GET, preon__hello_get),
    PREON_ROUTE("/fruits", PREON_M_GET, preon__fruits_list),
    PREON_ROUTE("/fruits", PREON_M_POST, preon__fruits_create),
    PREON_ROUTE("/fruits/{id}", PREON_M_GET, preon__fruits_get),
    PREON_ROUTE("/fruits/{id}", PREON_M_PUT, preon__fruits_update),
    PREON_ROUTE("/fruits/{id}", PREON_M_DELETE, preon__fruits_delete),
    PREON_ROUTE("/openapi", PREON_M_GET, preon__openapi_get),
};
const size_t preon_nroutes = sizeof(preon_routes) / sizeof(preon_routes[0]);

/* Finds the route of `req` in `routes` (or, if none there, in the mounted module's) and answers through it (or 404,
 * 405); returns the route id for the server's counters: an index into preon_routes, preon_nroutes + an index into the
 * module's routes, or the count of both for none. */
static size_t route(h2o_req_t *req, const preon_route_t *module, size_t nmodule)
{
    preon_match_t m;
    h2o_iovec_t path = req->path_normalized;
    int rv = preon_router_match(preon_routes, preon_nroutes, req->method.base, req->method.len, path.base, path.len, &m);
    size_t base = 0;
    if (rv == PREON_ENOTFOUND && nmodule != 0) {
        rv = preon_router_match(module, nmodule, req->method.base, req->method.len, path.base, path.len, &m);
        base = preon_nroutes;
    }
    switch (rv) {
    case 0:
        m.route->handler(req, m.param);
        return base + (size_t)(m.route - (base ? module : preon_routes));
    case PREON_EMETHOD:
        preon_reply_method_not_allowed(req, m.allow);
        break;
    default:
        preon_reply_error(req, preon_err_http_status(PREON_ENOTFOUND), "no such resource");
        break;
    }
    return preon_nroutes + nmodule;
}

static size_t handle_api(h2o_req_t *req)
{
    return route(req, NULL, 0);
}

static size_t handle_all(h2o_req_t *req)
{
    return route(req, preon_tfb_routes, preon_tfb_nroutes);
}

static const char *route_label(size_t route)
{
    return route < preon_nroutes ? preon_routes[route].pattern : preon_tfb_routes[route - preon_nroutes].pattern;
}

static int init_api(const preon_config_t *cfg, char *err, size_t errlen)
{
    (void)cfg, (void)err, (void)errlen;
    return 0;
}

static int init_all(const preon_config_t *cfg, char *err, size_t errlen)
{
    (void)cfg;
    return preon__fortunes_init(err, errlen);
}

static void dispose_api(void) {}

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

/* The service's own API alone. */
static const preon_service_t api = {
    .statements = preon_statements,
    .nstatements = PREON_STMT__API_COUNT,
    .nroutes = sizeof(preon_routes) / sizeof(preon_routes[0]),
    .route_label = route_label,
    .init = init_api,
    .thread_init = thread_init,
    .handle = handle_api,
    .thread_dispose = thread_dispose,
    .dispose = dispose_api,
};

/* The API with TechEmpower's module mounted. */
static const preon_service_t all = {
    .statements = preon_statements,
    .nstatements = PREON_STMT__COUNT,
    .nroutes = sizeof(preon_routes) / sizeof(preon_routes[0]) + PREON_TFB_NROUTES,
    .route_label = route_label,
    .init = init_all,
    .thread_init = thread_init,
    .handle = handle_all,
    .thread_dispose = thread_dispose,
    .dispose = preon__fortunes_dispose,
};

const preon_service_t *preon_app(const preon_config_t *cfg)
{
    return cfg->modules.techempower ? &all : &api;
}
