/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include "preon/alloc.h"
#include "handlers.h"
#include "preon/errors.h"
#include "preon/json.h"
#include "params.h"
#include "preon/reply.h"

/*
 * TechEmpower's test types, as its verifier demands them: /plaintext, /json, /db, /queries, /updates and
 * /cached-queries (/fortunes is in fortunes.c). JSON is built and serialized per request with jansson.
 */

#define MAX_QUERIES PREON_MAX_REQUEST_QUERIES /* config.c keeps database.max_queued above it */
_Static_assert(MAX_QUERIES <= PREON_DBREQ_MAX, "a request is one dbreq");

static h2o_iovec_t query_string(h2o_req_t *req)
{
    if (req->query_at == SIZE_MAX)
        return h2o_iovec_init("", 0);
    return h2o_iovec_init(req->path.base + req->query_at + 1, req->path.len - req->query_at - 1);
}

static int count_param(h2o_req_t *req, const char *name)
{
    h2o_iovec_t qs = query_string(req);
    return preon__query_int_clamped(qs.base, qs.len, name, 1, MAX_QUERIES);
}

void preon__tfb_plaintext(h2o_req_t *req, h2o_iovec_t param)
{
    (void)param;
    preon_reply_text(req, 200, H2O_STRLIT("text/plain"), H2O_STRLIT("Hello, World!"));
}

void preon__tfb_json(h2o_req_t *req, h2o_iovec_t param)
{
    (void)param;
    /* Serialized per request, as TechEmpower's rules ask (no answer cached as bytes). */
    preon_sink_t body;
    preon_sink_init(&body, &req->pool, 32);
    preon_sink_append(&body, H2O_STRLIT("{\"message\":"));
    preon_json_string(&body, H2O_STRLIT("Hello, World!"));
    preon_sink_append(&body, "}", 1);
    preon_reply_text(req, 200, H2O_STRLIT("application/json"), body.buf, body.len);
}

/* The rows of /db, /queries and /updates: ids chosen up front, numbers as read (then as written). Sized to the
 * request (a dbreq's data is zeroed: 4 KB for every /db when it was sized for 500 rows). */
typedef struct {
    int n;
    int single;                      /* /db answers an object, the others an array */
    int32_t *id, *number, storage[]; /* id and number point into storage: n of each */
} worlds_t;

static size_t worlds_size(int n)
{
    return sizeof(worlds_t) + 2 * (size_t)n * sizeof(int32_t);
}

static worlds_t *worlds_init(preon_dbreq_t *r, int n, int single)
{
    worlds_t *w = preon_dbreq_data(r);
    w->n = n;
    w->single = single;
    w->id = w->storage;
    w->number = w->storage + n;
    return w;
}

/* The value of an int4 as PostgreSQL writes it (an optional '-', then digits), without strtol's locale and base
 * machinery: /queries=20 reads twenty of them. */
static int32_t int4_of(const char *text)
{
    int neg = *text == '-';
    uint32_t v = 0;
    for (text += neg; *text >= '0' && *text <= '9'; text++)
        v = v * 10 + (uint32_t)(*text - '0');
    return (int32_t)(neg ? 0u - v : v);
}

static void on_world(preon_dbreq_t *r, size_t index, const preon_db_result_t *res)
{
    worlds_t *w = preon_dbreq_data(r);
    size_t len;
    if (preon_db_result_rows(res) != 1) {
        preon_dbreq_fail(r, PREON_EDB, "World row missing");
        return;
    }
    w->number[index] = int4_of(preon_db_result_value(res, 0, 1, &len));
}

