// SPDX-License-Identifier: MIT
// The figures, as the Go driver computes them (bench/ramp004/driver/stats.go, main.go): a sample goes into the
// window of its completion, a send lag into the window of its planned send; percentiles by nearest rank; one JSON
// line per window and a summary, with the same keys.
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

const char *const kind_names[K_N] = {"ok",       "timeout",  "refused",  "reset",     "http_503",
                                     "http_5xx", "http_4xx", "bad_body", "too_large", "other"};

struct floats {
    float *v;
    size_t n, cap;
};

static void push(struct floats *f, double x)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 1024;
        f->v = realloc(f->v, f->cap * sizeof(float));
        if (f->v == NULL) {
            fprintf(stderr, "driver: out of memory\n");
            exit(2);
        }
    }
    f->v[f->n++] = (float)x;
}

static int cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

// The p-th percentile (0..100) of f, nearest rank; NaN when empty. Sorts f (sorted stays sorted).
static double pct(struct floats *f, double p, int *sorted)
{
    if (f->n == 0)
        return NAN;
    if (!*sorted) {
        qsort(f->v, f->n, sizeof(float), cmp);
        *sorted = 1;
    }
    long i = (long)ceil(p / 100 * (double)f->n) - 1;
    if (i < 0)
        i = 0;
    if (i >= (long)f->n)
        i = (long)f->n - 1;
    return f->v[i];
}

struct window {
    int arrivals_started, not_started, active_max, retry;
    long kinds[K_N];
    struct floats lat, waits, lags;
};

static struct {
    double length;
    struct window *w;
    int n;
    struct floats all, all_lags;
    long kinds[K_N];
    long retry, skipped;
} St;

void stats_init(double window_s)
{
    St.length = window_s;
}

static struct window *at(double t)
{
    int i = (int)(t / St.length);
    if (i < 0)
        i = 0;
    if (i >= St.n) {
        St.w = realloc(St.w, (size_t)(i + 1) * sizeof(*St.w));
        if (St.w == NULL) {
            fprintf(stderr, "driver: out of memory\n");
            exit(2);
        }
        memset(St.w + St.n, 0, (size_t)(i + 1 - St.n) * sizeof(*St.w));
        St.n = i + 1;
    }
    return &St.w[i];
}

void stats_add(double done, double latency_ms, double pool_wait_ms, int kind, int retry)
{
    struct window *w = at(done);
    push(&w->lat, latency_ms);
    push(&w->waits, pool_wait_ms);
    w->kinds[kind]++;
    St.kinds[kind]++;
    if (retry) {
        w->retry++;
        St.retry++;
    }
    push(&St.all, latency_ms);
}

void stats_sent(double planned, double lag_ms)
{
    push(&at(planned)->lags, lag_ms);
    push(&St.all_lags, lag_ms);
}

void stats_arrival(double t, int started, double lag_ms)
{
    struct window *w = at(t);
    if (started) {
        w->arrivals_started++;
        push(&w->lags, lag_ms);
        push(&St.all_lags, lag_ms);
    } else {
        w->not_started++;
    }
}

void stats_active(double t, int n)
{
    struct window *w = at(t);
    if (n > w->active_max)
        w->active_max = n;
}

void stats_skip(void)
{
    St.skipped++;
}

long stats_not_started(void)
{
    long n = 0;
    for (int i = 0; i < St.n; i++)
        n += St.w[i].not_started;
    return n;
}

int stats_windows(void)
{
    return St.n;
}

// A number, or null for NaN (no samples).
static void num(char *out, size_t n, double v)
{
    if (isnan(v) || isinf(v))
        snprintf(out, n, "null");
    else
        snprintf(out, n, "%.6f", v);
}

static void kinds_json(char *out, size_t n, const long *kinds)
{
    size_t off = (size_t)snprintf(out, n, "{");
    for (int k = 1; k < K_N; k++)
        if (kinds[k] && off < n)
            off += (size_t)snprintf(out + off, n - off, "%s\"%s\":%ld", off > 1 ? "," : "", kind_names[k], kinds[k]);
    if (off < n)
        snprintf(out + off, n - off, "}");
}

