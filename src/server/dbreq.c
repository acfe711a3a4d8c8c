/* SPDX-License-Identifier: MIT */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "preon/alloc.h"
#include "preon/assert.h"
#include "preon/errors.h"
#include "preon/reply.h"
#include "preon/dbreq.h"
#include "preon/service.h"
#include "thread.h"

/*
 * The server's request context for a handler that waits on the database (include/preon/service.h): the glue between
 * one HTTP request and its queries, the request's deadline and the thread's count of requests in flight, which the
 * drain waits on. The dbreq is malloc'd, because it must outlive the
 * request if the client goes away while queries are in flight; a small guard in the request's pool notices that
 * (its dispose hook runs when the pool is cleared) and unhooks the request, so that nothing is written to freed
 * memory. The dbreq frees itself when its last query has called back.
 */
typedef struct {
    preon_dbreq_t *r;
} guard_t;

typedef struct {
    preon_db_query_t q; /* first: the db callbacks get &slot->q */
    preon_dbreq_t *owner;
    size_t index;
    int done;      /* its callback has run */
    char *params;  /* the parameters' text when it does not fit in `text` (one malloc); else NULL */
    char text[24]; /* short parameters (ids, numbers: /queries=500 needs no malloc for them) */
} slot_t;

struct st_preon_dbreq_t {
    h2o_req_t *req; /* NULL once the request is gone, or answered early (request timeout) */
    guard_t *guard;
    preon_thread_t *thr;
    h2o_timeout_entry_t deadline; /* server.request_timeout_ms */
    const preon_dbreq_ops_t *ops;
    size_t n, pending;
    int continued; /* a later step of a request (preon_dbreq_continue): already let in */
    int fail_err;  /* 0, or the error to answer with (its status: errors.h) */
    char fail_message[256];
    void *data;
    slot_t slots[];
};
/* preon_dbreq_create zeroes the fields before fail_message, which is all of them but the text and the arrays */
_Static_assert(offsetof(preon_dbreq_t, fail_message) > offsetof(preon_dbreq_t, fail_err) &&
                   offsetof(preon_dbreq_t, data) > offsetof(preon_dbreq_t, fail_message),
               "preon_dbreq_create's memset covers every scalar field");

/* The request no longer needs the queries that have not been sent (answered already, or the client is gone): they
 * are taken back, so that the database never works for an answer already given. Those already sent run to their end
 * (libpq 15 cannot cancel one without blocking); their results are dropped. */
static void cancel_unsent(preon_dbreq_t *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (!r->slots[i].done)
            (void)preon_db_cancel(&r->slots[i].q); /* PREON_EBUSY: sent, its callback comes with the answer */
}

static void on_guard_dispose(void *_guard)
{
    guard_t *g = _guard;
    if (g->r != NULL) {
        g->r->req = NULL;
        cancel_unsent(g->r);
    }
}

preon_dbreq_t *preon_dbreq_create(h2o_req_t *req, size_t n, size_t datasize, const preon_dbreq_ops_t *ops)
{
    PREON_ASSERT(n >= 1 && n <= PREON_DBREQ_MAX); /* preon_dbreq_run fills a stack array of PREON_DBREQ_MAX */
    /* Not calloc: a slot is ~190 bytes and preon_dbreq_set fills it; only what is read before that is set here. */
    preon_dbreq_t *r = preon_malloc(sizeof(*r) + n * sizeof(slot_t) + datasize);
    memset(r, 0, offsetof(preon_dbreq_t, fail_message));
    r->fail_message[0] = '\0';
    r->req = req;
    r->thr = preon__thread_of(req);
    r->ops = ops;
    r->n = n;
    for (size_t i = 0; i < n; i++) {
        r->slots[i].params = NULL;
        r->slots[i].done = 1; /* until set: nothing to cancel */
        r->slots[i].q._state = 0;
    }
    r->data = (char *)(r->slots + n);
    memset(r->data, 0, datasize);
    return r;
}

