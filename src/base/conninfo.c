/* SPDX-License-Identifier: MIT */
/*
 * Finding the password in a libpq connection string without libpq (config.c prints the configuration and may
 * not include libpq-fe.h). The scanners follow libpq 15's conninfo_uri_parse_options() and conninfo_parse()
 * step by step, because a redaction that reads the string differently from libpq either hides the host instead
 * of the password or prints the part of the password it did not expect.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "preon/alloc.h"
#include "preon/conninfo.h"

static int is_secret_name(const char *s, size_t len)
{
    return (len == 8 && memcmp(s, "password", 8) == 0) || (len == 11 && memcmp(s, "sslpassword", 11) == 0);
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A URI query parameter's name is percent-decoded by libpq before it is looked up ("p%61ssword" is password). */
static int is_secret_encoded_name(const char *s, size_t len)
{
    char name[16];
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        int c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= len)
                return 0;
            int hi = hexval((unsigned char)s[i + 1]), lo = hexval((unsigned char)s[i + 2]);
            if (hi < 0 || lo < 0)
                return 0;
            c = hi * 16 + lo;
            i += 2;
        }
        if (n == sizeof(name))
            return 0;
        name[n++] = (char)c;
    }
    return is_secret_name(name, n);
}

static size_t uri_prefix(const char *s)
{
    if (strncmp(s, "postgresql://", 13) == 0)
        return 13;
    if (strncmp(s, "postgres://", 11) == 0)
        return 11;
    return 0;
}

static void uri_secrets(const char *s, size_t prefix, preon_conninfo_secret_cb cb, void *ctx)
{
    /* libpq: user info ends at the first '@' seen before any '/'; the password follows the user's first ':'. */
    const char *start = s + prefix, *p = start;
    while (*p != '\0' && *p != '@' && *p != '/')
        p++;
    if (*p == '@') {
        const char *colon = memchr(start, ':', (size_t)(p - start));
        if (colon != NULL && p > colon + 1)
            cb((size_t)(colon + 1 - s), (size_t)(p - colon - 1), ctx);
        start = p + 1;
    }
    /* Hosts, separated by ',': "[IPv6]" (which may hold '?' and '&') or up to one of ":/?,"; each with an optional
     * ":port" up to one of "/?,". Then an optional "/dbname" up to '?', then the query. */
    p = start;
    for (;;) {
        if (*p == '[') {
            const char *close = strchr(p + 1, ']');
            if (close == NULL || close == p + 1)
                return; /* libpq rejects the string here */
            p = close + 1;
            if (*p != '\0' && strchr(":/?,", *p) == NULL)
                return;
        } else {
            p += strcspn(p, ":/?,");
        }
        if (*p == ':')
            p += 1 + strcspn(p + 1, "/?,");
        if (*p != ',')
            break;
        p++;
    }
    if (*p == '/')
        p += strcspn(p, "?");
    if (*p != '?')
        return;
    for (const char *param = p + 1; *param != '\0';) {
        size_t len = strcspn(param, "&");
        const char *eq = memchr(param, '=', len);
        if (eq != NULL && is_secret_encoded_name(param, (size_t)(eq - param))) {
            size_t vlen = len - (size_t)(eq + 1 - param);
            if (vlen > 0)
                cb((size_t)(eq + 1 - s), vlen, ctx);
        }
        param += len;
        if (*param == '&')
            param++;
    }
}

typedef struct {
    preon_conninfo_secret_cb cb;
    void *ctx;
    size_t base;
} shifted_t;

static void on_shifted(size_t off, size_t len, void *ctx)
{
    shifted_t *sh = ctx;
    sh->cb(sh->base + off, len, sh->ctx);
}

/* A URI where libpq reads key=value pairs (after a blank, say: " postgresql://u:pw@h") is a bad keyword to libpq,
 * which quotes it whole in its complaint ("missing \"=\" after ..."): its password is a secret all the same. */
static void misplaced_uri_secrets(const char *s, const char *name, size_t nlen, preon_conninfo_secret_cb cb, void *ctx)
{
    char *token = preon_strndup(name, nlen);
    shifted_t sh = {cb, ctx, (size_t)(name - s)};
    uri_secrets(token, (size_t)(strstr(token, "://") + 3 - token), on_shifted, &sh);
    free(token);
}

/* ... and the value after " postgresql://h/d?password=" is that URI's password. */
static int ends_with_secret_param(const char *name, size_t nlen)
{
    if (memmem(name, nlen, "://", 3) == NULL)
        return 0;
    size_t start = nlen;
    while (start > 0 && name[start - 1] != '?' && name[start - 1] != '&')
        start--;
    return start > 0 && is_secret_encoded_name(name + start, nlen - start);
}

