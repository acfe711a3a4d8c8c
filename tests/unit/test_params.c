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
    const char *why = NULL;
    int rv = preon_parse_id(s, strlen(s), out, &why);
    if (rv != 0)
        assert_non_null(why);
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
    const char *bad[] = {"0", "-1", "2147483648", "99999999999999999999999", "abc", "", "1abc", "+1", " 1", "1 ", "0x10", "-", "00"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse(bad[i], &v), PREON_EINVAL);
        assert_int_equal(v, 12345); /* untouched on failure */
    }
}

static void test_length_is_respected(void **state)
{
    (void)state;
    int32_t v = 0;
    const char *why;
    /* only the first two bytes are the segment */
    assert_int_equal(preon_parse_id("12/3", 2, &v, &why), 0);
    assert_int_equal(v, 12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_length_is_respected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
