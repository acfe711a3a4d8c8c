/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include "h2o.h"
#include "h2o/http1.h"
#include "h2o/http2.h"
#include "preon/alloc.h"
#include "cpus.h"
#include "preon/errors.h"
#include "preon/log.h"
#include "observe.h"
#include "pass.h"
#include "preon/reply.h"
#include "preon/router.h"
#include "preon/server.h"
#include "thread.h"

/* The most bytes of joined answers a connection holds (a client that pipelines without reading costs this much, not
 * its answers' size), and how long a closed connection reads its client's last input before it is closed anyway. */
#define PREON_JOIN_MAX (64u * 1024)
#define PREON_LINGER_MS 2000

/*
 * The only file that touches threads and listening sockets. Each thread owns an event loop, an h2o context,
 * its own SO_REUSEPORT listener (the kernel spreads connections across them) and its database pool. The main
 * thread only waits for signals and, on SIGTERM or SIGINT, posts each loop a stop message through h2o's
 * multithread queue: nothing is shared on the request path.
 */

typedef struct {
    h2o_handler_t super;
} root_handler_t;

static h2o_globalconf_t globalconf;
static const preon_service_t *service;
/* Kept reachable until exit, so that leak checkers see the loops' memory as in use rather than lost. */
static preon_thread_t *threads;
static unsigned nthreads;
static int draining;        /* set by the main thread on the first signal; read by readiness checks */
static uint64_t open_conns; /* over all threads, for server.max_connections (atomic: accept and close only) */
static uint64_t max_conns;  /* server.max_connections, or fewer if the open files limit allows fewer */
/* Route ids for the counters: the service's, then the server's own (PREON_ROUTE_*), with their labels. */
static size_t nroutes;
static const char **route_labels;

/* The health and metrics paths (PREON_ROUTE_LIVE, _READY, _METRICS), or PREON_ROUTE__EXTRA for another path. */
static unsigned own_route(const preon_config_t *cfg, h2o_iovec_t path)
{
    if (h2o_memis(path.base, path.len, cfg->health.live_path, strlen(cfg->health.live_path)))
        return PREON_ROUTE_LIVE;
    if (h2o_memis(path.base, path.len, cfg->health.ready_path, strlen(cfg->health.ready_path)))
        return PREON_ROUTE_READY;
    if (cfg->metrics.enabled && h2o_memis(path.base, path.len, cfg->metrics.path, strlen(cfg->metrics.path)))
        return PREON_ROUTE_METRICS;
    return PREON_ROUTE__EXTRA;
}

/* Adds one pool's counters into `sum`; returns its ready connections. */
static unsigned add_pool(preon_db_stats_t *sum, const preon_db_counters_t *c)
{
    preon_db_stats_t st;
    preon_db_counters_read(c, &st);
    sum->queued += st.queued, sum->ready += st.ready, sum->connecting += st.connecting, sum->total += st.total;
    sum->reconnects += st.reconnects, sum->rejected_full += st.rejected_full, sum->rejected_down += st.rejected_down;
    sum->rejected_slow += st.rejected_slow, sum->moved += st.moved;
    return st.ready;
}

/* A copy, in the request's pool, of every thread's counters summed: what the health and metrics answers read. It reads
 * only the server's own blocks (HTTP counters, each pool's counters), which live until every thread has joined, with
 * relaxed atomic loads: never another thread's pool, which its thread frees when it ends. */
static preon_snapshot_t *take_snapshot(h2o_req_t *req)
{
    preon_snapshot_t *s = h2o_mem_alloc_pool(&req->pool, sizeof(*s));
    preon__snapshot_init(s, &req->pool, nroutes, service->nstatements);
    s->cfg = preon__thread_of(req)->cfg;
    s->route_labels = route_labels;
    s->statements = service->statements;
    s->nthreads = nthreads;
    s->draining = __atomic_load_n(&draining, __ATOMIC_RELAXED);
    s->has_read_pool = s->cfg->database.read_url[0] != '\0';
    for (unsigned t = 0; t < nthreads; t++) {
        preon__snapshot_add_http(s, &threads[t].http);
        preon_db_counters_collect(&threads[t].db_counters, s->queries, s->query_durations);
        preon_db_counters_collect(&threads[t].db_read_counters, s->queries, s->query_durations);
        s->threads_without_db += add_pool(&s->db, &threads[t].db_counters) == 0;
        (void)add_pool(&s->db_read, &threads[t].db_read_counters);
    }
    return s;
}

