/* SPDX-License-Identifier: MIT */
#ifndef PREON_COALESCE_H
#define PREON_COALESCE_H

/*
 * Write coalescing for the answers of one event-loop thread (coalesce.c): the first answer a connection gets in a loop
 * pass goes to its socket at once, as h2o writes it; the ones after it in the same pass (pipelined requests) are held
 * and leave together when the pass ends. Server-internal: the loop threads of server.c call it.
 */
#include <h2o.h>
#include <sys/uio.h>

/* The most bytes a connection holds here: past it, writev() answers EAGAIN as a full socket would, and h2o waits for
 * writability (a client that pipelines without reading costs this much, not its answers' size). */
#define PREON_COALESCE_HOLD_MAX (64u * 1024)
/* How long a socket h2o closed reads and drops what its peer still sends, after shutting down its writing side, so
 * that the close reaches the peer behind the whole answer instead of as a reset (nginx's lingering close). */
#define PREON_COALESCE_DROP_MS 2000

/**
 * Starts coalescing on the calling thread, whose loop is `loop`. `linger_ms`: how long the bytes of a connection h2o
 * closed before they could all be written may wait for the peer to take them. `release(release_data)`: a tracked
 * socket is really closed (h2o's close() of it may come earlier). Loop thread only.
 */
void preon_coalesce_start(h2o_evloop_t *loop, uint64_t linger_ms, void (*release)(void *), void *release_data);

/** Registers `fd`, a connection's socket just accepted, as one whose writes are coalesced and whose close is
 * graceful. Returns 1, or 0 when coalescing is off on this thread (then nothing here touches it). */
int preon_coalesce_track(int fd);

/** Bytes held for `fd`, not yet written to its socket. */
size_t preon_coalesce_held(int fd);

/** Sockets h2o closed that are still open here (writing their last bytes, or reading their peer's last input). */
unsigned preon_coalesce_closing(void);

/* The hooks of writev() and close() (include/preon/interpose.h): coalescing on the threads that started it, the
 * system's function elsewhere and for every descriptor not tracked. */
ssize_t preon_coalesce_writev(int fd, const struct iovec *iov, int iovcnt);
int preon_coalesce_close(int fd);

/** Ends a loop pass: writes what the pass held, one write per connection. Call after every h2o_evloop_run. */
void preon_coalesce_pass_end(void);

/** Writes what it can without waiting, drops the rest, closes lingering sockets, frees everything. Before the loop
 * is destroyed, on the thread that started it. */
void preon_coalesce_stop(void);

#endif
