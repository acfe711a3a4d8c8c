/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <string.h>
#include <unistd.h>
#include "preon/alloc.h"
#include "preon/app.h"
#include "preon/json.h"
#include "preon/log.h"
#include "preon/observe.h"
#include "preon/reply.h"
#include "preon/router.h"
#include "preon/sink.h"

/*
 * Per-thread HTTP counters, the Prometheus scrape that sums every thread's counters, and the health checks.
 * Nothing here locks: each thread writes only its own counters, and a scrape reads the others' with relaxed
 * atomic loads (a scrape may see one thread a few requests behind another; Prometheus does not mind).
 */
static const int statuses[PREON_STATUSES] = {200, 201, 204, 400, 404, 405, 409, 413, 415, 499, 500, 502, 503, 504, 0, 0};
#define STATUS_OTHER (PREON_STATUSES - 1)

static double start_time;
static int statm_fd = -1;

void preon_observe_init(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    start_time = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    /* Opened once at start-up; a scrape then only preads it: procfs answers from memory, never from a disk. */
    statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
}

static size_t nroutes_total(void)
{
    return preon_nroutes + PREON_ROUTE__EXTRA;
}

void preon_http_metrics_init(preon_http_metrics_t *m)
{
    memset(m, 0, sizeof(*m));
    m->nroutes = nroutes_total();
    m->requests = preon_calloc(m->nroutes * PREON_METHODS * PREON_STATUSES, sizeof(uint64_t));
    m->duration = preon_calloc(m->nroutes, sizeof(preon_hist_t));
}

void preon_http_metrics_dispose(preon_http_metrics_t *m)
{
    free(m->requests);
    free(m->duration);
    m->requests = NULL;
    m->duration = NULL;
}

static unsigned status_index(int status)
{
    for (unsigned i = 0; i < STATUS_OTHER; i++)
        if (statuses[i] == status)
            return i;
    return STATUS_OTHER;
}

void preon_observe_request(preon_thread_t *thr, h2o_req_t *req)
{
    preon_http_metrics_t *m = &thr->http;
    int status = req->res.status != 0 ? req->res.status : 499;
    struct timeval now;
    gettimeofday(&now, NULL);
    int64_t us = (int64_t)(now.tv_sec - req->timestamps.request_begin_at.tv_sec) * 1000000 +
                 (now.tv_usec - req->timestamps.request_begin_at.tv_usec);
    uint64_t ns = us > 0 ? (uint64_t)us * 1000 : 0;
    if (thr->cfg->metrics.enabled) {
        unsigned route = preon_app_route_of(thr->cfg, req), method = preon_method_index(req->method.base, req->method.len);
        preon_counter_add(&m->requests[(route * PREON_METHODS + method) * PREON_STATUSES + status_index(status)], 1);
        preon_hist_observe(&m->duration[route], ns);
    }
    if (thr->cfg->log.access) {
        size_t bytes = req->res.content_length != SIZE_MAX ? req->res.content_length : req->bytes_sent;
        preon_log_access(req->method.base, req->method.len, req->path.base, req->path.len, status, bytes, ns / 1000, thr->index);
    }
}

static const char *route_label(const preon_config_t *cfg, size_t route)
{
    if (route < preon_nroutes)
        return preon_routes[route].pattern;
    switch (route - preon_nroutes) {
    case PREON_ROUTE_LIVE:
        return cfg->health.live_path;
    case PREON_ROUTE_READY:
        return cfg->health.ready_path;
    case PREON_ROUTE_METRICS:
        return cfg->metrics.path;
    default:
        return "unmatched";
    }
}

/* The first route id with the same label: routes of one path and different methods share a label. */
static size_t canonical_route(const preon_config_t *cfg, size_t route)
{
    for (size_t r = 0; r < route; r++)
        if (strcmp(route_label(cfg, r), route_label(cfg, route)) == 0)
            return r;
    return route;
}