void *preon_service_state(h2o_req_t *req)
{
    return preon__thread_of(req)->app;
}

/*
 * The route a request took travels with it to the logger (on_log_access), so that it is found once. h2o 2.2.5's
 * request has no slot for a handler's own data; its env vector (name/value pairs handlers pass down, as h2o's setenv
 * does) carries it: one pair whose name points at ROUTE_MARK and whose value's length is the route id.
 */
static const char ROUTE_MARK[] = "preon-route";

static void keep_route(h2o_req_t *req, size_t route)
{
    h2o_vector_reserve(&req->pool, &req->env, req->env.size + 2);
    req->env.entries[req->env.size++] = h2o_iovec_init(ROUTE_MARK, sizeof(ROUTE_MARK) - 1);
    req->env.entries[req->env.size++] = h2o_iovec_init(ROUTE_MARK, route);
}

/* The route keep_route left with `req`, or `none` for a request that never reached on_req (h2o's own 400s). */
static size_t kept_route(const h2o_req_t *req, size_t none)
{
    for (size_t i = 0; i + 1 < req->env.size; i += 2)
        if (req->env.entries[i].base == ROUTE_MARK)
            return req->env.entries[i + 1].len;
    return none;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    preon_thread_t *thr = preon__thread_of(req);
    size_t napp = service->nroutes;
    (void)self;
#ifndef H2O_HTTP1_GRACEFUL_SHUTDOWN
    /* Debian's h2o (-DPREON_DEPS=system): during a drain the connection closes after this answer, so that clients move
     * to another instance, unless the client has already sent more (pipelined requests, in h2o's buffer or the
     * socket's): those are answered first, the last with the close. A guess from outside h2o: its buffer still holds
     * the request being answered, so a client without pipelined requests is told to close only by the closed pool's
     * 503. The source build decides it inside h2o (scripts/sources/h2o/24-http1-graceful-shutdown.patch). */
    if (thr->draining) {
        h2o_socket_t *sock = req->conn->callbacks->get_socket != NULL ? req->conn->callbacks->get_socket(req->conn) : NULL;
        int unread = 0;
        if (sock != NULL && (sock->input == NULL || sock->input->size == 0) &&
            ioctl(h2o_socket_get_fd(sock), FIONREAD, &unread) != 0)
            unread = 0;
        if (sock == NULL || ((sock->input == NULL || sock->input->size == 0) && unread == 0))
            req->http1_is_persistent = 0;
    }
#endif
    thr->last_request_ns = preon_now_ns();
    unsigned own = own_route(thr->cfg, req->path_normalized);
    keep_route(req, own == PREON_ROUTE__EXTRA ? napp + PREON_ROUTE_UNMATCHED : napp + own);
    if (own == PREON_ROUTE__EXTRA && req->path.len > (size_t)thr->cfg->server.max_uri_bytes) {
        /* h2o itself lets a request line grow to about 400 KiB; nothing here needs more than a few hundred */
        preon_reply_error(req, 414, "URI too long");
    } else if (own == PREON_ROUTE__EXTRA) {
        size_t route = service->handle(req);
        if (route < napp)
            req->env.entries[req->env.size - 1].len = route;
    } else if ((preon_method_bit(req->method.base, req->method.len) & (PREON_M_GET | PREON_M_HEAD)) == 0)
        preon_reply_method_not_allowed(req, PREON_M_GET | PREON_M_HEAD); /* read-only resources */
    else if (own == PREON_ROUTE_LIVE)
        preon__health_live_reply(req);
    else if (own == PREON_ROUTE_READY)
        preon__health_ready_reply(req, take_snapshot(req));
    else
        preon__metrics_reply(req, take_snapshot(req));
    return 0;
}

/* h2o calls each path's loggers once per request, from h2o_dispose_request: the one place a request is counted. */
static void on_log_access(h2o_logger_t *self, h2o_req_t *req)
{
    preon_thread_t *thr = preon__thread_of(req);
    size_t route = kept_route(req, service->nroutes + PREON_ROUTE_UNMATCHED);
    (void)self;
    preon__observe_request(&thr->http, thr->cfg, thr->index, (unsigned)route, req);
}

