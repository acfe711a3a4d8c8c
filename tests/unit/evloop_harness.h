/* SPDX-License-Identifier: MIT */
#ifndef PREON_EVLOOP_HARNESS_H
#define PREON_EVLOOP_HARNESS_H

/*
 * unit.evloop's harness (tests/unit/test_evloop.c): h2o's system calls counted, loopback connections accepted by
 * h2o's event loop, a writer on h2o's side, the client's side read by the test. Every function asserts (cmocka) what
 * it relies on; the test's thread only.
 *
 * The counting touches nothing of the product: the test binary alone is linked with GNU ld's --wrap for writev,
 * write, epoll_ctl, epoll_wait, epoll_create, shutdown and close (tests/CMakeLists.txt), so that the calls
 * libh2o-evloop.a's members make reach this harness's __wrap_ functions, which count and call the real ones. The
 * client's side of a connection uses send() and recv(), which are not counted.
 */
#include <h2o.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define EVLOOP_MAX_FDS 1024 /* descriptors counted: 0 to this */
#define EVLOOP_MAX_ASKED 16 /* writes whose size is kept, per descriptor */

/** What h2o asked of the kernel for one descriptor. */
typedef struct {
    unsigned writes;                /* write() and writev() */
    unsigned short_writes;          /* of which the kernel took less than asked (or nothing: EAGAIN) */
    size_t asked[EVLOOP_MAX_ASKED]; /* bytes asked of the first writes */
    uint64_t last_write_seq;        /* when the last one was made (calls.seq) */
    unsigned ctl;                   /* epoll_ctl() on the descriptor */
    unsigned shutdowns;             /* shutdown() */
    int how;                        /* the last shutdown()'s */
    unsigned closes;                /* close() */
} fd_calls_t;

typedef struct {
    fd_calls_t fd[EVLOOP_MAX_FDS];
    uint64_t seq;            /* every counted call takes the next number */
    uint64_t last_wait_seq;  /* the last epoll_wait()'s */
    int last_wait_errno;     /* its errno, when it failed (else 0) */
    int epoll_fd;            /* the last epoll_create()'s */
    const void *watched;     /* a socket whose events epoll_wait() hands out are counted (the test sets it) */
    unsigned watched_events; /* how many */
} evloop_calls_t;

/** The counts, since the start (a connection's are reset when conn_open makes it). */
extern evloop_calls_t calls;

/** What the server sends: byte i depends on i, so that a lost or moved byte shows. */
extern char pattern[8 << 20];

/** Fills `pattern` and ignores SIGPIPE (as the server does: a write to a connection shut down fails with EPIPE). */
void evloop_harness_init(void);

/** A descriptor's counts (one shared slot for those out of range). */
fd_calls_t *fd_calls(int fd);

/** A loop with the write configuration `conf`; loop_close destroys it and closes its epoll descriptor, which h2o
 * 2.2.5's h2o_evloop_destroy leaves open (unless the test closed it: calls.epoll_fd -1). */
h2o_evloop_t *loop_open(h2o_evloop_write_conf_t conf);
void loop_close(h2o_evloop_t *loop);

/** One connection: the server's end accepted by h2o (an accepted connection: joined writes, write timeout and
 * graceful close apply), the client's end the test's own, non-blocking. */
typedef struct {
    h2o_socket_t *sock;
    int fd;
    int peer;
} conn_t;

/** Opens one on loopback; small != 0 gives both ends small buffers, so that the kernel refuses bytes after some tens
 * of kilobytes. */
void conn_open(h2o_evloop_t *loop, conn_t *c, int small);

/** What the client's end has received. */
typedef struct {
    char *buf; /* owned; fixture_close frees it */
    size_t len;
    int eof;   /* recv() returned 0 */
    int error; /* recv()'s errno, when it failed otherwise than EAGAIN */
} sink_t;

/** One recv() of at most `max` bytes into the sink: the bytes read, 0 at the end or on an error, -1 when none wait. */
ssize_t peer_take(conn_t *c, sink_t *s, size_t max);
/** Runs the loop and reads at most `slice` bytes per pass until `want` bytes, the end, an error, or `ms` ms. */
void drain(h2o_evloop_t *loop, conn_t *c, sink_t *s, size_t want, size_t slice, int ms);
/** Reads what the client's end holds now (after waiting up to 100 ms for the first byte). */
void peer_take_all(conn_t *c, sink_t *s);
/** The sink holds `len` bytes: the pattern's first. */
void sink_expect(const sink_t *s, size_t len);
/** The client's end's pending error (a reset received: ECONNRESET or EPIPE), 0 if none. */
int peer_error(conn_t *c);
/** The client's end's TCP state (TCP_CLOSE_WAIT, ...). */
int tcp_state(conn_t *c);

/** The server's side of a connection: h2o's callbacks count here (sock->data). The writer hands h2o `total` bytes of
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

/** Makes `s` the server side of `c` (its data and on_close callback). */
void server_init(server_t *s, h2o_evloop_t *loop, conn_t *c, size_t total, size_t size);
/** The next write (or, all written and close_when_done set, the close). */
void writer_next(server_t *s);
/** h2o read callbacks: on_read keeps what came and reads on; on_request keeps it, stops reading, begins the answer. */
void on_read(h2o_socket_t *sock, const char *err);
void on_request(h2o_socket_t *sock, const char *err);
/** The client sends one request; the server's first pass reads it and answers it (the whole chain of writes). */
void request(h2o_evloop_t *loop, conn_t *c);

/** Runs the loop, up to `ms` ms, until *flag is nonzero. */
void run_until(h2o_evloop_t *loop, const size_t *flag, int ms);
/** Calls fn(data) inside the next loop pass (from a timer, where h2o's own callbacks run too), and runs that pass. */
void in_next_pass(h2o_evloop_t *loop, void (*fn)(void *), void *data);

/** A test's loop (its write configuration), one connection on it, h2o's side of it (a writer of `total` bytes, `size`
 * a write) and what the client received. fixture_close closes what is still open and frees it all. */
typedef struct {
    h2o_evloop_t *loop;
    conn_t c;
    server_t s;
    sink_t got;
} fixture_t;

void fixture_open(fixture_t *f, h2o_evloop_write_conf_t conf, int small, size_t total, size_t size);
void fixture_close(fixture_t *f);

#endif
