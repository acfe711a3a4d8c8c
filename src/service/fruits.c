/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include "handlers.h"
#include "body.h"
#include "preon/errors.h"
#include "preon/json.h"
#include "params.h"
#include "preon/reply.h"

/* What a fruits query leaves for on_done: the JSON answer, already written into the request's pool, the row's id
 * for a Location header (for a page: its last row's), for writes how many rows the statement touched, and for a page
 * its size asked and the rows it got. Nothing here needs freeing. */
typedef struct {
    h2o_iovec_t body; /* {NULL, 0}: no row */
    long long id;
    long affected;
    int limit, rows;
} fruits_data_t;

/* Writes result row `row` (id, name) as a JSON object into `out`; PREON_EINVAL (nothing written) if the name is not
 * valid UTF-8. */
static int put_fruit(preon_sink_t *out, const preon_db_result_t *res, int row, long long *id)
{
    size_t idlen, namelen;
    const char *idtext = preon_db_result_value(res, row, 0, &idlen);
    const char *name = preon_db_result_value(res, row, 1, &namelen);
    *id = strtoll(idtext, NULL, 10);
    return preon_json_fruit(out, *id, name != NULL ? name : "", namelen);
}

static void on_done(preon_dbreq_t *r, h2o_req_t *req)
{
    fruits_data_t *d = preon_dbreq_data(r);
    if (d->body.base == NULL)
        preon_reply_error(req, 404, "no fruit with that id");
    else
        preon_reply_text(req, 200, H2O_STRLIT("application/json"), d->body.base, d->body.len);
}

static void on_list(preon_dbreq_t *r, size_t index, const preon_db_result_t *res)
{
    fruits_data_t *d = preon_dbreq_data(r);
    int rows = preon_db_result_rows(res);
    long long id;
    preon_sink_t out;
    (void)index;
    preon_sink_init(&out, &preon_dbreq_req(r)->pool, 32 * (size_t)rows + 2);
    preon_sink_append(&out, "[", 1);
    for (int i = 0; i < rows; i++) {
        if (i > 0)
            preon_sink_append(&out, ",", 1);
        if (put_fruit(&out, res, i, &id) != 0) {
            preon_dbreq_fail(r, PREON_EDB, "database returned a name that is not valid UTF-8");
            return;
        }
    }
    preon_sink_append(&out, "]", 1);
    d->body = h2o_iovec_init(out.buf, out.len);
    d->rows = rows;
    d->id = rows > 0 ? id : 0;
}

static void on_one(preon_dbreq_t *r, size_t index, const preon_db_result_t *res)
{
    fruits_data_t *d = preon_dbreq_data(r);
    preon_sink_t out;
    (void)index;
    if (preon_db_result_rows(res) == 0)
        return;
    preon_sink_init(&out, &preon_dbreq_req(r)->pool, 64);
    if (put_fruit(&out, res, 0, &d->id) != 0)
        preon_dbreq_fail(r, PREON_EDB, "database returned a name that is not valid UTF-8");
    else
        d->body = h2o_iovec_init(out.buf, out.len);
}

/* Parses the {id} segment into `text`: 0, or PREON_EINVAL after answering 400 itself when it is not a positive 32-bit
 * integer. */
static int read_id(h2o_req_t *req, h2o_iovec_t param, char *text, size_t len)
{
    int32_t id;
    char why[64];
    if (preon__parse_id(param.base, param.len, &id, why, sizeof(why)) != 0) {
        char msg[128];
        snprintf(msg, sizeof(msg), "parameter 'id' %s", why);
        preon_reply_error(req, 400, msg);
        return PREON_EINVAL;
    }
    snprintf(text, len, "%d", (int)id);
    return 0;
}

/* A full page may have a next one: it says where, as RFC 8288's Link (a short page is the last). */
static void on_page(preon_dbreq_t *r, h2o_req_t *req)
{
    fruits_data_t *d = preon_dbreq_data(r);
    if (d->rows == d->limit) {
        char link[80];
        int n = snprintf(link, sizeof(link), "</fruits?after=%lld&limit=%d>; rel=\"next\"", d->id, d->limit);
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_LINK, NULL, h2o_strdup(&req->pool, link, n).base, n);
    }
    preon_reply_text(req, 200, H2O_STRLIT("application/json"), d->body.base, d->body.len);
}

static const preon_dbreq_ops_t list_ops = {.on_result = on_list, .on_done = on_page, .syncs = PREON_DBREQ_SYNCS_API};
static const preon_dbreq_ops_t one_ops = {.on_result = on_one, .on_done = on_done, .syncs = PREON_DBREQ_SYNCS_API};