static int open_listener(const preon_config_t *cfg, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICHOST};
    struct addrinfo *ai;
    char port[16];
    snprintf(port, sizeof(port), "%d", cfg->server.port);
    int rv = getaddrinfo(cfg->server.listen, port, &hints, &ai);
    if (rv != 0) {
        snprintf(err, errlen, "server.listen '%s': %s (a numeric address is expected)", cfg->server.listen, gai_strerror(rv));
        return -1;
    }
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        listen(fd, 4096) != 0) {
        snprintf(err, errlen, "cannot listen on %s:%d: %s", cfg->server.listen, cfg->server.port, strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

/* One client connection of a loop thread, from its accept to h2o's close of it (the drain looks at what each writes). */
typedef struct {
    h2o_linklist_t link; /* in preon_thread_t.conns */
    h2o_socket_t *sock;
    preon_thread_t *thr;
} conn_t;

/* A client connection's socket is really closed (with the patched h2o, after its graceful close: see
 * set_write_path): it no longer counts against server.max_connections. */
static void on_conn_close(void *data)
{
    conn_t *c = data;
    h2o_linklist_unlink(&c->link);
    preon_counter_add(&c->thr->http.conns_open, (uint64_t)-1);
    __atomic_fetch_sub(&open_conns, 1, __ATOMIC_RELAXED);
    free(c);
}

/* Connections whose answers are not all written yet (h2o's write in progress, bytes the loop joined), and closed
 * ones still closing. */
static unsigned conns_writing(preon_thread_t *thr)
{
    unsigned n = 0;
    for (h2o_linklist_t *l = thr->conns.next; l != &thr->conns; l = l->next) {
        conn_t *c = H2O_STRUCT_FROM_MEMBER(conn_t, link, l);
#ifdef H2O_EVLOOP_HAS_WRITE_CONF
        n += h2o_socket_is_writing(c->sock) || h2o_evloop_socket_is_flushing(c->sock);
#else
        n += h2o_socket_is_writing(c->sock);
#endif
    }
    return n;
}

static void on_accept(h2o_socket_t *listener, const char *err);

static void on_accept_resume(h2o_timeout_entry_t *entry)
{
    preon_thread_t *thr = H2O_STRUCT_FROM_MEMBER(preon_thread_t, accept_pause_entry, entry);
    if (thr->listener != NULL)
        h2o_socket_read_start(thr->listener, on_accept);
}

/* Out of descriptors (EMFILE/ENFILE), the listener stays readable and accept keeps failing: the loop would spin
 * and the client wait. Free the spare descriptor, accept the connection with it and close it at once, so that
 * the client is refused cleanly, like one over server.max_connections. The threads share one descriptor table,
 * so another thread may take the freed slot first: then accepting pauses for a moment instead of spinning.
 * Returns 1 when a connection was shed (try the next one). */
static int out_of_descriptors(preon_thread_t *thr)
{
    if (!thr->fd_warned) {
        thr->fd_warned = 1;
        preon_log_warn("thread %u: out of file descriptors: refusing connections until some close", thr->index);
    }
    if (thr->spare_fd < 0)
        thr->spare_fd = dup(thr->listen_fd);
    if (thr->spare_fd >= 0) {
        close(thr->spare_fd);
        int fd = accept4(thr->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
            close(fd);
        thr->spare_fd = dup(thr->listen_fd);
        if (fd >= 0) {
            preon_counter_add(&thr->http.conns_refused, 1);
            return 1;
        }
    }
    h2o_socket_read_stop(thr->listener);
    h2o_timeout_link(thr->loop, &thr->accept_pause, &thr->accept_pause_entry);
    return 0;
}

/* Accepts up to `limit` connections from the backlog. */
static void accept_some(preon_thread_t *thr, h2o_socket_t *listener, int limit)
{
    for (int i = 0; i < limit; i++) {
        if (__atomic_fetch_add(&open_conns, 1, __ATOMIC_RELAXED) >= max_conns) {
            /* Over the limit: accepted and closed at once, without h2o (whose close is graceful: it would hold the
             * socket a while longer), so the client sees a reset, not a hang; counted. */
            __atomic_fetch_sub(&open_conns, 1, __ATOMIC_RELAXED);
            int fd = accept4(thr->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd < 0) {
                if ((errno == EMFILE || errno == ENFILE) && out_of_descriptors(thr))
                    continue;
                return;
            }
            close(fd);
            preon_counter_add(&thr->http.conns_accepted, 1);
            preon_counter_add(&thr->http.conns_refused, 1);
            continue;
        }
        h2o_socket_t *sock = h2o_evloop_socket_accept(listener);
        if (sock == NULL) {
            __atomic_fetch_sub(&open_conns, 1, __ATOMIC_RELAXED);
            if ((errno == EMFILE || errno == ENFILE) && out_of_descriptors(thr))
                continue;
            return;
        }
        preon_counter_add(&thr->http.conns_accepted, 1);
        preon_counter_add(&thr->http.conns_open, 1);
        conn_t *c = preon_calloc(1, sizeof(*c));
        c->sock = sock, c->thr = thr;
        h2o_linklist_insert(&thr->conns, &c->link);
        sock->on_close.cb = on_conn_close;
        sock->on_close.data = c;
        h2o_accept(&thr->accept_ctx, sock);
    }
}

static void on_accept(h2o_socket_t *listener, const char *err)
{
    preon_thread_t *thr = listener->data;
    if (err != NULL || thr->draining)
        return;
    /* A few per wake-up: fair to the connections already open, cheap under a connection storm. */
    accept_some(thr, listener, 32);
}

/* Closing a listening socket resets the connections still in its backlog, requests and all: take them first. */
static void close_listener(preon_thread_t *thr)
{
    /* first: shedding a connection out of descriptors dups the spare again, and may pause accepting */
    if (thr->listener != NULL)
        accept_some(thr, thr->listener, INT_MAX);
    if (thr->spare_fd >= 0) { /* a duplicate of the listener: it would keep the socket listening */
        close(thr->spare_fd);
        thr->spare_fd = -1;
    }
    if (h2o_timeout_is_linked(&thr->accept_pause_entry))
        h2o_timeout_unlink(&thr->accept_pause_entry);
    if (thr->listener != NULL) {
        h2o_socket_read_stop(thr->listener);
        h2o_socket_close(thr->listener);
        thr->listener = NULL;
    }
}

/* Waits up to `ns` for a signal of `set` (the second one while stopping): if one comes, exits at once. */
static void exit_on_signal(const sigset_t *set, long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    if (sigtimedwait(set, NULL, &ts) > 0) {
        preon_log_warn("second signal: exiting at once");
        _exit(1);
    }
}

/* server.http2 as this binary applies it. auto, the default, is on where h2o bounds the requests a client may leave
 * unanswered (H2O_HTTP2_RESET_BUDGET: preon's patch to h2o's source, scripts/sources/h2o/). Debian's binary
 * libh2o-evloop does not: one connection could there open and reset streams without end, each starting a request
 * (rapid reset, CVE-2023-44487), so there only true turns HTTP/2 on. */
static int http2_on(const preon_config_t *cfg)
{
#ifdef H2O_HTTP2_RESET_BUDGET
    return cfg->server.http2 != PREON_HTTP2_OFF;
#else
    return cfg->server.http2 == PREON_HTTP2_ON;
#endif
}

static unsigned listeners_closed; /* first stop phase: how many threads have closed their listener */

/*
 * The stop comes in two phases. First every thread closes its listener; only when all are closed does the drain
 * begin (Connection: close on the next answers). Otherwise a client told to close by one thread reconnects at once,
 * lands in the backlog of a thread that has not closed its listener yet, writes its request, and is reset when
 * that listener closes: with SO_REUSEPORT each thread has a backlog of its own. Now such a client is refused.
 */
static void on_close_listener(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages)
{
    preon_thread_t *thr = H2O_STRUCT_FROM_MEMBER(preon_thread_t, close_receiver, receiver);
    while (!h2o_linklist_is_empty(messages))
        h2o_linklist_unlink(messages->next);
    close_listener(thr);
    __atomic_add_fetch(&listeners_closed, 1, __ATOMIC_RELEASE);
}

static void on_stop(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages)
{
    preon_thread_t *thr = H2O_STRUCT_FROM_MEMBER(preon_thread_t, receiver, receiver);
    while (!h2o_linklist_is_empty(messages))
        h2o_linklist_unlink(messages->next);
    if (thr->draining)
        return;
    thr->draining = 1;
    thr->drain_deadline = h2o_now(thr->loop) + (uint64_t)thr->cfg->server.shutdown_timeout_ms;
    close_listener(thr); /* already closed in the first phase, unless that timed out */
#ifdef H2O_HTTP1_GRACEFUL_SHUTDOWN
    /* HTTP/2 connections get GOAWAY; an HTTP/1 connection closes after the answer to the last request its client has
     * sent (scripts/sources/h2o/24-http1-graceful-shutdown.patch). */
    h2o_context_request_shutdown(&thr->ctx);
#else
    /* HTTP/2 connections get GOAWAY from h2o's HTTP/2 side, told alone: Debian's h2o would close an HTTP/1 connection
     * after its current answer, dropping the pipelined requests it has read; on_req ends those connections itself. */
    if (http2_on(thr->cfg) && globalconf.http2.callbacks.request_shutdown != NULL)
        globalconf.http2.callbacks.request_shutdown(&thr->ctx);
#endif
}

static void *thread_main(void *arg)
{
    preon_thread_t *thr = arg;
    preon_log_attach();
    h2o_socket_read_start(thr->listener, on_accept);
    /* Until the stop message: serve. Then until nothing waits on the database, every answer begun is written (to
     * a client that reads) and no request has come for a moment (active keep-alive clients get Connection: close and
     * leave), or the shutdown deadline. */
    while (!thr->draining || ((thr->pending != 0 || conns_writing(thr) != 0 || preon_now_ns() - thr->last_request_ns < 100000000) &&
                              h2o_now(thr->loop) < thr->drain_deadline))
        preon__server_run_pass(thr->loop, thr->index, thr->draining ? 10 : INT32_MAX);
    unsigned writing = conns_writing(thr);
    if (writing != 0)
        preon_log_warn("thread %u: %u connections still writing at shutdown: their clients did not read their answers "
                       "within server.shutdown_timeout_ms; they are cut",
                       thr->index, writing);

    /* Whatever still waits (only after shutdown_timeout_ms) is answered 503 now; a short grace lets those
     * answers, and the last ones written above, reach the clients. */
    if (thr->pending != 0)
        preon_log_warn("thread %u: %zu requests still waiting at shutdown; answering 503", thr->index, thr->pending);
    /* Closed: a request reaching this thread in the grace below is refused with 503. Freed after the last loop pass;
     * scrapes on other threads read only its counters, which the server keeps until every thread has joined. */
    preon_db_pool_close(thr->db);
    if (thr->db_read != NULL)
        preon_db_pool_close(thr->db_read);
    uint64_t grace_end = h2o_now(thr->loop) + 50;
    while (h2o_now(thr->loop) < grace_end)
        preon__server_run_pass(thr->loop, thr->index, 10);
    h2o_multithread_unregister_receiver(thr->ctx.queue, &thr->receiver);
    h2o_multithread_unregister_receiver(thr->ctx.queue, &thr->close_receiver);
    h2o_timeout_dispose(thr->loop, &thr->request_timeout);
    h2o_timeout_dispose(thr->loop, &thr->accept_pause);
    service->thread_dispose(thr->app);
    thr->app = NULL;
    preon_db_pool_destroy(thr->db);
    preon_db_pool_destroy(thr->db_read);
    thr->db = thr->db_read = NULL;
    preon_log_detach();
    return NULL;
}

/* Says once at start-up whether HTTP/2 is on, and whether rapid reset is bounded. */
static void log_http2(const preon_config_t *cfg)
{
#ifdef H2O_HTTP2_RESET_BUDGET
    if (http2_on(cfg))
        preon_log_info("HTTP/2 on (cleartext: prior knowledge and the h2c upgrade); a connection may leave %d requests "
                       "unanswered beyond those answered, then gets GOAWAY",
                       H2O_HTTP2_RESET_BUDGET);
#else
    if (http2_on(cfg))
        preon_log_warn("server.http2 is true, but this build's h2o (Debian's binary libh2o-evloop) does not bound HTTP/2 "
                       "rapid reset (CVE-2023-44487): keep preon behind a proxy that does");
    else if (cfg->server.http2 == PREON_HTTP2_AUTO)
        preon_log_info("HTTP/2 off: this build's h2o (Debian's binary libh2o-evloop) does not bound HTTP/2 rapid reset; "
                       "preon's build from source does");
#endif
}

static void setup_globalconf(const preon_config_t *cfg)
{
    h2o_config_init(&globalconf);
    /* No name here: h2o 2.2.5 would sprintf it into every head; preon's replies carry their Server header themselves
     * (reply.c). Only h2o's own answers to unparsable requests go without one. */
    globalconf.server_name = h2o_iovec_init(H2O_STRLIT(""));
    /* HTTP/2: a prior-knowledge preface or an h2c upgrade; without it a preface is a malformed HTTP/1 request (400) */
    globalconf.http1.upgrade_to_http2 = http2_on(cfg);
    globalconf.http2.idle_timeout = (uint64_t)cfg->server.idle_timeout_ms;
    globalconf.max_request_entity_size = (size_t)cfg->server.max_body_bytes;
    /* h2o's HTTP/1 "request timeout" is the time allowed for a request head, and for a keep-alive pause. */
    globalconf.http1.req_timeout = (uint64_t)cfg->server.idle_timeout_ms;
    h2o_hostconf_t *host = h2o_config_register_host(&globalconf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    /* h2o puts its chunked encoder on every path; it would chunk every preon answer, whose length h2o does not see:
     * preon writes Content-Length as a header of its own (reply.c), and every answer carries one. */
    for (size_t i = 0; i < path->filters.size; i++)
        free(path->filters.entries[i]);
    path->filters.size = 0;
    root_handler_t *h = (root_handler_t *)h2o_create_handler(path, sizeof(*h));
    h->super.on_req = on_req;
    h2o_logger_t *logger = h2o_create_logger(path, sizeof(*logger));
    logger->log_access = on_log_access;
}

/* Like Go's runtime: lift the soft limit on open files to the hard one, so that server.max_connections rather
 * than a default of 1024 bounds the clients. Returns the limit now in force. */
static unsigned long long raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return (unsigned long long)RLIM_INFINITY; /* unknown: no cap but server.max_connections */
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit want = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &want) == 0)
            rl = want;
    }
    return (unsigned long long)rl.rlim_cur;
}

