/* SPDX-License-Identifier: MIT */
#include "preon/assert.h"
#include "internal.h"
#include "preon/errors.h"

/*
 * The queue's bound in time (database.max_queue_wait_ms). A request is judged by the work queued ahead of it: that
 * many reads and writes, each at the connection's recent service time for its kind (Little's law; pipeline.c
 * measures them), so that a burst on an idle server is refused like a slow climb, at once and before anything is
 * sent. Until the estimate rests on enough answers it is not used (measured() below): only the age of the oldest
 * query judges then, and the
 * batch cap keeps what is handed to libpq small enough that the rest can still be refused. What was let in and then
 * cannot make it (let in before the estimate was trusted, or the database slowed down) is taken out again while it
 * is still unsent, whole requests at a time: a 503 then still promises that nothing happened. Canceled queries
 * (their request was answered: a timeout, a sibling's failure, the client gone) leave the same way, so that the
 * database never works for an answer already given. Only what libpq has not been handed can be taken back; a batch
 * is capped so that what is handed over can be answered within the bound.
 */

/* When the oldest query `c` holds unanswered was submitted (preon_now_ns); 0 when it holds none. */
static uint64_t oldest_queued_ns(const preon_db_conn_t *c)
{
    /* The ring is oldest first; its first query is at most a few Syncs and Prepares in. */
    for (size_t i = 0; i < c->ring_count; i++) {
        const ring_entry_t *e = &c->ring[(c->ring_head + i) % c->ring_cap];
        if (e->kind == ENTRY_QUERY)
            return e->q->_queued_ns;
    }
    return c->unsent_head != NULL ? c->unsent_head->_queued_ns : 0;
}

static uint64_t bound_ns(const preon_db_conn_t *c)
{
    return (uint64_t)c->pool->settings.max_queue_wait_ms * 1000000;
}

/* Whether the connection's service time per query has been measured well enough to judge by. */
static int measured(const preon_db_conn_t *c)
{
    return (c->svc.n >= PREON_DB_SVC_TRUSTED || c->svc_busy_total >= PREON_DB_SVC_TRUSTED_MS) && c->svc.ms > 0;
}

/*
 * A write costs what its commit waits for: with synchronous_commit on, the WAL flush. On /updates?queries=20 with
 * commits that waited ~3 ms for the disk, a write took ~3 ms of its connection's time and a read 0.01-0.04 ms. Priced
 * alike, a stretch of windows answering writes made every query ahead cost about a write, though nineteen in twenty
 * of them were reads, and refused a cold burst the database then served within the bound.
 *
 * So reads and writes are priced apart, at the read and write times that best explain the recent windows (least
 * squares: each window's time = its reads x read + its writes x write), once PREON_DB_SVC_WRITES_SPLIT writes have
 * been measured, a write's worth is in the recent windows, and those mix the two in different proportions. Not one
 * kind's windows alone, nor the busy time left after the other kind's: windows of reads alone grew rare once writes
 * came in, and what the jitter of 300 reads left beside the one write in their window once priced that write at
 * 10 ms, over three times what writes took. A kind too cheap to show in the windows' time comes out below zero: it costs
 * nothing then, and the other all. Without writes lately, with too few, or when the windows mix the two in one
 * proportion (then the queue likely does too), every query costs the rate of all, as before: a workload of reads
 * alone is judged exactly as it was.
 */
double preon__db_cost_ms(const preon_db_conn_t *c, size_t reads, size_t writes)
{
    const svc_t *v = &c->svc;
    double det = v->rr * v->ww - v->rw * v->rw;
    if (v->writes_n >= PREON_DB_SVC_WRITES_SPLIT && v->writes >= 1 && v->reads > 0 && det > 0.05 * v->rr * v->ww) {
        double read = (v->rt * v->ww - v->wt * v->rw) / det, write = (v->wt * v->rr - v->rt * v->rw) / det;
        if (read < 0)
            read = 0, write = v->wt / v->ww;
        else if (write < 0)
            write = 0, read = v->rt / v->rr;
        return (double)reads * read + (double)writes * write;
    }
    return (double)(reads + writes) * v->ms;
}

/* The expected wait, in ns, of the work of `reads` reads and `writes` writes (those ahead of a request and its own). */
static double expected_ns(const preon_db_conn_t *c, size_t reads, size_t writes)
{
    return preon__db_cost_ms(c, reads, writes) * 1e6;
}

int preon__db_would_wait_too_long(const preon_db_conn_t *c, size_t n, size_t writes, uint64_t now_ns)
{
    uint64_t bound = bound_ns(c), oldest;
    if (bound == 0)
        return 0;
    /* The age of the oldest query: a stuck head (a lock, a slow plan) shows here before any estimate can. */
    if ((oldest = oldest_queued_ns(c)) != 0 && now_ns - oldest > bound)
        return 1;
    /* An idle connection takes any request: however large, refusing it there would refuse it for ever. Canceled
     * queries still count among the writes ahead: a few, for one pass at most. */
    size_t ahead = c->nqueries - c->ncanceled, ahead_writes = c->nwrites < ahead ? c->nwrites : ahead;
    PREON_ASSERT(writes <= n);
    return ahead != 0 && measured(c) && expected_ns(c, ahead - ahead_writes + n - writes, ahead_writes + writes) > (double)bound;
}

