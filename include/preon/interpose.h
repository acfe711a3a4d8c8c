/* SPDX-License-Identifier: MIT */
#ifndef PREON_INTERPOSE_H
#define PREON_INTERPOSE_H

/*
 * The interposed libc calls (src/interpose/): the preon binary defines writev(), close(), epoll_create(), epoll_ctl(),
 * epoll_wait() and send() for the whole process, so that h2o's and libpq's calls, made through their PLT, land there
 * (the executable comes first in the dynamic linker's lookup). Those definitions only call the hook registered here,
 * or the system's function when there is none: the mechanisms themselves live with their owners (server/coalesce.c:
 * writev and close; server/lazyep.c: epoll_*; db/wbuf.c: send), which register them at start-up, before any loop
 * thread starts, when server.interpose is on. Binaries without src/interpose/ (the unit tests) never call a hook.
 */
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/types.h>
#include <sys/uio.h>

typedef struct {
    ssize_t (*writev)(int fd, const struct iovec *iov, int iovcnt);
    int (*close)(int fd);
    int (*epoll_create)(int size);
    int (*epoll_ctl)(int epfd, int op, int fd, struct epoll_event *event);
    int (*epoll_wait)(int epfd, struct epoll_event *events, int maxevents, int timeout);
    ssize_t (*send)(int fd, const void *buf, size_t len, int flags);
} preon_interpose_hooks_t;

/** The registered hooks (NULL: the system's function). Written before the loop threads start, read by every call. */
extern preon_interpose_hooks_t preon_interpose_hooks;

/** 1 when this binary holds src/interpose/ (its constructor says so), 0 otherwise: then the hooks are never called. */
extern int preon_interpose_linked;

/*
 * The system's functions, for the hooks and the layer to pass calls on. In sanitizer builds (PREON_SANITIZED), the
 * next definition after the executable's (dlsym RTLD_NEXT): the sanitizer's interceptor, which checks the buffers and
 * then calls libc's; otherwise the system call itself.
 */
ssize_t preon_sys_writev(int fd, const struct iovec *iov, int iovcnt);
int preon_sys_close(int fd);
int preon_sys_epoll_create(int size);
int preon_sys_epoll_ctl(int epfd, int op, int fd, struct epoll_event *event);
int preon_sys_epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout);
ssize_t preon_sys_send(int fd, const void *buf, size_t len, int flags);

#endif