/* The route labels of the counters: the service's routes, then the server's own paths. */
static void make_route_labels(const preon_config_t *cfg)
{
    size_t napp = service->nroutes;
    nroutes = napp + PREON_ROUTE__EXTRA;
    route_labels = preon_calloc(nroutes, sizeof(*route_labels));
    for (size_t r = 0; r < napp; r++)
        route_labels[r] = service->route_label(r);
    route_labels[napp + PREON_ROUTE_LIVE] = cfg->health.live_path;
    route_labels[napp + PREON_ROUTE_READY] = cfg->health.ready_path;
    route_labels[napp + PREON_ROUTE_METRICS] = cfg->metrics.path;
    route_labels[napp + PREON_ROUTE_UNMATCHED] = "unmatched";
}

/* Connections stop short of the open files limit, leaving room for the loops, listeners, database connections and
 * logs: over it they are refused (accepted and closed) rather than left in the backlog. Returns the limit. */
static unsigned long long limit_connections(const preon_config_t *cfg)
{
    unsigned long long nofile = raise_fd_limit(),
                       reserve = 64 + nthreads * (8 + 2 * (unsigned long long)cfg->database.connections_per_thread);
    max_conns = (uint64_t)cfg->server.max_connections;
    if (nofile != RLIM_INFINITY && nofile < max_conns + reserve)
        max_conns = nofile > reserve + 16 ? nofile - reserve : 16;
    return nofile;
}

