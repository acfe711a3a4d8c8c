/* SPDX-License-Identifier: MIT */
/*
 * pooldrive: one preon database pool on one h2o event loop, driven line by line from stdin, so that the
 * scenarios of tests/db/test_pipeline.py (against tests/db/fakepg.py) are written in Python. Public headers only.
 *
 * Usage: pooldrive URL   (database.* and log.* from PREON_* variables, as preon reads them)
 *
 * Commands, one per line; each prints its own JSON line and then {"done":"VERB"}:
 *   submit STMT N [PARAM]  one request of N queries of statement STMT (PARAM for its $1, up to 4095 bytes)
 *                          -> {"ev":"submit","req":R,"rv":"OK"|"ENOTCONN"|...}
 *   run MS                 runs the loop for MS ms
 *   wait-ready MS          runs until every connection is ready (or MS ms) -> {"ev":"ready","ok":B,"ms":T}
 *   wait-idle MS           runs until every accepted query is answered (or MS ms) -> {"ev":"idle","ok":B,...}
 *   stats                  the pool's counters, its per-statement outcomes and this process's CPU time
 *   quit                   destroys the pool (queries still queued are answered), frees everything, exits 0
 * Callbacks print {"ev":"result"|"error","req":R,"q":I,"seq":S,...}: rows as arrays of strings (null for SQL
 * NULL), or the error's code name (ECONNLOST), preon_strerror(err) and the detail. A second callback for one
 * query, a callback after a failed submit, or a request's callbacks out of order (unless sync: query spreads its
 * queries over the connections) print {"ev":"violation"}.
 */
#include <h2o.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "preon/config.h"
#include "preon/db.h"
#include "preon/errors.h"
#include "preon/log.h"
#include "preon/server.h"
#include "preon/metrics.h"

extern char **environ;

/* The statements every connection prepares; fakepg answers them by name. */
static const preon_db_statement_t stmts[] = {
    {"fruits_all", "SELECT id, name FROM fruits", 0},
    {"fruit_get", "SELECT id, name FROM fruits WHERE id = $1", 1},
    {"fruit_add", "INSERT INTO fruits (name) VALUES ($1) RETURNING id, name", 1},
};
static const unsigned stmt_flags[] = {0, 0, PREON_DB_WRITE};
#define NSTMTS (sizeof(stmts) / sizeof(stmts[0]))

typedef struct st_request_t request_t;
typedef struct {
    preon_db_query_t q; /* first: the callbacks get &q */
    request_t *req;
    unsigned index;
    unsigned calls;
} qrec_t;

struct st_request_t {
    unsigned id;
    int accepted;  /* preon_db_submit returned 0 */
    unsigned next; /* index of the query whose callback is due next */
    char param[4096];
    size_t n;
    qrec_t qs[];
};

static request_t **reqs;
static size_t nreqs;
static uint64_t outstanding, seq, violations;
static int sync_mode;                /* database.sync, from PREON_DATABASE_SYNC */
static preon_db_counters_t counters; /* the pool's, as the server keeps them */

static void emit(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);
    fprintf(stdout, "%s\n", s);
    fflush(stdout);
    free(s);
    json_decref(o);
}

static const char *code_name(int err)
{
    switch (err) {
    case 0:
        return "OK";
#define CODE_CASE(name, msg, status)                                                                                               \
    case PREON_E##name:                                                                                                            \
        return "E" #name;
        PREON_ERRNO_MAP(CODE_CASE)
#undef CODE_CASE
    default:
        return "UNKNOWN";
    }
}

static void violation(const qrec_t *r, const char *what)
{
    violations++;
    emit(json_pack("{s:s,s:I,s:I,s:s}", "ev", "violation", "req", (json_int_t)r->req->id, "q", (json_int_t)r->index, "what", what));
}

/* Checks the callback contract for `r`; returns the common part of the callback's line. */
static json_t *called(qrec_t *r, const char *ev)
{
    if (!r->req->accepted)
        violation(r, "callback after a failed submit");
    if (++r->calls > 1)
        violation(r, "second callback");
    else
        outstanding--;
    /* In order within a request whose queries share a connection; with a Sync per query (sync: query) they spread
     * over the connections, and each connection answers in its own time. */
    if (r->index != r->req->next && sync_mode != PREON_SYNC_QUERY)
        violation(r, "callback out of order within its request");
    r->req->next = r->index + 1;
    return json_pack("{s:s,s:I,s:I,s:I}", "ev", ev, "req", (json_int_t)r->req->id, "q", (json_int_t)r->index, "seq",
                     (json_int_t)++seq);
}

