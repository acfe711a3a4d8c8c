/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "preon/interpose.h"

/*
 * The system's functions behind the interposed ones (include/preon/interpose.h), and the hook table. In a sanitizer
 * build each goes to the next definition (the sanitizer's interceptor, then libc's), so that the writes h2o and
 * libpq make through preon are checked as if preon were not there; otherwise to the system call itself.
 */

preon_interpose_hooks_t preon_interpose_hooks;
int preon_interpose_linked;

#ifdef PREON_SANITIZED
#include <dlfcn.h>

typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef int (*close_fn)(int);
typedef int (*epoll_create_fn)(int);
typedef int (*epoll_ctl_fn)(int, int, int, struct epoll_event *);
typedef int (*epoll_wait_fn)(int, struct epoll_event *, int, int);
typedef ssize_t (*send_fn)(int, const void *, size_t, int);

/* The next definition of `name` after the executable's, looked up once (a benign race: every thread finds the same). */
static void *next(void **cache, const char *name)
{
    void *fn = __atomic_load_n(cache, __ATOMIC_RELAXED);
    if (fn == NULL) {
        fn = dlsym(RTLD_NEXT, name);
        __atomic_store_n(cache, fn, __ATOMIC_RELAXED);
    }
    return fn;
}

static void *next_writev, *next_close, *next_epoll_create, *next_epoll_ctl, *next_epoll_wait, *next_send;

ssize_t preon_sys_writev(int fd, const struct iovec *iov, int iovcnt)
{
    return ((writev_fn)next(&next_writev, "writev"))(fd, iov, iovcnt);
}

int preon_sys_close(int fd)
{
    return ((close_fn)next(&next_close, "close"))(fd);
}

int preon_sys_epoll_create(int size)
{
    return ((epoll_create_fn)next(&next_epoll_create, "epoll_create"))(size);
}

int preon_sys_epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
    return ((epoll_ctl_fn)next(&next_epoll_ctl, "epoll_ctl"))(epfd, op, fd, event);
}

int preon_sys_epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
    return ((epoll_wait_fn)next(&next_epoll_wait, "epoll_wait"))(epfd, events, maxevents, timeout);
}

ssize_t preon_sys_send(int fd, const void *buf, size_t len, int flags)
{
    return ((send_fn)next(&next_send, "send"))(fd, buf, len, flags);
}

#else

ssize_t preon_sys_writev(int fd, const struct iovec *iov, int iovcnt)
{
    return syscall(SYS_writev, fd, iov, iovcnt);
}

int preon_sys_close(int fd)
{
    return (int)syscall(SYS_close, fd);
}

int preon_sys_epoll_create(int size)
{
    if (size <= 0) {
        errno = EINVAL;
        return -1;
    }
    return (int)syscall(SYS_epoll_create1, 0);
}

int preon_sys_epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
    return (int)syscall(SYS_epoll_ctl, epfd, op, fd, event);
}

int preon_sys_epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
    return (int)syscall(SYS_epoll_pwait, epfd, events, maxevents, timeout, NULL, (size_t)8);
}

ssize_t preon_sys_send(int fd, const void *buf, size_t len, int flags)
{
    /* send() is sendto() without an address: the system call itself, not the interposed send() again */
    return sendto(fd, buf, len, flags, NULL, 0);
}

#endif