void *preon_dbreq_data(preon_dbreq_t *r)
{
    return r->data;
}

h2o_req_t *preon_dbreq_req(preon_dbreq_t *r)
{
    return r->req;
}

void *preon_dbreq_state(preon_dbreq_t *r)
{
    return r->thr->app;
}

static void on_result(preon_db_query_t *q, const preon_db_result_t *res);
static void on_error(preon_db_query_t *q, int err, const char *detail);

static void on_deadline(h2o_timeout_entry_t *entry);

void preon_dbreq_continue(preon_dbreq_t *next, preon_dbreq_t *prev)
{
    next->continued = 1;
    /* The second step keeps the request's deadline: its entry takes the first step's place in the timeout list
     * (same registration time, same position, so the list stays in order), instead of a fresh request_timeout_ms. */
    if (h2o_timeout_is_linked(&prev->deadline)) {
        next->deadline.cb = on_deadline;
        next->deadline.registered_at = prev->deadline.registered_at;
        h2o_linklist_insert(&prev->deadline._link, &next->deadline._link);
        h2o_timeout_unlink(&prev->deadline);
    }
}

void preon_dbreq_set(preon_dbreq_t *r, size_t i, unsigned stmt, unsigned flags, int nparams, const char *const *params)
{
    PREON_ASSERT(i < r->n && nparams >= 0 && nparams <= PREON_DB_MAX_PARAMS);
    slot_t *s = &r->slots[i];
    size_t total = 0;
    for (int k = 0; k < nparams; k++)
        total += strlen(params[k]) + 1;
    s->owner = r;
    s->index = i;
    s->done = 0;
    s->q.stmt = stmt;
    s->q.flags = flags;
    s->q.nparams = nparams;
    s->q.on_result = on_result;
    s->q.on_error = on_error;
    free(s->params);
    s->params = total > sizeof(s->text) ? preon_malloc(total) : NULL;
    char *p = s->params != NULL ? s->params : s->text;
    for (int k = 0; k < nparams && k < PREON_DB_MAX_PARAMS; k++) {
        size_t len = strlen(params[k]) + 1;
        memcpy(p, params[k], len);
        s->q.params[k] = p;
        p += len;
    }
}

static void destroy(preon_dbreq_t *r)
{
    if (h2o_timeout_is_linked(&r->deadline))
        h2o_timeout_unlink(&r->deadline);
    if (r->ops->dispose != NULL)
        r->ops->dispose(r);
    for (size_t i = 0; i < r->n; i++)
        free(r->slots[i].params);
    free(r);
}

/* The last callback: answer (if the client is still there) and free. */
static void answer_and_free(preon_dbreq_t *r)
{
    h2o_req_t *req = r->req;
    if (req != NULL) {
        r->guard->r = NULL;
        if (r->fail_err != 0) {
            if (r->fail_err == PREON_ESHUTDOWN)
                req->http1_is_persistent = 0; /* the instance is going away: the next request belongs elsewhere */
            preon_reply_error(req, preon_err_http_status(r->fail_err), r->fail_message);
        } else {
            r->ops->on_done(r, req);
        }
    }
    PREON_ASSERT(r->thr->pending > 0);
    r->thr->pending--;
    destroy(r);
}

void preon_dbreq_fail(preon_dbreq_t *r, int err, const char *message)
{
    if (r->fail_err == 0) {
        r->fail_err = err;
        snprintf(r->fail_message, sizeof(r->fail_message), "%s", message);
    }
}

static void on_result(preon_db_query_t *q, const preon_db_result_t *res)
{
    slot_t *s = (slot_t *)q;
    preon_dbreq_t *r = s->owner;
    s->done = 1;
    if (r->req != NULL && r->fail_err == 0)
        r->ops->on_result(r, s->index, res);
    else if ((q->flags & PREON_DB_WRITE) && r->fail_err != 0 && preon_err_http_status(r->fail_err) == 503) {
        /* Another part of the request was refused as not sent, but this write committed: no "nothing happened". */
        r->fail_err = PREON_ECONNLOST; /* 502: "may or may not have committed" is the closest this table has */
        snprintf(r->fail_message, sizeof(r->fail_message), "part of the request failed after a write had committed");
    }
    PREON_ASSERT(r->pending > 0);
    if (--r->pending == 0)
        answer_and_free(r);
}

