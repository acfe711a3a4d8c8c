/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/ssl.h>
#include "preon/alloc.h"
#include "preon/assert.h"
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

/* Every change of state goes through here, so that the pool's counters by state (what scrapes and readiness checks
 * on other threads read) stay right. */
static void set_state(preon_db_conn_t *c, conn_state_t state)
{
    preon_db_counters_t *n = c->pool->counters;
    if (c->state == state)
        return;
    if (c->state == CONN_READY)
        preon_counter_add(&n->ready, (uint64_t)-1);
    else if (c->state == CONN_CONNECTING)
        preon_counter_add(&n->connecting, (uint64_t)-1);
    if (state == CONN_READY)
        preon_counter_add(&n->ready, 1);
    else if (state == CONN_CONNECTING)
        preon_counter_add(&n->connecting, 1);
    c->state = state;
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
    c->done_tail = &c->done_head;
    c->backoff_ms = pool->cfg->database.reconnect_min_ms;
    c->prepared = preon_calloc(pool->nstmts ? pool->nstmts : 1, 1);
    c->ring_cap = 64;
    c->ring = preon_malloc(c->ring_cap * sizeof(*c->ring));
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
    if (c->seg.sync_err != NULL)
        PQclear(c->seg.sync_err);
    memset(&c->seg, 0, sizeof(c->seg));
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

/*
 * Wraps libpq's current socket in an h2o socket, replacing the old one if libpq changed it. Within one connect
 * libpq may close its socket and open another (next host, target_session_attrs, an SSL retry) that the kernel
 * gives the same number: so the socket is known by its identity, not its number. Our dup() keeps the old socket
 * open, so a new one cannot have its inode.
 */
static int watch_socket(preon_db_conn_t *c)
{
    int fd = PQsocket(c->pg);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0)
        return -1;
    if (c->sock != NULL && fd == c->pg_fd && st.st_dev == c->pg_dev && st.st_ino == c->pg_ino)
        return 0;
    close_socket(c);
    int dupfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dupfd < 0)
        return -1;
    c->sock = h2o_evloop_socket_create(c->pool->loop, dupfd, H2O_SOCKET_FLAG_DONT_READ);
    c->sock->data = c;
    c->pg_fd = fd;
    c->cork = 0; /* a new socket: TCP, or not */
    c->pg_dev = st.st_dev;
    c->pg_ino = st.st_ino;
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
        ring_entry_t *nr = preon_malloc(c->ring_cap * 2 * sizeof(*nr));
        for (size_t i = 0; i < c->ring_count; i++)
            nr[i] = c->ring[(c->ring_head + i) % c->ring_cap];
        free(c->ring);
        c->ring = nr;
        c->ring_head = 0;
        c->ring_cap *= 2;
    }
    if (c->ring_count == 0) {
        c->head_since = now_ms(c);
        c->svc_mark = c->head_since; /* busy from now: a new service-time window */
        c->svc_k = 0;
    }
    ring_entry_t *e = &c->ring[(c->ring_head + c->ring_count++) % c->ring_cap];
    e->kind = kind;
    e->ends_send = 0;
    e->stmt = stmt;
    e->q = q;
}

/*
 * Closes the service-time window once it spans 10 ms of loop time or more, or when the connection goes idle: the time
 * per query answered in it, averaged over windows. Only busy time counts (the window opens when something is sent to
 * an idle connection), so this is what one more query in the queue costs the requests behind it.
 */
static void observe_service(preon_db_conn_t *c, int idle)
{
    uint64_t now = now_ms(c), dt = now - c->svc_mark;
    if (c->svc_k != 0 && (dt >= 10 || idle)) {
        /* A window of many queries moves the average more than one of a few (one query held by a lock is not the
         * service time); the estimate is used only once it rests on PREON_DB_SVC_TRUSTED queries. */
        double s = (double)dt / c->svc_k, w = c->svc_k >= 32 ? 0.5 : c->svc_k / 64.0;
        c->svc_ms = c->svc_n == 0 ? s : c->svc_ms + (s - c->svc_ms) * w;
        c->svc_n = c->svc_n + c->svc_k < c->svc_n ? c->svc_n : c->svc_n + c->svc_k;
    } else if (!idle) {
        return;
    }
    c->svc_mark = now;
    c->svc_k = 0;
}

