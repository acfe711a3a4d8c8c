/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "preon/errors.h"
#include "preon/json.h"

/* Writes one fruit and compares the exact bytes. */
static void expect_fruit(long long id, const char *name, size_t len, const char *expected)
{
    h2o_mem_pool_t pool;
    h2o_mem_init_pool(&pool);
    preon_sink_t out;
    preon_sink_init(&out, &pool, 8);
    assert_int_equal(preon_json_fruit(&out, id, name, len), 0);
    assert_int_equal(out.len, strlen(expected));
    assert_memory_equal(out.buf, expected, out.len);
    h2o_mem_clear_pool(&pool);
}

static void test_plain(void **state)
{
    (void)state;
    expect_fruit(1, "Kiwi", 4, "{\"id\":1,\"name\":\"Kiwi\"}");
    expect_fruit(2147483647, "", 0, "{\"id\":2147483647,\"name\":\"\"}");
}

static void test_escaping(void **state)
{
    (void)state;
    expect_fruit(7, "a\"b\\c/d", 7, "{\"id\":7,\"name\":\"a\\\"b\\\\c/d\"}");
    expect_fruit(8, "tab\tnl\ncr\r", 10, "{\"id\":8,\"name\":\"tab\\tnl\\ncr\\r\"}");
    expect_fruit(9, "\x01\x1f\x7f", 3, "{\"id\":9,\"name\":\"\\u0001\\u001F\x7f\"}");
}

static void test_non_ascii_kept_as_utf8(void **state)
{
    (void)state;
    expect_fruit(3,
                 "Dur\xc3\xad"
                 "an \xe3\x81\xbf\xe3\x81\x8b\xe3\x82\x93 \xf0\x9f\x8d\x8d",
                 22,
                 "{\"id\":3,\"name\":\"Dur\xc3\xad"
                 "an \xe3\x81\xbf\xe3\x81\x8b\xe3\x82\x93 \xf0\x9f\x8d\x8d\"}");
}

static void test_embedded_nul_and_invalid_utf8(void **state)
{
    (void)state;
    h2o_mem_pool_t pool;
    h2o_mem_init_pool(&pool);
    preon_sink_t out;
    preon_sink_init(&out, &pool, 8);
    expect_fruit(4, "a\0b", 3, "{\"id\":4,\"name\":\"a\\u0000b\"}");
    /* refused whole: nothing written */
    static const char *const bad[] = {"\xff\xfe", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "ab\xc3"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(preon_json_fruit(&out, 5, bad[i], strlen(bad[i])), PREON_EINVAL);
        assert_int_equal(preon_json_string(&out, bad[i], strlen(bad[i])), PREON_EINVAL);
    }
    assert_int_equal(out.len, 0);
    h2o_mem_clear_pool(&pool);
}

/* jansson is the oracle: for random strings of bytes (biased to the edges: control characters, quotes, lead and
 * continuation bytes), the writer accepts exactly what json_stringn accepts and writes exactly json_dumps' bytes. */
static void test_same_bytes_as_jansson(void **state)
{
    (void)state;
    static const unsigned char pick[] = {0x00, 0x01, 0x08, 0x0c, 0x1f, 0x20, '"',  '\\', '/',  'a',  0x7f, 0x80, 0xbf,
                                         0xc2, 0xc3, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 0xa0, 0x9f, 0x90};
    unsigned seed = 12345;
    h2o_mem_pool_t pool;
    h2o_mem_init_pool(&pool);
    int accepted = 0;
    for (int round = 0; round < 20000; round++) {
        char s[12];
        size_t len = (size_t)(rand_r(&seed) % sizeof(s));
        for (size_t i = 0; i < len; i++)
            s[i] = (char)pick[rand_r(&seed) % sizeof(pick)];
        preon_sink_t out;
        preon_sink_init(&out, &pool, 4);
        int rv = preon_json_string(&out, s, len);
        json_t *j = json_stringn(s, len);
        assert_int_equal(rv == 0, j != NULL);
        if (j != NULL) {
            char *dumped = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
            assert_int_equal(out.len, strlen(dumped));
            assert_memory_equal(out.buf, dumped, out.len);
            free(dumped);
            json_decref(j);
            accepted++;
        }
    }
    assert_true(accepted > 1000 && accepted < 19000); /* both sides of the check were exercised */
    h2o_mem_clear_pool(&pool);
}

static void test_array_and_large_output(void **state)
{
    (void)state;
    h2o_mem_pool_t pool;
    h2o_mem_init_pool(&pool);
    preon_sink_t out;
    preon_sink_init(&out, &pool, 16);
    char name[600];
    memset(name, 'x', sizeof(name));
    preon_sink_append(&out, "[", 1);
    for (int i = 0; i < 50; i++) {
        if (i > 0)
            preon_sink_append(&out, ",", 1);
        assert_int_equal(preon_json_fruit(&out, i, name, sizeof(name)), 0);
    }
    preon_sink_append(&out, "]", 1);
    /* the output outgrows the first buffer many times and must still be whole */
    json_error_t jerr;
    json_t *back = json_loadb(out.buf, out.len, 0, &jerr);
    assert_non_null(back);
    assert_int_equal(json_array_size(back), 50);
    json_decref(back);
    h2o_mem_clear_pool(&pool);
}

static void test_error_and_world(void **state)
{
    (void)state;
    h2o_mem_pool_t pool;
    h2o_mem_init_pool(&pool);
    preon_sink_t out;
    preon_sink_init(&out, &pool, 8);
    preon_json_error(&out, 404, "no \"such\" fruit");
    preon_json_error(&out, 502, "bad \xff text");
    preon_json_world(&out, 42, 10000);
    const char *expected = "{\"error\":\"no \\\"such\\\" fruit\",\"status\":404}"
                           "{\"error\":\"(message is not valid UTF-8)\",\"status\":502}"
                           "{\"id\":42,\"randomNumber\":10000}";
    assert_int_equal(out.len, strlen(expected));
    assert_memory_equal(out.buf, expected, out.len);
    h2o_mem_clear_pool(&pool);
}

/* preon_format_int replaced snprintf("%lld") on the hot path: the same text for every value, extremes included. */
static void test_format_int_matches_printf(void **state)
{
    (void)state;
    const long long values[] = {
        0, 1, -1, 9, 10, 99, 100, 10000, -10000, 2147483647LL, -2147483648LL, 9223372036854775807LL, -9223372036854775807LL - 1};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char got[24], want[24];
        size_t n = preon_format_int(got, values[i]);
        snprintf(want, sizeof(want), "%lld", values[i]);
        assert_string_equal(got, want);
        assert_int_equal(n, strlen(want));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_int_matches_printf),
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_non_ascii_kept_as_utf8),
        cmocka_unit_test(test_embedded_nul_and_invalid_utf8),
        cmocka_unit_test(test_same_bytes_as_jansson),
        cmocka_unit_test(test_array_and_large_output),
        cmocka_unit_test(test_error_and_world),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
