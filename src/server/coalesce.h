/* SPDX-License-Identifier: MIT */
#ifndef PREON_COALESCE_H
#define PREON_COALESCE_H

/*
 * Write coalescing for the answers of one event-loop thread (coalesce.c): the first answer a connection gets in a loop
 * pass goes to its socket at once, as h2o writes it; the ones after it in the same pass (pipelined requests) are held
 * and leave together when the pass ends. Server-internal: the loop threads of server.c call it.
 */
#include <h2o.h>

/**
 * Starts coalescing on the calling thread, whose loop is `loop`. `linger_ms`: how long the bytes of a connection h2o
 * closed before they could all be written may wait for the peer to take them. Loop thread only.
 */
void preon_coalesce_start(h2o_evloop_t *loop, uint64_t linger_ms);

/** Ends a loop pass: writes what the pass held, one write per connection. Call after every h2o_evloop_run. */
void preon_coalesce_pass_end(void);

/** Writes what it can without waiting, drops the rest, closes lingering sockets, frees everything. Before the loop
 * is destroyed, on the thread that started it. */
void preon_coalesce_stop(void);

#endif
