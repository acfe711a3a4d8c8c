/* SPDX-License-Identifier: MIT */
#ifndef PREON_LAZYEP_H
#define PREON_LAZYEP_H
#include <sys/epoll.h>

/*
 * Lazy read interest for the epoll sets of h2o's loops (lazyep.c): a connection h2o stops reading while its answer
 * waits stays registered, so that starting again costs no system call. Server-internal: server.c adopts each loop's
 * set, and coalesce.c's close() tells it which descriptors close.
 */

/** Adopts the epoll set the calling thread's last h2o_evloop_create() made. Before the loop's thread starts. Returns 0,
 * or -1 when no set was seen being created since the last call (h2o no longer calls epoll_create() through the PLT, or
 * the layer is not there): then nothing is deferred, and the caller must say so. */
int preon_lazyep_adopt(void);

/* The hooks of epoll_create(), epoll_ctl() and epoll_wait() (include/preon/interpose.h). */
int preon_lazyep_create(int size);
int preon_lazyep_ctl(int epfd, int op, int fd, struct epoll_event *event);
int preon_lazyep_wait(int epfd, struct epoll_event *events, int maxevents, int timeout);

/** `fd` is about to be closed: takes it out of an adopted set it is kept in. Any thread (a loop thread's own
 * descriptors are known to that thread only). */
void preon_lazyep_closing(int fd);

/** Frees the calling loop thread's table; after its last socket closed. */
void preon_lazyep_thread_end(void);

#endif
