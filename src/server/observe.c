/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <string.h>
#include <unistd.h>
#include "preon/alloc.h"
#include "preon/json.h"
#include "preon/log.h"
#include "observe.h"
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

void preon__observe_init(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    start_time = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    /* Opened once at start-up; a scrape then only preads it: procfs answers from memory, never from a disk. */
    statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
}

void preon__http_metrics_init(preon_http_metrics_t *m, size_t nroutes)
{
    memset(m, 0, sizeof(*m));
    m->nroutes = nroutes;
    m->requests = preon_calloc(m->nroutes * PREON_METHODS * PREON_STATUSES, sizeof(uint64_t));
    m->duration = preon_calloc(m->nroutes, sizeof(preon_hist_t));
}

void preon__http_metrics_dispose(preon_http_metrics_t *m)
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

void preon__observe_request(preon_http_metrics_t *m, const preon_config_t *cfg, unsigned thread, unsigned route, h2o_req_t *req)
{
    int status = req->res.status != 0 ? req->res.status : 499;
    struct timeval now;
    gettimeofday(&now, NULL);
    int64_t us = (int64_t)(now.tv_sec - req->timestamps.request_begin_at.tv_sec) * 1000000 +
                 (now.tv_usec - req->timestamps.request_begin_at.tv_usec);
    uint64_t ns = us > 0 ? (uint64_t)us * 1000 : 0;
    if (cfg->metrics.enabled) {
        unsigned method = preon_method_index(req->method.base, req->method.len);
        preon_counter_add(&m->requests[(route * PREON_METHODS + method) * PREON_STATUSES + status_index(status)], 1);
        preon_hist_observe(&m->duration[route], ns);
    }
    if (__atomic_load_n(&preon_log_access_enabled, __ATOMIC_RELAXED)) {
        size_t bytes = req->res.content_length != SIZE_MAX ? req->res.content_length : req->bytes_sent;
        preon_log_access(req->method.base, req->method.len, req->path.base, req->path.len, status, bytes, ns / 1000, thread);
    }
}

/* The first route id with the same label: routes of one path and different methods share a label. */
static size_t canonical_route(const preon_snapshot_t *snap, size_t route)
{
    for (size_t r = 0; r < route; r++)
        if (strcmp(snap->route_labels[r], snap->route_labels[route]) == 0)
            return r;
    return route;
}

void preon__snapshot_init(preon_snapshot_t *s, h2o_mem_pool_t *pool, size_t nroutes, size_t nstatements)
{
    memset(s, 0, sizeof(*s));
    s->nroutes = nroutes;
    s->nstatements = nstatements;
    size_t nreq = nroutes * PREON_METHODS * PREON_STATUSES;
    s->requests = h2o_mem_alloc_pool(pool, nreq * sizeof(*s->requests));
    memset(s->requests, 0, nreq * sizeof(*s->requests));
    s->durations = h2o_mem_alloc_pool(pool, nroutes * sizeof(*s->durations));
    memset(s->durations, 0, nroutes * sizeof(*s->durations));
    s->queries = h2o_mem_alloc_pool(pool, (nstatements + 1) * sizeof(*s->queries));
    memset(s->queries, 0, (nstatements + 1) * sizeof(*s->queries));
    s->query_durations = h2o_mem_alloc_pool(pool, (nstatements + 1) * sizeof(*s->query_durations));
    memset(s->query_durations, 0, (nstatements + 1) * sizeof(*s->query_durations));
}

