/* SPDX-License-Identifier: MIT */
#ifndef PREON_BODY_H
#define PREON_BODY_H

#include <jansson.h>
#include <stddef.h>

/** Longest fruit name, in characters (Unicode code points), as the Quarkus quickstart's column allows. */
#define PREON_FRUIT_NAME_MAX 255

/** Whether a Content-Type value is application/json, case-insensitively, parameters (";charset=utf-8") allowed. */
int preon__is_json_media_type(const char *value, size_t len);

/**
 * Validates a fruit body: a JSON object whose "name" is a non-empty string of at most PREON_FRUIT_NAME_MAX
 * characters, valid UTF-8 without NUL; an "id" field is ignored (the quickstart's clients send one); any other
 * field is refused. On success returns 0, stores the parsed document in `*doc` (a new reference: the caller
 * decrefs it) and points `*name`/`*name_len` into it. On failure returns PREON_EINVAL and writes a message for
 * the client, naming the problem, into `err`.
 */
int preon__fruit_body_parse(const char *body, size_t len, json_t **doc, const char **name, size_t *name_len, char *err,
                            size_t errlen);

#endif