static void keyword_secrets(const char *s, preon_conninfo_secret_cb cb, void *ctx)
{
    const char *cp = s;
    while (*cp != '\0') {
        if (isspace((unsigned char)*cp)) {
            cp++;
            continue;
        }
        /* The name ends at '=' or at blanks, which may be followed by '='. */
        const char *name = cp;
        while (*cp != '\0' && *cp != '=' && !isspace((unsigned char)*cp))
            cp++;
        size_t nlen = (size_t)(cp - name);
        if (memmem(name, nlen, "://", 3) != NULL)
            misplaced_uri_secrets(s, name, nlen, cb, ctx);
        while (isspace((unsigned char)*cp))
            cp++;
        if (*cp != '=')
            return; /* libpq rejects the string here: nothing after it is read as a value */
        cp++;
        while (isspace((unsigned char)*cp))
            cp++;
        /* The value: up to a blank, or between single quotes; a backslash escapes the next character in both. */
        int quoted = *cp == '\'';
        const char *val = cp + quoted;
        for (cp = val; *cp != '\0'; cp++) {
            if (*cp == '\\') {
                if (cp[1] == '\0')
                    break;
                cp++;
            } else if (quoted ? *cp == '\'' : isspace((unsigned char)*cp) != 0) {
                break;
            }
        }
        if (cp > val && (is_secret_name(name, nlen) || ends_with_secret_param(name, nlen)))
            cb((size_t)(val - s), (size_t)(cp - val), ctx);
        if (*cp != '\0')
            cp++; /* the closing quote or the blank */
    }
}

void preon_conninfo_secrets(const char *conninfo, preon_conninfo_secret_cb cb, void *ctx)
{
    size_t prefix = uri_prefix(conninfo);
    if (prefix != 0)
        uri_secrets(conninfo, prefix, cb, ctx);
    else
        keyword_secrets(conninfo, cb, ctx);
}

typedef struct {
    size_t *off, *len, n, cap;
} spans_t;

static void on_span(size_t off, size_t len, void *ctx)
{
    spans_t *sp = ctx;
    if (sp->n == sp->cap) {
        sp->cap = sp->cap != 0 ? sp->cap * 2 : 8;
        sp->off = preon_realloc(sp->off, sp->cap * sizeof(*sp->off));
        sp->len = preon_realloc(sp->len, sp->cap * sizeof(*sp->len));
    }
    sp->off[sp->n] = off;
    sp->len[sp->n++] = len;
}

static void spans_dispose(spans_t *sp)
{
    free(sp->off);
    free(sp->len);
}

char *preon_conninfo_redact(const char *conninfo)
{
    if (conninfo == NULL)
        return NULL;
    spans_t sp = {NULL, NULL, 0, 0};
    preon_conninfo_secrets(conninfo, on_span, &sp);
    size_t inlen = strlen(conninfo);
    char *out = preon_malloc(inlen + 3 * sp.n + 1), *o = out;
    size_t from = 0;
    for (size_t i = 0; i < sp.n; i++) {
        memcpy(o, conninfo + from, sp.off[i] - from);
        o += sp.off[i] - from;
        memcpy(o, "***", 3);
        o += 3;
        from = sp.off[i] + sp.len[i];
    }
    memcpy(o, conninfo + from, inlen - from);
    o[inlen - from] = '\0';
    spans_dispose(&sp);
    return out;
}

char *preon_conninfo_scrub(const char *conninfo, const char *text)
{
    spans_t sp = {NULL, NULL, 0, 0};
    preon_conninfo_secrets(conninfo, on_span, &sp);
    size_t cap = strlen(text) + 1;
    char *out = preon_malloc(cap), *o = out;
    /* "***" is at most as long as what it replaces only for secrets of 3 bytes or more; shorter ones grow it. */
    for (const char *t = text; *t != '\0';) {
        size_t hit = 0;
        for (size_t i = 0; i < sp.n && hit == 0; i++)
            if (strncmp(t, conninfo + sp.off[i], sp.len[i]) == 0)
                hit = sp.len[i];
        size_t need = (size_t)(o - out) + (hit != 0 ? 3 : 1) + 1;
        if (need > cap) {
            size_t at = (size_t)(o - out);
            cap = cap * 2 + 4;
            out = preon_realloc(out, cap);
            o = out + at;
        }
        if (hit != 0) {
            memcpy(o, "***", 3), o += 3;
            t += hit;
        } else {
            *o++ = *t++;
        }
    }
    *o = '\0';
    spans_dispose(&sp);
    return out;
}
