/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "preon/alloc.h"
#include "coalesce.h"
#include "lazyep.h"

/*
 * Write coalescing for pipelined HTTP/1 requests, outside h2o.
 *
 * h2o 2.2.5 answers pipelined requests one after the other within one loop pass, each with its own writev(): sixteen
 * pipelined requests (TechEmpower's plaintext test) cost sixteen system calls, where one would carry all sixteen
 * answers. h2o writes to its sockets through writev() and closes them with close(), both called through the PLT:
 * this file defines both, and the executable's definitions come first in the dynamic linker's lookup. On a loop thread
 * that started coalescing, a connection's first writev() of a pass goes to the socket at once (a connection with one
 * request in flight, the usual case, is written exactly as before, without a copy); later ones in the same pass are
 * copied into the connection's buffer and reported written, and preon_coalesce_pass_end writes them in one go.
 *
 * The bytes and their order are h2o's. What the socket does not take waits for writability (an epoll set of this
 * file's, itself watched by the loop); meanwhile a writev() on that socket first writes what waits, and answers EAGAIN
 * if it cannot, so that h2o waits for writability as it always does (its backpressure holds: a client that reads
 * nothing stalls its own connection, never the loop or the memory). A socket h2o closes with bytes still held is
 * kept open (a dup) until they are out, or for `linger_ms`. Every other writev() and close() is the system call.
 */

typedef struct {
    uint64_t pass; /* the loop pass of the connection's last writev() that went to the socket directly */
    char *buf;     /* held bytes: [off, len) */
    size_t off, len, cap;
    uint64_t linger_until;   /* loop time after which a lingering socket is closed with its bytes (moved on by every
                              * write the peer takes: a reader that reads gets all, one that stopped loses its rest) */
    unsigned char listed;    /* on the list written at the end of the pass */
    unsigned char stuck;     /* the socket took only part: what is left waits for writability */
    unsigned char in_epoll;  /* registered in the writability set (EPOLLONESHOT: armed or spent) */
    unsigned char lingering; /* a dup of a socket h2o closed: closed here once its bytes are out */
} slot_t;

