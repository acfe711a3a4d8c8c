/* SPDX-License-Identifier: MIT */
#ifndef PREON_CONNINFO_H
#define PREON_CONNINFO_H

#include <stddef.h>

/*
 * The secrets of a libpq connection string (database.url), found the way libpq's own parser reads the string:
 * in a URI ("postgresql://" or "postgres://") the password of the user info ("user:secret@") and the values of
 * the query parameters password and sslpassword (also when their names are percent-encoded); in a key=value
 * string the values of password and sslpassword, quoted or not, with backslash escapes. preon never prints a
 * connection string or a message about one without passing it through these functions first.
 */

/** Called once per secret with its offset and length in the connection string (the raw text, still encoded). */
typedef void (*preon_conninfo_secret_cb)(size_t off, size_t len, void *ctx);

/** Calls `cb` for each secret of `conninfo`, left to right. Any string is accepted; malformed parts are skipped. */
void preon_conninfo_secrets(const char *conninfo, preon_conninfo_secret_cb cb, void *ctx);

/**
 * Returns a copy of `conninfo` with each secret replaced by "***" (a quoted one by '***'), or NULL for NULL.
 * The copy is malloc'd and owned by the caller (free it). A secret that was empty stays empty.
 */
char *preon_conninfo_redact(const char *conninfo);

/**
 * Returns a copy of `text` (a message about `conninfo`, e.g. libpq's reason why it could not parse it) with
 * every occurrence of a non-empty secret's raw text replaced by "***". malloc'd, owned by the caller.
 */
char *preon_conninfo_scrub(const char *conninfo, const char *text);

#endif
