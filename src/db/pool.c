/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include "preon/alloc.h"
#include "preon/assert.h"
#include "internal.h"
#include "preon/errors.h"
#include "preon/log.h"

/*
 * The pool of one thread: it picks a ready connection for each query (pick: below), bounds how many queries
 * wait (database.max_queued), sends what a loop pass produced at the end of that pass, and runs a tick that
 * reconnects with back-off and times out connections whose query at the head of the pipeline is overdue.
 */

static void on_flush(h2o_timeout_entry_t *entry);
static void on_tick(h2o_timeout_entry_t *entry);
static void done(preon_db_pool_t *pool, preon_db_query_t *q, int err, const char *detail, const PGresult *res);
static preon_db_query_t *requeue(preon_db_pool_t *pool, preon_db_query_t *list, int head_continues, unsigned *moved);
static void arm_flush(preon_db_pool_t *pool);

/* What the connections, their pipelines and the shedding call back (internal.h). */
static const preon_db_owner_t owner = {.done = done, .requeue = requeue, .arm_flush = arm_flush};

static uint64_t tick_ms(const preon_db_settings_t *s)
{
    unsigned t = s->query_timeout_ms < s->connect_timeout_ms ? s->query_timeout_ms : s->connect_timeout_ms;
    t /= 10;
    return t < 5 ? 5 : t > 100 ? 100 : (uint64_t)t;
}

void preon_db_counters_init(preon_db_counters_t *c, size_t nstatements)
{
    memset(c, 0, sizeof(*c));
    c->nstatements = nstatements;
    c->outcomes = preon_calloc(nstatements ? nstatements : 1, sizeof(*c->outcomes));
    c->durations = preon_calloc(nstatements ? nstatements : 1, sizeof(*c->durations));
}

void preon_db_counters_dispose(preon_db_counters_t *c)
{
    free(c->outcomes);
    free(c->durations);
    c->outcomes = NULL;
    c->durations = NULL;
}

preon_db_pool_t *preon_db_pool_create(h2o_loop_t *loop, const preon_db_settings_t *settings, const preon_db_target_t *target,
                                      const preon_db_statement_t *statements, size_t nstatements, preon_db_counters_t *counters,
                                      const char *tag)
{
    PREON_ASSERT(counters->nstatements == nstatements);
    preon_db_pool_t *pool = preon_calloc(1, sizeof(*pool));
    pool->loop = loop;
    pool->settings = *settings;
    pool->stmts = statements;
    pool->nstmts = nstatements;
    snprintf(pool->tag, sizeof(pool->tag), "%s", tag);
    pool->target = target;

    h2o_timeout_init(loop, &pool->zero_timeout, 0);
    pool->flush_entry.cb = on_flush;
    h2o_timeout_init(loop, &pool->tick_timeout, tick_ms(settings));
    pool->tick_entry.cb = on_tick;
    h2o_timeout_link(loop, &pool->tick_timeout, &pool->tick_entry);

    pool->counters = counters;
    pool->nconns = settings->connections;
    preon_counter_add(&counters->total, pool->nconns);
    pool->conns = preon_calloc(pool->nconns, sizeof(*pool->conns));
    for (unsigned i = 0; i < pool->nconns; i++)
        preon__db_conn_init(&pool->conns[i], pool, &owner, i);
    for (unsigned i = 0; i < pool->nconns; i++)
        preon__db_conn_connect(&pool->conns[i]);
    return pool;
}

void preon_db_pool_close(preon_db_pool_t *pool)
{
    if (pool == NULL || pool->closed)
        return;
    /* First, so that callbacks run below cannot queue anything new here. */
    pool->closed = 1;
    for (unsigned i = 0; i < pool->nconns; i++)
        preon__db_conn_dispose(&pool->conns[i]);
    if (h2o_timeout_is_linked(&pool->flush_entry))
        h2o_timeout_unlink(&pool->flush_entry);
    if (h2o_timeout_is_linked(&pool->tick_entry))
        h2o_timeout_unlink(&pool->tick_entry);
    h2o_timeout_dispose(pool->loop, &pool->zero_timeout);
    h2o_timeout_dispose(pool->loop, &pool->tick_timeout);
}

void preon_db_pool_destroy(preon_db_pool_t *pool)
{
    if (pool == NULL)
        return;
    preon_db_pool_close(pool);
    preon_counter_add(&pool->counters->total, (uint64_t) - (int64_t)pool->nconns);
    free(pool->conns);
    free(pool);
}

