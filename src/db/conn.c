/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "db/internal.h"
#include "preon/errors.h"
#include "preon/log.h"

/*
 * One libpq connection driven by the event loop: a non-blocking connect (PQconnectStartParams +
 * PQconnectPoll), then pipeline mode with every statement prepared, then queries written behind each other
 * without waiting, their results matched to the senders by a FIFO ring. Any trouble ends in
 * preon_db_conn_fail(), which answers everything queued and lets the pool's tick reconnect with back-off.
 */

static void on_read(h2o_socket_t *sock, const char *err);
static void on_write(h2o_socket_t *sock, const char *err);

/* The state is read by scrapes and readiness checks on other threads. */
static void set_state(preon_db_conn_t *c, conn_state_t state)
{
    __atomic_store_n(&c->state, state, __ATOMIC_RELAXED);
}

static uint64_t now_ms(const preon_db_conn_t *c)
{
    return h2o_now(c->pool->loop);
}

void preon_db_conn_init(preon_db_conn_t *c, preon_db_pool_t *pool, unsigned index)
{
    memset(c, 0, sizeof(*c));
    c->pool = pool;
    c->index = index;
    c->state = CONN_IDLE;
    c->pg_fd = -1;
    c->unsent_tail = &c->unsent_head;
    c->backoff_ms = pool->cfg->database.reconnect_min_ms;
    c->prepared = calloc(pool->nstmts ? pool->nstmts : 1, 1);
    c->ring_cap = 64;
    c->ring = malloc(c->ring_cap * sizeof(*c->ring));
    if (c->prepared == NULL || c->ring == NULL)
        abort();
}

static void close_socket(preon_db_conn_t *c)
{
    if (c->sock != NULL) {
        h2o_socket_close(c->sock);
        c->sock = NULL;
    }
    c->pg_fd = -1;
    c->write_wait = 0;
}

static void close_pg(preon_db_conn_t *c)
{
    /* h2o first: its socket must leave epoll while the descriptor it duplicates is still open. */
    close_socket(c);
    if (c->cur != NULL) {
        PQclear(c->cur);
        c->cur = NULL;
    }
    if (c->pg != NULL) {
        PQfinish(c->pg);
        c->pg = NULL;
    }
}

void preon_db_conn_dispose(preon_db_conn_t *c)
{
    preon_db_conn_fail(c, PREON_ESHUTDOWN, NULL);
    free(c->prepared);
    free(c->ring);
}

/* Wraps libpq's current socket in an h2o socket, replacing the old one if libpq changed it. */
static int watch_socket(preon_db_conn_t *c)
{
    int fd = PQsocket(c->pg);
    if (fd < 0)
        return -1;
    if (c->sock != NULL && fd == c->pg_fd)
        return 0;
    close_socket(c);
    int dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dupfd < 0)
        return -1;
    c->sock = h2o_evloop_socket_create(c->pool->loop, dupfd, H2O_SOCKET_FLAG_DONT_READ);
    c->sock->data = c;
    c->pg_fd = fd;
    /* Readability is always of interest: results while ready, the server's answers while connecting. */
    h2o_socket_read_start(c->sock, on_read);
    return 0;
}

static void want_write(preon_db_conn_t *c)
{
    if (!c->write_wait) {
        c->write_wait = 1;
        h2o_socket_notify_write(c->sock, on_write);
    }
}

static void push(preon_db_conn_t *c, entry_kind_t kind, unsigned stmt, preon_db_query_t *q)
{
    if (c->ring_count == c->ring_cap) {
        /* Grow and unwrap: the ring is at most a few thousand entries (database.max_queued bounds it). */
        entry_t *nr = malloc(c->ring_cap * 2 * sizeof(*nr));
        if (nr == NULL)
            abort();
        for (size_t i = 0; i < c->ring_count; i++)
            nr[i] = c->ring[(c->ring_head + i) % c->ring_cap];
        free(c->ring);
        c->ring = nr;
        c->ring_head = 0;
        c->ring_cap *= 2;
    }
    if (c->ring_count == 0)
        c->head_since = now_ms(c);
    entry_t *e = &c->ring[(c->ring_head + c->ring_count++) % c->ring_cap];
    e->kind = kind;
    e->stmt = stmt;
    e->q = q;
}

