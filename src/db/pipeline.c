/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include "preon/alloc.h"
#include "preon/assert.h"
#include "internal.h"
#include "preon/errors.h"
#include "preon/log.h"

/*
 * The pipeline of a ready connection: queries written behind each other without waiting, a Sync after each segment
 * (one implicit transaction), results matched to their senders by a FIFO ring (libpq does not say which query a
 * result belongs to), each answer held until its Sync's (the COMMIT may still fail there), and the connection's
 * service time per query measured on the way. Trouble is returned to the caller (conn.c, pool.c), which fails the
 * connection: nothing here calls back up.
 */

int preon__db_conn_queue_sync(preon_db_conn_t *c)
{
#ifdef LIBPQ_HAS_SEND_PIPELINE_SYNC
    return PQsendPipelineSync(c->pg);
#else
    return PQpipelineSync(c->pg);
#endif
}

void preon__db_conn_push(preon_db_conn_t *c, entry_kind_t kind, unsigned stmt, preon_db_query_t *q)
{
    if (c->ring_count == c->ring_cap) {
        /* Grow and unwrap: the ring is at most a few thousand entries (database.max_queued bounds it). */
        ring_entry_t *nr = preon_malloc(c->ring_cap * 2 * sizeof(*nr));
        for (size_t i = 0; i < c->ring_count; i++)
            nr[i] = c->ring[(c->ring_head + i) % c->ring_cap];
        free(c->ring);
        c->ring = nr;
        c->ring_head = 0;
        c->ring_cap *= 2;
    }
    if (c->ring_count == 0) {
        c->head_since = preon__db_conn_now_ms(c);
        c->svc_mark = c->head_since; /* busy from now: a new service-time window */
        c->svc_k = c->svc_kw = 0;
    }
    ring_entry_t *e = &c->ring[(c->ring_head + c->ring_count++) % c->ring_cap];
    e->kind = kind;
    e->ends_send = 0;
    e->stmt = stmt;
    e->q = q;
}

/* Adds a window of `ms` busy time that answered `reads` reads and `writes` writes; older time fades beyond the
 * horizon, so that the estimate follows the database. */
static void svc_add(svc_t *v, double ms, unsigned reads, unsigned writes)
{
    double r = reads, w = writes;
    v->busy_ms += ms;
    v->reads += r;
    v->writes += w;
    v->rr += r * r;
    v->rw += r * w;
    v->ww += w * w;
    v->rt += r * ms;
    v->wt += w * ms;
    if (v->busy_ms > PREON_DB_SVC_HORIZON_MS) {
        double keep = PREON_DB_SVC_HORIZON_MS / v->busy_ms;
        v->busy_ms *= keep;
        v->reads *= keep;
        v->writes *= keep;
        v->rr *= keep;
        v->rw *= keep;
        v->ww *= keep;
        v->rt *= keep;
        v->wt *= keep;
    }
    v->ms = v->busy_ms / (v->reads + v->writes);
    v->n = v->n + reads + writes < v->n ? v->n : v->n + reads + writes;
    v->writes_n = v->writes_n + writes < v->writes_n ? v->writes_n : v->writes_n + writes;
}

/*
 * Closes the service-time window once it spans 10 ms of loop time or more, or when the connection goes idle. Only busy
 * time counts (the window opens when something is sent to an idle connection), so the estimate is what one more query
 * in the queue costs the requests behind it: the busy time over the queries answered in it (Little's law), over about
 * the last PREON_DB_SVC_HORIZON_MS of busy time.
 *
 * A ratio of sums, not an average of each window's time per query: a cold backend's first query, or a loop pass
 * that spent 25 ms accepting a burst's connections while the results waited in the socket, closes a window of one
 * query and 25 ms, followed by one of hundreds in a few ms. Averaged as rates, that one query made the estimate 25 ms
 * a query and shed most of a burst the database then served in a third of a second; as a ratio it weighs what it
 * is, one query among hundreds answered in 35 ms. And a window counts no longer than its 10 ms or four times what
 * its answers cost at the current estimate, whichever is more: a window much longer, with few answers, is an answer
 * (or the thread that reads it: a busy loop, a CPU quota's 100 ms throttle) late once, not the rate of the queries
 * behind it. Lateness is judged by the age of the oldest query instead (shed.c).
 *
 * Each window also counts its reads and writes apart, so that shed.c can price a write apart from a read: a write's
 * answer comes after its commit, which with synchronous_commit on waits for the WAL flush (preon__db_cost_ms).
 */
