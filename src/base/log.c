/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "preon/alloc.h"
#include "preon/log.h"

preon_log_level_t preon_log_level = PREON_LOG_INFO;
preon_log_format_t preon_log_format = PREON_LOG_TEXT;

int preon_log_access_enabled;

void preon_log_configure(preon_log_level_t level, preon_log_format_t format, int access)
{
    __atomic_store_n(&preon_log_level, level, __ATOMIC_RELAXED);
    __atomic_store_n(&preon_log_format, format, __ATOMIC_RELAXED);
    __atomic_store_n(&preon_log_access_enabled, access, __ATOMIC_RELAXED);
}

const char *const preon_log_level_names[] = {"error", "warn", "info", "debug", NULL};

/*
 * A single-producer, single-consumer byte ring: the owning loop thread appends whole lines and publishes
 * `head`; the writer thread copies out and publishes `tail`. Both only ever grow; the ring index is the value
 * modulo RING_SIZE.
 */
#define RING_SIZE (256 * 1024)
#define MAX_RINGS 300

typedef struct {
    char buf[RING_SIZE];
    uint64_t head, tail, dropped; /* head and dropped written by the owner, tail by the writer */
    int closing;                  /* set by the owner: the writer frees the ring once it is empty */
} ring_t;

static __thread ring_t *my_ring;
static pthread_mutex_t rings_mutex = PTHREAD_MUTEX_INITIALIZER; /* attach, detach and the writer's scan only */
static ring_t *rings[MAX_RINGS];
static uint64_t dropped_closed; /* drops of rings already freed */
static pthread_t writer;
static int writer_running, writer_stop;
/* 1 while the writer waits for a line (futex word): the line that finds it so wakes it, with one system call. */
static int writer_asleep;

static void futex_wait(int *word, int value, long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, &ts, NULL, 0);
}

/* Wakes the writer if it waits (writers of lines call this after publishing one: seq_cst on both sides, so either
 * the writer sees the line before it sleeps or the line's writer sees it asleep). */
static void wake_writer(void)
{
    if (__atomic_load_n(&writer_asleep, __ATOMIC_SEQ_CST) && __atomic_exchange_n(&writer_asleep, 0, __ATOMIC_SEQ_CST))
        syscall(SYS_futex, &writer_asleep, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void write_all(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, p, n);
        if (w <= 0)
            return; /* stderr is gone: nothing better to do with the line */
        p += w, n -= (size_t)w;
    }
}

/* Copies what one ring holds to stderr; returns whether it held anything. Writer thread only. */
static int drain(ring_t *r)
{
    uint64_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE), tail = r->tail;
    if (head == tail)
        return 0;
    size_t from = tail % RING_SIZE, n = (size_t)(head - tail);
    if (from + n > RING_SIZE) {
        write_all(r->buf + from, RING_SIZE - from);
        write_all(r->buf, n - (RING_SIZE - from));
    } else {
        write_all(r->buf + from, n);
    }
    __atomic_store_n(&r->tail, head, __ATOMIC_RELEASE);
    return 1;
}

/* Whether any ring holds a line not yet written. Writer thread only. */
static int any_pending(void)
{
    int pending = 0;
    pthread_mutex_lock(&rings_mutex);
    for (int i = 0; i < MAX_RINGS && !pending; i++)
        pending = rings[i] != NULL && (rings[i]->tail != __atomic_load_n(&rings[i]->head, __ATOMIC_SEQ_CST) ||
                                       __atomic_load_n(&rings[i]->closing, __ATOMIC_ACQUIRE));
    pthread_mutex_unlock(&rings_mutex);
    return pending;
}

