/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the redaction of database.url, with libpq itself as the oracle. Whatever password libpq reads
 * from a string, it must read "***" from the redacted string instead, and a message scrubbed of the secrets
 * (libpq's own complaint, or the string itself) must not contain any of them. */
#include <libpq-fe.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "preon/conninfo.h"

/* The values libpq parsed for password and sslpassword ("" when unset); NULL when it rejected the string. */
static int parse(const char *s, char **pw, char **sslpw, char **err)
{
    PQconninfoOption *opts = PQconninfoParse(s, err);
    if (opts == NULL)
        return -1;
    *pw = strdup(""), *sslpw = strdup("");
    for (PQconninfoOption *o = opts; o->keyword != NULL; o++) {
        if (o->val != NULL && strcmp(o->keyword, "password") == 0)
            free(*pw), *pw = strdup(o->val);
        if (o->val != NULL && strcmp(o->keyword, "sslpassword") == 0)
            free(*sslpw), *sslpw = strdup(o->val);
    }
    PQconninfoFree(opts);
    return 0;
}

static void expect_masked(const char *before, const char *after)
{
    if (before[0] != '\0' && strcmp(after, "***") != 0)
        __builtin_trap();
    if (before[0] == '\0' && after[0] != '\0')
        __builtin_trap();
}

typedef struct {
    const char *s, *text;
} check_t;

static void on_secret(size_t off, size_t len, void *ctx)
{
    const check_t *c = ctx;
    if (memchr(c->s + off, '*', len) != NULL)
        return; /* a secret made of the mask's own character may reappear next to a mask */
    char *secret = strndup(c->s + off, len);
    if (strstr(c->text, secret) != NULL)
        __builtin_trap();
    free(secret);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = strndup((const char *)data, size);
    char *shown = preon_conninfo_redact(s);
    char *pw = NULL, *sslpw = NULL, *err = NULL;
    if (parse(s, &pw, &sslpw, &err) == 0) {
        char *pw2 = NULL, *sslpw2 = NULL, *err2 = NULL;
        if (parse(shown, &pw2, &sslpw2, &err2) != 0)
            __builtin_trap(); /* redaction broke a string libpq accepted */
        expect_masked(pw, pw2);
        expect_masked(sslpw, sslpw2);
        free(pw), free(sslpw), free(pw2), free(sslpw2);
    }
    const char *texts[] = {err != NULL ? err : "", s};
    for (size_t i = 0; i < 2; i++) {
        char *scrubbed = preon_conninfo_scrub(s, texts[i]);
        check_t c = {s, scrubbed};
        preon_conninfo_secrets(s, on_secret, &c);
        free(scrubbed);
    }
    PQfreemem(err);
    free(shown);
    free(s);
    return 0;
}
