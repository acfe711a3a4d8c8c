/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "pass.h"
#include "preon/log.h"

void preon__server_run_pass(h2o_evloop_t *loop, unsigned thread, int32_t max_wait)
{
    if (h2o_evloop_run(loop, max_wait) == 0 || errno == EINTR)
        return;
    int err = errno;
    /* The thread's log ring is copied to stderr by the writer thread, which abort() does not wait for: the line would
     * be lost as often as not. Without its ring the thread writes the line itself. */
    preon_log_detach();
    preon_log_error("thread %u: the event loop failed (%s): stopping", thread, strerror(err));
    abort();
}
