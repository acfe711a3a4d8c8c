/* SPDX-License-Identifier: MIT */
/*
 * The write path's patches of h2o's event loop (scripts/sources/h2o/01..04), driven through h2o's own socket API on
 * real loopback TCP connections and socketpairs and a real epoll set: joined writes and their bound, the write
 * timeout, the graceful close, the lazy read interest, a descriptor reused within a pass, the loop's failure (and
 * preon's answer to it, src/server/pass.c).
 *
 * What h2o asks of the kernel is counted without touching the product: this binary alone is linked with GNU ld's
 * --wrap for writev, write, epoll_ctl, epoll_wait, epoll_create, shutdown and close (tests/CMakeLists.txt), so that
 * the calls libh2o-evloop.a's members make reach the __wrap_ functions below, which count per descriptor and call
 * the real ones (__real_). The test's own side of each connection uses send() and recv(), which are not counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <h2o.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "pass.h"
#include "preon/log.h"

/* ---- h2o's system calls, counted ---- */

#define MAX_FDS 1024
#define MAX_ASKED 16

typedef struct {
    unsigned writes;         /* write() and writev() */
    unsigned short_writes;   /* of which the kernel took less than asked (or nothing: EAGAIN) */
    size_t asked[MAX_ASKED]; /* bytes asked of the first writes */
    uint64_t last_write_seq; /* when the last one was made (calls.seq) */
    unsigned ctl;            /* epoll_ctl() on the descriptor */
    unsigned shutdowns;      /* shutdown() */
    int how;                 /* the last shutdown()'s */
    unsigned closes;         /* close() */
} fd_calls_t;

static struct {
    fd_calls_t fd[MAX_FDS];
    uint64_t seq;            /* every counted call takes the next number */
    uint64_t last_wait_seq;  /* the last epoll_wait()'s */
    int last_wait_errno;     /* its errno, when it failed (else 0) */
    int epoll_fd;            /* the last epoll_create()'s */
    const void *watched;     /* a socket whose events epoll_wait() hands out are counted */
    unsigned watched_events; /* how many */
} calls = {.epoll_fd = -1};

ssize_t __real_writev(int fd, const struct iovec *iov, int iovcnt);
ssize_t __real_write(int fd, const void *buf, size_t n);
int __real_epoll_ctl(int ep, int op, int fd, struct epoll_event *ev);
int __real_epoll_wait(int ep, struct epoll_event *events, int max, int timeout);
int __real_epoll_create(int size);
int __real_shutdown(int fd, int how);
int __real_close(int fd);

static fd_calls_t *fd_calls(int fd)
{
    static fd_calls_t elsewhere;
    return fd >= 0 && fd < MAX_FDS ? &calls.fd[fd] : &elsewhere;
}

static void count_write(int fd, size_t asked, ssize_t ret)
{
    fd_calls_t *c = fd_calls(fd);
    if (c->writes < MAX_ASKED)
        c->asked[c->writes] = asked;
    c->writes++;
    c->short_writes += ret < (ssize_t)asked;
    c->last_write_seq = ++calls.seq;
}

ssize_t __wrap_writev(int fd, const struct iovec *iov, int iovcnt)
{
    size_t asked = 0;
    for (int i = 0; i < iovcnt; i++)
        asked += iov[i].iov_len;
    ssize_t ret = __real_writev(fd, iov, iovcnt);
    int err = errno;
    count_write(fd, asked, ret);
    errno = err;
    return ret;
}

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    ssize_t ret = __real_write(fd, buf, n);
    int err = errno;
    if (fd > STDERR_FILENO)
        count_write(fd, n, ret);
    errno = err;
    return ret;
}

int __wrap_epoll_ctl(int ep, int op, int fd, struct epoll_event *ev)
{
    fd_calls(fd)->ctl++;
    calls.seq++;
    return __real_epoll_ctl(ep, op, fd, ev);
}

int __wrap_epoll_wait(int ep, struct epoll_event *events, int max, int timeout)
{
    int n = __real_epoll_wait(ep, events, max, timeout), err = errno;
    for (int i = 0; i < n; i++)
        calls.watched_events += calls.watched != NULL && events[i].data.ptr == calls.watched;
    calls.last_wait_seq = ++calls.seq;
    calls.last_wait_errno = n < 0 ? err : 0;
    errno = err;
    return n;
}

int __wrap_epoll_create(int size)
{
    return calls.epoll_fd = __real_epoll_create(size);
}

int __wrap_shutdown(int fd, int how)
{
    fd_calls_t *c = fd_calls(fd);
    c->shutdowns++;
    c->how = how;
    calls.seq++;
    return __real_shutdown(fd, how);
}

int __wrap_close(int fd)
{
    fd_calls(fd)->closes++;
    calls.seq++;
    return __real_close(fd);
}

/* ---- loops, connections and the bytes sent through them ---- */

static char pattern[8 << 20]; /* what the server sends: byte i depends on i, so that a lost or moved byte shows */

