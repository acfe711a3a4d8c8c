/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include "preon/errors.h"
#include "preon/params.h"

static int parse(const char *s, int32_t *out)
{
    char why[64] = "";
    int rv = preon_parse_id(s, strlen(s), out, why, sizeof(why));
    if (rv != 0)
        assert_true(strncmp(why, "must ", 5) == 0); /* a reason the caller puts after "parameter 'id' " */
    else
        assert_string_equal(why, ""); /* written on failure only */
    return rv;
}

static void test_valid(void **state)
{
    (void)state;
    int32_t v = 0;
    assert_int_equal(parse("1", &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(parse("2147483647", &v), 0);
    assert_int_equal(v, 2147483647);
    assert_int_equal(parse("007", &v), 0);
    assert_int_equal(v, 7);
}

static void test_invalid(void **state)
{
    (void)state;
    int32_t v = 12345;
    const char *bad[] = {"0",    "-1", "2147483648", "99999999999999999999999", "abc", "", "1abc", "+1", " 1", "1 ",
                         "0x10", "-",  "00"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse(bad[i], &v), PREON_EINVAL);
        assert_int_equal(v, 12345); /* untouched on failure */
    }
}

static void test_length_is_respected(void **state)
{
    (void)state;
    int32_t v = 0;
    char why[64];
    /* only the first two bytes are the segment */
    assert_int_equal(preon_parse_id("12/3", 2, &v, why, sizeof(why)), 0);
    assert_int_equal(v, 12);
}

static int clamped(const char *qs)
{
    return preon_query_int_clamped(qs, strlen(qs), "queries", 1, 500);
}

static void test_query_count_clamping(void **state)
{
    (void)state;
    assert_int_equal(clamped(""), 1);
    assert_int_equal(clamped("queries"), 1);
    assert_int_equal(clamped("queries="), 1);
    assert_int_equal(clamped("queries=foo"), 1);
    assert_int_equal(clamped("queries=0"), 1);
    assert_int_equal(clamped("queries=1"), 1);
    assert_int_equal(clamped("queries=20"), 20);
    assert_int_equal(clamped("queries=500"), 500);
    assert_int_equal(clamped("queries=501"), 500);
    assert_int_equal(clamped("queries=-1"), 1);
    assert_int_equal(clamped("queries=-"), 1);
    assert_int_equal(clamped("queries=20abc"), 1);
    assert_int_equal(clamped("queries=99999999999999999999999"), 500);
    assert_int_equal(clamped("a=1&queries=7&queries=9"), 7);
    assert_int_equal(clamped("xqueries=7"), 1);
    assert_int_equal(clamped("queriesx=7"), 1);
    /* only the given length is read */
    assert_int_equal(preon_query_int_clamped("queries=12", 9, "queries", 1, 500), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_length_is_respected),
        cmocka_unit_test(test_query_count_clamping),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