static entry_t pop(preon_db_conn_t *c)
{
    entry_t e = c->ring[c->ring_head];
    c->ring_head = (c->ring_head + 1) % c->ring_cap;
    c->ring_count--;
    c->head_since = now_ms(c);
    return e;
}

uint64_t preon_db_conn_head_since(const preon_db_conn_t *c)
{
    return c->ring_count != 0 ? c->head_since : 0;
}

static void schedule_retry(preon_db_conn_t *c, int at_once)
{
    const preon_config_t *cfg = c->pool->cfg;
    set_state(c, CONN_IDLE);
    c->state_since = now_ms(c);
    c->retry_at = now_ms(c) + (at_once ? 0 : c->backoff_ms);
    if (!at_once) {
        c->backoff_ms *= 2;
        if (c->backoff_ms > (unsigned)cfg->database.reconnect_max_ms)
            c->backoff_ms = cfg->database.reconnect_max_ms;
    }
}

void preon_db_conn_fail(preon_db_conn_t *c, int err, const char *why)
{
    int was_ready = c->state == CONN_READY;
    /* While the database stays down, only the first failed attempt is a warning; the retries are debug. */
    if (why != NULL && c->state != CONN_IDLE) {
        if (was_ready || !c->down_logged)
            preon_log_warn("db %s#%u: %s: %s", c->pool->tag, c->index, preon_strerror(err), why);
        else
            preon_log_debug("db %s#%u: %s: %s", c->pool->tag, c->index, preon_strerror(err), why);
        c->down_logged = 1;
    }
    close_pg(c);
    schedule_retry(c, err == PREON_ETIMEDOUT && was_ready);

    /* Detach everything before the callbacks run: they may submit new queries, which must not land here. */
    entry_t *ring = c->ring;
    size_t head = c->ring_head, count = c->ring_count, cap = c->ring_cap;
    c->ring = malloc(cap * sizeof(*c->ring));
    if (c->ring == NULL)
        abort();
    c->ring_head = c->ring_count = 0;
    preon_db_query_t *unsent = c->unsent_head;
    c->unsent_head = NULL;
    c->unsent_tail = &c->unsent_head;
    c->nqueries = 0;
    memset(c->prepared, 0, c->pool->nstmts ? c->pool->nstmts : 1);

    for (size_t i = 0; i < count; i++) {
        entry_t *e = &ring[(head + i) % cap];
        if (e->kind == ENTRY_QUERY)
            preon_db_pool_fail_query(c->pool, e->q, err == PREON_ESHUTDOWN || err == PREON_ETIMEDOUT ? err : PREON_ECONNLOST,
                                     why);
    }
    free(ring);
    while (unsent != NULL) {
        preon_db_query_t *q = unsent;
        unsent = q->_next;
        preon_db_pool_fail_query(c->pool, q, err == PREON_ESHUTDOWN ? err : PREON_ENOTCONN, why);
    }
}

static void flush(preon_db_conn_t *c)
{
    int rv = PQflush(c->pg);
    if (rv < 0)
        preon_db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
    else if (rv > 0)
        want_write(c);
}

