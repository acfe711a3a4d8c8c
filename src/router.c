/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>
#include "preon/router.h"

static const struct {
    const char *name;
    unsigned bit;
} methods[] = {{"GET", PREON_M_GET},       {"HEAD", PREON_M_HEAD},   {"POST", PREON_M_POST},      {"PUT", PREON_M_PUT},
               {"DELETE", PREON_M_DELETE}, {"PATCH", PREON_M_PATCH}, {"OPTIONS", PREON_M_OPTIONS}};

unsigned preon_method_bit(const char *method, size_t len)
{
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (strlen(methods[i].name) == len && memcmp(methods[i].name, method, len) == 0)
            return methods[i].bit;
    return 0;
}

/* Matches `path` against a pattern; a trailing "{name}" takes the rest of the path if it holds no '/'. */
static int path_matches(const char *pattern, const char *path, size_t plen, h2o_iovec_t *param)
{
    const char *brace = strchr(pattern, '{');
    size_t fixed = brace != NULL ? (size_t)(brace - pattern) : strlen(pattern);
    if (brace == NULL) {
        *param = h2o_iovec_init(NULL, 0);
        return plen == fixed && memcmp(pattern, path, plen) == 0;
    }
    if (plen < fixed || memcmp(pattern, path, fixed) != 0)
        return 0;
    if (memchr(path + fixed, '/', plen - fixed) != NULL)
        return 0;
    *param = h2o_iovec_init(path + fixed, plen - fixed);
    return 1;
}

int preon_router_match(const preon_route_t *routes, size_t n, const char *method, size_t mlen, const char *path, size_t plen,
                       preon_match_t *m)
{
    unsigned bit = preon_method_bit(method, mlen);
    memset(m, 0, sizeof(*m));
    m->status = 404;
    for (size_t i = 0; i < n; i++) {
        h2o_iovec_t param;
        if (!path_matches(routes[i].pattern, path, plen, &param))
            continue;
        unsigned allowed = routes[i].methods;
        if (allowed & PREON_M_GET)
            allowed |= PREON_M_HEAD;
        if (bit != 0 && (allowed & bit) != 0) {
            m->status = 0;
            m->route = &routes[i];
            m->param = param;
            return 0;
        }
        m->status = 405;
        m->allow |= allowed;
    }
    return m->status;
}

size_t preon_router_allow(unsigned allow, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        if ((allow & methods[i].bit) == 0)
            continue;
        int w = snprintf(buf + n, len - n, "%s%s", n == 0 ? "" : ", ", methods[i].name);
        if (w < 0 || (size_t)w >= len - n)
            break;
        n += w;
    }
    return n;
}