static h2o_evloop_t *loop_open(size_t join_max, uint64_t write_timeout_ms, uint64_t linger_timeout_ms)
{
    h2o_evloop_t *loop = h2o_evloop_create();
    h2o_evloop_write_conf_t conf = {.join_max = join_max, .write_timeout = write_timeout_ms, .linger_timeout = linger_timeout_ms};
    h2o_evloop_set_write_conf(loop, &conf);
    return loop;
}

static void loop_close(h2o_evloop_t *loop)
{
    h2o_evloop_destroy(loop);
    if (calls.epoll_fd >= 0)
        close(calls.epoll_fd); /* h2o 2.2.5's h2o_evloop_destroy leaves it open */
    calls.epoll_fd = -1;
}

/* One connection: the server's end accepted by h2o (an accepted connection: joined writes, write timeout and
 * graceful close apply), the client's end the test's own, non-blocking. Small buffers (small != 0) on both ends make
 * the kernel refuse bytes after some tens of kilobytes. */
typedef struct {
    h2o_socket_t *sock;
    int fd;
    int peer;
} conn_t;

static void conn_open(h2o_evloop_t *loop, conn_t *c, int small)
{
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), size = 8192;
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(listen(lfd, 1), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&sin, &len), 0);
    c->peer = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (small)
        assert_int_equal(setsockopt(c->peer, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)), 0);
    assert_int_equal(connect(c->peer, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(fcntl(c->peer, F_SETFL, O_NONBLOCK), 0);
    h2o_socket_t *listener = h2o_evloop_socket_create(loop, lfd, H2O_SOCKET_FLAG_DONT_READ);
    c->sock = h2o_evloop_socket_accept(listener);
    assert_non_null(c->sock);
    h2o_socket_close(listener);
    c->fd = h2o_socket_get_fd(c->sock);
    assert_true(c->fd < MAX_FDS);
    if (small)
        assert_int_equal(setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size)), 0);
    memset(fd_calls(c->fd), 0, sizeof(fd_calls_t));
}

/* What the client's end has received. */
typedef struct {
    char *buf;
    size_t len;
    int eof;   /* recv() returned 0 */
    int error; /* recv()'s errno, when it failed otherwise than EAGAIN */
} sink_t;

/* One recv() of at most `max` bytes into the sink: the bytes read, 0 at the end or on an error, -1 when none wait. */
static ssize_t peer_take(conn_t *c, sink_t *s, size_t max)
{
    s->buf = realloc(s->buf, s->len + max);
    assert_non_null(s->buf);
    ssize_t n = recv(c->peer, s->buf + s->len, max, 0);
    if (n > 0) {
        s->len += (size_t)n;
        return n;
    }
    if (n == 0) {
        s->eof = 1;
        return 0;
    }
    if (errno == EAGAIN)
        return -1;
    s->error = errno;
    return 0;
}

/* Runs the loop and reads at most `slice` bytes per pass until `want` bytes, the end, an error, or `ms` ms. */
static void drain(h2o_evloop_t *loop, conn_t *c, sink_t *s, size_t want, size_t slice, int ms)
{
    uint64_t until = h2o_now(loop) + (uint64_t)ms;
    while (s->len < want && !s->eof && s->error == 0 && h2o_now(loop) < until) {
        assert_int_equal(h2o_evloop_run(loop, 0), 0);
        if (peer_take(c, s, slice) < 0)
            poll(&(struct pollfd){.fd = c->peer, .events = POLLIN}, 1, 2);
    }
}

/* Reads what the client's end holds now (after waiting up to 100 ms for the first byte). */
static void peer_take_all(conn_t *c, sink_t *s)
{
    poll(&(struct pollfd){.fd = c->peer, .events = POLLIN}, 1, 100);
    while (peer_take(c, s, 65536) > 0)
        ;
}

static void sink_expect(const sink_t *s, size_t len)
{
    assert_int_equal(s->len, len);
    assert_memory_equal(s->buf, pattern, len);
}

/* The server's side of a connection: h2o's callbacks count here (sock->data). The writer hands h2o `total` bytes of
 * the pattern, a write at a time, each from the callback of the one before (as h2o's HTTP/1 answers pipelined
 * requests): the first when a request comes (on_request) or when the test says so (writer_next). */
typedef struct {
    h2o_socket_t *sock;
    size_t total;         /* bytes to write */
    size_t first;         /* the first write's size (0: as the others) */
    size_t size;          /* the others'; 0: pseudo-random sizes from 1 to 24000 */
    unsigned rand;        /* their generator's state */
    int close_when_done;  /* h2o_socket_close() once the last write is done */
    size_t given, ngiven; /* bytes and writes handed to h2o */
    size_t done, ndone;   /* bytes and writes h2o reported done */
    size_t last;          /* the size of the write in flight */
    uint64_t last_at;     /* loop time when it was handed to h2o (timers armed then count from it) */
    uint64_t closing_at;  /* loop time of the writer's h2o_socket_close() */
    const char *write_err;
    size_t reads;
    const char *read_err;
    char input[64]; /* what the reads brought, the start of it */
    size_t input_len;
    size_t on_close; /* h2o's on_close callback: times called */
    int fd;          /* the descriptor; whether it was still open, and close() calls on it, when on_close came */
    int open_at_close;
    unsigned closes_at_close;
    uint64_t closed_at; /* loop time of on_close */
    h2o_evloop_t *loop;
} server_t;

