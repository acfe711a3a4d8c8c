/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include "preon/app.h"
#include "preon/json.h"
#include "preon/params.h"
#include "preon/reply.h"

/* Builds the JSON object of result row `row` (id, name); NULL if the name is not valid UTF-8. */
static json_t *fruit_of(const preon_db_result_t *res, int row)
{
    size_t idlen, namelen;
    const char *id = preon_db_result_value(res, row, 0, &idlen);
    const char *name = preon_db_result_value(res, row, 1, &namelen);
    return preon_json_fruit(strtoll(id, NULL, 10), name != NULL ? name : "", namelen);
}

static void on_list(h2o_req_t *req, const preon_db_result_t *res, void *arg)
{
    (void)arg;
    int rows = preon_db_result_rows(res);
    json_t *list = json_array();
    for (int i = 0; i < rows; i++) {
        json_t *f = fruit_of(res, i);
        if (f == NULL) {
            json_decref(list);
            preon_reply_error(req, 502, "database returned a name that is not valid UTF-8");
            return;
        }
        json_array_append_new(list, f);
    }
    preon_reply_json(req, 200, list);
    json_decref(list);
}

/* GET /fruits: every row, ordered by id. */
int preon_fruits_list(preon_thread_t *thr, h2o_req_t *req, h2o_iovec_t param)
{
    (void)thr, (void)param;
    preon_dbcall(req, PREON_STMT_FRUITS_ALL, 0, NULL, on_list, NULL);
    return 0;
}

static void on_one(h2o_req_t *req, const preon_db_result_t *res, void *arg)
{
    (void)arg;
    if (preon_db_result_rows(res) == 0) {
        preon_reply_error(req, 404, "no fruit with that id");
        return;
    }
    json_t *f = fruit_of(res, 0);
    if (f == NULL) {
        preon_reply_error(req, 502, "database returned a name that is not valid UTF-8");
        return;
    }
    preon_reply_json(req, 200, f);
    json_decref(f);
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
    preon_dbcall(req, PREON_STMT_FRUIT_BY_ID, 1, params, on_one, NULL);
    return 0;
}
