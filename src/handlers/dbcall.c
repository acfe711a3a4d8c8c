/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include "preon/app.h"
#include "preon/errors.h"
#include "preon/reply.h"

/*
 * The glue between one HTTP request and one database query. The query record is malloc'd, because it must
 * outlive the request if the client goes away while the query is in flight; a small guard in the request's
 * pool notices that (its dispose hook runs when the pool is cleared) and unhooks the request, so the result
 * is dropped instead of written to freed memory. Whichever side finishes last frees what is left.
 */
typedef struct st_call_t call_t;

typedef struct {
    call_t *call;
} guard_t;

struct st_call_t {
    preon_db_query_t q; /* first: callbacks get &call->q */
    h2o_req_t *req;     /* NULL once the request is gone */
    guard_t *guard;
    preon_thread_t *thr;
    preon_dbcall_cb on_rows;
    void *arg;
    char params[]; /* the parameters' text, copied */
};

static void on_guard_dispose(void *_guard)
{
    guard_t *g = _guard;
    if (g->call != NULL)
        g->call->req = NULL;
}

/* Detaches the call from its request and returns the request, or NULL if it is gone. */
static h2o_req_t *finish(call_t *call)
{
    h2o_req_t *req = call->req;
    call->thr->pending--;
    if (req != NULL)
        call->guard->call = NULL;
    return req;
}

static void on_result(preon_db_query_t *q, const preon_db_result_t *res)
{
    call_t *call = (call_t *)q;
    h2o_req_t *req = finish(call);
    if (req != NULL)
        call->on_rows(req, res, call->arg);
    free(call);
}

static void on_error(preon_db_query_t *q, int err, const char *detail)
{
    call_t *call = (call_t *)q;
    h2o_req_t *req = finish(call);
    if (req != NULL)
        preon_reply_errno(req, err, detail);
    free(call);
}

void preon_dbcall(h2o_req_t *req, unsigned stmt, int nparams, const char *const *params, preon_dbcall_cb on_rows, void *arg)
{
    preon_thread_t *thr = preon_thread_of(req);
    size_t total = 0;
    for (int i = 0; i < nparams; i++)
        total += strlen(params[i]) + 1;
    call_t *call = malloc(sizeof(*call) + total);
    if (call == NULL)
        abort();
    memset(&call->q, 0, sizeof(call->q));
    call->q.stmt = stmt;
    call->q.nparams = nparams;
    call->q.on_result = on_result;
    call->q.on_error = on_error;
    char *p = call->params;
    for (int i = 0; i < nparams && i < PREON_DB_MAX_PARAMS; i++) {
        size_t n = strlen(params[i]) + 1;
        memcpy(p, params[i], n);
        call->q.params[i] = p;
        p += n;
    }
    call->req = req;
    call->thr = thr;
    call->on_rows = on_rows;
    call->arg = arg;

    int rv = preon_db_submit(thr->db, &call->q);
    if (rv != 0) {
        free(call);
        preon_reply_errno(req, rv, NULL);
        return;
    }
    thr->pending++;
    call->guard = h2o_mem_alloc_shared(&req->pool, sizeof(guard_t), on_guard_dispose);
    call->guard->call = call;
}
