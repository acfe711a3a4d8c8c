/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include "handlers.h"
#include "preon/errors.h"
#include "preon/router.h"

static int match(const char *method, const char *path, preon_match_t *m)
{
    return preon_router_match(preon_routes, preon_nroutes, method, strlen(method), path, strlen(path), m);
}

static void test_known_routes(void **state)
{
    (void)state;
    preon_match_t m;
    assert_int_equal(match("GET", "/hello", &m), 0);
    assert_ptr_equal(m.route->handler, preon__hello_get);
    assert_int_equal(match("HEAD", "/hello", &m), 0);
    assert_int_equal(match("GET", "/fruits", &m), 0);
    assert_ptr_equal(m.route->handler, preon__fruits_list);
    assert_int_equal(match("GET", "/fruits/42", &m), 0);
    assert_ptr_equal(m.route->handler, preon__fruits_get);
    assert_int_equal(m.param.len, 2);
    /* one path, a handler per method */
    assert_int_equal(match("POST", "/fruits", &m), 0);
    assert_ptr_equal(m.route->handler, preon__fruits_create);
    assert_int_equal(match("PUT", "/fruits/42", &m), 0);
    assert_ptr_equal(m.route->handler, preon__fruits_update);
    assert_int_equal(match("DELETE", "/fruits/42", &m), 0);
    assert_ptr_equal(m.route->handler, preon__fruits_delete);
    assert_memory_equal(m.param.base, "42", 2);
}

static void test_param_is_passed_raw(void **state)
{
    (void)state;
    preon_match_t m;
    /* validation is the handler's job: the router hands over whatever the segment holds, even nothing */
    assert_int_equal(match("GET", "/fruits/abc", &m), 0);
    assert_int_equal(m.param.len, 3);
    assert_int_equal(match("GET", "/fruits/", &m), 0);
    assert_int_equal(m.param.len, 0);
}

static void test_not_found(void **state)
{
    (void)state;
    preon_match_t m;
    assert_int_equal(match("GET", "/", &m), PREON_ENOTFOUND);
    assert_int_equal(match("GET", "/hello/", &m), PREON_ENOTFOUND);
    assert_int_equal(match("GET", "/hellox", &m), PREON_ENOTFOUND);
    assert_int_equal(match("GET", "/fruits/1/2", &m), PREON_ENOTFOUND);
    assert_int_equal(match("GET", "/fruit", &m), PREON_ENOTFOUND);
    assert_int_equal(match("POST", "/nowhere", &m), PREON_ENOTFOUND);
}

static void test_method_not_allowed(void **state)
{
    (void)state;
    preon_match_t m;
    char allow[64];
    assert_int_equal(match("POST", "/hello", &m), PREON_EMETHOD);
    assert_int_equal(preon_router_allow(m.allow, allow, sizeof(allow)), strlen("GET, HEAD"));
    assert_string_equal(allow, "GET, HEAD");
    assert_int_equal(match("PATCH", "/fruits/1", &m), PREON_EMETHOD);
    preon_router_allow(m.allow, allow, sizeof(allow));
    assert_string_equal(allow, "GET, HEAD, PUT, DELETE");
    assert_int_equal(match("BREW", "/fruits", &m), PREON_EMETHOD);
    preon_router_allow(m.allow, allow, sizeof(allow));
    assert_string_equal(allow, "GET, HEAD, POST");
}

static void test_method_bits(void **state)
{
    (void)state;
    assert_int_equal(preon_method_bit("GET", 3), PREON_M_GET);
    assert_int_equal(preon_method_bit("DELETE", 6), PREON_M_DELETE);
    assert_int_equal(preon_method_bit("get", 3), 0);
    assert_int_equal(preon_method_bit("GETX", 4), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_routes),       cmocka_unit_test(test_param_is_passed_raw), cmocka_unit_test(test_not_found),
        cmocka_unit_test(test_method_not_allowed), cmocka_unit_test(test_method_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
