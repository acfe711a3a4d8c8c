/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include "preon/alloc.h"
#include "preon/assert.h"
#include "preon/interpose.h"
#include "lazyep.h"

/*
 * Lazy read interest for h2o's epoll sets, outside h2o.
 *
 * h2o 2.2.5 stops reading a connection while it answers a request and starts again once the answer is written. When
 * the answer waits on the database, stop and start fall in different loop passes, and its epoll backend turns each
 * into a system call: EPOLL_CTL_DEL when the request is read, EPOLL_CTL_ADD when the answer is out, two of the five
 * system calls of a /db request. h2o calls epoll_ctl() and epoll_wait() through the PLT (and epoll_create(), which
 * tells this file which sets are h2o's loops): src/interpose/ defines them for the process and calls this file's
 * hooks (include/preon/interpose.h).
 *
 * In an adopted set, taking read interest away is deferred: the kernel keeps reporting readability, and h2o is told
 * the call succeeded. Giving it back while it is still registered costs nothing. A readiness h2o did not ask for can
 * only come from the client sending before its answer is out (a pipelined request, a close): then, and only then,
 * the registration is brought down to what h2o wants, and h2o never sees the event (level-triggered: it is reported
 * again once h2o reads). Write interest is never deferred (a socket is nearly always writable: keeping it would wake
 * the loop at once). The kernel's registration carries the descriptor (tagged) instead of h2o's pointer, and
 * epoll_wait() gives h2o its own data back. A descriptor is closed out of the set before close() (the descriptor may
 * have a dup that would keep it registered). Every other call, and every other set, is the system call.
 */

#define TAG (UINT64_C(1) << 63) /* on the kernel's data of a registration kept here; h2o's pointers never have it */
#define MAX_SETS 4096           /* adopted sets have descriptors below this; others are not adopted */

typedef struct {
    int epfd;        /* the set this entry belongs to, 0 when free (an adopted set is never descriptor 0) */
    uint32_t wanted; /* what h2o last asked for (0: not registered, for h2o) */
    uint32_t kernel; /* what the kernel has (0: not registered) */
    uint64_t data;   /* h2o's data for the descriptor */
} entry_t;

/* 1: adopted, written before a set's loop thread starts and read by it; 2: an adopted set that closed (close() may
 * come from any thread: atomics). Its number is
 * never adopted again: the loop threads' tables may still hold entries under it. (preon's loops live as long as the
 * process, so this is for correctness, not for use.) */
static unsigned char adopted[MAX_SETS];
static __thread int last_created = -1;
static __thread int own_set = -1; /* the adopted set this thread's loop runs: the only one it may touch */
static __thread struct {
    entry_t *entries; /* by descriptor; the loop thread's own */
    size_t n;
} lz;

static int sys_ctl(int epfd, int op, int fd, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.u64 = TAG | (uint64_t)fd};
    int rv;
    while ((rv = preon_sys_epoll_ctl(epfd, op, fd, op == EPOLL_CTL_DEL ? NULL : &ev)) != 0 && errno == EINTR)
        ;
    return rv;
}

static inline int is_adopted(int epfd)
{
    return epfd > 0 && epfd < MAX_SETS && __atomic_load_n(&adopted[epfd], __ATOMIC_ACQUIRE) == 1;
}

/* An adopted set's table (lz) is its loop thread's: the first thread to use the set owns it, and no other may. */
static inline int owns(int epfd)
{
    if (own_set < 0)
        own_set = epfd;
    return own_set == epfd;
}

static entry_t *grow(int fd)
{
    void *items = lz.entries;
    entry_t *e = preon_table_at(&items, &lz.n, sizeof(*lz.entries), 1024, (size_t)fd);
    lz.entries = items;
    return e;
}

