/* SPDX-License-Identifier: MIT */
/*
 * The write path's patches of h2o's event loop (scripts/sources/h2o/01..04), driven through h2o's own socket API on
 * real loopback TCP connections and socketpairs and a real epoll set: joined writes and their bound, the write
 * timeout, the graceful close, the lazy read interest, a descriptor reused within a pass, the loop's failure (and
 * preon's answer to it, src/server/pass.c). What h2o asks of the kernel is counted by evloop_harness.c, through GNU
 * ld's --wrap in this binary alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "evloop_harness.h"
#include "pass.h"
#include "preon/log.h"

/* ---- joined writes ---- */

/* The answers to pipelined requests of one pass: the first goes to the socket at once, the others are joined, each
 * reported done at once, and leave together in one write when the next pass begins, before the loop waits. */
static void test_joined_writes(void **state)
{
    (void)state;
    fixture_t f;
    fixture_open(&f, (h2o_evloop_write_conf_t){.join_max = 64 * 1024}, 0, 10 * 700, 700);

    request(f.loop, &f.c);
    assert_int_equal(f.s.ndone, 10);              /* every callback in the pass */
    assert_int_equal(calls.fd[f.c.fd].writes, 1); /* one write: the first answer */
    assert_int_equal(calls.fd[f.c.fd].asked[0], 700);
    assert_true(h2o_evloop_socket_is_flushing(f.c.sock));
    peer_take_all(&f.c, &f.got);
    sink_expect(&f.got, 700);

    assert_int_equal(h2o_evloop_run(f.loop, 0), 0);
    assert_int_equal(calls.fd[f.c.fd].writes, 2); /* the nine others in one */
    assert_int_equal(calls.fd[f.c.fd].asked[1], 9 * 700);
    assert_true(calls.fd[f.c.fd].last_write_seq < calls.last_wait_seq); /* before the loop waited */
    assert_false(h2o_evloop_socket_is_flushing(f.c.sock));
    peer_take_all(&f.c, &f.got);
    sink_expect(&f.got, 10 * 700);

    fixture_close(&f);
}

/* join_max: a write that would hold more goes to the socket at once, with the held bytes in front of it. */
static void test_join_bound(void **state)
{
    (void)state;
    fixture_t f;
    fixture_open(&f, (h2o_evloop_write_conf_t){.join_max = 4096}, 0, 12 * 1000, 1000);

    request(f.loop, &f.c);
    assert_int_equal(f.s.ndone, 12);
    /* 1; 2-5 held (4000 bytes); 6 with them (5000); 7-10 held; 11 with them; 12 held */
    assert_int_equal(calls.fd[f.c.fd].writes, 3);
    assert_int_equal(calls.fd[f.c.fd].asked[0], 1000);
    assert_int_equal(calls.fd[f.c.fd].asked[1], 5000);
    assert_int_equal(calls.fd[f.c.fd].asked[2], 5000);
    assert_int_equal(h2o_evloop_run(f.loop, 0), 0);
    assert_int_equal(calls.fd[f.c.fd].writes, 4);
    assert_int_equal(calls.fd[f.c.fd].asked[3], 1000);
    peer_take_all(&f.c, &f.got);
    sink_expect(&f.got, 12 * 1000);

    fixture_close(&f);
}

/* A client that pipelines and does not read: past join_max, h2o waits for writability as it always does (its write
 * callback is not called until the client reads), and the bytes held in the process stay within join_max. */
static void test_join_backpressure(void **state)
{
    (void)state;
    const size_t join_max = 16 * 1024, total = 4 << 20;
    fixture_t f;
    fixture_open(&f, (h2o_evloop_write_conf_t){.join_max = join_max}, 1, total, 1000);

    request(f.loop, &f.c);
    for (int i = 0; i < 10; i++)
        assert_int_equal(h2o_evloop_run(f.loop, 10), 0);
    size_t stalled = f.s.ndone;
    assert_true(stalled < total / 1000);
    assert_true(h2o_socket_is_writing(f.c.sock)); /* a write waits */
    for (int i = 0; i < 10; i++)
        assert_int_equal(h2o_evloop_run(f.loop, 10), 0);
    assert_int_equal(f.s.ndone, stalled); /* and its callback with it */
    /* what h2o was told is done and the kernel does not hold yet is held here: at most join_max */
    int unsent = 0, unread = 0;
    assert_int_equal(ioctl(f.c.fd, SIOCOUTQNSD, &unsent), 0);
    assert_int_equal(ioctl(f.c.peer, SIOCINQ, &unread), 0);
    assert_true(f.s.done <= (size_t)unsent + (size_t)unread + join_max);

    drain(f.loop, &f.c, &f.got, total, 65536, 10000);
    sink_expect(&f.got, total);
    assert_int_equal(f.s.ndone, f.s.ngiven);
    assert_null(f.s.write_err);

    fixture_close(&f);
}