/* Everything a loop thread owns, set up before its loop runs, so that a signal arriving at once finds every
 * receiver registered. Returns 0, or -1 with the reason in `err`. */
/*
 * How the loop writes to its connections. Built from Debian's sources, h2o carries preon's patches of its write path
 * (scripts/sources/h2o/): the answers to pipelined requests of one loop pass leave in one write, held bytes bounded
 * (then h2o's own backpressure); a write whose peer takes nothing for server.idle_timeout_ms fails; a connection is
 * closed gracefully (shut down for writing, the client's last input read for up to PREON_LINGER_MS, or
 * server.idle_timeout_ms if shorter), so that its last
 * answer arrives whole, and counts against server.max_connections until it is really closed. Debian's own h2o
 * (-DPREON_DEPS=system) does none of it (docs/architecture.md).
 */
static void set_write_path(h2o_evloop_t *loop, const preon_config_t *cfg)
{
#ifdef H2O_EVLOOP_HAS_WRITE_CONF
    uint64_t idle_ms = (uint64_t)cfg->server.idle_timeout_ms;
    h2o_evloop_write_conf_t conf = {.join_max = PREON_JOIN_MAX,
                                    .write_timeout = idle_ms,
                                    .linger_timeout = idle_ms < PREON_LINGER_MS ? idle_ms : PREON_LINGER_MS};
    h2o_evloop_set_write_conf(loop, &conf);
#else
    (void)loop, (void)cfg;
#endif
}