/* Brings the kernel's registration of `fd` to `target`. */
static int move_to(int epfd, int fd, entry_t *e, uint32_t target)
{
    int op = target == 0 ? EPOLL_CTL_DEL : e->kernel != 0 ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    int rv = sys_ctl(epfd, op, fd, target);
    if (rv != 0 && op == EPOLL_CTL_MOD && errno == ENOENT) /* closed behind this file's back, and reused */
        rv = sys_ctl(epfd, op = EPOLL_CTL_ADD, fd, target);
    if (rv == 0)
        e->kernel = target;
    return rv;
}

int preon_lazyep_create(int size)
{
    int fd = preon_sys_epoll_create(size);
    last_created = fd;
    return fd;
}

int preon_lazyep_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
    if (!is_adopted(epfd) || fd < 0 || (op != EPOLL_CTL_ADD && op != EPOLL_CTL_MOD && op != EPOLL_CTL_DEL))
        return preon_sys_epoll_ctl(epfd, op, fd, event);
    PREON_ASSERT(owns(epfd));
    entry_t *e = (size_t)fd < lz.n ? &lz.entries[fd] : grow(fd);
    if (e->epfd != epfd)
        *e = (entry_t){.epfd = epfd};
    if ((op == EPOLL_CTL_ADD) != (e->wanted == 0)) {
        errno = op == EPOLL_CTL_ADD ? EEXIST : ENOENT; /* what the kernel would say to h2o */
        return -1;
    }
    if (op == EPOLL_CTL_DEL) {
        e->wanted = 0;
    } else {
        e->wanted = event->events;
        e->data = event->data.u64;
    }
    /* read interest the kernel has stays until a readiness h2o does not want comes (epoll_wait) */
    uint32_t target = e->wanted | (e->kernel & EPOLLIN);
    if (target != e->kernel && move_to(epfd, fd, e, target) != 0) {
        int err = errno;
        e->wanted = 0, e->kernel = 0, e->epfd = 0; /* as the kernel has it now: the call failed */
        errno = err;
        return -1;
    }
    return 0;
}

int preon_lazyep_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
    int n = preon_sys_epoll_wait(epfd, events, maxevents, timeout);
    if (n <= 0 || !is_adopted(epfd))
        return n;
    PREON_ASSERT(owns(epfd));
    int out = 0;
    for (int i = 0; i < n; i++) {
        uint64_t data = events[i].data.u64;
        if ((data & TAG) == 0 || (data & ~TAG) >= lz.n) { /* not registered through this file */
            events[out++] = events[i];
            continue;
        }
        int fd = (int)(data & ~TAG);
        entry_t *e = &lz.entries[fd];
        uint32_t got = events[i].events, give = e->wanted != 0 ? got & (e->wanted | EPOLLERR | EPOLLHUP) : 0;
        if (got & ~give)
            move_to(epfd, fd, e, e->wanted); /* a readiness h2o does not want now: the kernel stops reporting it */
        if (give != 0) {
            events[out].events = give;
            events[out].data.u64 = e->data;
            out++;
        }
    }
    return out;
}

int preon_lazyep_adopt(void)
{
    int fd = last_created;
    last_created = -1;
    if (fd <= 0 || fd >= MAX_SETS || __atomic_load_n(&adopted[fd], __ATOMIC_ACQUIRE) != 0)
        return -1;
    __atomic_store_n(&adopted[fd], 1, __ATOMIC_RELEASE);
    return 0;
}

void preon_lazyep_closing(int fd)
{
    if (fd < 0)
        return;
    unsigned char one = 1;
    if (fd < MAX_SETS && __atomic_compare_exchange_n(&adopted[fd], &one, 2, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    if ((size_t)fd >= lz.n || lz.entries[fd].epfd == 0)
        return;
    entry_t *e = &lz.entries[fd];
    if (e->kernel != 0 && is_adopted(e->epfd))
        sys_ctl(e->epfd, EPOLL_CTL_DEL, fd, 0);
    memset(e, 0, sizeof(*e));
}

void preon_lazyep_thread_end(void)
{
    free(lz.entries);
    memset(&lz, 0, sizeof(lz));
}