static void on_written(h2o_socket_t *sock, const char *err);

static void writer_next(server_t *s)
{
    if (s->given == s->total) {
        if (s->close_when_done) {
            s->closing_at = h2o_now(s->loop);
            h2o_socket_close(s->sock);
        }
        return;
    }
    size_t n = s->ngiven == 0 && s->first != 0 ? s->first : s->size;
    if (n == 0) {
        s->rand = s->rand * 1103515245u + 12345u;
        n = 1 + (s->rand >> 8) % 24000;
    }
    if (n > s->total - s->given)
        n = s->total - s->given;
    h2o_iovec_t buf = h2o_iovec_init(pattern + s->given, n);
    s->given += n, s->ngiven++, s->last = n, s->last_at = h2o_now(s->loop);
    h2o_socket_write(s->sock, &buf, 1, on_written);
}

static void on_written(h2o_socket_t *sock, const char *err)
{
    server_t *s = sock->data;
    s->ndone++, s->done += s->last;
    if (err != NULL) {
        s->write_err = err;
        return;
    }
    writer_next(s);
}

static void keep_input(server_t *s, h2o_socket_t *sock, const char *err)
{
    s->reads++;
    if (err != NULL && s->read_err == NULL)
        s->read_err = err;
    size_t n = sock->input->size < sizeof(s->input) - s->input_len ? sock->input->size : sizeof(s->input) - s->input_len;
    memcpy(s->input + s->input_len, sock->input->bytes, n);
    s->input_len += n;
    h2o_buffer_consume(&sock->input, sock->input->size);
}

/* Reads what came and keeps reading. */
static void on_read(h2o_socket_t *sock, const char *err)
{
    keep_input(sock->data, sock, err);
}

/* A request: read, reading stops, and the answer begins. */
static void on_request(h2o_socket_t *sock, const char *err)
{
    keep_input(sock->data, sock, err);
    h2o_socket_read_stop(sock);
    writer_next(sock->data);
}

static void on_close(void *data)
{
    server_t *s = data;
    s->on_close++;
    s->open_at_close = fcntl(s->fd, F_GETFD) != -1;
    s->closes_at_close = fd_calls(s->fd)->closes;
    s->closed_at = h2o_now(s->loop);
}

static void server_init(server_t *s, h2o_evloop_t *loop, conn_t *c, size_t total, size_t size)
{
    memset(s, 0, sizeof(*s));
    s->sock = c->sock, s->total = total, s->size = size, s->rand = 1;
    s->fd = c->fd, s->loop = loop;
    c->sock->data = s;
    c->sock->on_close.cb = on_close;
    c->sock->on_close.data = s;
}

/* The client sends one request; the server's first pass reads it and answers it (the whole chain of writes). */
static void request(h2o_evloop_t *loop, conn_t *c)
{
    assert_int_equal(send(c->peer, "request\n", 8, 0), 8);
    h2o_socket_read_start(c->sock, on_request);
    assert_int_equal(h2o_evloop_run(loop, 1000), 0);
    assert_int_equal(((server_t *)c->sock->data)->reads, 1);
}

/* Runs the loop, up to `ms` ms, until *flag is nonzero. */
static void run_until(h2o_evloop_t *loop, const size_t *flag, int ms)
{
    uint64_t until = h2o_now(loop) + (uint64_t)ms;
    while (*flag == 0 && h2o_now(loop) < until)
        assert_int_equal(h2o_evloop_run(loop, 10), 0);
}

/* Calls fn(data) inside the next loop pass (from a timer, where h2o's own callbacks run too), and runs that pass. */
static struct {
    h2o_timeout_entry_t entry;
    void (*fn)(void *);
    void *data;
} in_pass;

static void on_in_pass(h2o_timeout_entry_t *entry)
{
    (void)entry;
    in_pass.fn(in_pass.data);
}

static void in_next_pass(h2o_evloop_t *loop, void (*fn)(void *), void *data)
{
    h2o_timeout_t now;
    h2o_timeout_init(loop, &now, 0);
    in_pass.entry = (h2o_timeout_entry_t){.cb = on_in_pass};
    in_pass.fn = fn, in_pass.data = data;
    h2o_timeout_link(loop, &now, &in_pass.entry);
    assert_int_equal(h2o_evloop_run(loop, 0), 0);
    assert_false(h2o_timeout_is_linked(&in_pass.entry));
    h2o_timeout_dispose(loop, &now);
}

static void conn_close(h2o_evloop_t *loop, conn_t *c, server_t *s)
{
    if (s->on_close == 0) {
        h2o_socket_close(c->sock);
        assert_int_equal(h2o_evloop_run(loop, 0), 0);
    }
    close(c->peer);
}

/* ---- joined writes ---- */

/* The answers to pipelined requests of one pass: the first goes to the socket at once, the others are joined, each
 * reported done at once, and leave together in one write when the next pass begins, before the loop waits. */