void preon_server_db_settings(const preon_config_t *cfg, preon_db_settings_t *out)
{
    *out = (preon_db_settings_t){.connections = (unsigned)cfg->database.connections_per_thread,
                                 .pipeline_depth = (unsigned)cfg->database.pipeline_depth,
                                 .max_queued = (size_t)cfg->database.max_queued,
                                 .max_queue_wait_ms = (unsigned)cfg->database.max_queue_wait_ms,
                                 .query_timeout_ms = (unsigned)cfg->database.query_timeout_ms,
                                 .connect_timeout_ms = (unsigned)cfg->database.connect_timeout_ms,
                                 .reconnect_min_ms = (unsigned)cfg->database.reconnect_min_ms,
                                 .reconnect_max_ms = (unsigned)cfg->database.reconnect_max_ms,
                                 .unnamed_statements = cfg->database.pooler == PREON_POOLER_TRANSACTION};
}

static int setup_thread(preon_thread_t *thr, unsigned index, const preon_config_t *cfg, const preon_db_target_t *target,
                        const preon_db_target_t *read_target, char *err, size_t errlen)
{
    int fd = open_listener(cfg, err, errlen);
    if (fd < 0)
        return PREON_EIO;
    char tag[16];
    snprintf(tag, sizeof(tag), "t%u", index);
    thr->index = index;
    thr->cfg = cfg;
    thr->loop = h2o_evloop_create();
    set_write_path(thr->loop, cfg);
    thr->listener = h2o_evloop_socket_create(thr->loop, fd, H2O_SOCKET_FLAG_DONT_READ);
    thr->listen_fd = fd;
    thr->spare_fd = dup(fd);
    thr->listener->data = thr;
    h2o_linklist_init_anchor(&thr->conns);
    h2o_context_init(&thr->ctx, thr->loop, &globalconf);
    thr->accept_ctx.ctx = &thr->ctx;
    thr->accept_ctx.hosts = globalconf.hosts;
    h2o_multithread_register_receiver(thr->ctx.queue, &thr->receiver, on_stop);
    h2o_multithread_register_receiver(thr->ctx.queue, &thr->close_receiver, on_close_listener);
    preon__http_metrics_init(&thr->http, nroutes);
    h2o_timeout_init(thr->loop, &thr->request_timeout, (uint64_t)cfg->server.request_timeout_ms);
    h2o_timeout_init(thr->loop, &thr->accept_pause, 100);
    thr->accept_pause_entry.cb = on_accept_resume;
    preon_db_settings_t db;
    preon_server_db_settings(cfg, &db);
    preon_db_counters_init(&thr->db_counters, service->nstatements);
    thr->db = preon_db_pool_create(thr->loop, &db, target, service->statements, service->nstatements, &thr->db_counters, tag);
    preon_db_counters_init(&thr->db_read_counters, service->nstatements);
    if (read_target != NULL) {
        snprintf(tag, sizeof(tag), "r%u", index);
        thr->db_read = preon_db_pool_create(thr->loop, &db, read_target, service->statements, service->nstatements,
                                            &thr->db_read_counters, tag);
        /* a read its standby's connection took down unsent goes to the primary when no other read connection is up,
         * as preon_dbreq_run sends a new one */
        preon_db_pool_set_fallback(thr->db_read, thr->db);
    }
    thr->app = service->thread_init(index);
    return 0;
}