/* GET /fruits[?after=ID&limit=N]: one page of rows in id order, keyset-paged (docs/api.md, "Paging"). */
void preon__fruits_list(h2o_req_t *req, h2o_iovec_t param)
{
    preon_page_t page;
    char why[96], after[16], limit[16];
    (void)param;
    h2o_iovec_t qs = req->query_at == SIZE_MAX
                         ? h2o_iovec_init("", 0)
                         : h2o_iovec_init(req->path.base + req->query_at + 1, req->path.len - req->query_at - 1);
    if (preon__query_page(qs.base, qs.len, &page, why, sizeof(why)) != 0) {
        preon_reply_error(req, 400, why);
        return;
    }
    snprintf(after, sizeof(after), "%d", (int)page.after);
    snprintf(limit, sizeof(limit), "%d", page.limit);
    const char *params[] = {after, limit};
    preon_dbreq_t *r = preon_dbreq_create(req, 1, sizeof(fruits_data_t), &list_ops);
    ((fruits_data_t *)preon_dbreq_data(r))->limit = page.limit;
    preon_dbreq_set(r, 0, PREON_STMT_FRUITS_PAGE, 0, 2, params);
    preon_dbreq_run(r);
}

/* GET /fruits/{id}: one row, 404 if none, 400 if id is not a positive 32-bit integer. */
void preon__fruits_get(h2o_req_t *req, h2o_iovec_t param)
{
    char text[16];
    if (read_id(req, param, text, sizeof(text)) != 0)
        return;
    const char *params[] = {text};
    preon_dbreq_run_one(req, PREON_STMT_FRUIT_BY_ID, 1, params, sizeof(fruits_data_t), &one_ops);
}

/*
 * POST /fruits, PUT /fruits/{id}, DELETE /fruits/{id}: the CRUD API of Quarkus's reactive SQL client
 * quickstart. Each write is one prepared statement behind its own Sync (its own implicit transaction); a
 * constraint violation comes back as 409 (dbreq maps SQLSTATE class 23).
 */

static void on_written(preon_dbreq_t *r, size_t index, const preon_db_result_t *res)
{
    fruits_data_t *d = preon_dbreq_data(r);
    d->affected = preon_db_result_affected(res);
    on_one(r, index, res); /* RETURNING id, name */
}

static void on_created(preon_dbreq_t *r, h2o_req_t *req)
{
    fruits_data_t *d = preon_dbreq_data(r);
    char location[64];
    int n = snprintf(location, sizeof(location), "/fruits/%lld", d->id);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_LOCATION, NULL, h2o_strdup(&req->pool, location, n).base, n);
    preon_reply_text(req, 201, H2O_STRLIT("application/json"), d->body.base, d->body.len);
}

static void on_deleted(preon_dbreq_t *r, h2o_req_t *req)
{
    fruits_data_t *d = preon_dbreq_data(r);
    if (d->affected == 0)
        preon_reply_error(req, 404, "no fruit with that id");
    else
        preon_reply_empty(req, 204);
}

static const preon_dbreq_ops_t create_ops = {.on_result = on_written, .on_done = on_created, .syncs = PREON_DBREQ_SYNCS_API};
static const preon_dbreq_ops_t update_ops = {.on_result = on_written, .on_done = on_done, .syncs = PREON_DBREQ_SYNCS_API};
static const preon_dbreq_ops_t delete_ops = {.on_result = on_written, .on_done = on_deleted, .syncs = PREON_DBREQ_SYNCS_API};

/* Checks Content-Type and body; answers 415/400 itself and returns NULL, or returns the parsed document. */
static json_t *read_body(h2o_req_t *req, const char **name, size_t *name_len)
{
    ssize_t ct = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
    if (ct == -1 || !preon__is_json_media_type(req->headers.entries[ct].value.base, req->headers.entries[ct].value.len)) {
        preon_reply_error(req, 415, "Content-Type must be application/json");
        return NULL;
    }
    json_t *doc;
    char why[256];
    if (preon__fruit_body_parse(req->entity.base, req->entity.len, &doc, name, name_len, why, sizeof(why)) != 0) {
        preon_reply_error(req, 400, why);
        return NULL;
    }
    return doc;
}

static void run_write(h2o_req_t *req, unsigned stmt, int nparams, const char *const *params, const preon_dbreq_ops_t *ops)
{
    preon_dbreq_t *r = preon_dbreq_create(req, 1, sizeof(fruits_data_t), ops);
    preon_dbreq_set(r, 0, stmt, PREON_DB_WRITE, nparams, params);
    preon_dbreq_run(r);
}

void preon__fruits_create(h2o_req_t *req, h2o_iovec_t param)
{
    const char *name;
    size_t name_len;
    (void)param;
    json_t *doc = read_body(req, &name, &name_len);
    if (doc == NULL)
        return;
    const char *params[] = {name};
    run_write(req, PREON_STMT_FRUIT_INSERT, 1, params, &create_ops); /* copies the name */
    json_decref(doc);
}

void preon__fruits_update(h2o_req_t *req, h2o_iovec_t param)
{
    char id[16];
    const char *name;
    size_t name_len;
    if (read_id(req, param, id, sizeof(id)) != 0)
        return;
    json_t *doc = read_body(req, &name, &name_len);
    if (doc == NULL)
        return;
    const char *params[] = {id, name};
    run_write(req, PREON_STMT_FRUIT_UPDATE, 2, params, &update_ops);
    json_decref(doc);
}

void preon__fruits_delete(h2o_req_t *req, h2o_iovec_t param)
{
    char id[16];
    if (read_id(req, param, id, sizeof(id)) != 0)
        return;
    const char *params[] = {id};
    run_write(req, PREON_STMT_FRUIT_DELETE, 1, params, &delete_ops);
}
