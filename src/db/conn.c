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
#include "internal.h"
#include "preon/errors.h"
#include "preon/log.h"

/*
 * One libpq connection's life: a non-blocking connect (PQconnectStartParams + PQconnectPoll) with multi-host
 * failover, the socket h2o watches (known by its identity, not its number), pipeline mode with every statement
 * prepared, and the end of it all: preon__db_conn_fail(), which answers everything the connection holds and lets the
 * pool's tick reconnect with back-off. What flows through a ready connection (queries out, results back, Syncs) is
 * pipeline.c's.
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

void preon__db_conn_init(preon_db_conn_t *c, preon_db_pool_t *pool, const preon_db_owner_t *owner, unsigned index)
{
    memset(c, 0, sizeof(*c));
    c->pool = pool;
    c->owner = owner;
    c->index = index;
    c->state = CONN_IDLE;
    c->pg_fd = -1;
    c->unsent_tail = &c->unsent_head;
    c->done_tail = &c->done_head;
    c->backoff_ms = pool->settings.reconnect_min_ms;
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

void preon__db_conn_dispose(preon_db_conn_t *c)
{
    preon__db_conn_fail(c, PREON_ESHUTDOWN, NULL);
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

static void schedule_retry(preon_db_conn_t *c, int at_once)
{
    const preon_db_settings_t *set = &c->pool->settings;
    at_once |= c->retry_now;
    c->retry_now = 0;
    set_state(c, CONN_IDLE);
    c->state_since = preon__db_conn_now_ms(c);
    c->retry_at = preon__db_conn_now_ms(c) + (at_once ? 0 : c->backoff_ms);
    if (!at_once) {
        c->backoff_ms *= 2;
        if (c->backoff_ms > set->reconnect_max_ms)
            c->backoff_ms = set->reconnect_max_ms;
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
static void fail_list(preon_db_conn_t *c, preon_db_query_t *list, int err, int sent, const char *why)
{
    while (list != NULL) {
        preon_db_query_t *q = list;
        list = q->_next;
        if (q->_res != NULL) {
            PQclear(q->_res);
            q->_res = NULL;
        }
        c->owner->done(c->pool, q, sent ? sent_error(err, q) : q->_state == QUERY_CANCELED ? PREON_ECANCELED : err, why, NULL);
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

/* Whether the last query handed to libpq (the ring's newest, else the newest of those awaiting their Sync) left its
 * transaction open for the next one: then the first never-sent query is that transaction's rest. */
static int last_sent_continues(const preon_db_query_t *done, const ring_entry_t *ring, size_t head, size_t count, size_t cap)
{
    const preon_db_query_t *last = NULL;
    for (size_t i = count; i > 0 && last == NULL; i--) {
        const ring_entry_t *e = &ring[(head + i - 1) % cap];
        if (e->kind == ENTRY_QUERY)
            last = e->q;
    }
    for (; last == NULL && done != NULL; done = done->_next)
        if (done->_next == NULL)
            last = done;
    return last != NULL && (last->flags & (PREON_DB_MORE | PREON_DB_OWN_SYNC)) == PREON_DB_MORE;
}

void preon__db_conn_fail(preon_db_conn_t *c, int err, const char *_why)
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
    c->nqueries = c->nunsent = c->ncanceled = c->nwrites = 0;
    for (preon_db_query_t *q = unsent; q != NULL; q = q->_next)
        if (q->_state == QUERY_UNSENT) /* a canceled one stays so: it ends PREON_ECANCELED */
            q->_state = QUERY_DETACHED;
    memset(c->prepared, 0, c->pool->nstmts ? c->pool->nstmts : 1);

    /* Never sent, so the database did not see them: they go to another connection, as a submit now would place them,
     * before the callbacks below run (a request those decide cancels its moved queries there, never sent). Not at
     * shutdown, nor behind a stuck query: those waited on it as the others did and time out with it. */
    if (err != PREON_ESHUTDOWN && err != PREON_ETIMEDOUT && unsent != NULL) {
        unsigned moved;
        unsent = c->owner->requeue(c->pool, unsent, last_sent_continues(done, ring, head, count, cap), &moved);
        if (moved != 0) {
            preon_counter_add(&c->pool->counters->moved, moved);
            preon_log_info("db %s#%u: %u queries it had not sent moved to other connections", c->pool->tag, c->index, moved);
        }
    }

    /* Oldest first: those answered but not yet committed, then those in flight, then those never sent. */
    fail_list(c, done, err, 1, why);
    for (size_t i = 0; i < count; i++) {
        ring_entry_t *e = &ring[(head + i) % cap];
        if (e->kind == ENTRY_QUERY)
            c->owner->done(c->pool, e->q, sent_error(err, e->q), why, NULL);
    }
    free(ring);
    /* Never sent: the database did not see them. Behind a stuck query (held back by database.pipeline_depth) they
     * waited on it as the others did, so they time out with it; otherwise they were simply not sent. */
    fail_list(c, unsent, err == PREON_ESHUTDOWN || err == PREON_ETIMEDOUT ? err : PREON_ENOTCONN, 0, why);
}

void preon__db_conn_flush(preon_db_conn_t *c)
{
    int left = PQflush(c->pg); /* 1: the socket took only part; libpq keeps the rest */
    if (left < 0)
        preon__db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
    else if (left > 0)
        want_write(c);
}