static void test_joined_writes(void **state)
{
    (void)state;
    h2o_evloop_t *loop = loop_open(64 * 1024, 0, 0);
    conn_t c;
    server_t s;
    sink_t got = {0};
    conn_open(loop, &c, 0);
    server_init(&s, loop, &c, 10 * 700, 700);

    request(loop, &c);
    assert_int_equal(s.ndone, 10);              /* every callback in the pass */
    assert_int_equal(calls.fd[c.fd].writes, 1); /* one write: the first answer */
    assert_int_equal(calls.fd[c.fd].asked[0], 700);
    assert_true(h2o_evloop_socket_is_flushing(c.sock));
    peer_take_all(&c, &got);
    sink_expect(&got, 700);

    assert_int_equal(h2o_evloop_run(loop, 0), 0);
    assert_int_equal(calls.fd[c.fd].writes, 2); /* the nine others in one */
    assert_int_equal(calls.fd[c.fd].asked[1], 9 * 700);
    assert_true(calls.fd[c.fd].last_write_seq < calls.last_wait_seq); /* before the loop waited */
    assert_false(h2o_evloop_socket_is_flushing(c.sock));
    peer_take_all(&c, &got);
    sink_expect(&got, 10 * 700);

    conn_close(loop, &c, &s);
    free(got.buf);
    loop_close(loop);
}

/* join_max: a write that would hold more goes to the socket at once, with the held bytes in front of it. */
static void test_join_bound(void **state)
{
    (void)state;
    h2o_evloop_t *loop = loop_open(4096, 0, 0);
    conn_t c;
    server_t s;
    sink_t got = {0};
    conn_open(loop, &c, 0);
    server_init(&s, loop, &c, 12 * 1000, 1000);

    request(loop, &c);
    assert_int_equal(s.ndone, 12);
    /* 1; 2-5 held (4000 bytes); 6 with them (5000); 7-10 held; 11 with them; 12 held */
    assert_int_equal(calls.fd[c.fd].writes, 3);
    assert_int_equal(calls.fd[c.fd].asked[0], 1000);
    assert_int_equal(calls.fd[c.fd].asked[1], 5000);
    assert_int_equal(calls.fd[c.fd].asked[2], 5000);
    assert_int_equal(h2o_evloop_run(loop, 0), 0);
    assert_int_equal(calls.fd[c.fd].writes, 4);
    assert_int_equal(calls.fd[c.fd].asked[3], 1000);
    peer_take_all(&c, &got);
    sink_expect(&got, 12 * 1000);

    conn_close(loop, &c, &s);
    free(got.buf);
    loop_close(loop);
}

/* A client that pipelines and does not read: past join_max, h2o waits for writability as it always does (its write
 * callback is not called until the client reads), and the bytes held in the process stay within join_max. */
static void test_join_backpressure(void **state)
{
    (void)state;
    const size_t join_max = 16 * 1024, total = 4 << 20;
    h2o_evloop_t *loop = loop_open(join_max, 0, 0);
    conn_t c;
    server_t s;
    sink_t got = {0};
    conn_open(loop, &c, 1);
    server_init(&s, loop, &c, total, 1000);

    request(loop, &c);
    for (int i = 0; i < 10; i++)
        assert_int_equal(h2o_evloop_run(loop, 10), 0);
    size_t stalled = s.ndone;
    assert_true(stalled < total / 1000);
    assert_true(h2o_socket_is_writing(c.sock)); /* a write waits */
    for (int i = 0; i < 10; i++)
        assert_int_equal(h2o_evloop_run(loop, 10), 0);
    assert_int_equal(s.ndone, stalled); /* and its callback with it */
    /* what h2o was told is done and the kernel does not hold yet is held here: at most join_max */
    int unsent = 0, unread = 0;
    assert_int_equal(ioctl(c.fd, SIOCOUTQNSD, &unsent), 0);
    assert_int_equal(ioctl(c.peer, SIOCINQ, &unread), 0);
    assert_true(s.done <= (size_t)unsent + (size_t)unread + join_max);

    drain(loop, &c, &got, total, 65536, 10000);
    sink_expect(&got, total);
    assert_int_equal(s.ndone, s.ngiven);
    assert_null(s.write_err);

    conn_close(loop, &c, &s);
    free(got.buf);
    loop_close(loop);
}

/* Writes of every size, joined and not, to a client that reads a little at a time: the kernel takes part of many of
 * them (h2o's and the joined ones), and every byte arrives, in order. */
static void test_partial_writes(void **state)
{
    (void)state;
    const size_t total = 2 << 20;
    h2o_evloop_t *loop = loop_open(16 * 1024, 0, 0);
    conn_t c;
    server_t s;
    sink_t got = {0};
    conn_open(loop, &c, 1);
    server_init(&s, loop, &c, total, 0);

    request(loop, &c);
    drain(loop, &c, &got, total, 3000, 20000);
    sink_expect(&got, total);
    assert_int_equal(s.ndone, s.ngiven);
    assert_null(s.write_err);
    assert_true(calls.fd[c.fd].short_writes > 0);

    conn_close(loop, &c, &s);
    free(got.buf);
    loop_close(loop);
}

/* ---- the write timeout ---- */

