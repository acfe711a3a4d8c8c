/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "body.h"
#include "preon/errors.h"

int preon__is_json_media_type(const char *v, size_t len)
{
    static const char type[] = "application/json";
    size_t n = sizeof(type) - 1;
    while (len > 0 && (*v == ' ' || *v == '\t'))
        v++, len--;
    if (len < n || strncasecmp(v, type, n) != 0)
        return 0;
    v += n, len -= n;
    while (len > 0 && (*v == ' ' || *v == '\t'))
        v++, len--;
    return len == 0 || *v == ';';
}

/* Returns the offset of the first byte that is not part of well-formed UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or `len` if all of it is. */
static size_t utf8_invalid_at(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        size_t n;
        unsigned min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1, min = 0x80, c &= 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2, min = 0x800, c &= 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3, min = 0x10000, c &= 0x07;
        } else {
            return i;
        }
        for (size_t k = 1; k <= n; k++) {
            if (i + k >= len || (s[i + k] & 0xC0) != 0x80)
                return i;
            c = (c << 6) | (s[i + k] & 0x3F);
        }
        if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            return i;
        i += n + 1;
    }
    return len;
}

static size_t utf8_chars(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

/* An integer, also written as a number with a fraction of zero (7.0: JSON Schema's integer, jansson's real). */
static int is_integral(const json_t *v)
{
    if (json_is_integer(v))
        return 1;
    double x = json_real_value(v); /* 0 for what is not a real */
    return json_is_real(v) && x > -9.2e18 && x < 9.2e18 && (double)(long long)x == x;
}

int preon__fruit_body_parse(const char *body, size_t len, json_t **doc, const char **name, size_t *name_len, char *err,
                            size_t errlen)
{
    json_error_t jerr;
    *doc = NULL;
    size_t bad = utf8_invalid_at((const unsigned char *)body, len);
    if (bad != len) {
        snprintf(err, errlen, "body is not valid UTF-8 (byte %zu)", bad);
        return PREON_EINVAL;
    }
    /* jansson refuses \u0000 and lone surrogates in escapes (PostgreSQL text can hold neither). */
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (root == NULL) {
        if (len == 0)
            snprintf(err, errlen, "body is empty; expected a JSON object such as {\"name\":\"Banana\"}");
        else
            snprintf(err, errlen, "body is not valid JSON: %s at line %d, column %d", jerr.text, jerr.line, jerr.column);
        return PREON_EINVAL;
    }
    if (!json_is_object(root)) {
        snprintf(err, errlen, "body must be a JSON object such as {\"name\":\"Banana\"}");
        goto Error;
    }
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value)
    {
        if (strcmp(key, "name") != 0 && strcmp(key, "id") != 0) {
            snprintf(err, errlen, "unknown field '%.64s'; only 'name' may be given", key);
            goto Error;
        }
        /* The quickstart's clients send the row's id: an integer (or null), ignored; anything else is a mistake. */
        if (strcmp(key, "id") == 0 && !is_integral(value) && !json_is_null(value)) {
            snprintf(err, errlen, "field 'id' must be an integer (it is ignored)");
            goto Error;
        }
    }
    json_t *n = json_object_get(root, "name");
    if (n == NULL) {
        snprintf(err, errlen, "field 'name' is missing");
        goto Error;
    }
    if (!json_is_string(n)) {
        snprintf(err, errlen, "field 'name' must be a string");
        goto Error;
    }
    *name = json_string_value(n);
    *name_len = json_string_length(n);
    if (*name_len == 0) {
        snprintf(err, errlen, "field 'name' must not be empty");
        goto Error;
    }
    if (memchr(*name, '\0', *name_len) != NULL) {
        snprintf(err, errlen, "field 'name' must not contain NUL characters");
        goto Error;
    }
    if (utf8_chars(*name, *name_len) > PREON_FRUIT_NAME_MAX) {
        snprintf(err, errlen, "field 'name' is longer than %d characters", PREON_FRUIT_NAME_MAX);
        goto Error;
    }
    *doc = root;
    return 0;

Error:
    json_decref(root);
    return PREON_EINVAL;
}