static ring_entry_t pop(preon_db_conn_t *c)
{
    PREON_ASSERT(c->ring_count > 0);
    ring_entry_t e = c->ring[c->ring_head];
    c->ring_head = (c->ring_head + 1) % c->ring_cap;
    c->ring_count--;
    c->head_since = now_ms(c);
    if (c->ring_count == 0)
        observe_service(c, 1);
    return e;
}

uint64_t preon_db_conn_head_since(const preon_db_conn_t *c)
{
    return c->ring_count != 0 ? c->head_since : 0;
}

uint64_t preon_db_conn_oldest_queued_ns(const preon_db_conn_t *c)
{
    /* The ring is oldest first; its first query is at most a few Syncs and Prepares in. */
    for (size_t i = 0; i < c->ring_count; i++) {
        const ring_entry_t *e = &c->ring[(c->ring_head + i) % c->ring_cap];
        if (e->kind == ENTRY_QUERY)
            return e->q->_queued_ns;
    }
    return c->unsent_head != NULL ? c->unsent_head->_queued_ns : 0;
}

static void schedule_retry(preon_db_conn_t *c, int at_once)
{
    const preon_config_t *cfg = c->pool->cfg;
    at_once |= c->retry_now;
    c->retry_now = 0;
    set_state(c, CONN_IDLE);
    c->state_since = now_ms(c);
    c->retry_at = now_ms(c) + (at_once ? 0 : c->backoff_ms);
    if (!at_once) {
        c->backoff_ms *= 2;
        if (c->backoff_ms > (unsigned)cfg->database.reconnect_max_ms)
            c->backoff_ms = cfg->database.reconnect_max_ms;
    }
}

/* Copies `why` (often libpq's error text, which PQfinish frees) without its trailing newlines, adding what the
 * server said last (a FATAL on an idle connection reaches us as a notice, then the socket closes). */
static const char *copy_why(preon_db_conn_t *c, const char *why, char *buf, size_t cap)
{
    if (why == NULL)
        return NULL;
    int n = snprintf(buf, cap, "%s", why);
    size_t len = n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
        buf[--len] = '\0';
    if (c->server_said[0] != '\0' && strstr(buf, c->server_said) == NULL)
        snprintf(buf + len, cap - len, " (server: %s)", c->server_said);
    return buf;
}

/*
 * How a query the database has seen (sent, maybe answered, its Sync not) ends when its connection is given up
 * with `err`. A timeout stays a timeout (504). Otherwise its fate is unknown: connection lost (502, "may or may not
 * have committed"), also at shutdown for a write, whose COMMIT may still run after the socket closes; a read
 * committed nothing, so at shutdown it may say so (503 + Retry-After).
 */
static int sent_error(int err, const preon_db_query_t *q)
{
    if (err == PREON_ETIMEDOUT || (err == PREON_ESHUTDOWN && !(q->flags & PREON_DB_WRITE)))
        return err;
    return PREON_ECONNLOST;
}

/* Fails the queries of `list` (linked by _next), freeing the results they held: with `err` if `sent` is 0 (the
 * database never saw them), else as sent_error says. */
static void fail_list(preon_db_pool_t *pool, preon_db_query_t *list, int err, int sent, const char *why)
{
    while (list != NULL) {
        preon_db_query_t *q = list;
        list = q->_next;
        if (q->_res != NULL) {
            PQclear(q->_res);
            q->_res = NULL;
        }
        preon_db_pool_fail_query(pool, q, sent ? sent_error(err, q) : q->_state == QUERY_CANCELED ? PREON_ECANCELED : err, why);
    }
}

/* PgBouncer refuses the startup packet's `options` (client_connection_check_interval travels there): say the fix. */
static const char *pooler_hint(const char *why)
{
    return strstr(why, "unsupported startup parameter") != NULL
               ? " (behind PgBouncer? set database.pooler: transaction, or session, and database.client_check_ms: 0; "
                 "preon then sends no startup options)"
               : "";
}