/* Writes of every size, joined and not, to a client that reads a little at a time: the kernel takes part of many of
 * them (h2o's and the joined ones), and every byte arrives, in order. */
static void test_partial_writes(void **state)
{
    (void)state;
    const size_t total = 2 << 20;
    fixture_t f;
    fixture_open(&f, (h2o_evloop_write_conf_t){.join_max = 16 * 1024}, 1, total, 0);

    request(f.loop, &f.c);
    drain(f.loop, &f.c, &f.got, total, 3000, 20000);
    sink_expect(&f.got, total);
    assert_int_equal(f.s.ndone, f.s.ngiven);
    assert_null(f.s.write_err);
    assert_true(calls.fd[f.c.fd].short_writes > 0);

    fixture_close(&f);
}

/* ---- the write timeout ---- */

/* A client that takes nothing: the write waiting for it fails after write_timeout, and the connection is shut down. */
static void test_write_timeout(void **state)
{
    (void)state;
    const uint64_t timeout = 200;
    const size_t total = 4 << 20;
    fixture_t f;
    fixture_open(&f, (h2o_evloop_write_conf_t){.write_timeout = timeout}, 1, total, total);

    request(f.loop, &f.c);
    uint64_t start = f.s.last_at; /* its timer counts from there */
    assert_int_equal(f.s.ndone, 0);
    run_until(f.loop, &f.s.ndone, 3000);
    assert_int_equal(f.s.ndone, 1);
    assert_ptr_equal(f.s.write_err, h2o_socket_error_io);
    assert_true(h2o_now(f.loop) - start >= timeout);
    assert_int_equal(calls.fd[f.c.fd].shutdowns, 1);
    assert_int_equal(calls.fd[f.c.fd].how, SHUT_RDWR);
    drain(f.loop, &f.c, &f.got, total, 65536, 3000);
    assert_true(f.got.eof); /* what the kernel had, then the end */
    assert_true(f.got.len < total);
    assert_memory_equal(f.got.buf, pattern, f.got.len);

    fixture_close(&f);
}

/* A client that reads slowly is not cut: every byte it takes starts the wait again. */
static void test_write_timeout_renewed(void **state)
{
    (void)state;
    const uint64_t timeout = 250;
    const size_t total = 1 << 20;
    fixture_t f;
    fixture_open(&f, (h2o_evloop_write_conf_t){.write_timeout = timeout}, 1, total, total);

    request(f.loop, &f.c);
    uint64_t start = h2o_now(f.loop), next_take = start;
    while (h2o_now(f.loop) - start < 3 * timeout) { /* 8 KiB per 25 ms: the write waits all along */
        assert_int_equal(h2o_evloop_run(f.loop, 5), 0);
        if (h2o_now(f.loop) >= next_take) {
            peer_take(&f.c, &f.got, 8192);
            next_take += 25;
        }
    }
    assert_int_equal(f.s.ndone, 0);
    drain(f.loop, &f.c, &f.got, total, 65536, 10000);
    sink_expect(&f.got, total);
    assert_int_equal(f.s.ndone, 1);
    assert_null(f.s.write_err);

    fixture_close(&f);
}

/* Joined bytes that wait for writability (no write of h2o's waits) that long: dropped, the connection shut down,
 * and h2o's next read and write of it fail. */
