/* SPDX-License-Identifier: MIT */
#include "handlers.h"

/*
 * TechEmpower's test types as a module the configuration mounts (modules.techempower, on by default): these routes
 * and the World and Fortune statements (the last rows of routes.c's table). Unmounted, the paths answer 404 and no
 * connection prepares the statements. The handlers are in tfb.c and fortunes.c.
 */
const preon_route_t preon_tfb_routes[PREON_TFB_NROUTES] = {
    PREON_ROUTE("/plaintext", PREON_M_GET, preon__tfb_plaintext),
    PREON_ROUTE("/json", PREON_M_GET, preon__tfb_json),
    PREON_ROUTE("/db", PREON_M_GET, preon__tfb_db),
    PREON_ROUTE("/queries", PREON_M_GET, preon__tfb_queries),
    PREON_ROUTE("/updates", PREON_M_GET, preon__tfb_updates),
    PREON_ROUTE("/cached-queries", PREON_M_GET, preon__tfb_cached_queries),
    PREON_ROUTE("/fortunes", PREON_M_GET, preon__tfb_fortunes),
};
const size_t preon_tfb_nroutes = PREON_TFB_NROUTES;