/* Pipeline mode and every statement prepared; queries may follow at once, in the same pipeline. */
static void become_ready(preon_db_conn_t *c)
{
    preon_db_pool_t *pool = c->pool;
    if (PQsetnonblocking(c->pg, 1) != 0 || PQenterPipelineMode(c->pg) != 1) {
        preon__db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
        return;
    }
    /* Each Prepare behind its own Sync: a statement whose table is missing must not abort the others. Behind a
     * transaction pooler nothing is prepared: the next transaction may run on another server connection. One write
     * for all of them (with PQsendPipelineSync). */
    for (size_t i = 0; i < pool->nstmts && !pool->settings.unnamed_statements; i++) {
        const preon_db_statement_t *s = &pool->stmts[i];
        if (!PQsendPrepare(c->pg, s->name, s->sql, s->nparams, NULL) || !preon__db_conn_queue_sync(c)) {
            preon__db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
            return;
        }
        preon__db_conn_push(c, ENTRY_PREPARE, (unsigned)i, NULL);
        preon__db_conn_push(c, ENTRY_SYNC, 0, NULL);
        c->prepared[i] = 1;
    }
    set_state(c, CONN_READY);
    /* A new backend (and after a restart, cold caches): its service time is measured afresh, and until then the
     * connection is judged by the age of its oldest query (shed.c), as a freshly started one is. */
    memset(&c->svc, 0, sizeof(c->svc));
    c->svc_busy_total = 0;
    c->svc_k = c->svc_kw = 0;
    c->state_since = preon__db_conn_now_ms(c);
    c->backoff_ms = pool->settings.reconnect_min_ms;
    if (c->ever_ready)
        preon_counter_add(&pool->counters->reconnects, 1);
    c->ever_ready = 1;
    c->down_logged = 0;
    c->hosts_passed = 0;
    preon_log_info("db %s#%u: connected (server %d, backend pid %d)", pool->tag, c->index, PQserverVersion(c->pg),
                   PQbackendPID(c->pg));
    preon__db_conn_flush(c);
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
        preon__db_conn_fail(c, PREON_ENOTCONN, PQerrorMessage(c->pg));
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

void preon__db_conn_connect(preon_db_conn_t *c)
{
    preon_db_pool_t *pool = c->pool;
    /* Does not block: the host name, if any, was resolved into hostaddr at start-up (target.c). */
    c->pg =
        PQconnectStartParams(preon__db_target_keywords(pool->target), preon__db_target_values_from(pool->target, c->host_start), 0);
    set_state(c, CONN_CONNECTING);
    c->state_since = preon__db_conn_now_ms(c);
    c->server_said[0] = '\0';
    if (c->pg != NULL)
        PQsetNoticeReceiver(c->pg, on_notice, c);
    if (c->pg == NULL || PQstatus(c->pg) == CONNECTION_BAD || watch_socket(c) != 0) {
        preon__db_conn_fail(c, PREON_ENOTCONN, c->pg != NULL ? PQerrorMessage(c->pg) : "out of memory");
        return;
    }
    /* As the libpq manual says: behave as if PQconnectPoll last answered PGRES_POLLING_WRITING. */
    want_write(c);
}

void preon__db_conn_connect_timed_out(preon_db_conn_t *c)
{
    const preon_db_target_t *t = c->pool->target;
    unsigned n = preon__db_target_hosts(t);
    char why[320];
    snprintf(why, sizeof(why), "connect to %s:%s timed out", PQhost(c->pg) != NULL ? PQhost(c->pg) : "?",
             PQport(c->pg) != NULL ? PQport(c->pg) : "?");
    if (n > 1) {
        /* The hosts before the one that hung were refused (or read-only); the next attempt starts after it, at once
         * unless every host has had its turn since the last back-off. */
        unsigned pos = preon__db_target_position(t, c->host_start, PQhost(c->pg), PQport(c->pg));
        c->host_start = (c->host_start + pos + 1) % n;
        c->hosts_passed += pos + 1;
        if (c->hosts_passed < n)
            c->retry_now = 1;
        else
            c->hosts_passed = 0;
    }
    preon__db_conn_fail(c, PREON_ENOTCONN, why);
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
        preon__db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
        return;
    }
    /* Parses what came in even with nothing in flight, so that a notice or a FATAL on an idle connection reaches
     * the notice receiver now, not never. */
    const char *why;
    if (c->ring_count == 0)
        (void)PQisBusy(c->pg);
    if (preon__db_conn_read_results(c, &why) != 0) {
        preon__db_conn_fail(c, PREON_ECONNLOST, why);
        return;
    }
    /* Over TLS, PQconsumeInput takes what fits in libpq's buffer (at least 8 KiB free): the rest of a record of up to
     * 16 KiB stays decrypted inside OpenSSL, where epoll cannot see it, and would wait for the server's next bytes
     * (a TLS-terminating pooler writes full records). Read on while OpenSSL holds some. */
    while (c->pg != NULL && tls_pending(c->pg) > 0) {
        /* Decrypted bytes can always be taken (libpq keeps 8 KiB free and read_results empties it): this ends. */
        if (!PQconsumeInput(c->pg)) {
            preon__db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
            return;
        }
        if (preon__db_conn_read_results(c, &why) != 0) {
            preon__db_conn_fail(c, PREON_ECONNLOST, why);
            return;
        }
    }
    if (c->pg == NULL)
        return;
    if (PQstatus(c->pg) == CONNECTION_BAD) {
        preon__db_conn_fail(c, PREON_ECONNLOST, PQerrorMessage(c->pg));
        return;
    }
    preon__db_conn_flush(c);
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
