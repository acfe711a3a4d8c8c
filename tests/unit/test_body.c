/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "body.h"
#include "preon/errors.h"

static void expect_ok(const char *body, const char *name)
{
    json_t *doc;
    const char *n;
    size_t len;
    char why[256] = "";
    assert_int_equal(preon__fruit_body_parse(body, strlen(body), &doc, &n, &len, why, sizeof(why)), 0);
    assert_int_equal(len, strlen(name));
    assert_memory_equal(n, name, len);
    json_decref(doc);
}

static void expect_bad(const char *body, size_t len, const char *why_part)
{
    json_t *doc = (json_t *)1;
    const char *n;
    size_t nlen;
    char why[256] = "";
    assert_int_equal(preon__fruit_body_parse(body, len, &doc, &n, &nlen, why, sizeof(why)), PREON_EINVAL);
    assert_null(doc);
    if (strstr(why, why_part) == NULL)
        fail_msg("'%s' does not contain '%s'", why, why_part);
}

static void test_valid(void **state)
{
    (void)state;
    expect_ok("{\"name\":\"Banana\"}", "Banana");
    expect_ok("{\"id\": 7, \"name\": \"Kiwi\"}", "Kiwi"); /* id is ignored */
    expect_ok("{\"id\": null, \"name\": \"Kiwi\"}", "Kiwi");
    expect_ok("{\"id\": 7.0, \"name\": \"Kiwi\"}", "Kiwi");
    expect_ok("{\"name\":\"'); DROP TABLE fruits; --\"}", "'); DROP TABLE fruits; --");
    expect_ok("{\"name\":\"Fran\\u00e7ais \xe6\xb0\xb4\"}", "Fran\xc3\xa7"
                                                            "ais \xe6\xb0\xb4");
}

static void test_invalid(void **state)
{
    (void)state;
#define BAD(s, why) expect_bad(s, strlen(s), why)
    BAD("", "body is empty");
    BAD("{\"name\":", "not valid JSON");
    BAD("[\"name\"]", "must be a JSON object");
    BAD("\"Banana\"", "must be a JSON object");
    BAD("{}", "'name' is missing");
    BAD("{\"name\":3}", "'name' must be a string");
    BAD("{\"name\":null}", "'name' must be a string");
    BAD("{\"name\":\"\"}", "'name' must not be empty");
    BAD("{\"name\":\"x\",\"color\":\"red\"}", "unknown field 'color'");
    BAD("{\"name\":\"x\",\"name\":\"y\"}", "not valid JSON");
    BAD("{\"id\":\"7\",\"name\":\"x\"}", "field 'id' must be an integer");
    BAD("{\"id\":{},\"name\":\"x\"}", "field 'id' must be an integer");
    BAD("{\"id\":7.5,\"name\":\"x\"}", "field 'id' must be an integer");
    BAD("{\"name\":\"a\\u0000b\"}", "not valid JSON");
    BAD("{\"name\":\"\xff\xfe\"}", "not valid UTF-8 (byte 9)");
    BAD("{\"name\":\"\xc0\xaf\"}", "not valid UTF-8");         /* overlong '/' */
    BAD("{\"name\":\"\xed\xa0\x80\"}", "not valid UTF-8");     /* a surrogate */
    BAD("{\"name\":\"\xf4\x90\x80\x80\"}", "not valid UTF-8"); /* above U+10FFFF */
    BAD("{\"name\":\"\xe6\xb0", "not valid UTF-8");            /* cut short */
    BAD("{\"name\":\"\\ud800\"}", "not valid JSON");           /* escaped lone surrogate */
#undef BAD
}

static void test_length_counts_characters(void **state)
{
    (void)state;
    char body[2048];
    /* 255 two-byte characters (510 bytes) are fine; 256 one-byte characters are not */
    int n = snprintf(body, sizeof(body), "{\"name\":\"");
    for (int i = 0; i < 255; i++)
        n += snprintf(body + n, sizeof(body) - n, "\xc3\xa9");
    snprintf(body + n, sizeof(body) - n, "\"}");
    json_t *doc;
    const char *name;
    size_t len;
    char why[256];
    assert_int_equal(preon__fruit_body_parse(body, strlen(body), &doc, &name, &len, why, sizeof(why)), 0);
    assert_int_equal(len, 510);
    json_decref(doc);
    n = snprintf(body, sizeof(body), "{\"name\":\"");
    for (int i = 0; i < 256; i++)
        body[n++] = 'x';
    snprintf(body + n, sizeof(body) - n, "\"}");
    expect_bad(body, strlen(body), "longer than 255 characters");
}

static void test_media_type(void **state)
{
    (void)state;
    const char *good[] = {"application/json", "Application/JSON", "application/json; charset=utf-8", " application/json ;x=y"};
    const char *bad[] = {"", "text/plain", "application/jsonx", "application/json-patch+json", "application/xml"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_true(preon__is_json_media_type(good[i], strlen(good[i])));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(preon__is_json_media_type(bad[i], strlen(bad[i])));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_length_counts_characters),
        cmocka_unit_test(test_media_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
