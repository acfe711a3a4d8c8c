/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include "preon/app.h"
#include "preon/observe.h"
#include "preon/reply.h"

const preon_db_statement_t preon_statements[PREON_STMT__COUNT] = {
    [PREON_STMT_FRUITS_ALL] = {"fruits_all", "SELECT id, name FROM fruits ORDER BY id", 0},
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
    {"/hello", PREON_M_GET, preon_hello_get},
    {"/fruits", PREON_M_GET, preon_fruits_list},
    {"/fruits", PREON_M_POST, preon_fruits_create},
    {"/fruits/{id}", PREON_M_GET, preon_fruits_get},
    {"/fruits/{id}", PREON_M_PUT, preon_fruits_update},
    {"/fruits/{id}", PREON_M_DELETE, preon_fruits_delete},
    {"/plaintext", PREON_M_GET, preon_tfb_plaintext},
    {"/json", PREON_M_GET, preon_tfb_json},
    {"/db", PREON_M_GET, preon_tfb_db},
    {"/queries", PREON_M_GET, preon_tfb_queries},
    {"/updates", PREON_M_GET, preon_tfb_updates},
    {"/cached-queries", PREON_M_GET, preon_tfb_cached_queries},
    {"/fortunes", PREON_M_GET, preon_tfb_fortunes},
};
const size_t preon_nroutes = sizeof(preon_routes) / sizeof(preon_routes[0]);

void preon_app_thread_dispose(preon_thread_t *thr)
{
    free(thr->world_cache);
    thr->world_cache = NULL;
}

/* The health and metrics paths (PREON_ROUTE_LIVE, _READY, _METRICS), or PREON_ROUTE__EXTRA for none of them. */
static unsigned builtin_route(const preon_config_t *cfg, h2o_iovec_t path)
{
    if (h2o_memis(path.base, path.len, cfg->health.live_path, strlen(cfg->health.live_path)))
        return PREON_ROUTE_LIVE;
    if (h2o_memis(path.base, path.len, cfg->health.ready_path, strlen(cfg->health.ready_path)))
        return PREON_ROUTE_READY;
    if (cfg->metrics.enabled && h2o_memis(path.base, path.len, cfg->metrics.path, strlen(cfg->metrics.path)))
        return PREON_ROUTE_METRICS;
    return PREON_ROUTE__EXTRA;
}

/* Which route `req` takes: an index into preon_routes (with `m` filled), or preon_nroutes + PREON_ROUTE_*.
 * `*status` is 0 for a route, else the status it is refused with (414, 404, 405). */
static unsigned classify(const preon_config_t *cfg, h2o_req_t *req, preon_match_t *m, int *status)
{
    h2o_iovec_t path = req->path_normalized;
    *status = 0;
    /* h2o itself lets a request line grow to about 400 KiB; nothing here needs more than a few hundred */
    if (req->path.len > (size_t)cfg->server.max_uri_bytes) {
        *status = 414;
        return (unsigned)preon_nroutes + PREON_ROUTE_UNMATCHED;
    }
    unsigned builtin = builtin_route(cfg, path);
    if (builtin != PREON_ROUTE__EXTRA) {
        /* read-only resources: GET and HEAD, as every other GET route */
        if ((preon_method_bit(req->method.base, req->method.len) & (PREON_M_GET | PREON_M_HEAD)) == 0) {
            *status = 405;
            m->allow = PREON_M_GET | PREON_M_HEAD;
        }
        return (unsigned)preon_nroutes + builtin;
    }
    if ((*status = preon_router_match(preon_routes, preon_nroutes, req->method.base, req->method.len, path.base, path.len, m)) == 0)
        return (unsigned)(m->route - preon_routes);
    return (unsigned)preon_nroutes + PREON_ROUTE_UNMATCHED;
}

unsigned preon_app_route_of(const preon_config_t *cfg, h2o_req_t *req)
{
    preon_match_t m;
    int status;
    return classify(cfg, req, &m, &status);
}

void preon_app_handle(preon_thread_t *thr, h2o_req_t *req)
{
    preon_match_t m;
    int status;
    /* During a drain the connection closes after this answer, so that clients move to another instance. */
    if (thr->draining)
        req->http1_is_persistent = 0;
    thr->last_request_ns = preon_now_ns();
    unsigned route = classify(thr->cfg, req, &m, &status);
    switch (status) {
    case 0:
        if (route < preon_nroutes)
            m.route->handler(req, m.param);
        else if (route == preon_nroutes + PREON_ROUTE_LIVE)
            preon_health_live_reply(req);
        else if (route == preon_nroutes + PREON_ROUTE_READY)
            preon_health_ready_reply(req);
        else
            preon_metrics_reply(req);
        break;
    case 414:
        preon_reply_error(req, 414, "URI too long");
        break;
    case 405: {
        char allow[64];
        size_t n = preon_router_allow(m.allow, allow, sizeof(allow));
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, h2o_strdup(&req->pool, allow, n).base, n);
        preon_reply_error(req, 405, "method not allowed");
        break;
    }
    default:
        preon_reply_error(req, 404, "no such resource");
        break;
    }
    /* Counted (and access-logged) once, whatever answered it and when: by the logger, when h2o disposes of it. */
}
