/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "preon/alloc.h"
#include "preon/assert.h"
#include "preon/interpose.h"
#include "coalesce.h"
#include "lazyep.h"

/*
 * Write coalescing for pipelined HTTP/1 requests, outside h2o.
 *
 * h2o 2.2.5 answers pipelined requests one after the other within one loop pass, each with its own writev(): sixteen
 * pipelined requests (TechEmpower's plaintext test) cost sixteen system calls, where one would carry all sixteen
 * answers. h2o writes to its sockets through writev() and closes them with close(), both called through the PLT:
 * src/interpose/ defines both for the process and calls this file's hooks (include/preon/interpose.h). Only the
 * sockets the server registers at accept (preon_coalesce_track) are handled here. On a loop thread that started
 * coalescing, a connection's first writev() of a pass goes to the socket at once (a connection with one
 * request in flight, the usual case, is written exactly as before, without a copy); later ones in the same pass are
 * copied into the connection's buffer and reported written, and preon_coalesce_pass_end writes them in one go.
 *
 * The bytes and their order are h2o's. What the socket does not take waits for writability (an epoll set of this
 * file's, itself watched by the loop); meanwhile a writev() on that socket first writes what waits, and answers EAGAIN
 * if it cannot, so that h2o waits for writability as it always does (its backpressure holds: a client that reads
 * nothing stalls its own connection, never the loop or the memory). At most PREON_COALESCE_HOLD_MAX bytes are held
 * per connection: past it writev() answers EAGAIN, as a full socket would. h2o 2.2.5 has no timeout for a write: one
 * it was told to wait for and whose peer takes nothing for `linger_ms` is shut down, so that h2o's next write fails.
 *
 * A tracked socket h2o closes stays open here (h2o no longer knows it; no dup) and counts as a connection until it is
 * really closed (the server's release callback): first its held bytes go out (within `linger_ms`, renewed while the
 * peer reads but never past twice that), then it is shut down for writing and what the peer still sends is read and
 * dropped until its end or PREON_COALESCE_DROP_MS: closing a socket with unread input would reset the connection and
 * destroy the answer in flight (nginx's lingering close). Every other writev() and close() is the system call.
 */

typedef struct {
    uint64_t pass;      /* the loop pass of the connection's last writev() that went to the socket directly */
    uint64_t full_pass; /* a pass in which the socket or the bound refused more: later writes of it answer EAGAIN */
    char *buf;          /* held bytes: [off, len) */
    size_t off, len, cap;
    uint64_t linger_until;  /* a closing socket: loop time at which it is closed whatever it still holds */
    uint64_t linger_hard;   /* ... and the bound linger_until never passes, however the peer reads */
    uint64_t stuck_until;   /* a stuck socket: loop time at which, its peer having taken nothing, it is cut */
    unsigned char tracked;  /* a connection's socket, registered by the server (preon_coalesce_track) */
    unsigned char listed;   /* on the list written at the end of the pass */
    unsigned char stuck;    /* the socket took only part: what is left waits for writability */
    unsigned char in_epoll; /* registered in this file's set (EPOLLONESHOT: armed or spent) */
    unsigned char closing;  /* h2o closed it: CLOSE_WRITING its held bytes, then CLOSE_DROPPING the peer's input */
} slot_t;

enum { CLOSE_NONE, CLOSE_WRITING, CLOSE_DROPPING };

static __thread struct {
    int on;
    h2o_evloop_t *loop;
    uint64_t pass;
    slot_t *slots; /* by descriptor */
    size_t nslots;
    int *list; /* descriptors with bytes held in this pass */
    size_t nlist, caplist;
    int efd; /* the set of sockets waiting for writability (held bytes) or readability (a closing socket's input) */
    h2o_socket_t *esock;
    unsigned nlinger; /* closing sockets not closed yet */
    unsigned nstuck;  /* open sockets whose held bytes wait for writability */
    uint64_t linger_ms;
    void (*release)(void *); /* a tracked socket is really closed */
    void *release_data;
    h2o_timeout_t linger_timeout;
    h2o_timeout_entry_t linger_entry;
} co;

