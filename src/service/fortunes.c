/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "handlers.h"
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

int preon_fortunes_init(char *err, size_t errlen)
{
    char why[128];
    fortunes_template = preon_template_compile(preon_template_fortunes, preon_template_fortunes_len, why, sizeof(why));
    if (fortunes_template == NULL) {
        snprintf(err, errlen, "src/service/templates/fortunes.mustache: %s", why);
        return -1;
    }
    return 0;
}

void preon_fortunes_dispose(void)
{
    preon_template_destroy(fortunes_template);
    fortunes_template = NULL;
}

typedef struct {
    h2o_iovec_t id, message;
} fortune_t;

typedef struct {
    fortune_t *rows; /* in the request's pool */
    size_t n;
} fortunes_t;

static void on_rows(preon_dbreq_t *r, size_t index, const preon_db_result_t *res)
{
    fortunes_t *f = preon_dbreq_data(r);
    h2o_mem_pool_t *pool = &preon_dbreq_req(r)->pool;
    int rows = preon_db_result_rows(res);
    (void)index;
    f->rows = h2o_mem_alloc_pool(pool, sizeof(fortune_t) * ((size_t)rows + 1));
    for (int i = 0; i < rows; i++) {
        size_t len;
        const char *v = preon_db_result_value(res, i, 0, &len);
        f->rows[i].id = h2o_strdup(pool, v, len);
        v = preon_db_result_value(res, i, 1, &len);
        f->rows[i].message = h2o_strdup(pool, v != NULL ? v : "", len);
    }
    f->rows[rows].id = h2o_iovec_init(H2O_STRLIT("0"));
    f->rows[rows].message = h2o_iovec_init(H2O_STRLIT("Additional fortune added at request time."));
    f->n = (size_t)rows + 1;
}

/* Byte order of UTF-8 is code point order. */
static int by_message(const void *_a, const void *_b)
{
    const fortune_t *a = _a, *b = _b;
    size_t n = a->message.len < b->message.len ? a->message.len : b->message.len;
    int c = memcmp(a->message.base, b->message.base, n);
    return c != 0 ? c : (a->message.len > b->message.len) - (a->message.len < b->message.len);
}

static size_t count(void *ctx, const char *name)
{
    return strcmp(name, "fortunes") == 0 ? ((fortunes_t *)ctx)->n : 0;
}

static h2o_iovec_t value(void *ctx, const char *name, size_t item)
{
    fortunes_t *f = ctx;
    if (item == SIZE_MAX)
        return h2o_iovec_init("", 0);
    return strcmp(name, "id") == 0        ? f->rows[item].id
           : strcmp(name, "message") == 0 ? f->rows[item].message
                                          : h2o_iovec_init("", 0);
}

static void on_done(preon_dbreq_t *r, h2o_req_t *req)
{
    static const preon_template_data_t data = {count, value};
    fortunes_t *f = preon_dbreq_data(r);
    qsort(f->rows, f->n, sizeof(fortune_t), by_message);
    preon_sink_t out;
    preon_sink_init(&out, &req->pool, 2048);
    preon_template_render(fortunes_template, &data, f, &out);
    preon_reply_text(req, 200, H2O_STRLIT("text/html; charset=UTF-8"), out.buf, out.len);
}

static const preon_dbreq_ops_t ops = {.on_result = on_rows, .on_done = on_done, .syncs = PREON_DBREQ_SYNCS_STRICT};

void preon_tfb_fortunes(h2o_req_t *req, h2o_iovec_t param)
{
    (void)param;
    preon_dbreq_run_one(req, PREON_STMT_FORTUNES, 0, NULL, sizeof(fortunes_t), &ops);
}