void preon_db_conn_fail(preon_db_conn_t *c, int err, const char *_why)
{
    int was_ready = c->state == CONN_READY;
    char buf[512];
    if (c->pg != NULL && _why != NULL) {
        /* libpq parses what it has read only when asked for results: a FATAL that came just before the end of the
         * connection is still in its buffer. Parse it (the notice receiver keeps its text), after copying `_why`,
         * which may point into libpq's error buffer. */
        snprintf(buf, sizeof(buf), "%s", _why);
        (void)PQisBusy(c->pg);
        _why = buf;
    }
    char whybuf[640];
    const char *why = copy_why(c, _why, whybuf, sizeof(whybuf));
    c->server_said[0] = '\0';
    /* While the database stays down, only the first failed attempt is a warning; the retries are debug. */
    if (why != NULL && c->state != CONN_IDLE) {
        if (was_ready || !c->down_logged)
            preon_log_warn("db %s#%u: %s: %s%s", c->pool->tag, c->index, preon_strerror(err), why, pooler_hint(why));
        else
            preon_log_debug("db %s#%u: %s: %s", c->pool->tag, c->index, preon_strerror(err), why);
        c->down_logged = 1;
    }
    close_pg(c);
    schedule_retry(c, err == PREON_ETIMEDOUT && was_ready);

    /* Detach everything before the callbacks run: they may submit new queries, which must not land here. */
    ring_entry_t *ring = c->ring;
    size_t head = c->ring_head, count = c->ring_count, cap = c->ring_cap;
    c->ring = preon_malloc(cap * sizeof(*c->ring));
    c->ring_head = c->ring_count = 0;
    c->sends_in_flight = 0;
    preon_db_query_t *unsent = c->unsent_head, *done = c->done_head;
    c->unsent_head = c->done_head = NULL;
    c->unsent_tail = &c->unsent_head;
    c->done_tail = &c->done_head;
    c->nqueries = c->nunsent = c->ncanceled = 0;
    for (preon_db_query_t *q = unsent; q != NULL; q = q->_next)
        if (q->_state == QUERY_UNSENT) /* a canceled one stays so: it ends PREON_ECANCELED */
            q->_state = QUERY_DETACHED;
    memset(c->prepared, 0, c->pool->nstmts ? c->pool->nstmts : 1);

    /* Oldest first: those answered but not yet committed, then those in flight, then those never sent. */
    fail_list(c->pool, done, err, 1, why);
    for (size_t i = 0; i < count; i++) {
        ring_entry_t *e = &ring[(head + i) % cap];
        if (e->kind == ENTRY_QUERY)
            preon_db_pool_fail_query(c->pool, e->q, sent_error(err, e->q), why);
    }
    free(ring);
    /* Never sent: the database did not see them. Behind a stuck query (held back by database.pipeline_depth) they
     * waited on it as the others did, so they time out with it; otherwise they were simply not sent. */
    fail_list(c->pool, unsent, err == PREON_ESHUTDOWN || err == PREON_ETIMEDOUT ? err : PREON_ENOTCONN, 0, why);
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
    /* Each Prepare behind its own Sync: a statement whose table is missing must not abort the others. Behind a
     * transaction pooler nothing is prepared: the next transaction may run on another server connection. */
    for (size_t i = 0; i < pool->nstmts && pool->cfg->database.pooler != PREON_POOLER_TRANSACTION; i++) {
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
        preon_counter_add(&pool->counters->reconnects, 1);
    c->ever_ready = 1;
    c->down_logged = 0;
    c->hosts_passed = 0;
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

/* Notices and warnings, and a FATAL sent to an idle connection (libpq hands those to the notice receiver too),
 * go to preon's log instead of libpq's raw line on stderr. */
static void on_notice(void *arg, const PGresult *res)
{
    preon_db_conn_t *c = arg;
    const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
    const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    if (sev == NULL)
        sev = "NOTICE";
    if (msg == NULL)
        msg = PQresultErrorMessage(res);
    if (strcmp(sev, "FATAL") == 0 || strcmp(sev, "PANIC") == 0) {
        snprintf(c->server_said, sizeof(c->server_said), "%s", msg);
        preon_log_warn("db %s#%u: server %s: %s", c->pool->tag, c->index, sev, msg);
    } else if (strcmp(sev, "WARNING") == 0 || strcmp(sev, "ERROR") == 0) {
        preon_log_warn("db %s#%u: server %s: %s", c->pool->tag, c->index, sev, msg);
    } else {
        preon_log_info("db %s#%u: server %s: %s", c->pool->tag, c->index, sev, msg);
    }
}

void preon_db_conn_connect(preon_db_conn_t *c)
{
    preon_db_pool_t *pool = c->pool;
    /* Does not block: the host name, if any, was resolved into hostaddr at start-up (target.c). */
    c->pg =
        PQconnectStartParams(preon_db_target_keywords(pool->target), preon_db_target_values_from(pool->target, c->host_start), 0);
    set_state(c, CONN_CONNECTING);
    c->state_since = now_ms(c);
    c->server_said[0] = '\0';
    if (c->pg != NULL)
        PQsetNoticeReceiver(c->pg, on_notice, c);
    if (c->pg == NULL || PQstatus(c->pg) == CONNECTION_BAD || watch_socket(c) != 0) {
        preon_db_conn_fail(c, PREON_ENOTCONN, c->pg != NULL ? PQerrorMessage(c->pg) : "out of memory");
        return;
    }
    /* As the libpq manual says: behave as if PQconnectPoll last answered PGRES_POLLING_WRITING. */
    want_write(c);
}

void preon_db_conn_connect_timed_out(preon_db_conn_t *c)
{
    const preon_db_target_t *t = c->pool->target;
    unsigned n = preon_db_target_hosts(t);
    char why[320];
    snprintf(why, sizeof(why), "connect to %s:%s timed out", PQhost(c->pg) != NULL ? PQhost(c->pg) : "?",
             PQport(c->pg) != NULL ? PQport(c->pg) : "?");
    if (n > 1) {
        /* The hosts before the one that hung were refused (or read-only); the next attempt starts after it, at once
         * unless every host has had its turn since the last back-off. */
        unsigned pos = preon_db_target_position(t, c->host_start, PQhost(c->pg), PQport(c->pg));
        c->host_start = (c->host_start + pos + 1) % n;
        c->hosts_passed += pos + 1;
        if (c->hosts_passed < n)
            c->retry_now = 1;
        else
            c->hosts_passed = 0;
    }
    preon_db_conn_fail(c, PREON_ENOTCONN, why);
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
        preon_db_pool_resend(c->pool, q);
        return;
    }
    /* Its answer waits for the Sync: the COMMIT there may still fail. */
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
    /* Taken whole, then reset: the callbacks below may queue queries that start the next segment. */
    segment_t seg = c->seg;
    memset(&c->seg, 0, sizeof(c->seg));
    PGresult *sync_err = seg.sync_err;
    const char *aborted = c->prepare_error[0] != '\0' ? c->prepare_error : "aborted by an earlier error in its pipeline";
    char aborted_why[sizeof(c->prepare_error)];
    snprintf(aborted_why, sizeof(aborted_why), "%s", aborted);
    preon_db_query_t *list = c->done_head;
    c->done_head = NULL;
    c->done_tail = &c->done_head;
    if (sync_err != NULL && error_of(sync_err) == PREON_EDB)
        preon_log_warn("db %s#%u: commit failed: %s", pool->tag, c->index, message_of(sync_err));

    while (list != NULL) {
        preon_db_query_t *q = list;
        list = q->_next;
        PGresult *res = q->_res;
        q->_res = NULL;
        ExecStatusType st = PQresultStatus(res);
        int ok = st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK;
        if (ok && sync_err != NULL) {
            if ((q->flags & PREON_DB_SHARED) && !q->_resent) {
                q->_resent = 1;
                preon_db_pool_resend(pool, q);
            } else {
                preon_db_pool_fail_query(pool, q, error_of(sync_err), message_of(sync_err));
            }
        } else if (ok && seg.failed && (q->flags & PREON_DB_WRITE)) {
            preon_db_pool_fail_query(pool, q, seg.err, seg.why);
        } else if (ok) {
            preon_db_pool_finish_query(pool, q, res);
        } else if (st == PGRES_PIPELINE_ABORTED) {
            preon_db_pool_fail_query(pool, q, PREON_EDB, aborted_why);
        } else {
            preon_db_pool_fail_query(pool, q, error_of(res), message_of(res));
        }
        PQclear(res);
    }
    if (sync_err != NULL)
        PQclear(sync_err);
}

/* Takes every result libpq can give without blocking and hands each to the entry it belongs to; returns how many
 * it took. */
static size_t read_results(preon_db_conn_t *c)
{
    size_t taken = 0;
    while (c->pg != NULL && c->ring_count != 0 && !PQisBusy(c->pg)) {
        PGresult *r = PQgetResult(c->pg);
        taken++;
        if (PQstatus(c->pg) == CONNECTION_BAD) {
            /* libpq reports a broken connection as the head query's error: it is not that query's fault. */
            PQclear(r);
            preon_db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
            return taken;
        }
        ring_entry_t *head = &c->ring[c->ring_head];
        if (head->kind == ENTRY_SYNC) {
            if (r == NULL) {
                if (c->seg.sync_null_ok) {
                    c->seg.sync_null_ok = 0;
                    continue;
                }
                preon_db_conn_fail(c, PREON_ECONNLOST, "pipeline out of step (no Sync result)");
                return taken;
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
            if (pop(c).ends_send) {
                PREON_ASSERT(c->sends_in_flight > 0);
                c->sends_in_flight--;
                /* what accumulated while the batches were out goes out at the end of this pass */
                if (c->unsent_head != NULL && preon_db_conn_may_send(c))
                    preon_db_pool_arm_flush(c->pool);
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
    return taken;
}

/*
 * Bytes of a record OpenSSL has already decrypted that libpq has not taken yet. Not SSL_has_pending: that is also
 * true while OpenSSL holds the first bytes of a record whose rest has not arrived, which no read can take until
 * the socket is readable again (epoll will say so).
 */
static int tls_pending(PGconn *pg)
{
    SSL *ssl = PQsslInUse(pg) ? PQsslStruct(pg, "OpenSSL") : NULL;
    return ssl != NULL ? SSL_pending(ssl) : 0;
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
    /* Parses what came in even with nothing in flight, so that a notice or a FATAL on an idle connection reaches
     * the notice receiver now, not never. */
    if (c->ring_count == 0)
        (void)PQisBusy(c->pg);
    read_results(c);
    /* Over TLS, PQconsumeInput takes what fits in libpq's buffer (at least 8 KiB free): the rest of a record of up to
     * 16 KiB stays decrypted inside OpenSSL, where epoll cannot see it, and would wait for the server's next bytes
     * (a TLS-terminating pooler writes full records). Read on while OpenSSL holds some. */
    while (c->pg != NULL && tls_pending(c->pg) > 0) {
        /* Decrypted bytes can always be taken (libpq keeps 8 KiB free and read_results empties it): this ends. */
        if (!PQconsumeInput(c->pg)) {
            preon_db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
            return;
        }
        read_results(c);
    }
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

int preon_db_conn_may_send(const preon_db_conn_t *c)
{
    int depth = c->pool->cfg->database.pipeline_depth;
    return depth == 0 || c->sends_in_flight < (unsigned)depth;
}

/* Writes a Sync and records it; 0, or PREON_ECONNLOST when libpq could not (the connection is broken). */
static int send_sync(preon_db_conn_t *c)
{
    if (!PQpipelineSync(c->pg))
        return PREON_ECONNLOST;
    push(c, ENTRY_SYNC, 0, NULL);
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
    if (c->pool->cfg->database.pooler == PREON_POOLER_TRANSACTION)
        return PQsendQueryParams(c->pg, st->sql, q->nparams, NULL, q->params, NULL, NULL, 0) ? 0 : PREON_ECONNLOST;
    if (!c->prepared[q->stmt]) {
        /* Its Prepare failed earlier (say the table was missing); try again, in the same pipeline. */
        if (!PQsendPrepare(c->pg, st->name, st->sql, st->nparams, NULL))
            return PREON_ECONNLOST;
        push(c, ENTRY_PREPARE, q->stmt, NULL);
        c->prepared[q->stmt] = 1;
    }
    return PQsendQueryPrepared(c->pg, st->name, q->nparams, q->params, NULL, NULL, 0) ? 0 : PREON_ECONNLOST;
}

/*
 * libpq 15's PQpipelineSync writes at once: a Sync after every query is a send() per query. Corked, those sends only
 * append to the socket's buffer, and the batch leaves as one segment when uncorked at the end of the write, as
 * PQsendPipelineSync (libpq 17) and one flush would send it: PostgreSQL wakes and reads once per batch, not once per
 * query. Only for a batch of several queries (two setsockopt calls), only on TCP (a Unix socket refuses, once).
 */
static int cork(preon_db_conn_t *c, int on)
{
    if (c->cork < 0 || (on && (c->unsent_head == NULL || c->unsent_head->_next == NULL)))
        return 0;
    if (setsockopt(c->pg_fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)) != 0) {
        c->cork = -1;
        return 0;
    }
    return on;
}

void preon_db_conn_send_some(preon_db_conn_t *c, size_t cap)
{
    PREON_ASSERT(c->state == CONN_READY && c->pg != NULL);
    size_t before = c->ring_count, sent = 0;
    int corked = cork(c, 1);
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
        push(c, ENTRY_QUERY, 0, q);
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
    if (corked)
        cork(c, 0);
    flush(c);
    return;

Broken:
    preon_db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
}