static slot_t *grow(int fd)
{
    void *items = co.slots;
    slot_t *s = preon_table_at(&items, &co.nslots, sizeof(*co.slots), 1024, (size_t)fd);
    co.slots = items;
    return s;
}

static void watch(void)
{
    if (!h2o_timeout_is_linked(&co.linger_entry))
        h2o_timeout_link(co.loop, &co.linger_timeout, &co.linger_entry);
}

/* A socket h2o was told to wait for (EAGAIN, a short write) or whose held bytes wait for writability. h2o 2.2.5 has
 * no timeout for a write: one whose peer takes nothing for linger_ms is cut here (on_linger_tick); h2o's next write
 * to it ends the wait. */
static void set_stuck(slot_t *s, int stuck)
{
    if (s->stuck == stuck)
        return;
    s->stuck = (unsigned char)stuck;
    if (stuck) {
        co.nstuck++;
        s->stuck_until = h2o_now(co.loop) + co.linger_ms;
        watch();
    } else {
        PREON_ASSERT(co.nstuck > 0);
        co.nstuck--;
    }
}

static void forget(slot_t *s)
{
    set_stuck(s, 0);
    free(s->buf);
    memset(s, 0, sizeof(*s));
}

/* Writes what `fd` holds: 0 when all is out, 1 when the socket is full, or a negative errno (the bytes are dropped:
 * the connection is broken, and h2o finds that out on its next read or write). */
static int write_held(int fd)
{
    slot_t *s = &co.slots[fd];
    while (s->off < s->len) {
        ssize_t n = write(fd, s->buf + s->off, s->len - s->off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 1;
            int err = errno;
            s->off = s->len = 0;
            return -err;
        }
        s->off += (size_t)n;
    }
    s->off = s->len = 0;
    if (s->cap > PREON_COALESCE_HOLD_MAX * 2) {
        free(s->buf); /* a burst's buffer is not kept for the quiet that follows it */
        s->buf = NULL;
        s->cap = 0;
    }
    return 0;
}

/* Asks for one event of `fd` (the set is EPOLLONESHOT: re-armed each time). */
static void arm(int fd, uint32_t events)
{
    slot_t *s = &co.slots[fd];
    struct epoll_event ev = {.events = events | EPOLLONESHOT, .data.fd = fd};
    if (preon_sys_epoll_ctl(co.efd, s->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) == 0)
        s->in_epoll = 1;
}

static void disarm(int fd)
{
    slot_t *s = &co.slots[fd];
    if (s->in_epoll)
        preon_sys_epoll_ctl(co.efd, EPOLL_CTL_DEL, fd, NULL);
    s->in_epoll = 0;
}

/* A closing socket is closed now, with whatever it still holds; the server counts it gone. */
static void finish(int fd)
{
    PREON_ASSERT(co.slots[fd].closing != CLOSE_NONE && co.nlinger > 0);
    disarm(fd);
    forget(&co.slots[fd]);
    co.nlinger--;
    preon_sys_close(fd);
    co.release(co.release_data);
}

/* Reads and drops what the peer of a closing socket still sends, until its end (then closes) or until the socket has
 * nothing now (then waits for more, up to linger_until). A bounded number of reads per call: a peer that floods it
 * waits its turn. */
static void drop_input(int fd)
{
    char buf[16384];
    for (int i = 0; i < 16; i++) {
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0)
            continue;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            arm(fd, EPOLLIN | EPOLLRDHUP);
            return;
        }
        finish(fd); /* the end, or a reset: nothing more to wait for */
        return;
    }
    arm(fd, EPOLLIN | EPOLLRDHUP);
}

/* Every held byte is out: the answer ends with FIN behind it, and what the peer sent meanwhile is read, not reset. */
static void start_dropping(int fd)
{
    slot_t *s = &co.slots[fd];
    uint64_t until = h2o_now(co.loop) + (co.linger_ms < PREON_COALESCE_DROP_MS ? co.linger_ms : PREON_COALESCE_DROP_MS);
    s->closing = CLOSE_DROPPING;
    s->linger_until = until < s->linger_hard ? until : s->linger_hard;
    shutdown(fd, SHUT_WR);
    drop_input(fd);
}

