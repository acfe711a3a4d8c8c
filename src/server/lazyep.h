/* SPDX-License-Identifier: MIT */
#ifndef PREON_LAZYEP_H
#define PREON_LAZYEP_H

/*
 * Lazy read interest for the epoll sets of h2o's loops (lazyep.c): a connection h2o stops reading while its answer
 * waits stays registered, so that starting again costs no system call. Server-internal: server.c adopts each loop's
 * set, and coalesce.c's close() tells it which descriptors close.
 */

/** Adopts the epoll set the calling thread's last h2o_evloop_create() made. Before the loop's thread starts. */
void preon_lazyep_adopt(void);

/** `fd` is about to be closed: takes it out of an adopted set it is kept in. Any thread (a loop thread's own
 * descriptors are known to that thread only). */
void preon_lazyep_closing(int fd);

/** Frees the calling loop thread's table; after its last socket closed. */
void preon_lazyep_thread_end(void);

#endif