/*
 * The stop comes in two phases (see on_close_listener): readiness turns 503 at once, the listeners stay open for
 * drain_delay_ms so that a load balancer notices, then every listener closes, then the loops drain. A second
 * signal at any point exits at once.
 */
static void stop_threads(const preon_config_t *cfg, const sigset_t *set, int sig)
{
    __atomic_store_n(&draining, 1, __ATOMIC_RELAXED);
    preon_log_info("%s: draining (listeners close in %d ms; requests in flight get up to %d ms)",
                   sig == SIGTERM  ? "SIGTERM"
                   : sig == SIGINT ? "SIGINT"
                                   : "SIGQUIT",
                   cfg->server.drain_delay_ms, cfg->server.shutdown_timeout_ms);
    if (cfg->server.drain_delay_ms > 0)
        exit_on_signal(set, cfg->server.drain_delay_ms * 1000000L);
    for (unsigned i = 0; i < nthreads; i++)
        h2o_multithread_send_message(&threads[i].close_receiver, &threads[i].close_msg);
    /* Until every listener is closed (bounded: a loop stuck for a second must not hold the drain back). */
    for (int waited_ms = 0; __atomic_load_n(&listeners_closed, __ATOMIC_ACQUIRE) < nthreads && waited_ms < 1000; waited_ms++)
        exit_on_signal(set, 1000000L);
    for (unsigned i = 0; i < nthreads; i++)
        h2o_multithread_send_message(&threads[i].receiver, &threads[i].stop_msg);
}

