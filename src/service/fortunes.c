/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "handlers.h"
#include "preon/errors.h"
#include "preon/assert.h"
#include "preon/reply.h"
#include "template.h"

/*
 * /fortunes: every Fortune row plus one added at request time, sorted by message, rendered through the template
 * src/service/templates/fortunes.mustache (compiled into the binary, parsed once at start-up) with every message
 * HTML-escaped by the template engine.
 */
extern const char preon_template_fortunes[];
extern const size_t preon_template_fortunes_len;

static preon_template_t *fortunes_template;

/* The names the template may use, in the order of their indexes. */
enum { NAME_FORTUNES, NAME_ID, NAME_MESSAGE };
static const char *const names[] = {"fortunes", "id", "message", NULL};

int preon__fortunes_init(char *err, size_t errlen)
{
    char why[128];
    fortunes_template = preon__template_compile(preon_template_fortunes, preon_template_fortunes_len, names, why, sizeof(why));
    if (fortunes_template == NULL) {
        snprintf(err, errlen, "src/service/templates/fortunes.mustache: %s", why);
        return PREON_EINVAL;
    }
    return 0;
}

void preon__fortunes_dispose(void)
{
    preon__template_destroy(fortunes_template);
    fortunes_template = NULL;
}

typedef struct {
    h2o_iovec_t id, message;
} fortune_t;

/* What the template reads: the rows, sorted. Their text is borrowed from the result for as long as on_rows runs. */
typedef struct {
    fortune_t *rows;
    size_t n;
} fortunes_t;

/* Byte order of UTF-8 is code point order. The first bytes, compared here, decide most pairs without memcmp. */
static int by_message(const void *_a, const void *_b)
{
    const fortune_t *a = _a, *b = _b;
    if (a->message.len != 0 && b->message.len != 0 && a->message.base[0] != b->message.base[0])
        return (unsigned char)a->message.base[0] - (unsigned char)b->message.base[0];
    size_t n = a->message.len < b->message.len ? a->message.len : b->message.len;
    int c = memcmp(a->message.base, b->message.base, n);
    return c != 0 ? c : (a->message.len > b->message.len) - (a->message.len < b->message.len);
}

/* Up to this many rows (TechEmpower's table has 12, plus the one added) are sorted in place on the stack. */
#define SMALL_ROWS 32

/* Insertion sort for TechEmpower's 13 rows: glibc's qsort is a merge sort through a comparison callback, 3.5k
 * instructions per answer there, where the first bytes of two messages nearly always decide. qsort beyond SMALL_ROWS. */
static void sort_fortunes(fortune_t *rows, size_t n)
{
    if (n > SMALL_ROWS) {
        qsort(rows, n, sizeof(*rows), by_message);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        fortune_t x = rows[i];
        size_t j = i;
        while (j > 0 && by_message(&rows[j - 1], &x) > 0) {
            rows[j] = rows[j - 1];
            j--;
        }
        rows[j] = x;
    }
}

static size_t count(void *ctx, size_t name)
{
    return name == NAME_FORTUNES ? ((fortunes_t *)ctx)->n : 0;
}

static h2o_iovec_t value(void *ctx, size_t name, size_t item)
{
    fortunes_t *f = ctx;
    if (item == SIZE_MAX)
        return h2o_iovec_init("", 0);
    return name == NAME_ID ? f->rows[item].id : name == NAME_MESSAGE ? f->rows[item].message : h2o_iovec_init("", 0);
}

/*
 * The page is rendered as soon as the rows are in, straight from the result's text (no copy of each value into the
 * pool first), into the sink kept in the dbreq's data; on_done sends it once the Sync has come back. If the Sync
 * fails, the request is answered with the error instead and the rendered page goes with the request's pool.
 */
static void on_rows(preon_dbreq_t *r, size_t index, const preon_db_result_t *res)
{
    static const preon_template_data_t data = {count, value};
    preon_sink_t *out = preon_dbreq_data(r);
    h2o_mem_pool_t *pool = &preon_dbreq_req(r)->pool;
    size_t n = (size_t)preon_db_result_rows(res);
    fortune_t local[SMALL_ROWS];
    fortunes_t f = {n + 1 <= SMALL_ROWS ? local : h2o_mem_alloc_pool(pool, sizeof(fortune_t) * (n + 1)), n + 1};
    (void)index;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *v = preon_db_result_value(res, (int)i, 0, &len);
        f.rows[i].id = h2o_iovec_init(v != NULL ? v : "", len);
        v = preon_db_result_value(res, (int)i, 1, &len);
        f.rows[i].message = h2o_iovec_init(v != NULL ? v : "", len);
    }
    f.rows[n].id = h2o_iovec_init(H2O_STRLIT("0"));
    f.rows[n].message = h2o_iovec_init(H2O_STRLIT("Additional fortune added at request time."));
    sort_fortunes(f.rows, f.n);
    preon_sink_init(out, pool, 2048);
    preon__template_render(fortunes_template, &data, &f, out);
}

static void on_done(preon_dbreq_t *r, h2o_req_t *req)
{
    preon_sink_t *out = preon_dbreq_data(r);
    PREON_ASSERT(out->buf != NULL); /* on_rows ran: one statement, and the request is answered only if it succeeded */
    preon_reply_text(req, 200, H2O_STRLIT("text/html; charset=UTF-8"), out->buf, out->len);
}

static const preon_dbreq_ops_t ops = {.on_result = on_rows, .on_done = on_done, .syncs = PREON_DBREQ_SYNCS_STRICT};

void preon__tfb_fortunes(h2o_req_t *req, h2o_iovec_t param)
{
    (void)param;
    preon_dbreq_run_one(req, PREON_STMT_FORTUNES, 0, NULL, sizeof(preon_sink_t), &ops);
}
