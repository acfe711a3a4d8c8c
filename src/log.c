/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "preon/log.h"

preon_log_level_t preon_log_level = PREON_LOG_INFO;

static const char *const names[] = {"error", "warn", "info", "debug"};

int preon_log_level_parse(const char *s)
{
    for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
        if (strcasecmp(s, names[i]) == 0)
            return i;
    return -1;
}

void preon_log_write(preon_log_level_t level, const char *fmt, ...)
{
    char line[2048];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    size_t n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
    n += snprintf(line + n, sizeof(line) - n, ".%03dZ %-5s ", (int)(tv.tv_usec / 1000), names[level]);

    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    va_end(ap);
    /* A message longer than the buffer is cut rather than split, so that one line stays one write. */
    size_t start = n;
    n += m < 0 ? 0 : ((size_t)m < sizeof(line) - n - 1 ? (size_t)m : sizeof(line) - n - 2);
    /* One event, one line: libpq's messages end in (and sometimes contain) newlines. */
    while (n > start && (line[n - 1] == '\n' || line[n - 1] == ' '))
        n--;
    for (size_t i = start; i < n; i++)
        if (line[i] == '\n' || line[i] == '\t')
            line[i] = ' ';
    line[n++] = '\n';
    /* stderr is a pipe or a terminal; a short write there is not worth a retry loop on a hot path. */
    ssize_t rv = write(STDERR_FILENO, line, n);
    (void)rv;
}