/* A client that takes nothing: the write waiting for it fails after write_timeout, and the connection is shut down. */
static void test_write_timeout(void **state)
{
    (void)state;
    const uint64_t timeout = 200;
    const size_t total = 4 << 20;
    h2o_evloop_t *loop = loop_open(0, timeout, 0);
    conn_t c;
    server_t s;
    sink_t got = {0};
    conn_open(loop, &c, 1);
    server_init(&s, loop, &c, total, total);

    request(loop, &c);
    uint64_t start = s.last_at; /* its timer counts from there */
    assert_int_equal(s.ndone, 0);
    run_until(loop, &s.ndone, 3000);
    assert_int_equal(s.ndone, 1);
    assert_ptr_equal(s.write_err, h2o_socket_error_io);
    assert_true(h2o_now(loop) - start >= timeout);
    assert_int_equal(calls.fd[c.fd].shutdowns, 1);
    assert_int_equal(calls.fd[c.fd].how, SHUT_RDWR);
    drain(loop, &c, &got, total, 65536, 3000);
    assert_true(got.eof); /* what the kernel had, then the end */
    assert_true(got.len < total);
    assert_memory_equal(got.buf, pattern, got.len);

    conn_close(loop, &c, &s);
    free(got.buf);
    loop_close(loop);
}

/* A client that reads slowly is not cut: every byte it takes starts the wait again. */
static void test_write_timeout_renewed(void **state)
{
    (void)state;
    const uint64_t timeout = 250;
    const size_t total = 1 << 20;
    h2o_evloop_t *loop = loop_open(0, timeout, 0);
    conn_t c;
    server_t s;
    sink_t got = {0};
    conn_open(loop, &c, 1);
    server_init(&s, loop, &c, total, total);

    request(loop, &c);
    uint64_t start = h2o_now(loop), next_take = start;
    while (h2o_now(loop) - start < 3 * timeout) { /* 8 KiB per 25 ms: the write waits all along */
        assert_int_equal(h2o_evloop_run(loop, 5), 0);
        if (h2o_now(loop) >= next_take) {
            peer_take(&c, &got, 8192);
            next_take += 25;
        }
    }
    assert_int_equal(s.ndone, 0);
    drain(loop, &c, &got, total, 65536, 10000);
    sink_expect(&got, total);
    assert_int_equal(s.ndone, 1);
    assert_null(s.write_err);

    conn_close(loop, &c, &s);
    free(got.buf);
    loop_close(loop);
}

/* Joined bytes that wait for writability (no write of h2o's waits) that long: dropped, the connection shut down,
 * and h2o's next read and write of it fail. */
static void test_write_timeout_joined(void **state)
{
    (void)state;
    const uint64_t timeout = 200;
    const size_t total = 10 + (4 << 20);
    h2o_evloop_t *loop = loop_open(8 << 20, timeout, 0);
    conn_t c;
    server_t s;
    sink_t got = {0};
    conn_open(loop, &c, 1);
    server_init(&s, loop, &c, total, 4 << 20);
    s.first = 10;

    request(loop, &c); /* 10 bytes to the socket, 4 MiB joined: both done */
    assert_int_equal(s.ndone, 2);
    uint64_t start = h2o_now(loop);
    assert_int_equal(h2o_evloop_run(loop, 0), 0); /* the kernel takes part of them, then no more */
    assert_true(h2o_evloop_socket_is_flushing(c.sock));
    assert_true(calls.fd[c.fd].short_writes > 0);
    while (h2o_evloop_socket_is_flushing(c.sock) && h2o_now(loop) - start < 3000)
        assert_int_equal(h2o_evloop_run(loop, 10), 0);
    assert_false(h2o_evloop_socket_is_flushing(c.sock));
    assert_true(h2o_now(loop) - start >= timeout);
    assert_int_equal(calls.fd[c.fd].shutdowns, 1);
    assert_int_equal(calls.fd[c.fd].how, SHUT_RDWR);

    s.total += 10;
    writer_next(&s);
    s.reads = 0;
    h2o_socket_read_start(c.sock, on_read);
    run_until(loop, &s.reads, 1000);
    assert_int_equal(s.ndone, 3);
    assert_ptr_equal(s.write_err, h2o_socket_error_io);
    assert_ptr_equal(s.read_err, h2o_socket_error_closed);
    drain(loop, &c, &got, total, 65536, 3000);
    assert_true(got.eof);
    assert_true(got.len < total);
    assert_memory_equal(got.buf, pattern, got.len);

    conn_close(loop, &c, &s);
    free(got.buf);
    loop_close(loop);
}

/* ---- the graceful close ---- */

/* The client's end's pending error (a reset received: ECONNRESET or EPIPE), 0 if none. */
static int peer_error(conn_t *c)
{
    int err = 0;
    socklen_t len = sizeof(err);
    assert_int_equal(getsockopt(c->peer, SOL_SOCKET, SO_ERROR, &err, &len), 0);
    return err;
}

static int tcp_state(int fd)
{
    struct tcp_info info;
    socklen_t len = sizeof(info);
    assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len), 0);
    return info.tcpi_state;
}

static void start_answers(void *data)
{
    writer_next(data);
}