static void *writer_main(void *arg)
{
    (void)arg;
    for (;;) {
        int busy = 0, stop = __atomic_load_n(&writer_stop, __ATOMIC_ACQUIRE);
        /* The mutex guards the list only: writes happen outside it, so that a stderr that blocks never holds
         * up attach, detach or a scrape. Only this thread frees rings, so the copied pointers stay valid. */
        ring_t *snapshot[MAX_RINGS];
        pthread_mutex_lock(&rings_mutex);
        memcpy(snapshot, rings, sizeof(snapshot));
        pthread_mutex_unlock(&rings_mutex);
        for (int i = 0; i < MAX_RINGS; i++)
            if (snapshot[i] != NULL)
                busy |= drain(snapshot[i]);
        pthread_mutex_lock(&rings_mutex);
        for (int i = 0; i < MAX_RINGS; i++) {
            ring_t *r = rings[i];
            if (r != NULL && __atomic_load_n(&r->closing, __ATOMIC_ACQUIRE) &&
                r->tail == __atomic_load_n(&r->head, __ATOMIC_ACQUIRE)) {
                dropped_closed += __atomic_load_n(&r->dropped, __ATOMIC_RELAXED);
                rings[i] = NULL;
                free(r);
            }
        }
        pthread_mutex_unlock(&rings_mutex);
        if (stop && !busy)
            return NULL;
        if (busy) {
            /* Lines are coming: collect them for 5 ms, so that a busy access log costs a write per 5 ms, not per line
             * (no line's writer wakes it meanwhile: it is not asleep). */
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
            continue;
        }
        /* Nothing came: wait until a line does. An idle server, or a busy one that logs nothing, makes no system
         * call here (this thread polled every 5 to 40 ms before: a wake-up per few hundred requests). The
         * one-second bound only guards against a wake-up this code failed to make. */
        __atomic_store_n(&writer_asleep, 1, __ATOMIC_SEQ_CST);
        if (!any_pending() && !__atomic_load_n(&writer_stop, __ATOMIC_SEQ_CST))
            futex_wait(&writer_asleep, 1, 1000);
        __atomic_store_n(&writer_asleep, 0, __ATOMIC_SEQ_CST);
    }
}

void preon_log_start(void)
{
    /* The writer must never take a process signal (SIGTERM is the main thread's): it starts with all blocked. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&writer, NULL, writer_main, NULL) == 0)
        writer_running = 1;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void preon_log_stop(void)
{
    if (!writer_running)
        return;
    __atomic_store_n(&writer_stop, 1, __ATOMIC_SEQ_CST);
    wake_writer();
    pthread_join(writer, NULL);
    writer_running = 0;
    /* rings of threads that never detached */
    for (int i = 0; i < MAX_RINGS; i++) {
        if (rings[i] != NULL) {
            drain(rings[i]);
            dropped_closed += rings[i]->dropped;
            free(rings[i]);
            rings[i] = NULL;
        }
    }
}

void preon_log_attach(void)
{
    if (!writer_running || my_ring != NULL)
        return;
    ring_t *r = preon_calloc(1, sizeof(*r));
    pthread_mutex_lock(&rings_mutex);
    for (int i = 0; i < MAX_RINGS; i++) {
        if (rings[i] == NULL) {
            rings[i] = r;
            my_ring = r;
            break;
        }
    }
    pthread_mutex_unlock(&rings_mutex);
    if (my_ring == NULL)
        free(r); /* no slot: this thread writes directly */
}

void preon_log_detach(void)
{
    if (my_ring == NULL)
        return;
    __atomic_store_n(&my_ring->closing, 1, __ATOMIC_RELEASE);
    my_ring = NULL;
    wake_writer(); /* to free the ring */
}

uint64_t preon_log_dropped(void)
{
    uint64_t n;
    pthread_mutex_lock(&rings_mutex);
    n = dropped_closed;
    for (int i = 0; i < MAX_RINGS; i++)
        if (rings[i] != NULL)
            n += __atomic_load_n(&rings[i]->dropped, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&rings_mutex);
    return n;
}

/* Hands a finished line to the ring, or writes it when this thread has none. Never blocks with a ring. */
static void emit(const char *line, size_t n)
{
    ring_t *r = my_ring;
    if (r == NULL) {
        write_all(line, n);
        return;
    }
    uint64_t head = r->head, tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    if (RING_SIZE - (head - tail) < n) {
        __atomic_store_n(&r->dropped, r->dropped + 1, __ATOMIC_RELAXED);
        return;
    }
    size_t at = head % RING_SIZE, first = n < RING_SIZE - at ? n : RING_SIZE - at;
    memcpy(r->buf + at, line, first);
    memcpy(r->buf, line + first, n - first);
    __atomic_store_n(&r->head, head + n, __ATOMIC_SEQ_CST);
    wake_writer();
}