static void observe_service(preon_db_conn_t *c, int idle)
{
    uint64_t now = preon__db_conn_now_ms(c), dt = now - c->svc_mark;
    if (c->svc_k != 0 && (dt >= 10 || idle)) {
        unsigned writes = c->svc_kw, reads = c->svc_k - writes;
        double counted = (double)dt, most = 4 * preon__db_cost_ms(c, reads, writes);
        if (most < 10)
            most = 10;
        if (counted > most)
            counted = most; /* late once (above) */
        c->svc_busy_total += (uint64_t)counted;
        svc_add(&c->svc, counted, reads, writes);
    } else if (!idle) {
        return;
    }
    c->svc_mark = now;
    c->svc_k = c->svc_kw = 0;
}

static ring_entry_t pop(preon_db_conn_t *c)
{
    PREON_ASSERT(c->ring_count > 0);
    ring_entry_t e = c->ring[c->ring_head];
    c->ring_head = (c->ring_head + 1) % c->ring_cap;
    c->ring_count--;
    c->head_since = preon__db_conn_now_ms(c);
    if (c->ring_count == 0)
        observe_service(c, 1);
    return e;
}

uint64_t preon__db_conn_head_since(const preon_db_conn_t *c)
{
    return c->ring_count != 0 ? c->head_since : 0;
}

/* What an error result means for its request: SQLSTATE class 23 (integrity constraint violation) is the client's
 * conflict, a serialization failure or deadlock is worth repeating, anything else is a database fault. */
static int error_of(const PGresult *res)
{
    const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (state == NULL)
        return PREON_EDB;
    if (state[0] == '2' && state[1] == '3')
        return PREON_ECONFLICT;
    if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0)
        return PREON_ERETRY;
    return PREON_EDB;
}

static const char *message_of(const PGresult *res)
{
    const char *msg = res != NULL ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    return msg != NULL ? msg : res != NULL ? PQresultErrorMessage(res) : "no result";
}

/* The head entry's results are all in; takes `res`. */
static void complete_entry(preon_db_conn_t *c, ring_entry_t e, PGresult *res)
{
    ExecStatusType st = res != NULL ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (e.kind == ENTRY_PREPARE) {
        if (st != PGRES_COMMAND_OK) {
            const char *msg = res != NULL ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
            c->prepared[e.stmt] = 0;
            if (st != PGRES_PIPELINE_ABORTED) {
                snprintf(c->prepare_error, sizeof(c->prepare_error), "statement %s: %s", c->pool->stmts[e.stmt].name,
                         msg != NULL ? msg : "prepare failed");
                preon_log_warn("db %s#%u: %s", c->pool->tag, c->index, c->prepare_error);
            }
        }
        PQclear(res);
        return;
    }
    preon_db_query_t *q = e.q;
    PREON_ASSERT(e.kind == ENTRY_QUERY && q != NULL && c->nqueries > 0);
    c->nqueries--;
    c->svc_k++;
    if (q->flags & PREON_DB_WRITE) {
        c->nwrites--;
        c->svc_kw++;
    }
    observe_service(c, 0);
    int failed = st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK && st != PGRES_PIPELINE_ABORTED;
    if (failed && !c->seg.failed) {
        c->seg.failed = 1;
        c->seg.err = error_of(res);
        snprintf(c->seg.why, sizeof(c->seg.why), "%s", message_of(res));
        if (c->seg.err == PREON_EDB)
            preon_log_warn("db %s#%u: statement %s failed: %s", c->pool->tag, c->index, c->pool->stmts[q->stmt].name, c->seg.why);
    }
    /* A read that shared its Sync with other requests is sent once more on its own merits when it was not run
     * because a statement before it failed (maybe another request's), or when it was chosen as a deadlock victim
     * or failed to serialize: the locks its batch still held until the shared Sync may be what it waited on. */
    if ((q->flags & PREON_DB_SHARED) && !q->_resent &&
        (st == PGRES_PIPELINE_ABORTED || (failed && error_of(res) == PREON_ERETRY))) {
        PQclear(res);
        q->_resent = 1;
        c->owner->done(c->pool, q, PREON_DB_RESEND, NULL, NULL);
        return;
    }
    /* Its answer waits for the Sync: the COMMIT there may still fail. */
    PREON_ASSERT(q->_state == QUERY_SENT && q->_res == NULL);
    q->_res = res;
    q->_next = NULL;
    *c->done_tail = q;
    c->done_tail = &q->_next;
}

/*
 * The Sync was answered: the queries behind it are final. A failed COMMIT fails all of them (nothing they did
 * happened; a read under batch Syncs is sent once more on its own), a failed statement fails itself and the
 * writes beside it (rolled back with it), and everything else gets its rows.
 */