static void on_result(preon_db_query_t *q, const preon_db_result_t *res)
{
    qrec_t *r = (qrec_t *)q;
    json_t *o = called(r, "result"), *rows = json_array();
    int nrows = preon_db_result_rows(res);
    for (int i = 0; i < nrows; i++) {
        json_t *row = json_array();
        size_t len;
        /* The driver's statements all have two columns. */
        for (int c = 0; c < 2; c++) {
            const char *v = preon_db_result_value(res, i, c, &len);
            json_array_append_new(row, v != NULL ? json_stringn(v, len) : json_null());
        }
        json_array_append_new(rows, row);
    }
    json_object_set_new(o, "rows", rows);
    json_object_set_new(o, "affected", json_integer(preon_db_result_affected(res)));
    emit(o);
}

static void on_error(preon_db_query_t *q, int err, const char *detail)
{
    qrec_t *r = (qrec_t *)q;
    json_t *o = called(r, "error");
    json_object_set_new(o, "code", json_string(code_name(err)));
    json_object_set_new(o, "msg", json_string(preon_strerror(err)));
    json_object_set_new(o, "status", json_integer(preon_err_http_status(err)));
    /* The detail may be libpq's text in any encoding: keep it valid JSON whatever it holds. */
    json_t *d = detail != NULL ? json_string(detail) : NULL;
    json_object_set_new(o, "detail", d != NULL ? d : json_string("(not UTF-8)"));
    emit(o);
}

static int find_stmt(const char *name)
{
    for (size_t i = 0; i < NSTMTS; i++)
        if (strcmp(stmts[i].name, name) == 0)
            return (int)i;
    return -1;
}

static void submit(preon_db_pool_t *pool, const char *name, size_t n, const char *param)
{
    int s = find_stmt(name);
    if (s < 0 || n == 0 || n > 1000) {
        emit(json_pack("{s:s,s:s}", "ev", "submit", "rv", "bad command"));
        return;
    }
    request_t *req = calloc(1, sizeof(*req) + n * sizeof(qrec_t));
    if (req == NULL)
        abort();
    req->id = (unsigned)nreqs + 1;
    req->n = n;
    snprintf(req->param, sizeof(req->param), "%s", param != NULL ? param : "1");
    preon_db_query_t *ptrs[1000];
    for (size_t i = 0; i < n; i++) {
        qrec_t *r = &req->qs[i];
        r->req = req;
        r->index = (unsigned)i;
        r->q.stmt = (unsigned)s;
        r->q.flags = stmt_flags[s];
        r->q.nparams = stmts[s].nparams;
        if (r->q.nparams > 0)
            r->q.params[0] = req->param;
        r->q.on_result = on_result;
        r->q.on_error = on_error;
        ptrs[i] = &r->q;
    }
    if ((reqs = realloc(reqs, (nreqs + 1) * sizeof(*reqs))) == NULL)
        abort();
    reqs[nreqs++] = req;
    int rv = preon_db_submit(pool, ptrs, n, sync_mode);
    req->accepted = rv == 0;
    if (rv == 0)
        outstanding += n;
    emit(
        json_pack("{s:s,s:I,s:s,s:s}", "ev", "submit", "req", (json_int_t)req->id, "rv", code_name(rv), "msg", preon_strerror(rv)));
}

static uint64_t now_ms(void)
{
    return preon_now_ns() / 1000000u;
}

/* Runs the loop until `done(pool)` or `ms` milliseconds, at least one pass (so "run 0" sends what was
 * submitted); returns whether done. */
static int run_until(h2o_evloop_t *loop, preon_db_pool_t *pool, int (*done)(preon_db_pool_t *), uint64_t ms)
{
    uint64_t end = now_ms() + ms;
    for (int first = 1;; first = 0) {
        if (done != NULL && done(pool))
            return 1;
        uint64_t now = now_ms();
        if (now >= end && !first)
            return 0;
        h2o_evloop_run(loop, (int32_t)(now >= end ? 0 : end - now < 10 ? end - now : 10));
    }
}

static int all_ready(preon_db_pool_t *pool)
{
    preon_db_stats_t st;
    (void)pool; /* its counters are the driver's block */
    preon_db_counters_read(&counters, &st);
    return st.ready == st.total;
}

static int all_answered(preon_db_pool_t *pool)
{
    (void)pool;
    return outstanding == 0;
}

