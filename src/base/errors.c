/* SPDX-License-Identifier: MIT */
#include "preon/errors.h"

static const struct {
    int code;
    const char *msg;
    int status;
} table[] = {
#define PREON_ERR_ROW(name, msg, status) {PREON_E##name, msg, status},
    PREON_ERRNO_MAP(PREON_ERR_ROW)
#undef PREON_ERR_ROW
};

const char *preon_strerror(int err)
{
    for (unsigned i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].code == err)
            return table[i].msg;
    return err == 0 ? "success" : "unknown error";
}

int preon_err_http_status(int err)
{
    for (unsigned i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].code == err)
            return table[i].status;
    return 500;
}