/* A connection whose server read a request and not what the client sent after it; the server answers it from inside
 * a pass (the first write to the socket, the rest joined) and closes it there. Returns the loop time of the close. */
static uint64_t answer_and_close(h2o_evloop_t *loop, conn_t *c, server_t *s)
{
    h2o_socket_read_start(c->sock, on_read);
    assert_int_equal(send(c->peer, "request\n", 8, 0), 8);
    run_until(loop, &s->reads, 1000);
    h2o_socket_read_stop(c->sock);
    assert_int_equal(send(c->peer, "more\n", 5, 0), 5); /* never read by h2o */
    s->close_when_done = 1;
    in_next_pass(loop, start_answers, s);
    assert_int_equal(s->ngiven, 2);
    assert_int_equal(s->ndone, 2);
    return s->closing_at;
}

/* h2o closes a connection with bytes still joined and input it did not read: the client receives every byte, then
 * the end (a FIN, not a reset); the descriptor stays open, counted in num_lingering, until the client closes too;
 * then on_close, the descriptor closed. */
static void test_graceful_close(void **state)
{
    (void)state;
    const size_t total = 1000 + (1 << 20);
    h2o_evloop_t *loop = loop_open(2 << 20, 2000, 5000);
    conn_t c;
    server_t s;
    sink_t got = {0};
    conn_open(loop, &c, 1);
    server_init(&s, loop, &c, total, 1 << 20);
    s.first = 1000;

    answer_and_close(loop, &c, &s);
    assert_int_equal(s.on_close, 0);
    assert_int_equal(loop->num_lingering, 1);
    assert_true(h2o_evloop_socket_is_flushing(c.sock));
    assert_int_equal(calls.fd[c.fd].closes, 0);

    drain(loop, &c, &got, total + 1, 65536, 5000);
    assert_int_equal(got.error, 0);
    assert_true(got.eof);
    sink_expect(&got, total);
    assert_int_equal(calls.fd[c.fd].shutdowns, 1);
    assert_int_equal(calls.fd[c.fd].how, SHUT_WR);
    for (int i = 0; i < 5; i++)
        assert_int_equal(h2o_evloop_run(loop, 10), 0);
    assert_int_equal(s.on_close, 0); /* the server waits for the client's end */
    assert_int_equal(loop->num_lingering, 1);
    assert_true(h2o_evloop_socket_is_flushing(c.sock));

    assert_int_equal(shutdown(c.peer, SHUT_WR), 0);
    run_until(loop, &s.on_close, 1000);
    assert_int_equal(s.on_close, 1);
    assert_false(s.open_at_close); /* called once the descriptor is closed */
    assert_int_equal(s.closes_at_close, 1);
    assert_int_equal(loop->num_lingering, 0);
    assert_int_equal(peer_error(&c), 0); /* no reset */

    conn_close(loop, &c, &s);
    free(got.buf);
    loop_close(loop);
}

/* A client that never closes: the descriptor is closed after linger_timeout; what the client sent meanwhile was read
 * and dropped, so that the close resets nothing. */
static void test_graceful_close_linger_timeout(void **state)
{
    (void)state;
    const uint64_t linger = 300;
    const size_t total = 1000 + 5000;
    h2o_evloop_t *loop = loop_open(64 * 1024, 2000, linger);
    conn_t c;
    server_t s;
    sink_t got = {0};
    conn_open(loop, &c, 0);
    server_init(&s, loop, &c, total, 5000);
    s.first = 1000;

    uint64_t closed = answer_and_close(loop, &c, &s);
    assert_int_equal(send(c.peer, "late\n", 5, 0), 5); /* the client's last input, as the server closes */
    int eof_first = 0;
    while (s.on_close == 0 && h2o_now(loop) - closed < 3000) {
        assert_int_equal(loop->num_lingering, 1);
        assert_true(h2o_evloop_socket_is_flushing(c.sock));
        assert_int_equal(h2o_evloop_run(loop, 10), 0);
        peer_take(&c, &got, 65536);
        eof_first |= got.eof && s.on_close == 0;
    }
    assert_int_equal(s.on_close, 1);
    assert_true(eof_first); /* the answer, then the end, then (a linger_timeout later) the close */
    sink_expect(&got, total);
    assert_false(s.open_at_close);
    assert_true(s.closed_at - closed >= linger);
    assert_int_equal(loop->num_lingering, 0);
    assert_int_equal(peer_error(&c), 0);
    assert_int_equal(tcp_state(c.peer), TCP_CLOSE_WAIT); /* a reset would have closed it */

    conn_close(loop, &c, &s);
    free(got.buf);
    loop_close(loop);
}

/* What a closing connection still holds is written within write_timeout, renewed by every byte the client takes,
 * never past twice write_timeout: a client that takes a trickle does not hold it longer. */