/* Joins every loop thread (a second signal meanwhile exits at once), then frees what they shared. */
static void join_threads(const sigset_t *set)
{
    for (unsigned i = 0; i < nthreads; i++) {
        struct timespec ts;
        for (;;) {
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 20 * 1000 * 1000;
            if (ts.tv_nsec >= 1000000000)
                ts.tv_sec++, ts.tv_nsec -= 1000000000;
            if (pthread_timedjoin_np(threads[i].tid, NULL, &ts) == 0)
                break;
            exit_on_signal(set, 0);
        }
    }
    /* Only now: until every thread had joined, any of them could read every thread's counters for a scrape. */
    for (unsigned i = 0; i < nthreads; i++) {
        preon_db_counters_dispose(&threads[i].db_counters);
        preon_db_counters_dispose(&threads[i].db_read_counters);
        preon__http_metrics_dispose(&threads[i].http);
    }
}

unsigned preon_server_threads(const preon_config_t *cfg)
{
    return cfg->server.threads != 0 ? (unsigned)cfg->server.threads : preon__usable_cpus();
}

int preon_server_run(const preon_config_t *cfg, const preon_db_target_t *target, const preon_db_target_t *read_target,
                     const preon_service_t *svc, void (*reload)(void))
{
    char err[256];
    service = svc;
    nthreads = preon_server_threads(cfg);
    threads = preon_calloc(nthreads, sizeof(*threads));
    /* A write to a closed socket is an error return, not a death; SIGUSR1/2 have no meaning here (an operator's or a
     * supervisor's stray signal must not kill a server that answers requests). */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
    signal(SIGUSR2, SIG_IGN);
    unsigned long long nofile = limit_connections(cfg);
    preon__observe_init();
    if (service->init(cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "preon: %s\n", err);
        return PREON_EINVAL;
    }
    make_route_labels(cfg);
    setup_globalconf(cfg);
    for (unsigned i = 0; i < nthreads; i++) {
        if (setup_thread(&threads[i], i, cfg, target, read_target, err, sizeof(err)) != 0) {
            fprintf(stderr, "preon: %s\n", err);
            return PREON_EIO;
        }
    }

    /* Signals go to the main thread alone: the loops inherit a mask that blocks them. `stop` ends the server (and, a
     * second time, at once); SIGHUP reloads what can change at run time, as nginx, HAProxy, PgBouncer and PostgreSQL
     * do, and stays blocked (ignored) once the stop has begun. */
    sigset_t set, stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGQUIT);
    set = stop;
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    for (unsigned i = 0; i < nthreads; i++)
        h2o_multithread_create_thread(&threads[i].tid, NULL, thread_main, &threads[i]);
    preon_log_info("preon %s listening on %s:%d with %u threads (open files limit %llu)", PREON_VERSION, cfg->server.listen,
                   cfg->server.port, nthreads, nofile);
    log_http2(cfg);
    if (max_conns < (uint64_t)cfg->server.max_connections)
        preon_log_info("the open files limit (%llu) allows %llu client connections, fewer than server.max_connections "
                       "(%d): more are refused",
                       nofile, (unsigned long long)max_conns, cfg->server.max_connections);

    int sig;
    while (sigwait(&set, &sig) == 0 && sig == SIGHUP) {
        if (reload != NULL)
            reload();
    }
    stop_threads(cfg, &stop, sig);
    join_threads(&stop);
    service->dispose();
    preon_log_info("stopped");
    return 0;
}
