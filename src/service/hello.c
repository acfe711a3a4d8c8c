/* SPDX-License-Identifier: MIT */
#include "handlers.h"
#include "preon/reply.h"

/* GET /hello: the 5-byte answer the published Quarkus and Spring services give. */
void preon__hello_get(h2o_req_t *req, h2o_iovec_t param)
{
    (void)param;
    preon_reply_text(req, 200, H2O_STRLIT("text/plain;charset=UTF-8"), H2O_STRLIT("Hello"));
}