static void on_error(preon_db_query_t *q, int err, const char *detail)
{
    slot_t *s = (slot_t *)q;
    preon_dbreq_t *r = s->owner;
    s->done = 1;
    if (r->fail_err == 0 && err != PREON_ECANCELED) {
        /* A database error says what the database said (its primary message: no SQL text, no stack). */
        char msg[256];
        if ((err == PREON_EDB || err == PREON_ECONFLICT || err == PREON_ERETRY) && detail != NULL)
            snprintf(msg, sizeof(msg), "%s: %s", preon_strerror(err), detail);
        else
            snprintf(msg, sizeof(msg), "%s", preon_strerror(err));
        preon_dbreq_fail(r, err, msg);
        cancel_unsent(r); /* the answer is decided: the rest of its work is not needed */
    }
    PREON_ASSERT(r->pending > 0);
    if (--r->pending == 0)
        answer_and_free(r);
}

/* server.request_timeout_ms passed with queries still out: answer 504 now and drop their results later. */
static void on_deadline(h2o_timeout_entry_t *entry)
{
    preon_dbreq_t *r = H2O_STRUCT_FROM_MEMBER(preon_dbreq_t, deadline, entry);
    h2o_req_t *req = r->req;
    if (req == NULL)
        return;
    r->guard->r = NULL;
    r->req = NULL;
    preon_reply_error(req, 504, "request timed out waiting for the database");
    cancel_unsent(r);
}

/* A request that only reads goes to database.read_url's pool when there is one; anything that writes, to the primary. */
static preon_db_pool_t *pool_for(const preon_dbreq_t *r)
{
    if (r->thr->db_read == NULL)
        return r->thr->db;
    for (size_t i = 0; i < r->n; i++)
        if (r->slots[i].q.flags & PREON_DB_WRITE)
            return r->thr->db;
    return r->thr->db_read;
}

void preon_dbreq_run(preon_dbreq_t *r)
{
    preon_db_query_t *qs[PREON_DBREQ_MAX];
    for (size_t i = 0; i < r->n; i++) {
        qs[i] = &r->slots[i].q;
        if (r->continued)
            qs[i]->flags |= PREON_DB_ADMITTED; /* the request was judged at its first step */
    }
    const preon_config_t *cfg = r->thr->cfg;
    int sync = r->ops->syncs == PREON_DBREQ_SYNCS_STRICT ? cfg->database.strict_sync : cfg->database.sync;
    preon_db_pool_t *pool = pool_for(r);
    int rv = preon_db_submit(pool, qs, r->n, sync);
    if (rv == PREON_ENOTCONN && pool != r->thr->db)
        rv = preon_db_submit(r->thr->db, qs, r->n, sync); /* no standby connection is ready: the primary answers */
    if (rv != 0) {
        preon_reply_errno(r->req, rv);
        destroy(r);
        return;
    }
    r->pending = r->n;
    r->thr->pending++;
    r->guard = h2o_mem_alloc_shared(&r->req->pool, sizeof(guard_t), on_guard_dispose);
    r->guard->r = r;
    if (!h2o_timeout_is_linked(&r->deadline)) {
        r->deadline.cb = on_deadline;
        h2o_timeout_link(r->thr->loop, &r->thr->request_timeout, &r->deadline);
    }
}

void preon_dbreq_run_one(h2o_req_t *req, unsigned stmt, int nparams, const char *const *params, size_t datasize,
                         const preon_dbreq_ops_t *ops)
{
    preon_dbreq_t *r = preon_dbreq_create(req, 1, datasize, ops);
    preon_dbreq_set(r, 0, stmt, 0, nparams, params);
    preon_dbreq_run(r);
}
