/* SPDX-License-Identifier: MIT */
#ifndef PREON_REPLY_H
#define PREON_REPLY_H

#include <h2o.h>
#include <jansson.h>

/* Helpers that answer a request; each sets status, Content-Type and Content-Length, and sends the body. */

/** Sends `value` (borrowed) as compact JSON with `status`. */
void preon_reply_json(h2o_req_t *req, int status, json_t *value);

/** Sends {"error": message, "status": status}. For 503 it adds Retry-After: 1. `message` is copied. */
void preon_reply_error(h2o_req_t *req, int status, const char *message);

/** Sends the error a preon error code maps to (PREON_ETIMEDOUT → 504, ...), with its message. */
void preon_reply_errno(h2o_req_t *req, int err);

/** Sends `status` with no body and no Content-Length (for 204). */
void preon_reply_empty(h2o_req_t *req, int status);

/** Answers 405 with an Allow header listing `allow` (PREON_M_* bits). */
void preon_reply_method_not_allowed(h2o_req_t *req, unsigned allow);

/** Sends `body` (static or pool memory) with the given Content-Type. */
void preon_reply_text(h2o_req_t *req, int status, const char *content_type, size_t ctlen, const char *body, size_t len);

#endif
