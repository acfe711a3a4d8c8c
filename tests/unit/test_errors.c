/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include "preon/errors.h"

static void test_status_mapping(void **state)
{
    (void)state;
    /* the error table (include/preon/errors.h): each code's HTTP status */
    assert_int_equal(preon_err_http_status(PREON_EQUEUEFULL), 503);
    assert_int_equal(preon_err_http_status(PREON_ENOTCONN), 503);
    assert_int_equal(preon_err_http_status(PREON_ESHUTDOWN), 503);
    assert_int_equal(preon_err_http_status(PREON_EDB), 502);
    assert_int_equal(preon_err_http_status(PREON_ECONNLOST), 502);
    assert_int_equal(preon_err_http_status(PREON_ETIMEDOUT), 504);
    assert_int_equal(preon_err_http_status(PREON_EINVAL), 400);
    assert_int_equal(preon_err_http_status(-1), 500);
}

static void test_messages(void **state)
{
    (void)state;
    assert_string_equal(preon_strerror(PREON_ETIMEDOUT), "database did not answer in time");
    assert_string_equal(preon_strerror(0), "success");
    assert_string_equal(preon_strerror(12345), "unknown error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_mapping),
        cmocka_unit_test(test_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