static void test_write_timeout_joined(void **state)
{
    (void)state;
    const uint64_t timeout = 200;
    const size_t total = 10 + (4 << 20);
    fixture_t f;
    fixture_open(&f, (h2o_evloop_write_conf_t){.join_max = 8 << 20, .write_timeout = timeout}, 1, total, 4 << 20);
    f.s.first = 10;

    request(f.loop, &f.c); /* 10 bytes to the socket, 4 MiB joined: both done */
    assert_int_equal(f.s.ndone, 2);
    uint64_t start = h2o_now(f.loop);
    assert_int_equal(h2o_evloop_run(f.loop, 0), 0); /* the kernel takes part of them, then no more */
    assert_true(h2o_evloop_socket_is_flushing(f.c.sock));
    assert_true(calls.fd[f.c.fd].short_writes > 0);
    while (h2o_evloop_socket_is_flushing(f.c.sock) && h2o_now(f.loop) - start < 3000)
        assert_int_equal(h2o_evloop_run(f.loop, 10), 0);
    assert_false(h2o_evloop_socket_is_flushing(f.c.sock));
    assert_true(h2o_now(f.loop) - start >= timeout);
    assert_int_equal(calls.fd[f.c.fd].shutdowns, 1);
    assert_int_equal(calls.fd[f.c.fd].how, SHUT_RDWR);

    f.s.total += 10;
    writer_next(&f.s);
    f.s.reads = 0;
    h2o_socket_read_start(f.c.sock, on_read);
    run_until(f.loop, &f.s.reads, 1000);
    assert_int_equal(f.s.ndone, 3);
    assert_ptr_equal(f.s.write_err, h2o_socket_error_io);
    assert_ptr_equal(f.s.read_err, h2o_socket_error_closed);
    drain(f.loop, &f.c, &f.got, total, 65536, 3000);
    assert_true(f.got.eof);
    assert_true(f.got.len < total);
    assert_memory_equal(f.got.buf, pattern, f.got.len);

    fixture_close(&f);
}

/* ---- the graceful close ---- */

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
    fixture_t f;
    fixture_open(&f, (h2o_evloop_write_conf_t){.join_max = 2 << 20, .write_timeout = 2000, .linger_timeout = 5000}, 1, total,
                 1 << 20);
    f.s.first = 1000;

    answer_and_close(f.loop, &f.c, &f.s);
    assert_int_equal(f.s.on_close, 0);
    assert_int_equal(f.loop->num_lingering, 1);
    assert_true(h2o_evloop_socket_is_flushing(f.c.sock));
    assert_int_equal(calls.fd[f.c.fd].closes, 0);

    drain(f.loop, &f.c, &f.got, total + 1, 65536, 5000);
    assert_int_equal(f.got.error, 0);
    assert_true(f.got.eof);
    sink_expect(&f.got, total);
    assert_int_equal(calls.fd[f.c.fd].shutdowns, 1);
    assert_int_equal(calls.fd[f.c.fd].how, SHUT_WR);
    for (int i = 0; i < 5; i++)
        assert_int_equal(h2o_evloop_run(f.loop, 10), 0);
    assert_int_equal(f.s.on_close, 0); /* the server waits for the client's end */
    assert_int_equal(f.loop->num_lingering, 1);
    assert_true(h2o_evloop_socket_is_flushing(f.c.sock));

    assert_int_equal(shutdown(f.c.peer, SHUT_WR), 0);
    run_until(f.loop, &f.s.on_close, 1000);
    assert_int_equal(f.s.on_close, 1);
    assert_false(f.s.open_at_close); /* called once the descriptor is closed */
    assert_int_equal(f.s.closes_at_close, 1);
    assert_int_equal(f.loop->num_lingering, 0);
    assert_int_equal(peer_error(&f.c), 0); /* no reset */

    fixture_close(&f);
}

/* A client that never closes: the descriptor is closed after linger_timeout; what the client sent meanwhile was read
 * and dropped, so that the close resets nothing. */
static void test_graceful_close_linger_timeout(void **state)
{
    (void)state;
    const uint64_t linger = 300;
    const size_t total = 1000 + 5000;
    fixture_t f;
    fixture_open(&f, (h2o_evloop_write_conf_t){.join_max = 64 * 1024, .write_timeout = 2000, .linger_timeout = linger}, 0, total,
                 5000);
    f.s.first = 1000;

    uint64_t closed = answer_and_close(f.loop, &f.c, &f.s);
    assert_int_equal(send(f.c.peer, "late\n", 5, 0), 5); /* the client's last input, as the server closes */
    int eof_first = 0;
    while (f.s.on_close == 0 && h2o_now(f.loop) - closed < 3000) {
        assert_int_equal(f.loop->num_lingering, 1);
        assert_true(h2o_evloop_socket_is_flushing(f.c.sock));
        assert_int_equal(h2o_evloop_run(f.loop, 10), 0);
        peer_take(&f.c, &f.got, 65536);
        eof_first |= f.got.eof && f.s.on_close == 0;
    }
    assert_int_equal(f.s.on_close, 1);
    assert_true(eof_first); /* the answer, then the end, then (a linger_timeout later) the close */
    sink_expect(&f.got, total);
    assert_false(f.s.open_at_close);
    assert_true(f.s.closed_at - closed >= linger);
    assert_int_equal(f.loop->num_lingering, 0);
    assert_int_equal(peer_error(&f.c), 0);
    assert_int_equal(tcp_state(&f.c), TCP_CLOSE_WAIT); /* a reset would have closed it */

    fixture_close(&f);
}