static void reply_worlds(h2o_req_t *req, const worlds_t *w)
{
    preon_sink_t body;
    preon_sink_init(&body, &req->pool, 40 * (size_t)w->n + 2);
    if (w->single) {
        preon_json_world(&body, w->id[0], w->number[0]);
    } else {
        preon_sink_append(&body, "[", 1);
        for (int i = 0; i < w->n; i++) {
            if (i > 0)
                preon_sink_append(&body, ",", 1);
            preon_json_world(&body, w->id[i], w->number[i]);
        }
        preon_sink_append(&body, "]", 1);
    }
    preon_reply_text(req, 200, H2O_STRLIT("application/json"), body.buf, body.len);
}

static void on_worlds_done(preon_dbreq_t *r, h2o_req_t *req)
{
    reply_worlds(req, preon_dbreq_data(r));
}

static const preon_dbreq_ops_t worlds_ops = {.on_result = on_world, .on_done = on_worlds_done, .syncs = PREON_DBREQ_SYNCS_STRICT};

/* Queries n random World rows, each by its own statement, all in one pipeline write. */
static void read_worlds(preon_app_thread_t *thr, h2o_req_t *req, int n, int single, const preon_dbreq_ops_t *ops)
{
    preon_dbreq_t *r = preon_dbreq_create(req, (size_t)n, worlds_size(n), ops);
    worlds_t *w = worlds_init(r, n, single);
    for (int i = 0; i < n; i++) {
        char text[24];
        const char *params[] = {text};
        w->id[i] = (int32_t)preon_rand_range(&thr->rand, PREON_WORLD_ROWS);
        preon_format_int(text, w->id[i]);
        preon_dbreq_set(r, (size_t)i, PREON_STMT_WORLD_BY_ID, 0, 1, params);
    }
    preon_dbreq_run(r);
}

void preon__tfb_db(h2o_req_t *req, h2o_iovec_t param)
{
    preon_app_thread_t *thr = preon__app_thread(req);
    (void)param;
    read_worlds(thr, req, 1, 1, &worlds_ops);
}

void preon__tfb_queries(h2o_req_t *req, h2o_iovec_t param)
{
    preon_app_thread_t *thr = preon__app_thread(req);
    (void)param;
    read_worlds(thr, req, count_param(req, "queries"), 0, &worlds_ops);
}

/* /updates, second step: the write. Nothing to read from its result; the answer is what was written. */
static void on_written(preon_dbreq_t *r, size_t index, const preon_db_result_t *res)
{
    (void)r, (void)index, (void)res;
}

static const preon_dbreq_ops_t write_ops = {.on_result = on_written, .on_done = on_worlds_done, .syncs = PREON_DBREQ_SYNCS_STRICT};

static int by_id(const void *a, const void *b)
{
    return *(const int32_t *)a - *(const int32_t *)b;
}

/* Appends "{a,b,c}" (an int[] literal) of `n` values to `buf`. */
static void int_array(char *buf, size_t cap, const int32_t *v, int n, int stride)
{
    size_t len = 0;
    buf[len++] = '{';
    for (int i = 0; i < n && len + 24 < cap; i++) {
        if (i > 0)
            buf[len++] = ',';
        len += preon_format_int(buf + len, v[i * stride]);
    }
    buf[len++] = '}';
    buf[len] = '\0';
}