/*
 * The connection for a query: the least loaded ready one, or with `concentrate`, the first ready one with fewer than
 * PREON_DB_SPILL_AT queries in flight whose head query has not run PREON_DB_STALL_MS yet (then the least loaded). Concentrated, a
 * request of one query (/db, /fortunes) joins the batch another is already filling: PostgreSQL reads and answers a bigger batch in
 * one wake-up, and a second backend starts taking turns on the one CPU only once the first has a queue of its own (an A/B with the
 * roles pinned, 2026-12-02: /db 74-78k req/s concentrated on one of two connections, 72-73k spread over both). The
 * queries of a request of many (/queries=20), each behind its own Sync, spread instead: several backends work on
 * one answer (7.1-7.3k req/s spread, 6.9k concentrated).
 */
static preon_db_conn_t *pick(preon_db_pool_t *pool, int concentrate)
{
    preon_db_conn_t *best = NULL;
    uint64_t now = h2o_now(pool->loop);
    for (unsigned i = 0; i < pool->nconns; i++) {
        preon_db_conn_t *c = &pool->conns[i];
        if (c->state != CONN_READY)
            continue;
        /* ... unless its head query has been running a while (a lock, a slow statement): nothing joins a batch stuck
         * behind it while another connection is free */
        uint64_t head = preon__db_conn_head_since(c);
        if (concentrate && c->nqueries < PREON_DB_SPILL_AT && (head == 0 || now - head < PREON_DB_STALL_MS))
            return c;
        if (best == NULL || c->nqueries < best->nqueries)
            best = c;
    }
    return best;
}

static void arm_flush(preon_db_pool_t *pool)
{
    if (!h2o_timeout_is_linked(&pool->flush_entry))
        h2o_timeout_link(pool->loop, &pool->zero_timeout, &pool->flush_entry);
}

static unsigned ready_count(const preon_db_pool_t *pool)
{
    unsigned n = 0;
    for (unsigned i = 0; i < pool->nconns; i++)
        n += pool->conns[i].state == CONN_READY;
    return n;
}

static void enqueue(preon_db_conn_t *c, preon_db_query_t *q)
{
    q->_state = QUERY_UNSENT;
    q->_conn = c;
    c->nunsent++;
    c->nwrites += (q->flags & PREON_DB_WRITE) != 0;
    q->_next = NULL;
    *c->unsent_tail = q;
    c->unsent_tail = &q->_next;
    c->nqueries++;
    arm_flush(c->pool);
}

int preon_db_submit(preon_db_pool_t *pool, preon_db_query_t *const *qs, size_t n, int sync)
{
    for (size_t i = 0; i < n; i++) {
        const preon_db_query_t *q = qs[i];
        if (q->stmt >= pool->nstmts || q->nparams != pool->stmts[q->stmt].nparams || q->nparams > PREON_DB_MAX_PARAMS)
            return PREON_EINVAL;
    }
    if (n == 0)
        return PREON_EINVAL;
    if (pool->closed)
        return PREON_ESHUTDOWN;
    if (pool->queued + n > pool->settings.max_queued) {
        preon_counter_add(&pool->counters->rejected_full, 1);
        return PREON_EQUEUEFULL;
    }
    preon_db_conn_t *c = pick(pool, n == 1);
    if (c == NULL) {
        preon_counter_add(&pool->counters->rejected_down, 1);
        return PREON_ENOTCONN;
    }
    /* database.max_queue_wait_ms (shed.c): refused before anything is sent, so that the 503 promises nothing happened.
     * With a Sync per query the request's queries spread over the ready connections. */
    uint64_t now = preon_now_ns();
    unsigned nready = sync == PREON_SYNC_QUERY ? ready_count(pool) : 1;
    size_t writes = 0;
    for (size_t i = 0; i < n; i++)
        writes += (qs[i]->flags & PREON_DB_WRITE) != 0;
    if (!(qs[0]->flags & PREON_DB_ADMITTED) &&
        preon__db_would_wait_too_long(c, (n + nready - 1) / nready, (writes + nready - 1) / nready, now)) {
        preon_counter_add(&pool->counters->rejected_slow, 1);
        return PREON_EOVERLOADED;
    }
    for (size_t i = 0; i < n; i++) {
        preon_db_query_t *q = qs[i];
        /* With a Sync after every query no two share a transaction: each may go to the least loaded connection, so
         * that the many queries of one request (/queries=20) keep every backend busy. Otherwise they stay together. */
        if (sync == PREON_SYNC_QUERY && i > 0)
            c = pick(pool, 0);
        q->_resent = 0;
        q->_res = NULL;
        q->_queued_ns = now;
        q->flags &= PREON_DB_WRITE | PREON_DB_ADMITTED;
        if (i + 1 < n)
            q->flags |= PREON_DB_MORE;
        if (sync == PREON_SYNC_QUERY)
            q->flags |= PREON_DB_OWN_SYNC;
        else if (sync == PREON_SYNC_BATCH && !(q->flags & PREON_DB_WRITE))
            q->flags |= PREON_DB_SHARED;
        enqueue(c, q);
    }
    pool->queued += n;
    preon_counter_add(&pool->counters->queued, n);
    return 0;
}

