/* SPDX-License-Identifier: MIT */
#ifndef PREON_ERRORS_H
#define PREON_ERRORS_H

/*
 * One table gives every error code, its message and the HTTP status a request gets when the error
 * reaches it. Functions that return int answer 0 or one of these negative codes; those that can say why they
 * failed write it, on failure only, to a caller's buffer `char *err, size_t errlen`.
 */
#define PREON_ERRNO_MAP(XX)                                                                                                        \
    XX(INVAL, "invalid argument", 400)                                                                                             \
    XX(NOTFOUND, "not found", 404)                                                                                                 \
    XX(METHOD, "method not allowed", 405)                                                                                          \
    XX(QUEUEFULL, "database queue is full", 503)                                                                                   \
    XX(OVERLOADED, "database is overloaded: queries wait too long", 503)                                                           \
    XX(NOTCONN, "database is not connected", 503)                                                                                  \
    XX(SHUTDOWN, "server is shutting down", 503)                                                                                   \
    XX(CONNLOST, "database connection was lost", 502)                                                                              \
    XX(DB, "database returned an error", 502)                                                                                      \
    XX(CONFLICT, "conflicts with a database constraint", 409)                                                                      \
    XX(RETRY, "transaction could not be completed; retry", 503)                                                                    \
    XX(TIMEDOUT, "database did not answer in time", 504)                                                                           \
    XX(CANCELED, "not sent: its request no longer needs it", 503)                                                                  \
    XX(BUSY, "already sent to the database", 500)                                                                                  \
    XX(IO, "input/output error", 500)

typedef enum {
    PREON_OK = 0,
#define PREON_ERR_ENUM(name, msg, status) PREON_E##name,
    PREON__ERR_FIRST = -1000,
    PREON_ERRNO_MAP(PREON_ERR_ENUM)
#undef PREON_ERR_ENUM
        PREON__ERR_END
} preon_errno_t;

/** Returns a static message for an error code (never NULL; "unknown error" for unknown codes). */
const char *preon_strerror(int err);

/** Returns the HTTP status a request gets when `err` reaches it (500 for unknown codes). */
int preon_err_http_status(int err);

#endif
