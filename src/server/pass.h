/* SPDX-License-Identifier: MIT */
#ifndef PREON_PASS_H
#define PREON_PASS_H

#include <h2o.h>
#include <stdint.h>

/**
 * One pass of a loop thread's event loop: h2o_evloop_run(loop, max_wait). h2o_evloop_run fails only when the poller
 * does (epoll_wait or epoll_ctl on the loop's own set): a loop that went on after that would neither serve its
 * connections nor say so, so the process stops, loudly: "thread THREAD: the event loop failed (REASON): stopping" on
 * stderr, then abort(). A signal's EINTR is not a failure: the pass returns. The loop's thread only.
 */
void preon__server_run_pass(h2o_evloop_t *loop, unsigned thread, int32_t max_wait);

#endif