/* Queues `q` again, alone, after its batch was aborted by a neighbour; fails it if no connection is ready. */
static void resend(preon_db_pool_t *pool, preon_db_query_t *q)
{
    preon_db_conn_t *c = pool->closed ? NULL : pick(pool, 1);
    if (c == NULL) {
        done(pool, q, pool->closed ? PREON_ESHUTDOWN : PREON_ENOTCONN, "no connection for the retry", NULL);
        return;
    }
    q->flags &= ~PREON_DB_MORE; /* alone now: the queries behind it are not its request's */
    enqueue(c, q);
}

void preon_db_pool_set_fallback(preon_db_pool_t *pool, preon_db_pool_t *fallback)
{
    PREON_ASSERT(pool != fallback && pool->loop == fallback->loop && pool->stmts == fallback->stmts);
    pool->fallback = fallback;
}

/* Where a request's `n` queries taken off a connection that was given up go now: a ready connection of `pool`, else of
 * its fallback while that has room; NULL if neither (they fail as never sent). `*to` receives the pool. */
static preon_db_conn_t *place(preon_db_pool_t *pool, size_t n, preon_db_pool_t **to)
{
    preon_db_conn_t *c;
    if (!pool->closed && (c = pick(pool, n == 1)) != NULL) {
        *to = pool;
        return c;
    }
    preon_db_pool_t *f = pool->fallback;
    if (f != NULL && !f->closed && f->queued + n <= f->settings.max_queued && (c = pick(f, n == 1)) != NULL) {
        *to = f;
        return c;
    }
    return NULL;
}

static preon_db_query_t *requeue(preon_db_pool_t *pool, preon_db_query_t *list, int head_continues, unsigned *moved)
{
    preon_db_query_t *left = NULL, **left_tail = &left;
    *moved = 0;
    while (list != NULL) {
        /* One request's transaction: queries linked by PREON_DB_MORE without a Sync of their own between them (with
         * one, each is a transaction of its own and may go anywhere, as preon_db_submit spreads them). */
        preon_db_query_t *first = list, *last = list;
        size_t n = 1;
        int canceled = first->_state == QUERY_CANCELED;
        while ((last->flags & (PREON_DB_MORE | PREON_DB_OWN_SYNC)) == PREON_DB_MORE && last->_next != NULL) {
            last = last->_next;
            n++;
            canceled |= last->_state == QUERY_CANCELED;
        }
        list = last->_next;
        last->_next = NULL;
        /* The rest of a transaction whose first statements went down with the connection is not sent alone. */
        preon_db_pool_t *to = NULL;
        preon_db_conn_t *c = head_continues || canceled ? NULL : place(pool, n, &to);
        head_continues = 0;
        if (c == NULL) {
            *left_tail = first;
            left_tail = &last->_next;
            continue;
        }
        if (to != pool) {
            pool->queued -= n;
            preon_counter_add(&pool->counters->queued, (uint64_t) - (int64_t)n);
            to->queued += n;
            preon_counter_add(&to->counters->queued, n);
        }
        for (preon_db_query_t *q = first, *next; q != NULL; q = next) {
            next = q->_next;
            enqueue(c, q);
        }
        *moved += (unsigned)n;
    }
    return left;
}

const char *const preon_db_outcome_names[PREON_DB_OUTCOMES] = {"ok",      "error",           "conflict", "retry",
                                                               "timeout", "connection_lost", "not_sent"};

/* Counts a finished query: its outcome and its time from submit to answer. */
static void account(preon_db_pool_t *pool, preon_db_query_t *q, preon_db_outcome_t outcome)
{
    PREON_ASSERT(pool->queued > 0 && q->stmt < pool->nstmts);
    q->_state = QUERY_IDLE;
    pool->queued--;
    preon_counter_add(&pool->counters->queued, (uint64_t)-1);
    preon_counter_add(&pool->counters->outcomes[q->stmt][outcome], 1);
    preon_hist_observe(&pool->counters->durations[q->stmt], preon_now_ns() - q->_queued_ns);
}