/* Pipeline mode and every statement prepared; queries may follow at once, in the same pipeline. */
static void become_ready(preon_db_conn_t *c)
{
    preon_db_pool_t *pool = c->pool;
    if (PQsetnonblocking(c->pg, 1) != 0 || PQenterPipelineMode(c->pg) != 1) {
        preon_db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
        return;
    }
    /* Each Prepare behind its own Sync: a statement whose table is missing must not abort the others. */
    for (size_t i = 0; i < pool->nstmts; i++) {
        const preon_db_statement_t *s = &pool->stmts[i];
        if (!PQsendPrepare(c->pg, s->name, s->sql, s->nparams, NULL) || !PQpipelineSync(c->pg)) {
            preon_db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
            return;
        }
        push(c, ENTRY_PREPARE, (unsigned)i, NULL);
        push(c, ENTRY_SYNC, 0, NULL);
        c->prepared[i] = 1;
    }
    set_state(c, CONN_READY);
    c->state_since = now_ms(c);
    c->backoff_ms = pool->cfg->database.reconnect_min_ms;
    if (c->ever_ready)
        preon_counter_add(&pool->reconnects, 1);
    c->ever_ready = 1;
    c->down_logged = 0;
    preon_log_info("db %s#%u: connected (server %d, backend pid %d)", pool->tag, c->index, PQserverVersion(c->pg),
                   PQbackendPID(c->pg));
    flush(c);
}

/* One step of PQconnectPoll, then wait for whatever it asks for. */
static void connect_step(preon_db_conn_t *c)
{
    PostgresPollingStatusType st = PQconnectPoll(c->pg);
    if (st != PGRES_POLLING_FAILED && watch_socket(c) != 0)
        st = PGRES_POLLING_FAILED;
    switch (st) {
    case PGRES_POLLING_READING:
        break; /* the socket is always watched for reading */
    case PGRES_POLLING_WRITING:
        want_write(c);
        break;
    case PGRES_POLLING_OK:
        become_ready(c);
        break;
    default:
        preon_db_conn_fail(c, PREON_ENOTCONN, PQerrorMessage(c->pg));
        break;
    }
}

void preon_db_conn_connect(preon_db_conn_t *c)
{
    preon_db_pool_t *pool = c->pool;
    /* Does not block: the host name, if any, was resolved into hostaddr at start-up (target.c). */
    c->pg = PQconnectStartParams(preon_db_target_keywords(pool->target), preon_db_target_values(pool->target), 0);
    set_state(c, CONN_CONNECTING);
    c->state_since = now_ms(c);
    if (c->pg == NULL || PQstatus(c->pg) == CONNECTION_BAD || watch_socket(c) != 0) {
        preon_db_conn_fail(c, PREON_ENOTCONN, c->pg != NULL ? PQerrorMessage(c->pg) : "out of memory");
        return;
    }
    /* As the libpq manual says: behave as if PQconnectPoll last answered PGRES_POLLING_WRITING. */
    want_write(c);
}

static void complete(preon_db_conn_t *c, entry_t e, PGresult *res)
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
        return;
    }
    preon_db_query_t *q = e.q;
    c->nqueries--;
    switch (st) {
    case PGRES_TUPLES_OK:
    case PGRES_COMMAND_OK:
        preon_db_pool_finish_query(c->pool, q, res);
        break;
    case PGRES_PIPELINE_ABORTED:
        /* Not run because an earlier statement behind the same Sync failed: under batch Syncs that may be
         * another request's query, so a read is sent once more on its own merits. */
        if (c->pool->cfg->database.sync == PREON_SYNC_BATCH && !(q->flags & PREON_DB_WRITE) && !q->_resent) {
            q->_resent = 1;
            preon_db_pool_resend(c->pool, q);
        } else {
            preon_db_pool_fail_query(c->pool, q, PREON_EDB,
                                     c->prepare_error[0] != '\0' ? c->prepare_error : "aborted by an earlier error in its pipeline");
        }
        break;
    default: {
        const char *msg = res != NULL ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
        if (msg == NULL)
            msg = res != NULL ? PQresultErrorMessage(res) : "no result";
        /* SQLSTATE class 23 (integrity constraint violation) is the client's conflict, not a database fault. */
        const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        int err = state != NULL && state[0] == '2' && state[1] == '3' ? PREON_ECONFLICT : PREON_EDB;
        if (err == PREON_EDB)
            preon_log_warn("db %s#%u: statement %s failed: %s", c->pool->tag, c->index, c->pool->stmts[q->stmt].name, msg);
        preon_db_pool_fail_query(c->pool, q, err, msg);
        break;
    }
    }
}