static void settle(preon_db_conn_t *c)
{
    preon_db_pool_t *pool = c->pool;
    /* Taken, then reset: the callbacks below may queue queries that start the next segment. Its message is copied
     * only when a statement failed: this runs at every Sync. */
    segment_t seg;
    seg.sync_err = c->seg.sync_err;
    seg.failed = c->seg.failed;
    seg.err = c->seg.err;
    if (seg.failed)
        memcpy(seg.why, c->seg.why, sizeof(seg.why));
    c->seg.sync_err = NULL;
    c->seg.sync_null_ok = c->seg.failed = c->seg.err = 0;
    PGresult *sync_err = seg.sync_err;
    /* Why an aborted query failed, copied (a callback below may change the connection) only when there is more to say
     * than the usual: this runs at every Sync. */
    char prepare_error[sizeof(c->prepare_error)];
    const char *aborted_why = "aborted by an earlier error in its pipeline";
    if (c->prepare_error[0] != '\0')
        aborted_why = memcpy(prepare_error, c->prepare_error, sizeof(prepare_error));
    preon_db_query_t *list = c->done_head;
    c->done_head = NULL;
    c->done_tail = &c->done_head;
    if (sync_err != NULL && error_of(sync_err) == PREON_EDB)
        preon_log_warn("db %s#%u: commit failed: %s", pool->tag, c->index, message_of(sync_err));

    while (list != NULL) {
        preon_db_query_t *q = list;
        list = q->_next;
        /* Every query on the done list was sent and has left the ring (it no longer counts in nqueries): the Sync just
         * answered is the one behind it. */
        PREON_ASSERT(q->_state == QUERY_SENT);
        PGresult *res = q->_res;
        q->_res = NULL;
        ExecStatusType st = PQresultStatus(res);
        int ok = st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK;
        if (ok && sync_err != NULL) {
            if ((q->flags & PREON_DB_SHARED) && !q->_resent) {
                q->_resent = 1;
                c->owner->done(pool, q, PREON_DB_RESEND, NULL, NULL);
            } else {
                c->owner->done(pool, q, error_of(sync_err), message_of(sync_err), NULL);
            }
        } else if (ok && seg.failed && (q->flags & PREON_DB_WRITE)) {
            c->owner->done(pool, q, seg.err, seg.why, NULL);
        } else if (ok) {
            c->owner->done(pool, q, 0, NULL, res);
        } else if (st == PGRES_PIPELINE_ABORTED) {
            c->owner->done(pool, q, PREON_EDB, aborted_why, NULL);
        } else {
            c->owner->done(pool, q, error_of(res), message_of(res), NULL);
        }
        PQclear(res);
    }
    if (sync_err != NULL)
        PQclear(sync_err);
}

int preon__db_conn_read_results(preon_db_conn_t *c, const char **why)
{
    while (c->pg != NULL && c->ring_count != 0 && !PQisBusy(c->pg)) {
        PGresult *r = PQgetResult(c->pg);
        if (PQstatus(c->pg) == CONNECTION_BAD) {
            /* libpq reports a broken connection as the head query's error: it is not that query's fault. */
            PQclear(r);
            *why = PQerrorMessage(c->pg);
            return PREON_ECONNLOST;
        }
        ring_entry_t *head = &c->ring[c->ring_head];
        if (head->kind == ENTRY_SYNC) {
            if (r == NULL) {
                if (c->seg.sync_null_ok) {
                    c->seg.sync_null_ok = 0;
                    continue;
                }
                *why = "pipeline out of step (no Sync result)";
                return PREON_ECONNLOST;
            }
            if (PQresultStatus(r) != PGRES_PIPELINE_SYNC) {
                /* An error at the Sync: the implicit COMMIT failed (a deferred constraint, a serialization
                 * failure). libpq ends it with a NULL, then the Sync's own result follows. */
                if (c->seg.sync_err == NULL)
                    c->seg.sync_err = r;
                else
                    PQclear(r);
                c->seg.sync_null_ok = 1;
                continue;
            }
            PQclear(r);
            PREON_ASSERT(c->cur == NULL); /* a statement's results end with a NULL before its segment's Sync */
            if (pop(c).ends_send) {
                PREON_ASSERT(c->sends_in_flight > 0);
                c->sends_in_flight--;
                /* what accumulated while the batches were out goes out at the end of this pass */
                if (c->unsent_head != NULL && preon__db_conn_may_send(c))
                    c->owner->arm_flush(c->pool);
            }
            settle(c);
            if (c->ring_count == 0)
                c->prepare_error[0] = '\0';
            continue;
        }
        if (r != NULL) {
            /* A statement yields one result; keep the first, drop any other until the terminating NULL. */
            if (c->cur == NULL)
                c->cur = r;
            else
                PQclear(r);
            continue;
        }
        PGresult *res = c->cur;
        c->cur = NULL;
        complete_entry(c, pop(c), res); /* takes res */
    }
    return 0;
}

