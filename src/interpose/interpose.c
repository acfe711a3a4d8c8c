/* SPDX-License-Identifier: MIT */
#include "preon/interpose.h"

/*
 * The libc-named functions preon defines for the whole process, and nothing else (include/preon/interpose.h): each
 * calls the hook its owner registered, or the system's function. Linked into the preon binary and the drivers that
 * need it, never into the unit tests. What each buys (docs/architecture.md): writev/close, pipelined answers written
 * once per loop pass, bounded, and a close that delivers the answer (server/coalesce.c); epoll_*, read interest taken
 * away lazily (server/lazyep.c); send, libpq's writes sent once per batch (db/wbuf.c).
 */

#define HOOK(name) __atomic_load_n(&preon_interpose_hooks.name, __ATOMIC_RELAXED)

__attribute__((constructor)) static void linked(void)
{
    preon_interpose_linked = 1;
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    ssize_t (*hook)(int, const struct iovec *, int) = HOOK(writev);
    return hook != NULL ? hook(fd, iov, iovcnt) : preon_sys_writev(fd, iov, iovcnt);
}

int close(int fd)
{
    int (*hook)(int) = HOOK(close);
    return hook != NULL ? hook(fd) : preon_sys_close(fd);
}

int epoll_create(int size)
{
    int (*hook)(int) = HOOK(epoll_create);
    return hook != NULL ? hook(size) : preon_sys_epoll_create(size);
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
    int (*hook)(int, int, int, struct epoll_event *) = HOOK(epoll_ctl);
    return hook != NULL ? hook(epfd, op, fd, event) : preon_sys_epoll_ctl(epfd, op, fd, event);
}

int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
    int (*hook)(int, struct epoll_event *, int, int) = HOOK(epoll_wait);
    return hook != NULL ? hook(epfd, events, maxevents, timeout) : preon_sys_epoll_wait(epfd, events, maxevents, timeout);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    ssize_t (*hook)(int, const void *, size_t, int) = HOOK(send);
    return hook != NULL ? hook(fd, buf, len, flags) : preon_sys_send(fd, buf, len, flags);
}
