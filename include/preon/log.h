/* SPDX-License-Identifier: MIT */
#ifndef PREON_LOG_H
#define PREON_LOG_H

#include <stddef.h>
#include <stdint.h>

/*
 * Logging that never blocks an event loop: a loop thread formats each line into a ring buffer of its own, and
 * one writer thread copies the rings to stderr. When a ring is full (stderr is slow or blocked) the line is
 * dropped and counted (preon_log_dropped) instead of stalling the loop. Threads without a ring (main, before
 * start-up ends) write directly.
 */
typedef enum { PREON_LOG_ERROR = 0, PREON_LOG_WARN, PREON_LOG_INFO, PREON_LOG_DEBUG } preon_log_level_t;
typedef enum { PREON_LOG_TEXT = 0, PREON_LOG_JSON } preon_log_format_t;

/** The level, format and access lines in force: set at start-up and again by a reload (SIGHUP), read with relaxed
 * atomics (a line formatted during the change may take either). */
extern preon_log_level_t preon_log_level;
extern preon_log_format_t preon_log_format;
extern int preon_log_access_enabled;

/** Sets the three; any thread. */
void preon_log_configure(preon_log_level_t level, preon_log_format_t format, int access);

/** The levels' names, by preon_log_level_t, then NULL (config.c's enum of log.level uses it too). */
extern const char *const preon_log_level_names[];

/** Starts the writer thread. Call once from the main thread before the loops start. */
void preon_log_start(void);

/** Writes out what the rings hold, stops the writer thread. Call after the loops have ended. */
void preon_log_stop(void);

/** Gives the calling thread a ring of its own. Call first thing on each event-loop thread. */
void preon_log_attach(void);

/** Removes the calling thread's ring (after its content is written). Call last thing on that thread. */
void preon_log_detach(void);

/** Lines dropped because a ring was full, over all threads, since start. Any thread. */
uint64_t preon_log_dropped(void);

/**
 * Writes one line: time (RFC 3339, ms, UTC), level, message; as text or as a JSON object {"ts","level","msg"}.
 * Any thread; prefer the PREON_LOG macros, which test the level before anything is formatted.
 */
void preon_log_write(preon_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Writes one access line: method, path, status, body bytes, duration in microseconds, thread index. */
void preon_log_access(const char *method, size_t method_len, const char *path, size_t path_len, int status, size_t bytes,
                      uint64_t duration_us, unsigned thread);

#define PREON_LOG(level, ...)                                                                                                      \
    do {                                                                                                                           \
        if ((int)(level) <= (int)__atomic_load_n(&preon_log_level, __ATOMIC_RELAXED))                                              \
            preon_log_write((level), __VA_ARGS__);                                                                                 \
    } while (0)
#define preon_log_error(...) PREON_LOG(PREON_LOG_ERROR, __VA_ARGS__)
#define preon_log_warn(...) PREON_LOG(PREON_LOG_WARN, __VA_ARGS__)
#define preon_log_info(...) PREON_LOG(PREON_LOG_INFO, __VA_ARGS__)
#define preon_log_debug(...) PREON_LOG(PREON_LOG_DEBUG, __VA_ARGS__)

#endif