/* What a closing connection still holds is written within write_timeout, renewed by every byte the client takes,
 * never past twice write_timeout: a client that takes a trickle does not hold it longer. */
static void test_graceful_close_write_bound(void **state)
{
    (void)state;
    const uint64_t timeout = 300;
    const size_t total = 1000 + (4 << 20);
    fixture_t f;
    fixture_open(&f, (h2o_evloop_write_conf_t){.join_max = 8 << 20, .write_timeout = timeout, .linger_timeout = 5000}, 1, total,
                 4 << 20);
    f.s.first = 1000;

    uint64_t closed = answer_and_close(f.loop, &f.c, &f.s);
    while (f.s.on_close == 0 && h2o_now(f.loop) - closed < 5000) {
        assert_int_equal(h2o_evloop_run(f.loop, 20), 0);
        peer_take(&f.c, &f.got, 4096);
    }
    assert_int_equal(f.s.on_close, 1);
    assert_true(f.got.len < total);
    assert_memory_equal(f.got.buf, pattern, f.got.len);
    /* more than write_timeout (the client read: the wait was renewed), at most twice that (and the loop's own delays:
     * 150 ms) */
    uint64_t took = f.s.closed_at - closed;
    if (took <= timeout || took > 2 * timeout + 150)
        fail_msg("closed %llu ms after h2o closed it (write_timeout %llu ms)", (unsigned long long)took,
                 (unsigned long long)timeout);

    fixture_close(&f);
}

/* ---- the lazy read interest ---- */

/* read_stop then read_start across passes costs no epoll_ctl; a readiness h2o did not ask for is not handed to it
 * and the registration is brought down (one epoll_ctl); it comes once h2o reads again. */
static void test_lazy_read(void **state)
{
    (void)state;
    fixture_t f;
    fixture_open(&f, (h2o_evloop_write_conf_t){0}, 0, 0, 0);
    calls.watched = f.c.sock, calls.watched_events = 0;

    h2o_socket_read_start(f.c.sock, on_read);
    assert_int_equal(h2o_evloop_run(f.loop, 0), 0);
    assert_int_equal(calls.fd[f.c.fd].ctl, 1); /* registered */
    for (int i = 0; i < 3; i++) {
        h2o_socket_read_stop(f.c.sock);
        assert_int_equal(h2o_evloop_run(f.loop, 0), 0);
        h2o_socket_read_start(f.c.sock, on_read);
        assert_int_equal(h2o_evloop_run(f.loop, 0), 0);
    }
    assert_int_equal(calls.fd[f.c.fd].ctl, 1);

    h2o_socket_read_stop(f.c.sock);
    assert_int_equal(h2o_evloop_run(f.loop, 0), 0);
    assert_int_equal(send(f.c.peer, "ping", 4, 0), 4);
    assert_int_equal(h2o_evloop_run(f.loop, 100), 0);
    assert_int_equal(calls.watched_events, 1); /* the kernel reported it */
    assert_int_equal(f.s.reads, 0);            /* h2o was not told */
    assert_int_equal(calls.fd[f.c.fd].ctl, 2); /* and the registration is down */
    for (int i = 0; i < 3; i++)
        assert_int_equal(h2o_evloop_run(f.loop, 0), 0);
    assert_int_equal(calls.watched_events, 1);
    assert_int_equal(calls.fd[f.c.fd].ctl, 2);
    assert_int_equal(f.s.reads, 0);

    h2o_socket_read_start(f.c.sock, on_read);
    assert_int_equal(h2o_evloop_run(f.loop, 100), 0);
    assert_int_equal(calls.fd[f.c.fd].ctl, 3);
    assert_int_equal(f.s.reads, 1);
    assert_int_equal(f.s.input_len, 4);
    assert_memory_equal(f.s.input, "ping", 4);

    calls.watched = NULL;
    fixture_close(&f);
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
    h2o_evloop_t *loop = loop_open((h2o_evloop_write_conf_t){0});
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
    h2o_evloop_t *loop = loop_open((h2o_evloop_write_conf_t){0});
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
    evloop_harness_init();
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
