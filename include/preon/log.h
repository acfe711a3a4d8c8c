/* SPDX-License-Identifier: MIT */
#ifndef PREON_LOG_H
#define PREON_LOG_H

#include <stdarg.h>

typedef enum { PREON_LOG_ERROR = 0, PREON_LOG_WARN, PREON_LOG_INFO, PREON_LOG_DEBUG } preon_log_level_t;

/** The level in force; set once at start-up, before threads start, and only read afterwards. */
extern preon_log_level_t preon_log_level;

/** Parses "error", "warn", "info" or "debug"; returns the level or -1. */
int preon_log_level_parse(const char *s);

/**
 * Writes one line to stderr: time (RFC 3339, ms, UTC), level, message. The line goes out in one write(2) so
 * lines from different threads never interleave. Callable from any thread; prefer the PREON_LOG macro, which
 * tests the level before anything is formatted.
 */
void preon_log_write(preon_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define PREON_LOG(level, ...)                                                                                                \
    do {                                                                                                                     \
        if ((level) <= preon_log_level)                                                                                      \
            preon_log_write((level), __VA_ARGS__);                                                                           \
    } while (0)
#define preon_log_error(...) PREON_LOG(PREON_LOG_ERROR, __VA_ARGS__)
#define preon_log_warn(...) PREON_LOG(PREON_LOG_WARN, __VA_ARGS__)
#define preon_log_info(...) PREON_LOG(PREON_LOG_INFO, __VA_ARGS__)
#define preon_log_debug(...) PREON_LOG(PREON_LOG_DEBUG, __VA_ARGS__)

#endif