static double cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void stats(preon_db_pool_t *pool)
{
    preon_db_stats_t st;
    (void)pool; /* its counters are the driver's block */
    preon_db_counters_read(&counters, &st);
    uint64_t queries[NSTMTS][PREON_DB_OUTCOMES];
    preon_hist_t durations[NSTMTS];
    memset(queries, 0, sizeof(queries));
    memset(durations, 0, sizeof(durations));
    preon_db_counters_collect(&counters, queries, durations);
    json_t *outcomes = json_object(), *total = json_object();
    for (size_t s = 0; s < NSTMTS; s++) {
        json_t *per = json_object();
        for (int o = 0; o < PREON_DB_OUTCOMES; o++) {
            json_object_set_new(per, preon_db_outcome_names[o], json_integer((json_int_t)queries[s][o]));
            json_t *t = json_object_get(total, preon_db_outcome_names[o]);
            json_object_set_new(total, preon_db_outcome_names[o],
                                json_integer((t != NULL ? json_integer_value(t) : 0) + (json_int_t)queries[s][o]));
        }
        json_object_set_new(per, "count", json_integer((json_int_t)durations[s].count));
        json_object_set_new(outcomes, stmts[s].name, per);
    }
    json_t *o = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f}", "ev", "stats", "queued", (json_int_t)st.queued, "ready",
                          (json_int_t)st.ready, "connecting", (json_int_t)st.connecting, "total", (json_int_t)st.total,
                          "reconnects", (json_int_t)st.reconnects, "rejected_full", (json_int_t)st.rejected_full, "rejected_down",
                          (json_int_t)st.rejected_down, "outstanding", (json_int_t)outstanding, "violations",
                          (json_int_t)violations, "cpu_ms", cpu_ms());
    json_object_set_new(o, "outcomes", outcomes);
    json_object_set_new(o, "total_outcomes", total);
    emit(o);
}

static void done(const char *verb)
{
    emit(json_pack("{s:s}", "done", verb));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s URL (commands on stdin)\n", argv[0]);
        return 2;
    }
    preon_config_t cfg;
    char err[512];
    preon_config_init(&cfg);
    if (preon_config_apply_env(&cfg, environ, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        preon_config_dispose(&cfg);
        return 2;
    }
    preon_log_level = (preon_log_level_t)cfg.log.level;
    sync_mode = cfg.database.sync;
    preon_log_format = (preon_log_format_t)cfg.log.format;
    preon_db_target_t *target = preon_db_target_create(argv[1], cfg.database.client_check_ms, 0, err, sizeof(err));
    if (target == NULL) {
        fprintf(stderr, "%s\n", err);
        preon_config_dispose(&cfg);
        return 2;
    }
    /* As preon's loop threads do: log lines go through this thread's ring and the writer thread. */
    preon_log_start();
    preon_log_attach();
    h2o_evloop_t *loop = h2o_evloop_create();
    preon_db_counters_init(&counters, NSTMTS);
    preon_db_settings_t settings;
    preon_server_db_settings(&cfg, &settings); /* as preon's threads get theirs */
    preon_db_pool_t *pool = preon_db_pool_create(loop, &settings, target, stmts, NSTMTS, &counters, "drive");

    static char line[8192], c[4096];
    while (fgets(line, sizeof(line), stdin) != NULL) {
        char verb[32] = "", a[128] = "", b[32] = "";
        c[0] = '\0';
        int n = sscanf(line, "%31s %127s %31s %4095s", verb, a, b, c);
        if (n <= 0)
            continue;
        if (strcmp(verb, "submit") == 0 && n >= 3) {
            submit(pool, a, (size_t)strtoul(b, NULL, 10), n >= 4 ? c : NULL);
        } else if (strcmp(verb, "run") == 0 && n >= 2) {
            run_until(loop, pool, NULL, strtoull(a, NULL, 10));
        } else if (strcmp(verb, "wait-ready") == 0 && n >= 2) {
            uint64_t t0 = now_ms();
            int ok = run_until(loop, pool, all_ready, strtoull(a, NULL, 10));
            emit(json_pack("{s:s,s:b,s:I}", "ev", "ready", "ok", ok, "ms", (json_int_t)(now_ms() - t0)));
        } else if (strcmp(verb, "wait-idle") == 0 && n >= 2) {
            uint64_t t0 = now_ms();
            int ok = run_until(loop, pool, all_answered, strtoull(a, NULL, 10));
            emit(json_pack("{s:s,s:b,s:I,s:I}", "ev", "idle", "ok", ok, "ms", (json_int_t)(now_ms() - t0), "outstanding",
                           (json_int_t)outstanding));
        } else if (strcmp(verb, "stats") == 0) {
            stats(pool);
        } else if (strcmp(verb, "quit") == 0) {
            break;
        } else {
            emit(json_pack("{s:s,s:s}", "ev", "unknown", "line", verb));
        }
        done(verb);
    }

    /* Queries still queued are answered (PREON_ESHUTDOWN) inside destroy; then h2o frees the closed sockets
     * on one more pass of the loop. */
    preon_db_pool_destroy(pool);
    preon_db_counters_dispose(&counters);
    h2o_evloop_run(loop, 0);
    emit(json_pack("{s:s,s:I,s:I}", "ev", "end", "outstanding", (json_int_t)outstanding, "violations", (json_int_t)violations));
    done("quit");
    h2o_evloop_destroy(loop);
    preon_log_detach();
    preon_log_stop();
    for (size_t i = 0; i < nreqs; i++)
        free(reqs[i]);
    free(reqs);
    preon_db_target_destroy(target);
    preon_config_dispose(&cfg);
    return 0;
}