void preon__snapshot_add_http(preon_snapshot_t *s, const preon_http_metrics_t *m)
{
    size_t n = s->nroutes * PREON_METHODS * PREON_STATUSES;
    for (size_t i = 0; i < n; i++)
        s->requests[i] += preon_counter_read(&m->requests[i]);
    for (size_t r = 0; r < s->nroutes; r++)
        preon_hist_add(&s->durations[r], &m->duration[r]);
    s->conns_open += preon_counter_read(&m->conns_open);
    s->conns_accepted += preon_counter_read(&m->conns_accepted);
    s->conns_refused += preon_counter_read(&m->conns_refused);
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

static void put_http(preon_sink_t *s, const preon_snapshot_t *snap)
{
    put(s, "# HELP preon_http_requests_total HTTP requests answered, by route, method and status.\n"
           "# TYPE preon_http_requests_total counter\n");
    for (size_t r = 0; r < snap->nroutes; r++) {
        for (unsigned m = 0; m < PREON_METHODS; m++) {
            for (unsigned st = 0; st < PREON_STATUSES - 1; st++) {
                uint64_t n = snap->requests[(r * PREON_METHODS + m) * PREON_STATUSES + st];
                if (n == 0)
                    continue;
                char status[8];
                snprintf(status, sizeof(status), "%d", statuses[st]);
                put(s, "preon_http_requests_total{route=\"%s\",method=\"%s\",status=\"%s\"} %llu\n", snap->route_labels[r],
                    preon_method_name(m), st == STATUS_OTHER ? "other" : status, (unsigned long long)n);
            }
        }
    }
    put(s, "# HELP preon_http_request_duration_seconds Time from dispatch to answer, by route.\n"
           "# TYPE preon_http_request_duration_seconds histogram\n");
    for (size_t r = 0; r < snap->nroutes; r++) {
        if (canonical_route(snap, r) != r)
            continue;
        preon_hist_t h = {{0}, 0, 0};
        for (size_t same = r; same < snap->nroutes; same++)
            if (canonical_route(snap, same) == r)
                preon_hist_add(&h, &snap->durations[same]);
        char labels[300];
        snprintf(labels, sizeof(labels), "route=\"%s\"", snap->route_labels[r]);
        put_hist(s, "preon_http_request_duration_seconds", labels, &h);
    }
    put(s,
        "# HELP preon_http_connections Open client connections.\n# TYPE preon_http_connections gauge\n"
        "preon_http_connections %llu\n",
        (unsigned long long)snap->conns_open);
    put(s,
        "# HELP preon_http_connections_accepted_total Client connections accepted.\n"
        "# TYPE preon_http_connections_accepted_total counter\npreon_http_connections_accepted_total %llu\n",
        (unsigned long long)snap->conns_accepted);
    put(s,
        "# HELP preon_http_connections_refused_total Client connections closed at once: server.max_connections.\n"
        "# TYPE preon_http_connections_refused_total counter\npreon_http_connections_refused_total %llu\n",
        (unsigned long long)snap->conns_refused);
}

static void put_db(preon_sink_t *s, const preon_snapshot_t *snap)
{
    put(s, "# HELP preon_db_queries_total Queries answered, by statement and outcome.\n"
           "# TYPE preon_db_queries_total counter\n");
    for (size_t i = 0; i < snap->nstatements; i++)
        for (int o = 0; o < PREON_DB_OUTCOMES; o++)
            if (snap->queries[i][o] != 0 || o == PREON_DB_OUTCOME_OK)
                put(s, "preon_db_queries_total{statement=\"%s\",outcome=\"%s\"} %llu\n", snap->statements[i].name,
                    preon_db_outcome_names[o], (unsigned long long)snap->queries[i][o]);
    put(s, "# HELP preon_db_query_duration_seconds Time from submit to answer, by statement.\n"
           "# TYPE preon_db_query_duration_seconds histogram\n");
    for (size_t i = 0; i < snap->nstatements; i++) {
        char labels[128];
        snprintf(labels, sizeof(labels), "statement=\"%s\"", snap->statements[i].name);
        put_hist(s, "preon_db_query_duration_seconds", labels, &snap->query_durations[i]);
    }
    const preon_db_stats_t *pools[] = {&snap->db, &snap->db_read};
    const char *names[] = {"primary", "read"};
    size_t npools = snap->has_read_pool ? 2 : 1;
    put(s, "# HELP preon_db_queue_depth Queries accepted and not yet answered, by pool (database.url: primary, "
           "database.read_url: read).\n# TYPE preon_db_queue_depth gauge\n");
    for (size_t i = 0; i < npools; i++)
        put(s, "preon_db_queue_depth{pool=\"%s\"} %zu\n", names[i], pools[i]->queued);
    put(s, "# HELP preon_db_connections Database connections by pool and state.\n# TYPE preon_db_connections gauge\n");
    for (size_t i = 0; i < npools; i++)
        put(s,
            "preon_db_connections{pool=\"%s\",state=\"ready\"} %u\npreon_db_connections{pool=\"%s\",state=\"connecting\"} %u\n"
            "preon_db_connections{pool=\"%s\",state=\"down\"} %u\n",
            names[i], pools[i]->ready, names[i], pools[i]->connecting, names[i],
            pools[i]->total - pools[i]->ready - pools[i]->connecting);
    put(s, "# HELP preon_db_reconnects_total Connections established again after a loss, by pool.\n"
           "# TYPE preon_db_reconnects_total counter\n");
    for (size_t i = 0; i < npools; i++)
        put(s, "preon_db_reconnects_total{pool=\"%s\"} %llu\n", names[i], (unsigned long long)pools[i]->reconnects);
    put(s, "# HELP preon_db_moved_total Queries a lost connection had not sent, moved to another connection, by the pool "
           "they left.\n# TYPE preon_db_moved_total counter\n");
    for (size_t i = 0; i < npools; i++)
        put(s, "preon_db_moved_total{pool=\"%s\"} %llu\n", names[i], (unsigned long long)pools[i]->moved);
    put(s, "# HELP preon_db_rejected_total Requests answered 503 before reaching the database, by pool and reason.\n"
           "# TYPE preon_db_rejected_total counter\n");
    for (size_t i = 0; i < npools; i++)
        put(s,
            "preon_db_rejected_total{pool=\"%s\",reason=\"queue_full\"} %llu\n"
            "preon_db_rejected_total{pool=\"%s\",reason=\"queue_wait\"} %llu\n"
            "preon_db_rejected_total{pool=\"%s\",reason=\"no_connection\"} %llu\n",
            names[i], (unsigned long long)pools[i]->rejected_full, names[i], (unsigned long long)pools[i]->rejected_slow, names[i],
            (unsigned long long)pools[i]->rejected_down);
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

void preon__metrics_reply(h2o_req_t *req, const preon_snapshot_t *snap)
{
    preon_sink_t s;
    preon_sink_init(&s, &req->pool, 16384);
    put_http(&s, snap);
    put_db(&s, snap);
    put_process(&s);
    preon_reply_text(req, 200, H2O_STRLIT("text/plain; version=0.0.4; charset=utf-8"), s.buf, s.len);
}

void preon__health_live_reply(h2o_req_t *req)
{
    json_t *body = json_pack("{s:s}", "status", "UP");
    preon_reply_json(req, 200, body);
    json_decref(body);
}

void preon__health_ready_reply(h2o_req_t *req, const preon_snapshot_t *snap)
{
    unsigned nthreads = snap->nthreads, without = snap->threads_without_db;
    int draining = snap->draining;
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