static __thread struct {
    int on;
    h2o_evloop_t *loop;
    uint64_t pass;
    slot_t *slots; /* by descriptor */
    size_t nslots;
    int *list; /* descriptors with bytes held in this pass */
    size_t nlist, caplist;
    int efd; /* the writability set */
    h2o_socket_t *esock;
    unsigned nlinger;
    uint64_t linger_ms;
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

static inline slot_t *slot_of(int fd)
{
    return (size_t)fd < co.nslots ? &co.slots[fd] : grow(fd);
}

static void forget(slot_t *s)
{
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
    return 0;
}

/* Asks for one writability event of `fd` (the set is EPOLLONESHOT: re-armed each time). */
static void arm(int fd)
{
    slot_t *s = &co.slots[fd];
    struct epoll_event ev = {.events = EPOLLOUT | EPOLLONESHOT, .data.fd = fd};
    if (epoll_ctl(co.efd, s->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) == 0)
        s->in_epoll = 1;
    s->stuck = 1;
}

static void disarm(int fd)
{
    slot_t *s = &co.slots[fd];
    if (s->in_epoll)
        epoll_ctl(co.efd, EPOLL_CTL_DEL, fd, NULL);
    s->in_epoll = 0;
}

static void end_linger(int fd)
{
    disarm(fd);
    forget(&co.slots[fd]);
    co.nlinger--;
    syscall(SYS_close, fd);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    if (!co.on || fd < 0)
        return syscall(SYS_writev, fd, iov, iovcnt);
    slot_t *s = slot_of(fd);
    if (s->stuck) {
        /* What waits goes first; while it cannot, h2o waits for writability too. */
        int rv = write_held(fd);
        if (rv != 0) {
            if (rv < 0)
                s->stuck = 0;
            errno = rv > 0 ? EAGAIN : -rv;
            return -1;
        }
        s->stuck = 0;
    }
    if (s->len == 0 && s->pass != co.pass) {
        s->pass = co.pass;
        return syscall(SYS_writev, fd, iov, iovcnt);
    }
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++) {
        preon_bytes_append(&s->buf, &s->len, &s->cap, 4096, iov[i].iov_base, iov[i].iov_len);
        total += iov[i].iov_len;
    }
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

/* h2o closed `fd` with bytes held that the socket does not take now: a dup keeps the connection until they are out. */
static void linger(int fd)
{
    int keep = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (keep < 0)
        return; /* out of descriptors: the bytes go with the socket */
    slot_t *k = slot_of(keep), *s = &co.slots[fd];
    k->buf = s->buf, k->off = s->off, k->len = s->len, k->cap = s->cap;
    s->buf = NULL, s->off = s->len = s->cap = 0;
    k->lingering = 1;
    k->linger_until = h2o_now(co.loop) + co.linger_ms;
    arm(keep);
    co.nlinger++;
    if (!h2o_timeout_is_linked(&co.linger_entry))
        h2o_timeout_link(co.loop, &co.linger_timeout, &co.linger_entry);
}

int close(int fd)
{
    preon_lazyep_closing(fd);
    if (co.on && fd >= 0 && (size_t)fd < co.nslots) {
        slot_t *s = &co.slots[fd];
        if (s->len != s->off && write_held(fd) == 1)
            linger(fd);
        disarm(fd); /* the set would keep reporting it under this number while the dup keeps the socket */
        forget(&co.slots[fd]);
    }
    return (int)syscall(SYS_close, fd);
}

/* Sockets in the writability set are writable: write what they hold. */
static void on_writable(h2o_socket_t *sock, const char *err)
{
    struct epoll_event ev[64];
    int n;
    (void)sock, (void)err;
    while ((n = epoll_wait(co.efd, ev, 64, 0)) > 0) {
        for (int i = 0; i < n; i++) {
            int fd = ev[i].data.fd;
            slot_t *s = &co.slots[fd];
            size_t before = s->off;
            int rv = write_held(fd);
            if (rv == 1) {
                if (s->lingering && s->off != before) /* the peer reads: it gets linger_ms more */
                    s->linger_until = h2o_now(co.loop) + co.linger_ms;
                arm(fd);
                continue;
            }
            s->stuck = 0;
            if (s->lingering)
                end_linger(fd);
        }
        if (n < 64)
            break;
    }
}

/* Lingering sockets whose peer has taken nothing for linger_ms are closed with what they held. */
static void on_linger_tick(h2o_timeout_entry_t *entry)
{
    uint64_t now = h2o_now(co.loop);
    (void)entry;
    for (size_t fd = 0; fd < co.nslots && co.nlinger != 0; fd++)
        if (co.slots[fd].lingering && now >= co.slots[fd].linger_until)
            end_linger((int)fd);
    if (co.nlinger != 0)
        h2o_timeout_link(co.loop, &co.linger_timeout, &co.linger_entry);
}

void preon_coalesce_start(h2o_evloop_t *loop, uint64_t linger_ms)
{
    memset(&co, 0, sizeof(co));
    co.efd = epoll_create1(EPOLL_CLOEXEC);
    if (co.efd < 0)
        return; /* no coalescing: every write goes to its socket, as h2o makes it */
    co.loop = loop;
    co.pass = 1;
    co.linger_ms = linger_ms;
    h2o_timeout_init(loop, &co.linger_timeout, 1000);
    co.linger_entry.cb = on_linger_tick;
    co.esock = h2o_evloop_socket_create(loop, co.efd, H2O_SOCKET_FLAG_DONT_READ);
    h2o_socket_read_start(co.esock, on_writable);
    co.on = 1;
}

void preon_coalesce_pass_end(void)
{
    for (size_t i = 0; i < co.nlist; i++) {
        int fd = co.list[i];
        slot_t *s = &co.slots[fd];
        if (!s->listed)
            continue; /* closed meanwhile, its bytes written or lingering */
        s->listed = 0;
        if (write_held(fd) == 1)
            arm(fd);
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
        if (co.slots[fd].lingering)
            end_linger((int)fd);
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
