/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include "internal.h"

/* preon_db_result_t is a PGresult under another name, so that handlers need not include libpq-fe.h. */

int preon_db_result_rows(const preon_db_result_t *res)
{
    return PQntuples((const PGresult *)res);
}

const char *preon_db_result_value(const preon_db_result_t *res, int row, int col, size_t *len)
{
    /* A NULL reads as "" of length 0 (libpq), so only an empty value needs asking whether it is NULL: one call fewer
     * per value, 26 per /fortunes answer. */
    const PGresult *r = (const PGresult *)res;
    *len = (size_t)PQgetlength(r, row, col);
    if (*len == 0 && PQgetisnull(r, row, col))
        return NULL;
    return PQgetvalue(r, row, col);
}

long preon_db_result_affected(const preon_db_result_t *res)
{
    const char *n = PQcmdTuples((PGresult *)res);
    return n[0] != '\0' ? strtol(n, NULL, 10) : 0;
}
