/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the parsers of request input: the {id} segment, query parameters, the Content-Type check
 * and the fruit body (JSON) validator. Also checks their contracts, not only that they do not crash. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "body.h"
#include "params.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    char why[64], msg0[96];
    int32_t id = -1;
    if (preon__parse_id(s, size, &id, why, sizeof(why)) == 0 && (id < 1))
        __builtin_trap();
    int n = preon__query_int_clamped(s, size, "queries", 1, 500);
    if (n < 1 || n > 500)
        __builtin_trap();
    preon_page_t page = {-1, -1};
    if (preon__query_page(s, size, &page, msg0, sizeof(msg0)) == 0 &&
        (page.after < 0 || page.limit < 1 || page.limit > PREON_PAGE_MAX_LIMIT))
        __builtin_trap();
    (void)preon__is_json_media_type(s, size);
    json_t *doc = NULL;
    const char *name;
    size_t len;
    char msg[256];
    if (preon__fruit_body_parse(s, size, &doc, &name, &len, msg, sizeof(msg)) == 0) {
        if (doc == NULL || len == 0 || memchr(name, '\0', len) != NULL)
            __builtin_trap();
        json_decref(doc);
    } else if (doc != NULL) {
        __builtin_trap();
    }
    return 0;
}