static void test_graceful_close_write_bound(void **state)
{
    (void)state;
    const uint64_t timeout = 300;
    const size_t total = 1000 + (4 << 20);
    h2o_evloop_t *loop = loop_open(8 << 20, timeout, 5000);
    conn_t c;
    server_t s;
    sink_t got = {0};
    conn_open(loop, &c, 1);
    server_init(&s, loop, &c, total, 4 << 20);
    s.first = 1000;

    uint64_t closed = answer_and_close(loop, &c, &s);
    while (s.on_close == 0 && h2o_now(loop) - closed < 5000) {
        assert_int_equal(h2o_evloop_run(loop, 20), 0);
        peer_take(&c, &got, 4096);
    }
    assert_int_equal(s.on_close, 1);
    assert_true(got.len < total);
    assert_memory_equal(got.buf, pattern, got.len);
    /* more than write_timeout (the client read: the wait was renewed), at most twice that (and the loop's own delays:
     * 150 ms) */
    uint64_t took = s.closed_at - closed;
    if (took <= timeout || took > 2 * timeout + 150)
        fail_msg("closed %llu ms after h2o closed it (write_timeout %llu ms)", (unsigned long long)took,
                 (unsigned long long)timeout);

    conn_close(loop, &c, &s);
    free(got.buf);
    loop_close(loop);
}

/* ---- the lazy read interest ---- */

/* read_stop then read_start across passes costs no epoll_ctl; a readiness h2o did not ask for is not handed to it
 * and the registration is brought down (one epoll_ctl); it comes once h2o reads again. */
static void test_lazy_read(void **state)
{
    (void)state;
    h2o_evloop_t *loop = loop_open(0, 0, 0);
    conn_t c;
    server_t s;
    conn_open(loop, &c, 0);
    server_init(&s, loop, &c, 0, 0);
    calls.watched = c.sock, calls.watched_events = 0;

    h2o_socket_read_start(c.sock, on_read);
    assert_int_equal(h2o_evloop_run(loop, 0), 0);
    assert_int_equal(calls.fd[c.fd].ctl, 1); /* registered */
    for (int i = 0; i < 3; i++) {
        h2o_socket_read_stop(c.sock);
        assert_int_equal(h2o_evloop_run(loop, 0), 0);
        h2o_socket_read_start(c.sock, on_read);
        assert_int_equal(h2o_evloop_run(loop, 0), 0);
    }
    assert_int_equal(calls.fd[c.fd].ctl, 1);

    h2o_socket_read_stop(c.sock);
    assert_int_equal(h2o_evloop_run(loop, 0), 0);
    assert_int_equal(send(c.peer, "ping", 4, 0), 4);
    assert_int_equal(h2o_evloop_run(loop, 100), 0);
    assert_int_equal(calls.watched_events, 1); /* the kernel reported it */
    assert_int_equal(s.reads, 0);              /* h2o was not told */
    assert_int_equal(calls.fd[c.fd].ctl, 2);   /* and the registration is down */
    for (int i = 0; i < 3; i++)
        assert_int_equal(h2o_evloop_run(loop, 0), 0);
    assert_int_equal(calls.watched_events, 1);
    assert_int_equal(calls.fd[c.fd].ctl, 2);
    assert_int_equal(s.reads, 0);

    h2o_socket_read_start(c.sock, on_read);
    assert_int_equal(h2o_evloop_run(loop, 100), 0);
    assert_int_equal(calls.fd[c.fd].ctl, 3);
    assert_int_equal(s.reads, 1);
    assert_int_equal(s.input_len, 4);
    assert_memory_equal(s.input, "ping", 4);

    calls.watched = NULL;
    conn_close(loop, &c, &s);
    loop_close(loop);
}

/* ---- a descriptor reused within a pass ---- */

typedef struct {
    h2o_evloop_t *loop;
    h2o_socket_t *old, *new;
    int old_peer, new_peer, old_fd;
    server_t *old_s, *new_s;
} reuse_t;

/* Inside a pass: the old socket closed (at once: not an accepted connection) while its peer writes to it, and a new
 * one made under the same descriptor number, reading, its peer writing too. */
static void reuse_fd(void *data)
{
    reuse_t *r = data;
    int sv[2];
    assert_int_equal(send(r->old_peer, "old", 3, 0), 3);
    h2o_socket_close(r->old);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(sv[0], r->old_fd);
    r->new = h2o_evloop_socket_create(r->loop, sv[0], 0);
    r->new_peer = sv[1];
    r->new->data = r->new_s;
    h2o_socket_read_start(r->new, on_read);
    assert_int_equal(send(r->new_peer, "new", 3, 0), 3);
}

/* The new socket's events reach the new socket, never the old one: also when the old one's registration was kept
 * lazily, and its file lives on in another descriptor (a dup, as of libpq's socket), still readable. */