/* h2o closed the tracked socket `fd`: it stays open here (h2o no longer knows it) until its bytes are out and its peer
 * has ended, within linger_ms (held bytes; renewed while the peer reads, never past twice that) and
 * PREON_COALESCE_DROP_MS (the peer's input), and counts as a connection until then. */
static void retire(int fd)
{
    slot_t *s = &co.slots[fd];
    uint64_t now = h2o_now(co.loop);
    set_stuck(s, 0);
    s->tracked = s->listed = 0;
    s->closing = CLOSE_WRITING;
    s->linger_until = now + co.linger_ms;
    s->linger_hard = now + 2 * co.linger_ms;
    co.nlinger++;
    watch();
    int rv = s->len != s->off ? write_held(fd) : 0;
    if (rv == 1)
        arm(fd, EPOLLOUT);
    else if (rv < 0)
        finish(fd);
    else
        start_dropping(fd);
}

int preon_coalesce_track(int fd)
{
    if (!co.on || fd < 0)
        return 0;
    slot_t *s = (size_t)fd < co.nslots ? &co.slots[fd] : grow(fd);
    PREON_ASSERT(!s->tracked && s->closing == CLOSE_NONE && s->len == 0);
    s->tracked = 1;
    s->pass = s->full_pass = 0;
    return 1;
}

size_t preon_coalesce_held(int fd)
{
    if (!co.on || fd < 0 || (size_t)fd >= co.nslots)
        return 0;
    return co.slots[fd].len - co.slots[fd].off;
}

unsigned preon_coalesce_closing(void)
{
    return co.nlinger;
}

ssize_t preon_coalesce_writev(int fd, const struct iovec *iov, int iovcnt)
{
    if (!co.on || fd < 0 || (size_t)fd >= co.nslots || !co.slots[fd].tracked)
        return preon_sys_writev(fd, iov, iovcnt);
    slot_t *s = &co.slots[fd];
    if (s->stuck) {
        /* What waits goes first; while it cannot, h2o waits for writability too. */
        int rv = write_held(fd);
        if (rv != 0) {
            if (rv < 0)
                set_stuck(s, 0);
            errno = rv > 0 ? EAGAIN : -rv;
            return -1;
        }
        set_stuck(s, 0);
    }
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    if (s->full_pass == co.pass || (s->len != 0 && s->len - s->off + total > PREON_COALESCE_HOLD_MAX)) {
        /* The socket took only part of this pass's first write, or enough is held: as a full socket would, this
         * answers EAGAIN, and h2o waits for writability (what is held leaves at the end of the pass). */
        s->full_pass = co.pass;
        set_stuck(s, 1);
        errno = EAGAIN;
        return -1;
    }
    if (s->len == 0 && s->pass != co.pass) {
        s->pass = co.pass;
        ssize_t n = preon_sys_writev(fd, iov, iovcnt);
        if (n < 0 ? errno == EAGAIN || errno == EWOULDBLOCK : (size_t)n < total) {
            s->full_pass = co.pass;
            set_stuck(s, 1); /* h2o keeps the rest and waits for writability: watched for a peer that never reads */
        }
        return n;
    }
    for (int i = 0; i < iovcnt; i++)
        preon_bytes_append(&s->buf, &s->len, &s->cap, 4096, iov[i].iov_base, iov[i].iov_len);
    if (!s->listed) {
        if (co.nlist == co.caplist) {
            co.caplist = co.caplist != 0 ? co.caplist * 2 : 64;
            co.list = preon_realloc(co.list, co.caplist * sizeof(*co.list));
        }
        co.list[co.nlist++] = fd;
        s->listed = 1;
    }
    return (ssize_t)total;
}

int preon_coalesce_close(int fd)
{
    preon_lazyep_closing(fd);
    if (co.on && fd >= 0 && (size_t)fd < co.nslots && co.slots[fd].tracked) {
        retire(fd);
        return 0;
    }
    return preon_sys_close(fd);
}

