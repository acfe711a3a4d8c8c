/* SPDX-License-Identifier: MIT */
#ifndef PREON_ROUTER_H
#define PREON_ROUTER_H

#include <h2o.h>

/* Method bits; a route that allows GET also allows HEAD. */
#define PREON_M_GET 0x01u
#define PREON_M_HEAD 0x02u
#define PREON_M_POST 0x04u
#define PREON_M_PUT 0x08u
#define PREON_M_DELETE 0x10u
#define PREON_M_PATCH 0x20u
#define PREON_M_OPTIONS 0x40u

/**
 * A request handler: it answers `req`, now or later from a callback (on the request's loop thread). `param` is
 * the path segment that matched the route's "{…}" (empty when it has none; it points into the request).
 */
typedef void (*preon_handler_fn)(h2o_req_t *req, h2o_iovec_t param);

typedef struct st_preon_route_t {
    const char *pattern; /* "/hello", or "/fruits/{id}": a trailing "{…}" matches one non-empty-or-empty segment */
    size_t len;          /* strlen(pattern): PREON_ROUTE sets it */
    unsigned methods;    /* PREON_M_* */
    preon_handler_fn handler;
} preon_route_t;

/** A route table entry from a string literal pattern, its length counted by the compiler. */
#define PREON_ROUTE(pattern, methods, handler)                                                                                     \
    {                                                                                                                              \
        (pattern), sizeof(pattern) - 1, (methods), (handler)                                                                       \
    }

typedef struct st_preon_match_t {
    int err;                    /* 0: call route->handler; PREON_ENOTFOUND: no route has this path; PREON_EMETHOD: the path
                                   is known, the method not */
    const preon_route_t *route; /* when err is 0 */
    h2o_iovec_t param;          /* when err is 0 */
    unsigned allow;             /* when err is PREON_EMETHOD: the methods the path allows */
} preon_match_t;

/** Returns the PREON_M_* bit of a method name, or 0 for a method preon does not know. */
unsigned preon_method_bit(const char *method, size_t len);

/** Index of a method for the counters: log2 of its PREON_M_* bit, or PREON_METHODS - 1 for any other. */
unsigned preon_method_index(const char *method, size_t len);

/** The name of a method index ("other" for PREON_METHODS - 1). */
const char *preon_method_name(unsigned index);

/**
 * Finds the route for (method, path) in `routes` (`n` entries, earlier ones win). `path` excludes the query
 * string. Fills `*m` and returns m->err. Pure: no allocation, callable from any thread.
 */
int preon_router_match(const preon_route_t *routes, size_t n, const char *method, size_t mlen, const char *path, size_t plen,
                       preon_match_t *m);

/** Writes the Allow header value for `methods` ("GET, HEAD, POST") into `buf`; returns its length. */
size_t preon_router_allow(unsigned methods, char *buf, size_t len);

#endif