/* The time, as RFC 3339 with milliseconds, UTC. The formatted second is cached per thread. */
static size_t timestamp(char *out)
{
    static __thread time_t cached_sec = -1;
    static __thread char cached[24];
    struct timeval tv;
    gettimeofday(&tv, NULL);
    if (tv.tv_sec != cached_sec) {
        struct tm tm;
        gmtime_r(&tv.tv_sec, &tm);
        strftime(cached, sizeof(cached), "%Y-%m-%dT%H:%M:%S", &tm);
        cached_sec = tv.tv_sec;
    }
    return (size_t)sprintf(out, "%s.%03dZ", cached, (int)(tv.tv_usec / 1000));
}

/* Appends `s` (n bytes) as the inside of a JSON string. Returns the new length, never past `cap`. */
static size_t json_escape(char *out, size_t len, size_t cap, const char *s, size_t n)
{
    for (size_t i = 0; i < n && len + 7 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            out[len++] = '\\';
            out[len++] = (char)c;
        } else if (c < 0x20) {
            len += (size_t)sprintf(out + len, "\\u%04x", c);
        } else {
            out[len++] = (char)c;
        }
    }
    return len;
}

void preon_log_write(preon_log_level_t level, const char *fmt, ...)
{
    char msg[1536], line[4096];
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    size_t mlen = m < 0 ? 0 : (size_t)m < sizeof(msg) ? (size_t)m : sizeof(msg) - 1;
    /* One event, one line: libpq's messages end in (and sometimes contain) newlines. */
    while (mlen > 0 && (msg[mlen - 1] == '\n' || msg[mlen - 1] == ' '))
        mlen--;
    size_t n = 0;
    if (__atomic_load_n(&preon_log_format, __ATOMIC_RELAXED) == PREON_LOG_JSON) {
        n += (size_t)sprintf(line, "{\"ts\":\"");
        n += timestamp(line + n);
        n += (size_t)sprintf(line + n, "\",\"level\":\"%s\",\"msg\":\"", preon_log_level_names[level]);
        n = json_escape(line, n, sizeof(line) - 4, msg, mlen);
        n += (size_t)sprintf(line + n, "\"}");
    } else {
        n += timestamp(line);
        n += (size_t)sprintf(line + n, " %-5s ", preon_log_level_names[level]);
        for (size_t i = 0; i < mlen && n < sizeof(line) - 2; i++)
            line[n++] = msg[i] == '\n' || msg[i] == '\t' ? ' ' : msg[i];
    }
    line[n++] = '\n';
    emit(line, n);
}

void preon_log_access(const char *method, size_t method_len, const char *path, size_t path_len, int status, size_t bytes,
                      uint64_t duration_us, unsigned thread)
{
    char line[4096];
    size_t n = 0;
    if (path_len > 2048)
        path_len = 2048;
    if (__atomic_load_n(&preon_log_format, __ATOMIC_RELAXED) == PREON_LOG_JSON) {
        n += (size_t)sprintf(line, "{\"ts\":\"");
        n += timestamp(line + n);
        n += (size_t)sprintf(line + n, "\",\"level\":\"info\",\"msg\":\"access\",\"method\":\"");
        n = json_escape(line, n, sizeof(line) - 200, method, method_len);
        n += (size_t)sprintf(line + n, "\",\"path\":\"");
        n = json_escape(line, n, sizeof(line) - 200, path, path_len);
        n += (size_t)sprintf(line + n, "\",\"status\":%d,\"bytes\":%zu,\"duration_us\":%llu,\"thread\":%u}\n", status, bytes,
                             (unsigned long long)duration_us, thread);
    } else {
        n += timestamp(line);
        n += (size_t)snprintf(line + n, sizeof(line) - n, " info  access %.*s %.*s %d %zu %lluus t%u\n", (int)method_len, method,
                              (int)path_len, path, status, bytes, (unsigned long long)duration_us, thread);
    }
    emit(line, n);
}
