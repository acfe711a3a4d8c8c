/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include "preon/alloc.h"
#include "preon/assert.h"
#include "preon/interpose.h"
#include "internal.h"

/*
 * Write-combining for libpq's socket writes, without patching libpq.
 *
 * libpq 15's PQpipelineSync sends at once (PostgreSQL 17 added PQsendPipelineSync, which only queues): to
 * TechEmpower's rules, a Sync after every query, that is one send() per query, 20 for a /queries=20. libpq writes
 * to its socket through send() (pqsecure_raw_write, also under TLS: OpenSSL's BIO ends there), called through the
 * PLT: src/interpose/ defines send() for the process and calls this file's hook (preon_db_wbuf_send, registered by
 * preon_db_interpose). While a connection's buffer is held (preon is
 * handing libpq a batch) or still has bytes the socket did not take, a send() on its descriptor appends to the
 * buffer and reports everything written; every other send() is the system call, unchanged. preon then writes the
 * buffer itself, once per loop pass per connection, and waits for writability for what the socket does not take.
 *
 * The bytes and their order are libpq's, so the protocol is unchanged: a query is still answered only at its own
 * Sync's ReadyForQuery. What changes is only how many system calls carry them, as PQsendPipelineSync would.
 */

/* The buffers that take send() calls now, on this thread: held ones, and ones with bytes left to write. A thread
 * has a handful of connections, so a list is as fast as anything. */
static __thread preon_db_wbuf_t *active;

static void link_active(preon_db_wbuf_t *w)
{
    if (!w->linked) {
        w->linked = 1;
        w->next = active;
        active = w;
    }
}

static void unlink_active(preon_db_wbuf_t *w)
{
    if (!w->linked)
        return;
    for (preon_db_wbuf_t **p = &active; *p != NULL; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    w->linked = 0;
    w->next = NULL;
}

ssize_t preon_db_wbuf_send(int fd, const void *buf, size_t len, int flags)
{
    for (preon_db_wbuf_t *w = active; w != NULL; w = w->next) {
        if (w->fd == fd) {
            preon_bytes_append(&w->buf, &w->len, &w->cap, 8192, buf, len);
            return (ssize_t)len;
        }
    }
    return preon_sys_send(fd, buf, len, flags);
}

void preon_db_interpose(void)
{
    __atomic_store_n(&preon_interpose_hooks.send, preon_db_wbuf_send, __ATOMIC_RELAXED);
}

void preon_db_wbuf_hold(preon_db_wbuf_t *w, int fd)
{
    PREON_ASSERT(fd >= 0 && (!w->linked || w->fd == fd));
    w->fd = fd;
    link_active(w);
}

int preon_db_wbuf_flush(preon_db_wbuf_t *w)
{
    while (w->off < w->len) {
        ssize_t n = sendto(w->fd, w->buf + w->off, w->len - w->off, MSG_NOSIGNAL, NULL, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                link_active(w); /* what libpq sends meanwhile goes behind what is left */
                return 1;
            }
            int err = errno;
            preon_db_wbuf_clear(w);
            return -err;
        }
        w->off += (size_t)n;
    }
    w->off = w->len = 0;
    unlink_active(w);
    if (w->cap > (1u << 20)) {
        /* a burst's buffer is not kept for the quiet that follows it */
        free(w->buf);
        w->buf = NULL;
        w->cap = 0;
    }
    return 0;
}

size_t preon_db_wbuf_pending(const preon_db_wbuf_t *w)
{
    return w->len - w->off;
}

void preon_db_wbuf_clear(preon_db_wbuf_t *w)
{
    unlink_active(w);
    w->off = w->len = 0;
}

void preon_db_wbuf_dispose(preon_db_wbuf_t *w)
{
    preon_db_wbuf_clear(w);
    free(w->buf);
    w->buf = NULL;
    w->cap = 0;
}
