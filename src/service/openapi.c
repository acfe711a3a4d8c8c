/* SPDX-License-Identifier: MIT */
#include "handlers.h"
#include "preon/reply.h"

extern const char preon_openapi[];
extern const size_t preon_openapi_len;

/* GET /openapi: docs/openapi.json, the API's OpenAPI 3.1 document, as built into the binary. */
void preon__openapi_get(h2o_req_t *req, h2o_iovec_t param)
{
    (void)param;
    preon_reply_text(req, 200, H2O_STRLIT("application/json"), preon_openapi, preon_openapi_len);
}