static void put(preon_sink_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(preon_sink_t *s, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n > 0)
        preon_sink_append(s, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static void put_hist(preon_sink_t *s, const char *name, const char *labels, const preon_hist_t *h)
{
    uint64_t cumulative = 0;
    for (int i = 0; i < PREON_HIST_BUCKETS; i++) {
        cumulative += h->bucket[i];
        put(s, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, labels[0] ? "," : "", preon_hist_bounds_ns[i] / 1e9,
            (unsigned long long)cumulative);
    }
    put(s, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, labels[0] ? "," : "", (unsigned long long)h->count);
    put(s, "%s_sum{%s} %.9f\n", name, labels, h->sum_ns / 1e9);
    put(s, "%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
}

static void put_http(preon_sink_t *s, const preon_config_t *cfg, preon_thread_t *threads, unsigned nthreads)
{
    size_t nroutes = nroutes_total();
    put(s, "# HELP preon_http_requests_total HTTP requests answered, by route, method and status.\n"
           "# TYPE preon_http_requests_total counter\n");
    for (size_t r = 0; r < nroutes; r++) {
        for (unsigned m = 0; m < PREON_METHODS; m++) {
            for (unsigned st = 0; st < PREON_STATUSES - 1; st++) {
                uint64_t n = 0;
                for (unsigned t = 0; t < nthreads; t++)
                    n += preon_counter_read(&threads[t].http.requests[(r * PREON_METHODS + m) * PREON_STATUSES + st]);
                if (n == 0)
                    continue;
                char status[8];
                snprintf(status, sizeof(status), "%d", statuses[st]);
                put(s, "preon_http_requests_total{route=\"%s\",method=\"%s\",status=\"%s\"} %llu\n", route_label(cfg, r),
                    preon_method_name(m), st == STATUS_OTHER ? "other" : status, (unsigned long long)n);
            }
        }
    }
    put(s, "# HELP preon_http_request_duration_seconds Time from dispatch to answer, by route.\n"
           "# TYPE preon_http_request_duration_seconds histogram\n");
    for (size_t r = 0; r < nroutes; r++) {
        if (canonical_route(cfg, r) != r)
            continue;
        preon_hist_t h = {{0}, 0, 0};
        for (size_t same = r; same < nroutes; same++)
            if (canonical_route(cfg, same) == r)
                for (unsigned t = 0; t < nthreads; t++)
                    preon_hist_add(&h, &threads[t].http.duration[same]);
        char labels[300];
        snprintf(labels, sizeof(labels), "route=\"%s\"", route_label(cfg, r));
        put_hist(s, "preon_http_request_duration_seconds", labels, &h);
    }
    uint64_t open = 0, accepted = 0, refused = 0;
    for (unsigned t = 0; t < nthreads; t++) {
        open += preon_counter_read(&threads[t].http.conns_open);
        accepted += preon_counter_read(&threads[t].http.conns_accepted);
        refused += preon_counter_read(&threads[t].http.conns_refused);
    }
    put(s,
        "# HELP preon_http_connections Open client connections.\n# TYPE preon_http_connections gauge\n"
        "preon_http_connections %llu\n",
        (unsigned long long)open);
    put(s,
        "# HELP preon_http_connections_accepted_total Client connections accepted.\n"
        "# TYPE preon_http_connections_accepted_total counter\npreon_http_connections_accepted_total %llu\n",
        (unsigned long long)accepted);
    put(s,
        "# HELP preon_http_connections_refused_total Client connections closed at once: server.max_connections.\n"
        "# TYPE preon_http_connections_refused_total counter\npreon_http_connections_refused_total %llu\n",
        (unsigned long long)refused);
}

static void put_db(preon_sink_t *s, preon_thread_t *threads, unsigned nthreads)
{
    uint64_t queries[PREON_STMT__COUNT][PREON_DB_OUTCOMES];
    preon_hist_t durations[PREON_STMT__COUNT];
    preon_db_stats_t sum = {0}, st;
    memset(queries, 0, sizeof(queries));
    memset(durations, 0, sizeof(durations));
    for (unsigned t = 0; t < nthreads; t++) {
        preon_db_pool_collect(threads[t].db, queries, durations);
        preon_db_pool_stats(threads[t].db, &st);
        sum.queued += st.queued, sum.ready += st.ready, sum.connecting += st.connecting, sum.total += st.total;
        sum.reconnects += st.reconnects, sum.rejected_full += st.rejected_full, sum.rejected_down += st.rejected_down;
    }
    put(s, "# HELP preon_db_queries_total Queries answered, by statement and outcome.\n"
           "# TYPE preon_db_queries_total counter\n");
    for (int i = 0; i < PREON_STMT__COUNT; i++)
        for (int o = 0; o < PREON_DB_OUTCOMES; o++)
            if (queries[i][o] != 0 || o == PREON_DB_OUTCOME_OK)
                put(s, "preon_db_queries_total{statement=\"%s\",outcome=\"%s\"} %llu\n", preon_statements[i].name,
                    preon_db_outcome_names[o], (unsigned long long)queries[i][o]);
    put(s, "# HELP preon_db_query_duration_seconds Time from submit to answer, by statement.\n"
           "# TYPE preon_db_query_duration_seconds histogram\n");
    for (int i = 0; i < PREON_STMT__COUNT; i++) {
        char labels[128];
        snprintf(labels, sizeof(labels), "statement=\"%s\"", preon_statements[i].name);
        put_hist(s, "preon_db_query_duration_seconds", labels, &durations[i]);
    }
    put(s,
        "# HELP preon_db_queue_depth Queries accepted and not yet answered.\n# TYPE preon_db_queue_depth gauge\n"
        "preon_db_queue_depth %zu\n",
        sum.queued);
    put(s,
        "# HELP preon_db_connections Database connections by state.\n# TYPE preon_db_connections gauge\n"
        "preon_db_connections{state=\"ready\"} %u\npreon_db_connections{state=\"connecting\"} %u\n"
        "preon_db_connections{state=\"down\"} %u\n",
        sum.ready, sum.connecting, sum.total - sum.ready - sum.connecting);
    put(s,
        "# HELP preon_db_reconnects_total Connections established again after a loss.\n"
        "# TYPE preon_db_reconnects_total counter\npreon_db_reconnects_total %llu\n",
        (unsigned long long)sum.reconnects);
    put(s,
        "# HELP preon_db_rejected_total Requests answered 503 before reaching the database, by reason.\n"
        "# TYPE preon_db_rejected_total counter\npreon_db_rejected_total{reason=\"queue_full\"} %llu\n"
        "preon_db_rejected_total{reason=\"no_connection\"} %llu\n",
        (unsigned long long)sum.rejected_full, (unsigned long long)sum.rejected_down);
}

static void put_process(preon_sink_t *s)
{
    char statm[128];
    long pages_total = 0, pages_rss = 0;
    ssize_t n = statm_fd >= 0 ? pread(statm_fd, statm, sizeof(statm) - 1, 0) : -1;
    if (n > 0) {
        statm[n] = '\0';
        sscanf(statm, "%ld %ld", &pages_total, &pages_rss);
    }
    long page = sysconf(_SC_PAGESIZE);
    struct timespec cpu;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    put(s,
        "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
        "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %ld\n",
        pages_rss * page);
    put(s,
        "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
        "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes %ld\n",
        pages_total * page);
    put(s,
        "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
        "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.6f\n",
        (double)cpu.tv_sec + cpu.tv_nsec / 1e9);
    put(s,
        "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
        "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.3f\n",
        start_time);
    put(s,
        "# HELP preon_log_dropped_total Log lines dropped because stderr could not keep up.\n"
        "# TYPE preon_log_dropped_total counter\npreon_log_dropped_total %llu\n",
        (unsigned long long)preon_log_dropped());
}

void preon_metrics_reply(h2o_req_t *req)
{
    const preon_config_t *cfg = preon_thread_of(req)->cfg;
    unsigned nthreads;
    preon_thread_t *threads = preon_server_threads(&nthreads);
    preon_sink_t s;
    preon_sink_init(&s, &req->pool, 16384);
    put_http(&s, cfg, threads, nthreads);
    put_db(&s, threads, nthreads);
    put_process(&s);
    preon_reply_text(req, 200, H2O_STRLIT("text/plain; version=0.0.4; charset=utf-8"), s.buf, s.len);
}

void preon_health_live_reply(h2o_req_t *req)
{
    json_t *body = json_pack("{s:s}", "status", "UP");
    preon_reply_json(req, 200, body);
    json_decref(body);
}

void preon_health_ready_reply(h2o_req_t *req)
{
    unsigned nthreads, without = 0;
    preon_thread_t *threads = preon_server_threads(&nthreads);
    for (unsigned t = 0; t < nthreads; t++) {
        preon_db_stats_t st;
        preon_db_pool_stats(threads[t].db, &st);
        without += st.ready == 0;
    }
    int draining = preon_server_draining();
    json_t *checks = json_array();
    if (without == 0) {
        json_array_append_new(checks, json_pack("{s:s,s:s}", "name", "database", "status", "UP"));
    } else {
        char reason[128];
        snprintf(reason, sizeof(reason), "%u of %u event-loop threads have no connected database connection", without, nthreads);
        json_array_append_new(checks, json_pack("{s:s,s:s,s:s}", "name", "database", "status", "DOWN", "reason", reason));
    }
    json_array_append_new(
        checks, draining ? json_pack("{s:s,s:s,s:s}", "name", "server", "status", "DOWN", "reason", "draining: shutting down")
                         : json_pack("{s:s,s:s}", "name", "server", "status", "UP"));
    int up = without == 0 && !draining;
    json_t *body = json_pack("{s:s,s:o}", "status", up ? "UP" : "DOWN", "checks", checks);
    if (!up)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("1"));
    preon_reply_json(req, up ? 200 : 503, body);
    json_decref(body);
}