/* Takes every result libpq can give without blocking and hands each to the entry it belongs to. */
static void read_results(preon_db_conn_t *c)
{
    while (c->pg != NULL && c->ring_count != 0 && !PQisBusy(c->pg)) {
        PGresult *r = PQgetResult(c->pg);
        entry_t *head = &c->ring[c->ring_head];
        if (head->kind == ENTRY_SYNC) {
            if (r == NULL) {
                preon_db_conn_fail(c, PREON_ECONNLOST, "pipeline out of step (no Sync result)");
                return;
            }
            int is_sync = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
            PQclear(r);
            if (is_sync) {
                pop(c);
                if (c->ring_count == 0)
                    c->prepare_error[0] = '\0';
            }
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
        complete(c, pop(c), res);
        PQclear(res);
    }
}

/* Readable or writable: libpq finds socket errors itself, so h2o's `err` adds nothing. */
static void on_io(preon_db_conn_t *c)
{
    if (c->state == CONN_CONNECTING) {
        connect_step(c);
        return;
    }
    if (c->state != CONN_READY)
        return;
    if (!PQconsumeInput(c->pg)) {
        preon_db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
        return;
    }
    read_results(c);
    if (c->pg == NULL)
        return;
    if (PQstatus(c->pg) == CONNECTION_BAD) {
        preon_db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
        return;
    }
    flush(c);
}

static void on_read(h2o_socket_t *sock, const char *err)
{
    (void)err;
    on_io(sock->data);
}

static void on_write(h2o_socket_t *sock, const char *err)
{
    preon_db_conn_t *c = sock->data;
    (void)err;
    c->write_wait = 0;
    on_io(c);
}

void preon_db_conn_send(preon_db_conn_t *c)
{
    const preon_db_statement_t *stmts = c->pool->stmts;
    int batch = c->pool->cfg->database.sync == PREON_SYNC_BATCH, sync_owed = 0;
    preon_db_query_t *q;
    while ((q = c->unsent_head) != NULL) {
        if ((c->unsent_head = q->_next) == NULL)
            c->unsent_tail = &c->unsent_head;
        /* A write, or a read sent again after a neighbour aborted its batch, never shares a Sync with another
         * request: close the batch before it (and after it, below), so it fails only on its own merits. */
        int alone = (q->flags & PREON_DB_WRITE) || q->_resent;
        if (sync_owed && alone) {
            if (!PQpipelineSync(c->pg))
                goto Broken;
            push(c, ENTRY_SYNC, 0, NULL);
            sync_owed = 0;
        }
        if (!c->prepared[q->stmt]) {
            /* Its Prepare failed earlier (say the table was missing); try again, in the same pipeline. */
            if (!PQsendPrepare(c->pg, stmts[q->stmt].name, stmts[q->stmt].sql, stmts[q->stmt].nparams, NULL))
                goto Broken;
            push(c, ENTRY_PREPARE, q->stmt, NULL);
            c->prepared[q->stmt] = 1;
        }
        if (!PQsendQueryPrepared(c->pg, stmts[q->stmt].name, q->nparams, q->params, NULL, NULL, 0)) {
            /* Put it back in front, so that conn_fail answers it with the rest. */
            if ((q->_next = c->unsent_head) == NULL)
                c->unsent_tail = &q->_next;
            c->unsent_head = q;
            goto Broken;
        }
        push(c, ENTRY_QUERY, 0, q);
        q->_sent_at = now_ms(c);
        if ((q->flags & PREON_DB_MORE) || (batch && !alone)) {
            sync_owed = 1;
        } else {
            if (!PQpipelineSync(c->pg))
                goto Broken;
            push(c, ENTRY_SYNC, 0, NULL);
            sync_owed = 0;
        }
    }
    if (sync_owed) {
        if (!PQpipelineSync(c->pg))
            goto Broken;
        push(c, ENTRY_SYNC, 0, NULL);
    }
    flush(c);
    return;

Broken:
    preon_db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
}