int stats_close_window(int i, int active, char *note, size_t note_len)
{
    struct window *w = at((double)i * St.length);
    long n = (long)w->lat.n, ko = n - w->kinds[K_OK];
    double mid = (double)i * St.length + St.length / 2;
    int s_lat = 0, s_waits = 0, s_lags = 0;
    double p50 = pct(&w->lat, 50, &s_lat), p95 = pct(&w->lat, 95, &s_lat), p99 = pct(&w->lat, 99, &s_lat),
           p999 = pct(&w->lat, 99.9, &s_lat), mx = pct(&w->lat, 100, &s_lat), l50 = pct(&w->lags, 50, &s_lags),
           l99 = pct(&w->lags, 99, &s_lags), lmx = pct(&w->lags, 100, &s_lags), wait99 = pct(&w->waits, 99, &s_waits);
    double ko_pct = n ? 100.0 * (double)ko / (double)n : NAN;
    int behind = !isnan(l99) && l99 > S.lag_bound;
    int broken = n > 0 && (p95 > S.break_p95 || ko_pct > S.break_ko);
    char f[12][32], kinds[512];
    num(f[0], 32, ko_pct), num(f[1], 32, p50), num(f[2], 32, p95), num(f[3], 32, p99), num(f[4], 32, mx);
    num(f[5], 32, l50), num(f[6], 32, l99), num(f[7], 32, lmx), num(f[8], 32, wait99), num(f[9], 32, p999);
    kinds_json(kinds, sizeof(kinds), w->kinds);
    printf("{\"type\":\"window\",\"t\":%g,\"window_s\":%g,\"rate_planned\":%.6f,\"arrivals\":%d,\"not_started\":%d,"
           "\"active\":%d,\"active_max\":%d,\"requests\":%ld,\"ok\":%ld,\"ko\":%ld,\"ko_pct\":%s,\"ko_by\":%s,"
           "\"retry_after_503\":%d,\"rps\":%.6f,\"p50_ms\":%s,\"p95_ms\":%s,\"p99_ms\":%s,\"p999_ms\":%s,\"max_ms\":%s,"
           "\"lag_p50_ms\":%s,\"lag_p99_ms\":%s,\"lag_max_ms\":%s,\"pool_wait_p99_ms\":%s,\"behind\":%s,"
           "\"broken\":%s}\n",
           (double)i * St.length, St.length, ramp_rate(mid), w->arrivals_started, w->not_started, active, w->active_max, n,
           w->kinds[K_OK], ko, f[0], kinds, w->retry, (double)n / St.length, f[1], f[2], f[3], f[9], f[4], f[5], f[6], f[7], f[8],
           behind ? "true" : "false", broken ? "true" : "false");
    fflush(stdout);
    fprintf(stderr, "t=%5.0fs rate %6.1f/s active %6d req %7ld ok %7ld ko %5.1f%% rps %7.1f p95 %8.1f ms lag p99 %6.1f ms%s\n",
            (double)i * St.length, ramp_rate(mid), w->active_max, n, n - ko, n ? 100.0 * (double)ko / (double)n : 0,
            (double)n / St.length, isnan(p95) ? 0 : p95, isnan(l99) ? 0 : l99, behind ? " BEHIND" : "");
    if (behind)
        snprintf(note, note_len, "window at %.0f s: send lag p99 %.1f ms > %.0f ms", (double)i * St.length, l99, S.lag_bound);
    free(w->lat.v), free(w->waits.v), free(w->lags.v);
    memset(&w->lat, 0, sizeof(w->lat)), memset(&w->waits, 0, sizeof(w->waits)), memset(&w->lags, 0, sizeof(w->lags));
    return (behind ? 1 : 0) | (broken ? 2 : 0);
}

void stats_summary(double span, long started, long finished, long planned, int windows, const char *behind_json, int behind_n)
{
    long not_started = 0, n = (long)St.all.n, ok = St.kinds[K_OK];
    int max_active = 0, s_all = 0, s_lags = 0;
    for (int i = 0; i < St.n; i++) {
        not_started += St.w[i].not_started;
        if (St.w[i].active_max > max_active)
            max_active = St.w[i].active_max;
    }
    char f[8][32], kinds[512];
    num(f[0], 32, n ? 100.0 * (double)(n - ok) / (double)n : NAN);
    num(f[1], 32, pct(&St.all, 50, &s_all)), num(f[2], 32, pct(&St.all, 95, &s_all));
    num(f[3], 32, pct(&St.all, 99, &s_all)), num(f[4], 32, pct(&St.all_lags, 50, &s_lags));
    num(f[5], 32, pct(&St.all_lags, 99, &s_lags)), num(f[6], 32, pct(&St.all_lags, 100, &s_lags));
    num(f[7], 32, pct(&St.all, 99.9, &s_all));
    char mx[32];
    num(mx, 32, pct(&St.all, 100, &s_all));
    kinds_json(kinds, sizeof(kinds), St.kinds);
    printf("{\"type\":\"summary\",\"span_s\":%.6f,\"users_planned\":%ld,\"users_started\":%ld,"
           "\"users_finished_journey\":%ld,\"users_not_started\":%ld,\"max_active\":%d,\"requests\":%ld,\"ok\":%ld,"
           "\"ko\":%ld,\"ko_pct\":%s,\"ko_by\":%s,\"retry_after_503\":%ld,\"skipped_steps\":%ld,\"rps\":%.6f,"
           "\"p50_ms\":%s,\"p95_ms\":%s,\"p99_ms\":%s,\"p999_ms\":%s,\"max_ms\":%s,\"lag_p50_ms\":%s,\"lag_p99_ms\":%s,\"lag_max_"
           "ms\":%s,"
           "\"windows\":%d,\"behind\":%s,\"verdict\":\"%s\"}\n",
           span, planned, started, finished, not_started, max_active, n, ok, n - ok, f[0], kinds, St.retry, St.skipped,
           span > 0 ? (double)n / span : 0, f[1], f[2], f[3], f[7], mx, f[4], f[5], f[6], windows, behind_json,
           behind_n ? "driver fell behind" : "ok");
    fflush(stdout);
    fprintf(stderr, "driver: %ld users started, %ld requests, send lag p50 %s ms p99 %s ms max %s ms\n", started, n, f[4], f[5],
            f[6]);
}

// ---- the arrival schedule: a rate ramping linearly from r0 to r1 users/s over d s (the Go driver's arrivals.go)

double ramp_rate(double t)
{
    if (t < 0 || t > S.duration)
        return 0;
    return S.r0 + (S.r1 - S.r0) * t / S.duration;
}

double ramp_count(double t)
{
    if (t <= 0)
        return 0;
    if (t > S.duration)
        t = S.duration;
    return S.r0 * t + (S.r1 - S.r0) * t * t / (2 * S.duration);
}

double ramp_at(long n)
{
    double want = (double)(n + 1);
    if (want > ramp_count(S.duration) + 1e-9)
        return -1;
    double a = (S.r1 - S.r0) / (2 * S.duration);
    if (fabs(a) < 1e-12)
        return want / S.r0;
    double disc = S.r0 * S.r0 + 4 * a * want;
    return (-S.r0 + sqrt(disc < 0 ? 0 : disc)) / (2 * a);
}