static void test_fd_reuse(void **state)
{
    (void)state;
    h2o_evloop_t *loop = loop_open(0, 0, 0);
    server_t old_s = {0}, new_s = {0};
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    reuse_t r = {.loop = loop, .old_peer = sv[1], .old_fd = sv[0], .old_s = &old_s, .new_s = &new_s};
    int keep = dup(sv[0]);
    r.old = h2o_evloop_socket_create(loop, sv[0], 0);
    r.old->data = &old_s;
    h2o_socket_read_start(r.old, on_read);
    assert_int_equal(h2o_evloop_run(loop, 0), 0);
    h2o_socket_read_stop(r.old);
    assert_int_equal(h2o_evloop_run(loop, 0), 0); /* the read interest is kept (lazily) */
    calls.watched = r.old, calls.watched_events = 0;

    in_next_pass(loop, reuse_fd, &r);
    run_until(loop, &new_s.reads, 1000);
    for (int i = 0; i < 3; i++)
        assert_int_equal(h2o_evloop_run(loop, 0), 0);
    assert_int_equal(new_s.reads, 1);
    assert_memory_equal(new_s.input, "new", 3);
    assert_int_equal(old_s.reads, 0);
    assert_int_equal(calls.watched_events, 0); /* no event of the old file named the old socket */

    calls.watched = NULL;
    h2o_socket_close(r.new);
    assert_int_equal(h2o_evloop_run(loop, 0), 0);
    close(keep), close(r.old_peer), close(r.new_peer);
    loop_close(loop);
}

/* ---- the loop's failure ---- */

/* h2o_evloop_run returns -1 when the poller fails: here the loop's epoll descriptor closed behind its back. */
static void test_run_fails(void **state)
{
    (void)state;
    h2o_evloop_t *loop = loop_open(0, 0, 0);
    assert_int_equal(h2o_evloop_run(loop, 0), 0);
    close(calls.epoll_fd);
    calls.epoll_fd = -1;
    errno = 0;
    assert_int_equal(h2o_evloop_run(loop, 0), -1);
    assert_int_equal(errno, EBADF);
    loop_close(loop);
}

/* preon's loop threads stop the process on it (src/server/pass.c), in a child process: a thread of the server's kind
 * (its log ring attached) whose loop's epoll descriptor is closed must abort, its line on stderr; one whose wait a
 * signal interrupts must go on. */
typedef struct {
    int break_poller; /* close the epoll descriptor; else a signal interrupts the wait */
} pass_case_t;

static void on_alarm(int sig)
{
    (void)sig;
}

static void *pass_thread(void *arg)
{
    const pass_case_t *pc = arg;
    preon_log_attach();
    h2o_evloop_t *loop = h2o_evloop_create();
    if (pc->break_poller) {
        close(calls.epoll_fd);
    } else {
        struct sigaction sa = {.sa_handler = on_alarm}; /* no SA_RESTART (epoll_wait never restarts anyway) */
        sigaction(SIGALRM, &sa, NULL);
        sigset_t alrm;
        sigemptyset(&alrm);
        sigaddset(&alrm, SIGALRM);
        pthread_sigmask(SIG_UNBLOCK, &alrm, NULL);
        setitimer(ITIMER_REAL, &(struct itimerval){.it_value = {0, 20000}, .it_interval = {0, 20000}}, NULL);
    }
    preon__server_run_pass(loop, 7, 5000);
    /* it returned (it must not for a broken poller): the child's exit status says whether a signal interrupted it */
    return (void *)(intptr_t)(calls.last_wait_errno == EINTR ? 0 : 3);
}

/* Runs pass_thread in a child process; returns its wait status and what it wrote to stderr. */
static int run_pass_child(const pass_case_t *pc, char *out, size_t outlen)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        dup2(p[1], STDERR_FILENO);
        preon_log_start();
        sigset_t alrm;
        sigemptyset(&alrm);
        sigaddset(&alrm, SIGALRM);
        pthread_sigmask(SIG_BLOCK, &alrm, NULL); /* the alarm goes to the loop's thread, which unblocks it */
        pthread_t t;
        void *verdict;
        pthread_create(&t, NULL, pass_thread, (void *)pc);
        pthread_join(t, &verdict);
        _exit((int)(intptr_t)verdict);
    }
    close(p[1]);
    size_t len = 0;
    ssize_t n;
    while (len + 1 < outlen && (n = read(p[0], out + len, outlen - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = '\0';
    close(p[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void test_run_pass_aborts(void **state)
{
    (void)state;
    char out[4096];
    int status = run_pass_child(&(pass_case_t){.break_poller = 1}, out, sizeof(out));
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    if (strstr(out, "thread 7: the event loop failed (Bad file descriptor): stopping") == NULL)
        fail_msg("stderr was: '%s'", out);

    status = run_pass_child(&(pass_case_t){.break_poller = 0}, out, sizeof(out)); /* EINTR: the pass returns */
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* as the server: a write to a connection shut down fails with EPIPE */
    for (size_t i = 0; i < sizeof(pattern); i++)
        pattern[i] = (char)((i * 2654435761u) >> 13);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_joined_writes),
        cmocka_unit_test(test_join_bound),
        cmocka_unit_test(test_join_backpressure),
        cmocka_unit_test(test_partial_writes),
        cmocka_unit_test(test_write_timeout),
        cmocka_unit_test(test_write_timeout_renewed),
        cmocka_unit_test(test_write_timeout_joined),
        cmocka_unit_test(test_graceful_close),
        cmocka_unit_test(test_graceful_close_linger_timeout),
        cmocka_unit_test(test_graceful_close_write_bound),
        cmocka_unit_test(test_lazy_read),
        cmocka_unit_test(test_fd_reuse),
        cmocka_unit_test(test_run_fails),
        cmocka_unit_test(test_run_pass_aborts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
