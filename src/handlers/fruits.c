/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include "preon/app.h"
#include "preon/json.h"
#include "preon/params.h"
#include "preon/reply.h"

/* What a fruits query leaves for on_done: the JSON built from its rows (owned; freed by dispose). */
typedef struct {
    json_t *body;
} fruits_data_t;

/* Builds the JSON object of result row `row` (id, name); NULL if the name is not valid UTF-8. */
static json_t *fruit_of(const preon_db_result_t *res, int row)
{
    size_t idlen, namelen;
    const char *id = preon_db_result_value(res, row, 0, &idlen);
    const char *name = preon_db_result_value(res, row, 1, &namelen);
    return preon_json_fruit(strtoll(id, NULL, 10), name != NULL ? name : "", namelen);
}

static void on_done(preon_dbreq_t *r, h2o_req_t *req)
{
    fruits_data_t *d = preon_dbreq_data(r);
    if (d->body == NULL)
        preon_reply_error(req, 404, "no fruit with that id");
    else
        preon_reply_json(req, 200, d->body);
}

static void dispose(preon_dbreq_t *r)
{
    fruits_data_t *d = preon_dbreq_data(r);
    json_decref(d->body);
}

static void on_list(preon_dbreq_t *r, size_t index, const preon_db_result_t *res)
{
    fruits_data_t *d = preon_dbreq_data(r);
    int rows = preon_db_result_rows(res);
    (void)index;
    d->body = json_array();
    for (int i = 0; i < rows; i++) {
        json_t *f = fruit_of(res, i);
        if (f == NULL) {
            preon_dbreq_fail(r, 502, "database returned a name that is not valid UTF-8");
            return;
        }
        json_array_append_new(d->body, f);
    }
}

static void on_one(preon_dbreq_t *r, size_t index, const preon_db_result_t *res)
{
    fruits_data_t *d = preon_dbreq_data(r);
    (void)index;
    if (preon_db_result_rows(res) != 0 && (d->body = fruit_of(res, 0)) == NULL)
        preon_dbreq_fail(r, 502, "database returned a name that is not valid UTF-8");
}

static const preon_dbreq_ops_t list_ops = {on_list, on_done, dispose};
static const preon_dbreq_ops_t one_ops = {on_one, on_done, dispose};

/* GET /fruits: every row, ordered by id. */
int preon_fruits_list(preon_thread_t *thr, h2o_req_t *req, h2o_iovec_t param)
{
    (void)thr, (void)param;
    preon_dbreq_run_one(req, PREON_STMT_FRUITS_ALL, 0, NULL, sizeof(fruits_data_t), &list_ops);
    return 0;
}

/* GET /fruits/{id}: one row, 404 if none, 400 if id is not a positive 32-bit integer. */
int preon_fruits_get(preon_thread_t *thr, h2o_req_t *req, h2o_iovec_t param)
{
    (void)thr;
    int32_t id;
    const char *why;
    if (preon_parse_id(param.base, param.len, &id, &why) != 0) {
        char msg[128];
        snprintf(msg, sizeof(msg), "parameter 'id' %s", why);
        preon_reply_error(req, 400, msg);
        return 0;
    }
    char text[16];
    snprintf(text, sizeof(text), "%d", (int)id);
    const char *params[] = {text};
    preon_dbreq_run_one(req, PREON_STMT_FRUIT_BY_ID, 1, params, sizeof(fruits_data_t), &one_ops);
    return 0;
}
