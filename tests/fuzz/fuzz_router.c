/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the router, on any method and path. A match must name a route of the table whose method
 * bits allow the method; a 405 must offer a non-empty Allow. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "handlers.h"
#include "preon/errors.h"
#include "preon/router.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data, *space = memchr(s, ' ', size);
    size_t mlen = space != NULL ? (size_t)(space - s) : 0;
    const char *path = space != NULL ? space + 1 : s;
    size_t plen = size - (space != NULL ? mlen + 1 : 0);
    preon_match_t m;
    int status = preon_router_match(preon_routes, preon_nroutes, s, mlen, path, plen, &m);
    if (status == 0) {
        unsigned bit = preon_method_bit(s, mlen), allowed = m.route->methods;
        if (allowed & PREON_M_GET)
            allowed |= PREON_M_HEAD;
        if (m.route < preon_routes || m.route >= preon_routes + preon_nroutes || (allowed & bit) == 0)
            __builtin_trap();
    } else if (status == PREON_EMETHOD) {
        char allow[64];
        if (preon_router_allow(m.allow, allow, sizeof(allow)) == 0)
            __builtin_trap();
    } else if (status != PREON_ENOTFOUND) {
        __builtin_trap();
    }
    return 0;
}