/* /updates, first step done: every row was read. Give each a new number and write them all in one statement. */
static void on_read_for_update(preon_dbreq_t *r, h2o_req_t *req)
{
    worlds_t *w = preon_dbreq_data(r);
    preon_app_thread_t *thr = preon_dbreq_state(r);
    /* Pairs (id, number) sorted by id, duplicates folded: rows are locked in one global order, and an id drawn
     * twice gets one new number, the same in the database and in every place of the answer. */
    int32_t pairs[MAX_QUERIES][2];
    int n = 0;
    for (int i = 0; i < w->n; i++)
        pairs[i][0] = w->id[i];
    qsort(pairs, (size_t)w->n, sizeof(pairs[0]), by_id);
    for (int i = 0; i < w->n; i++) {
        if (n != 0 && pairs[n - 1][0] == pairs[i][0])
            continue;
        pairs[n][0] = pairs[i][0];
        pairs[n][1] = (int32_t)preon_rand_range(&thr->rand, PREON_WORLD_ROWS);
        n++;
    }
    for (int i = 0; i < w->n; i++) {
        int32_t *hit = bsearch(&w->id[i], pairs, (size_t)n, sizeof(pairs[0]), by_id);
        w->number[i] = hit[1];
    }
    char ids[MAX_QUERIES * 7 + 3], numbers[MAX_QUERIES * 7 + 3];
    int_array(ids, sizeof(ids), &pairs[0][0], n, 2);
    int_array(numbers, sizeof(numbers), &pairs[0][1], n, 2);
    const char *params[] = {ids, numbers};

    preon_dbreq_t *wr = preon_dbreq_create(req, 1, worlds_size(w->n), &write_ops);
    preon_dbreq_continue(wr, r);
    worlds_t *ww = worlds_init(wr, w->n, w->single);
    memcpy(ww->storage, w->storage, 2 * (size_t)w->n * sizeof(int32_t));
    preon_dbreq_set(wr, 0, PREON_STMT_WORLD_UPDATE, PREON_DB_WRITE, 2, params);
    preon_dbreq_run(wr);
}

static const preon_dbreq_ops_t update_ops = {
    .on_result = on_world, .on_done = on_read_for_update, .syncs = PREON_DBREQ_SYNCS_STRICT};

void preon__tfb_updates(h2o_req_t *req, h2o_iovec_t param)
{
    preon_app_thread_t *thr = preon__app_thread(req);
    (void)param;
    read_worlds(thr, req, count_param(req, "queries"), 0, &update_ops);
}

/* /cached-queries: rows from a per-thread copy of World, loaded from the database on the thread's first use. */
static void reply_cached(preon_app_thread_t *thr, h2o_req_t *req)
{
    int n = count_param(req, "count");
    preon_sink_t body;
    preon_sink_init(&body, &req->pool, 40 * (size_t)n + 2);
    preon_sink_append(&body, "[", 1);
    for (int i = 0; i < n; i++) {
        uint32_t id = preon_rand_range(&thr->rand, PREON_WORLD_ROWS);
        if (i > 0)
            preon_sink_append(&body, ",", 1);
        preon_json_world(&body, id, thr->world_cache[id]);
    }
    preon_sink_append(&body, "]", 1);
    preon_reply_text(req, 200, H2O_STRLIT("application/json"), body.buf, body.len);
}

static void on_world_table(preon_dbreq_t *r, size_t index, const preon_db_result_t *res)
{
    preon_app_thread_t *thr = preon_dbreq_state(r);
    int rows = preon_db_result_rows(res);
    (void)index;
    if (thr->world_cache != NULL) /* another request filled it meanwhile */
        return;
    int32_t *cache = preon_calloc(PREON_WORLD_ROWS + 1, sizeof(*cache));
    for (int i = 0; i < rows; i++) {
        size_t len;
        int32_t id = int4_of(preon_db_result_value(res, i, 0, &len));
        if (id >= 1 && id <= PREON_WORLD_ROWS)
            cache[id] = int4_of(preon_db_result_value(res, i, 1, &len));
    }
    thr->world_cache = cache;
}

static void on_world_table_done(preon_dbreq_t *r, h2o_req_t *req)
{
    reply_cached(preon_dbreq_state(r), req);
}

static const preon_dbreq_ops_t cache_ops = {
    .on_result = on_world_table, .on_done = on_world_table_done, .syncs = PREON_DBREQ_SYNCS_STRICT};

void preon__tfb_cached_queries(h2o_req_t *req, h2o_iovec_t param)
{
    preon_app_thread_t *thr = preon__app_thread(req);
    (void)param;
    if (thr->world_cache != NULL) {
        reply_cached(thr, req);
        return;
    }
    preon_dbreq_run_one(req, PREON_STMT_WORLD_ALL, 0, NULL, 0, &cache_ops);
}
