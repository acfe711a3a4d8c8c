/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>
#include "preon/metrics.h"
#include "preon/errors.h"
#include "preon/router.h"

/* The one list of methods preon knows: PREON_M_* is 1 << the index here, and the counters use the index. */
static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
#define NMETHODS (sizeof(methods) / sizeof(methods[0]))
_Static_assert(NMETHODS + 1 == PREON_METHODS, "the counters have one more slot, for any other method");
_Static_assert(PREON_M_OPTIONS == 1u << (NMETHODS - 1), "PREON_M_* follow the list");

unsigned preon_method_index(const char *method, size_t len)
{
    for (unsigned i = 0; i < NMETHODS; i++)
        if (strlen(methods[i]) == len && memcmp(methods[i], method, len) == 0)
            return i;
    return NMETHODS;
}

const char *preon_method_name(unsigned index)
{
    return index < NMETHODS ? methods[index] : "other";
}

unsigned preon_method_bit(const char *method, size_t len)
{
    unsigned i = preon_method_index(method, len);
    return i < NMETHODS ? 1u << i : 0;
}

/* Matches `path` against a route's pattern; a trailing "{name}" takes the rest of the path if it holds no '/'. A
 * pattern without one is told apart by its length first: most routes cost a comparison of two numbers. */
static int path_matches(const preon_route_t *r, const char *path, size_t plen, h2o_iovec_t *param)
{
    if (r->len == 0 || r->pattern[r->len - 1] != '}') {
        *param = h2o_iovec_init(NULL, 0);
        return plen == r->len && memcmp(r->pattern, path, plen) == 0;
    }
    size_t fixed = (size_t)(strchr(r->pattern, '{') - r->pattern);
    if (plen < fixed || memcmp(r->pattern, path, fixed) != 0 || memchr(path + fixed, '/', plen - fixed) != NULL)
        return 0;
    *param = h2o_iovec_init(path + fixed, plen - fixed);
    return 1;
}

int preon_router_match(const preon_route_t *routes, size_t n, const char *method, size_t mlen, const char *path, size_t plen,
                       preon_match_t *m)
{
    unsigned bit = preon_method_bit(method, mlen);
    memset(m, 0, sizeof(*m));
    m->err = PREON_ENOTFOUND;
    for (size_t i = 0; i < n; i++) {
        h2o_iovec_t param;
        if (!path_matches(&routes[i], path, plen, &param))
            continue;
        unsigned allowed = routes[i].methods;
        if (allowed & PREON_M_GET)
            allowed |= PREON_M_HEAD;
        if (bit != 0 && (allowed & bit) != 0) {
            m->err = 0;
            m->route = &routes[i];
            m->param = param;
            return 0;
        }
        m->err = PREON_EMETHOD;
        m->allow |= allowed;
    }
    return m->err;
}

size_t preon_router_allow(unsigned allow, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NMETHODS; i++) {
        if ((allow & (1u << i)) == 0)
            continue;
        int w = snprintf(buf + n, len - n, "%s%s", n == 0 ? "" : ", ", methods[i]);
        if (w < 0 || (size_t)w >= len - n)
            break;
        n += w;
    }
    return n;
}
