/* SPDX-License-Identifier: MIT */
#include <string.h>
#include "preon/errors.h"
#include "preon/json.h"
#include "preon/reply.h"
#include "preon/router.h"

static const char *reason_of(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 204:
        return "No Content";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 413:
        return "Payload Too Large";
    case 414:
        return "URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return status < 500 ? "Error" : "Internal Server Error";
    }
}

/*
 * The head's Server and Content-Length, written by preon, not by h2o. h2o 2.2.5 formats both with sprintf into its
 * HTTP/1 head ("Content-Length: %zu" when res.content_length is set, "Server: %s" when the server has a name): about
 * 1,000 of the 7,600 instructions of a /plaintext answer. As ordinary headers they are copied as they are, the same
 * bytes on the wire. So the server has no name in h2o's configuration (server.c), and res.content_length stays
 * unknown: no chunked encoder is registered (server.c), so h2o sends the body as it is, behind the header set here.
 */
static void add_head(h2o_req_t *req, size_t len, int with_length)
{
    /* no version, as nginx's server_tokens off: `preon --version` and the start-up line say it */
    static const char server[] = "preon";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_SERVER, NULL, server, sizeof(server) - 1);
    if (with_length) {
        char *buf = h2o_mem_alloc_pool(&req->pool, 24);
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_LENGTH, NULL, buf, preon_format_int(buf, (long long)len));
    }
}

void preon_reply_text(h2o_req_t *req, int status, const char *content_type, size_t ctlen, const char *body, size_t len)
{
    req->res.status = status;
    req->res.reason = reason_of(status);
    add_head(req, len, 1);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, content_type, ctlen);
    h2o_send_inline(req, body, len);
}

void preon_reply_json(h2o_req_t *req, int status, json_t *value)
{
    h2o_iovec_t body = preon_json_dump(value, &req->pool);
    if (body.base == NULL) {
        preon_reply_error(req, 500, "response could not be encoded");
        return;
    }
    preon_reply_text(req, status, H2O_STRLIT("application/json"), body.base, body.len);
}

void preon_reply_error(h2o_req_t *req, int status, const char *message)
{
    if (status == 503)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("1"));
    preon_sink_t body;
    preon_sink_init(&body, &req->pool, 128);
    preon_json_error(&body, status, message);
    preon_reply_text(req, status, H2O_STRLIT("application/json"), body.buf, body.len);
}

void preon_reply_errno(h2o_req_t *req, int err)
{
    if (err == PREON_ESHUTDOWN)
        req->http1_is_persistent = 0; /* this instance is going away: the client's next request belongs elsewhere */
    preon_reply_error(req, preon_err_http_status(err), preon_strerror(err));
}

void preon_reply_method_not_allowed(h2o_req_t *req, unsigned allow)
{
    char buf[64];
    size_t n = preon_router_allow(allow, buf, sizeof(buf));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, h2o_strdup(&req->pool, buf, n).base, n);
    preon_reply_errno(req, PREON_EMETHOD);
}

void preon_reply_empty(h2o_req_t *req, int status)
{
    req->res.status = status;
    req->res.reason = reason_of(status);
    /* 1xx, 204 and 304 carry no Content-Length (RFC 9110 8.6); any other empty answer says 0 */
    add_head(req, 0, !(status < 200 || status == 204 || status == 304));
    h2o_send_inline(req, "", 0);
}