size_t preon__db_batch_cap(const preon_db_conn_t *c)
{
    const preon_db_settings_t *set = &c->pool->settings;
    if (set->max_queue_wait_ms == 0 || set->pipeline_depth == 0)
        return 0;
    if (!measured(c))
        return PREON_DB_SVC_FIRST_BATCH; /* not measured yet: small enough that the rest can still be refused */
    double n = set->max_queue_wait_ms / (c->svc.ms * set->pipeline_depth);
    return n < 64 ? 64 : n > 1e6 ? 1000000 : (size_t)n;
}

int preon_db_cancel(preon_db_query_t *q)
{
    switch (q->_state) {
    case QUERY_UNSENT: {
        preon_db_conn_t *c = q->_conn;
        q->_state = QUERY_CANCELED;
        c->ncanceled++;
        c->owner->arm_flush(c->pool);
        return 0;
    }
    case QUERY_CANCELED:
    case QUERY_DETACHED:
        return 0; /* its callback is coming */
    case QUERY_SENT:
        return PREON_EBUSY;
    default:
        return PREON_EINVAL;
    }
}

/* Appends `q`, taken out, to `*tail`. */
static void take_out(preon_db_conn_t *c, preon_db_query_t *q, preon_db_query_t ***tail)
{
    if (q->_state == QUERY_CANCELED)
        c->ncanceled--;
    q->_state = q->_state == QUERY_CANCELED ? QUERY_CANCELED : QUERY_DETACHED;
    c->nqueries--;
    c->nunsent--;
    c->nwrites -= (q->flags & PREON_DB_WRITE) != 0;
    q->_next = NULL;
    **tail = q;
    *tail = &q->_next;
}

static void keep(preon_db_conn_t *c, preon_db_query_t *q)
{
    q->_next = NULL;
    *c->unsent_tail = q;
    c->unsent_tail = &q->_next;
}

void preon__db_shed(preon_db_conn_t *c, uint64_t now_ns)
{
    uint64_t bound = bound_ns(c);
    if (c->unsent_head == NULL || (bound == 0 && c->ncanceled == 0))
        return;
    preon_db_query_t *list = c->unsent_head, *out = NULL, **out_tail = &out;
    c->unsent_head = NULL;
    c->unsent_tail = &c->unsent_head;
    /* In flight: answered before any unsent query. */
    size_t ahead_writes = c->nwrites, late_requests = 0;
    for (const preon_db_query_t *q = list; q != NULL; q = q->_next)
        ahead_writes -= (q->flags & PREON_DB_WRITE) != 0;
    PREON_ASSERT(ahead_writes <= c->nqueries - c->nunsent);
    size_t ahead_reads = c->nqueries - c->nunsent - ahead_writes;
    while (list != NULL) {
        /* One request: its queries are queued together by one submit (one _queued_ns), each but the last marked
         * PREON_DB_MORE. With a Sync per query they spread over the connections, and its last one here may still be
         * marked: the submit time ends the run too, or it would take in the requests behind it (in a cold /updates
         * burst a run of 1,553 queries, some 150 requests, was judged as one request that large and shed). */
        preon_db_query_t *first = list, *last = list;
        size_t len = 1, writes = (first->flags & PREON_DB_WRITE) != 0;
        while ((last->flags & PREON_DB_MORE) && last->_next != NULL && last->_next->_queued_ns == first->_queued_ns) {
            last = last->_next, len++;
            writes += (last->flags & PREON_DB_WRITE) != 0;
        }
        list = last->_next;
        last->_next = NULL;
        uint64_t waited = now_ns > first->_queued_ns ? now_ns - first->_queued_ns : 0;
        /* A later step of a request let in earlier is judged by its age alone: refusing it would throw away the work
         * its first step already cost the database. */
        int estimated = !(first->flags & PREON_DB_ADMITTED) && ahead_reads + ahead_writes != 0 && measured(c);
        size_t reads = len - writes;
        int late = bound != 0 &&
                   (waited > bound ||
                    (estimated && (double)waited + expected_ns(c, ahead_reads + reads, ahead_writes + writes) > (double)bound));
        late_requests += late;
        preon_db_query_t *kept_last = NULL;
        int dropped = 0;
        for (preon_db_query_t *q = first, *next; q != NULL; q = next) {
            next = q->_next;
            if (late || q->_state == QUERY_CANCELED) {
                take_out(c, q, &out_tail);
                dropped = 1;
            } else {
                keep(c, q);
                kept_last = q;
                if (q->flags & PREON_DB_WRITE)
                    ahead_writes++;
                else
                    ahead_reads++;
            }
        }
        /* Part of a request canceled (a sibling elsewhere failed first): what stays ends its transaction itself. */
        if (dropped && kept_last != NULL)
            kept_last->flags &= ~PREON_DB_MORE;
    }
    PREON_ASSERT(c->ncanceled == 0);
    if (late_requests != 0)
        preon_counter_add(&c->pool->counters->rejected_slow, late_requests);
    /* Only now, with the lists whole again: a callback may cancel or queue more (it lands on the lists, not here). */
    while (out != NULL) {
        preon_db_query_t *q = out;
        out = q->_next;
        c->owner->done(c->pool, q, q->_state == QUERY_CANCELED ? PREON_ECANCELED : PREON_EOVERLOADED, NULL, NULL);
    }
}