/* Sockets in this file's set are ready: write what they hold, or drop what a closing one's peer sent. */
static void on_ready(h2o_socket_t *sock, const char *err)
{
    struct epoll_event ev[64];
    int n;
    (void)sock, (void)err;
    while ((n = preon_sys_epoll_wait(co.efd, ev, 64, 0)) > 0) {
        for (int i = 0; i < n; i++) {
            int fd = ev[i].data.fd;
            slot_t *s = &co.slots[fd];
            if (s->closing == CLOSE_DROPPING) {
                drop_input(fd);
                continue;
            }
            size_t before = s->off;
            int rv = write_held(fd);
            if (rv == 1) {
                uint64_t until = h2o_now(co.loop) + co.linger_ms;
                if (s->closing != CLOSE_NONE && s->off != before) /* the peer reads: more time, within the bound */
                    s->linger_until = until < s->linger_hard ? until : s->linger_hard;
                else if (s->off != before)
                    s->stuck_until = until;
                arm(fd, EPOLLOUT);
                continue;
            }
            set_stuck(s, 0);
            if (s->closing == CLOSE_WRITING) {
                if (rv < 0)
                    finish(fd);
                else
                    start_dropping(fd);
            }
        }
        if (n < 64)
            break;
    }
}

/* Closing sockets past their time are closed with what they still hold; open ones whose peer took nothing for
 * linger_ms are shut down, so that h2o's next write fails and it closes them. */
static void on_linger_tick(h2o_timeout_entry_t *entry)
{
    uint64_t now = h2o_now(co.loop);
    (void)entry;
    for (size_t fd = 0; fd < co.nslots && co.nlinger + co.nstuck != 0; fd++) {
        slot_t *s = &co.slots[fd];
        if (s->closing != CLOSE_NONE && now >= s->linger_until) {
            finish((int)fd);
        } else if (s->stuck && now >= s->stuck_until) {
            s->off = s->len = 0;
            set_stuck(s, 0);
            disarm((int)fd);
            shutdown((int)fd, SHUT_RDWR);
        }
    }
    if (co.nlinger + co.nstuck != 0)
        watch();
}

void preon_coalesce_start(h2o_evloop_t *loop, uint64_t linger_ms, void (*release)(void *), void *release_data)
{
    memset(&co, 0, sizeof(co));
    co.efd = epoll_create1(EPOLL_CLOEXEC);
    if (co.efd < 0)
        return; /* no coalescing: every write goes to its socket, as h2o makes it */
    co.loop = loop;
    co.pass = 1;
    co.linger_ms = linger_ms;
    co.release = release;
    co.release_data = release_data;
    h2o_timeout_init(loop, &co.linger_timeout, 100);
    co.linger_entry.cb = on_linger_tick;
    co.esock = h2o_evloop_socket_create(loop, co.efd, H2O_SOCKET_FLAG_DONT_READ);
    h2o_socket_read_start(co.esock, on_ready);
    co.on = 1;
}

void preon_coalesce_pass_end(void)
{
    for (size_t i = 0; i < co.nlist; i++) {
        int fd = co.list[i];
        slot_t *s = &co.slots[fd];
        if (!s->listed)
            continue; /* closed meanwhile: its bytes are written as it closes */
        s->listed = 0;
        if (write_held(fd) == 1) {
            arm(fd, EPOLLOUT);
            set_stuck(s, 1);
        }
    }
    co.nlist = 0;
    co.pass++;
}

void preon_coalesce_stop(void)
{
    if (!co.on)
        return;
    preon_coalesce_pass_end();
    for (size_t fd = 0; fd < co.nslots; fd++) {
        if (co.slots[fd].len != co.slots[fd].off)
            (void)write_held((int)fd); /* what the socket takes now; the loop is ending */
        if (co.slots[fd].closing != CLOSE_NONE)
            finish((int)fd);
        forget(&co.slots[fd]);
    }
    if (h2o_timeout_is_linked(&co.linger_entry))
        h2o_timeout_unlink(&co.linger_entry);
    h2o_timeout_dispose(co.loop, &co.linger_timeout);
    co.on = 0;
    h2o_socket_close(co.esock); /* closes the set */
    free(co.slots);
    free(co.list);
    memset(&co, 0, sizeof(co));
}