static void done(preon_db_pool_t *pool, preon_db_query_t *q, int err, const char *detail, const PGresult *res)
{
    if (err == PREON_DB_RESEND) {
        resend(pool, q);
    } else if (err == 0) {
        account(pool, q, PREON_DB_OUTCOME_OK);
        q->on_result(q, (const preon_db_result_t *)res);
    } else {
        account(pool, q,
                err == PREON_EDB         ? PREON_DB_OUTCOME_ERROR
                : err == PREON_ECONFLICT ? PREON_DB_OUTCOME_CONFLICT
                : err == PREON_ERETRY    ? PREON_DB_OUTCOME_RETRY
                : err == PREON_ETIMEDOUT ? PREON_DB_OUTCOME_TIMEOUT
                : err == PREON_ECONNLOST ? PREON_DB_OUTCOME_CONNLOST
                                         : PREON_DB_OUTCOME_NOTSENT);
        q->on_error(q, err, detail != NULL ? detail : preon_strerror(err));
    }
}

void preon_db_counters_collect(const preon_db_counters_t *c, uint64_t (*queries)[PREON_DB_OUTCOMES], preon_hist_t *durations)
{
    for (size_t s = 0; s < c->nstatements; s++) {
        for (int o = 0; o < PREON_DB_OUTCOMES; o++)
            queries[s][o] += preon_counter_read(&c->outcomes[s][o]);
        preon_hist_add(&durations[s], &c->durations[s]);
    }
}

/* Takes out of `c`'s unsent list what must not go (shed.c), until no callback of those cancels more there. */
static void shed_all(preon_db_conn_t *c, uint64_t now)
{
    do
        preon__db_shed(c, now);
    while (c->ncanceled != 0);
}

/* End of the loop pass: everything submitted during it goes out, one write per connection (batch Syncs), in batches
 * no larger than the queue's time bound allows, as many as database.pipeline_depth lets out. */
static void on_flush(h2o_timeout_entry_t *entry)
{
    preon_db_pool_t *pool = H2O_STRUCT_FROM_MEMBER(preon_db_pool_t, flush_entry, entry);
    uint64_t now = preon_now_ns();
    for (unsigned i = 0; i < pool->nconns; i++) {
        preon_db_conn_t *c = &pool->conns[i];
        int sent = 0;
        if (c->unsent_head != NULL)
            shed_all(c, now);
        while (c->unsent_head != NULL && c->state == CONN_READY && preon__db_conn_may_send(c)) {
            if (preon__db_conn_send_some(c, preon__db_batch_cap(c)) != 0) {
                preon__db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
                break;
            }
            sent = 1;
        }
        /* one write for all the batches */
        if (sent && c->state == CONN_READY)
            preon__db_conn_flush(c);
    }
}

static void on_tick(h2o_timeout_entry_t *entry)
{
    preon_db_pool_t *pool = H2O_STRUCT_FROM_MEMBER(preon_db_pool_t, tick_entry, entry);
    const preon_db_settings_t *set = &pool->settings;
    uint64_t now = h2o_now(pool->loop);
    for (unsigned i = 0; i < pool->nconns; i++) {
        preon_db_conn_t *c = &pool->conns[i];
        uint64_t head;
        switch (c->state) {
        case CONN_IDLE:
            if (now >= c->retry_at)
                preon__db_conn_connect(c);
            break;
        case CONN_CONNECTING:
            if (now - c->state_since >= set->connect_timeout_ms)
                preon__db_conn_connect_timed_out(c);
            break;
        case CONN_READY:
            /* A pipeline's queue is not a stuck server: what counts is how long the query at its head has taken.
             * Waiting in the queue is bounded per request by server.request_timeout_ms instead. */
            if ((head = preon__db_conn_head_since(c)) != 0 && now - head >= set->query_timeout_ms)
                preon__db_conn_fail(c, PREON_ETIMEDOUT, "query at the head of the pipeline timed out; reconnecting");
            else if (c->unsent_head != NULL)
                shed_all(c, preon_now_ns()); /* held back behind batches in flight: still refused in time */
            break;
        }
    }
    h2o_timeout_link(pool->loop, &pool->tick_timeout, &pool->tick_entry);
}

void preon_db_counters_read(const preon_db_counters_t *c, preon_db_stats_t *st)
{
    memset(st, 0, sizeof(*st));
    st->queued = (size_t)preon_counter_read(&c->queued);
    st->total = (unsigned)preon_counter_read(&c->total);
    st->ready = (unsigned)preon_counter_read(&c->ready);
    st->connecting = (unsigned)preon_counter_read(&c->connecting);
    st->reconnects = preon_counter_read(&c->reconnects);
    st->rejected_full = preon_counter_read(&c->rejected_full);
    st->rejected_slow = preon_counter_read(&c->rejected_slow);
    st->rejected_down = preon_counter_read(&c->rejected_down);
    st->moved = preon_counter_read(&c->moved);
}
