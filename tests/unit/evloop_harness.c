/* SPDX-License-Identifier: MIT */
/* unit.evloop's harness: see evloop_harness.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "evloop_harness.h"

evloop_calls_t calls = {.epoll_fd = -1};

/* The real functions, as GNU ld's --wrap names them, and the wrappers h2o's calls reach instead. */
ssize_t __real_writev(int fd, const struct iovec *iov, int iovcnt);
ssize_t __real_write(int fd, const void *buf, size_t n);
int __real_epoll_ctl(int ep, int op, int fd, struct epoll_event *ev);
int __real_epoll_wait(int ep, struct epoll_event *events, int max, int timeout);
int __real_epoll_create(int size);
int __real_shutdown(int fd, int how);
int __real_close(int fd);

fd_calls_t *fd_calls(int fd)
{
    static fd_calls_t elsewhere;
    return fd >= 0 && fd < EVLOOP_MAX_FDS ? &calls.fd[fd] : &elsewhere;
}

static void count_write(int fd, size_t asked, ssize_t ret)
{
    fd_calls_t *c = fd_calls(fd);
    if (c->writes < EVLOOP_MAX_ASKED)
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

char pattern[8 << 20];

void evloop_harness_init(void)
{
    signal(SIGPIPE, SIG_IGN);
    for (size_t i = 0; i < sizeof(pattern); i++)
        pattern[i] = (char)((i * 2654435761u) >> 13);
}

h2o_evloop_t *loop_open(h2o_evloop_write_conf_t conf)
{
    h2o_evloop_t *loop = h2o_evloop_create();
    h2o_evloop_set_write_conf(loop, &conf);
    return loop;
}

void loop_close(h2o_evloop_t *loop)
{
    h2o_evloop_destroy(loop);
    if (calls.epoll_fd >= 0)
        close(calls.epoll_fd); /* h2o 2.2.5's h2o_evloop_destroy leaves it open */
    calls.epoll_fd = -1;
}

void conn_open(h2o_evloop_t *loop, conn_t *c, int small)
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
    assert_true(c->fd < EVLOOP_MAX_FDS);
    if (small)
        assert_int_equal(setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size)), 0);
    memset(fd_calls(c->fd), 0, sizeof(fd_calls_t));
}

ssize_t peer_take(conn_t *c, sink_t *s, size_t max)
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

void drain(h2o_evloop_t *loop, conn_t *c, sink_t *s, size_t want, size_t slice, int ms)
{
    uint64_t until = h2o_now(loop) + (uint64_t)ms;
    while (s->len < want && !s->eof && s->error == 0 && h2o_now(loop) < until) {
        assert_int_equal(h2o_evloop_run(loop, 0), 0);
        if (peer_take(c, s, slice) < 0)
            poll(&(struct pollfd){.fd = c->peer, .events = POLLIN}, 1, 2);
    }
}

void peer_take_all(conn_t *c, sink_t *s)
{
    poll(&(struct pollfd){.fd = c->peer, .events = POLLIN}, 1, 100);
    while (peer_take(c, s, 65536) > 0)
        ;
}

void sink_expect(const sink_t *s, size_t len)
{
    assert_int_equal(s->len, len);
    assert_memory_equal(s->buf, pattern, len);
}

static void on_written(h2o_socket_t *sock, const char *err);

void writer_next(server_t *s)
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

void on_read(h2o_socket_t *sock, const char *err)
{
    keep_input(sock->data, sock, err);
}

void on_request(h2o_socket_t *sock, const char *err)
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

void server_init(server_t *s, h2o_evloop_t *loop, conn_t *c, size_t total, size_t size)
{
    memset(s, 0, sizeof(*s));
    s->sock = c->sock, s->total = total, s->size = size, s->rand = 1;
    s->fd = c->fd, s->loop = loop;
    c->sock->data = s;
    c->sock->on_close.cb = on_close;
    c->sock->on_close.data = s;
}

void request(h2o_evloop_t *loop, conn_t *c)
{
    assert_int_equal(send(c->peer, "request\n", 8, 0), 8);
    h2o_socket_read_start(c->sock, on_request);
    assert_int_equal(h2o_evloop_run(loop, 1000), 0);
    assert_int_equal(((server_t *)c->sock->data)->reads, 1);
}

void run_until(h2o_evloop_t *loop, const size_t *flag, int ms)
{
    uint64_t until = h2o_now(loop) + (uint64_t)ms;
    while (*flag == 0 && h2o_now(loop) < until)
        assert_int_equal(h2o_evloop_run(loop, 10), 0);
}

/* in_next_pass's timer entry and the call it makes */
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

void in_next_pass(h2o_evloop_t *loop, void (*fn)(void *), void *data)
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

void fixture_open(fixture_t *f, h2o_evloop_write_conf_t conf, int small, size_t total, size_t size)
{
    memset(f, 0, sizeof(*f));
    f->loop = loop_open(conf);
    conn_open(f->loop, &f->c, small);
    server_init(&f->s, f->loop, &f->c, total, size);
}

void fixture_close(fixture_t *f)
{
    if (f->s.on_close == 0) {
        h2o_socket_close(f->c.sock);
        assert_int_equal(h2o_evloop_run(f->loop, 0), 0);
    }
    close(f->c.peer);
    free(f->got.buf);
    loop_close(f->loop);
}

int peer_error(conn_t *c)
{
    int err = 0;
    socklen_t len = sizeof(err);
    assert_int_equal(getsockopt(c->peer, SOL_SOCKET, SO_ERROR, &err, &len), 0);
    return err;
}

int tcp_state(conn_t *c)
{
    struct tcp_info info;
    socklen_t len = sizeof(info);
    assert_int_equal(getsockopt(c->peer, IPPROTO_TCP, TCP_INFO, &info, &len), 0);
    return info.tcpi_state;
}