int preon__db_conn_may_send(const preon_db_conn_t *c)
{
    unsigned depth = c->pool->settings.pipeline_depth;
    return depth == 0 || c->sends_in_flight < (unsigned)depth;
}

/* Writes a Sync and records it; 0, or PREON_ECONNLOST when libpq could not (the connection is broken). */
static int send_sync(preon_db_conn_t *c)
{
    if (!preon__db_conn_queue_sync(c))
        return PREON_ECONNLOST;
    preon__db_conn_push(c, ENTRY_SYNC, 0, NULL);
    return 0;
}

/*
 * Hands `q` to libpq (its Prepare first, if that failed before); 0, or PREON_ECONNLOST when libpq could not. Nothing is
 * recorded for `q` on failure: the caller keeps it on the unsent list, so that conn_fail answers it. Behind a
 * transaction pooler, its SQL goes out as an unnamed statement (Parse, Bind, Execute in one go), which lives only
 * until the next Sync and so never meets another client's statements on a shared server connection.
 */
static int send_query(preon_db_conn_t *c, preon_db_query_t *q)
{
    const preon_db_statement_t *st = &c->pool->stmts[q->stmt];
    if (c->pool->settings.unnamed_statements)
        return PQsendQueryParams(c->pg, st->sql, q->nparams, NULL, q->params, NULL, NULL, 0) ? 0 : PREON_ECONNLOST;
    if (!c->prepared[q->stmt]) {
        /* Its Prepare failed earlier (say the table was missing); try again, in the same pipeline. */
        if (!PQsendPrepare(c->pg, st->name, st->sql, st->nparams, NULL))
            return PREON_ECONNLOST;
        preon__db_conn_push(c, ENTRY_PREPARE, q->stmt, NULL);
        c->prepared[q->stmt] = 1;
    }
    return PQsendQueryPrepared(c->pg, st->name, q->nparams, q->params, NULL, NULL, 0) ? 0 : PREON_ECONNLOST;
}

int preon__db_conn_send_some(preon_db_conn_t *c, size_t cap)
{
    PREON_ASSERT(c->state == CONN_READY && c->pg != NULL);
    size_t before = c->ring_count, sent = 0;
    /* The batch's queries and Syncs are only queued in libpq: they leave in one write when the pass ends
     * (preon__db_conn_flush). */
    /* A Sync is owed for the queries written since the last one (the open segment); `open_shared` says whether
     * another request's shared read may still join it, `continues` whether the next query is the same request's
     * transaction, `same_request` whether it is the same request's at all (a batch ends only between requests). */
    int sync_owed = 0, open_shared = 0, continues = 0, same_request = 0;
    preon_db_query_t *q;
    while ((q = c->unsent_head) != NULL && (cap == 0 || sent < cap || same_request)) {
        /* on_flush takes canceled queries out before it sends, and nothing between can cancel one */
        PREON_ASSERT(q->_state == QUERY_UNSENT);
        /* A write, a read of sync: request or query, or a read sent again after a neighbour failed it, never
         * shares a Sync with another request: close the open segment before it, so it fails only on its own merits. */
        int shared = (q->flags & PREON_DB_SHARED) && !q->_resent;
        if (sync_owed && !continues && !(open_shared && shared)) {
            if (send_sync(c) != 0)
                goto Broken;
            sync_owed = 0;
        }
        /* q leaves the unsent list only once libpq has it: a failed write leaves it there for conn_fail (503: the
         * database never saw it), never in neither place. */
        if (send_query(c, q) != 0)
            goto Broken;
        if ((c->unsent_head = q->_next) == NULL)
            c->unsent_tail = &c->unsent_head;
        q->_state = QUERY_SENT;
        c->nunsent--;
        sent++;
        preon__db_conn_push(c, ENTRY_QUERY, 0, q);
        same_request = (q->flags & PREON_DB_MORE) != 0;
        continues = same_request && !(q->flags & PREON_DB_OWN_SYNC);
        if (continues || shared) {
            sync_owed = 1;
            open_shared = shared;
        } else {
            if (send_sync(c) != 0)
                goto Broken;
            sync_owed = 0;
        }
    }
    if (sync_owed && send_sync(c) != 0)
        goto Broken;
    if (c->ring_count > before) {
        /* One batch out: the next one accumulates until this one's last Sync is answered, if the depth says so. */
        c->ring[(c->ring_head + c->ring_count - 1) % c->ring_cap].ends_send = 1;
        c->sends_in_flight++;
    }
    return 0;

Broken:
    return PREON_ECONNLOST;
}
