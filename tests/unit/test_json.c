/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include "preon/json.h"

/* Encodes one fruit and compares the exact bytes. */
static void expect_fruit(long long id, const char *name, size_t len, const char *expected)
{
    h2o_mem_pool_t pool;
    h2o_mem_init_pool(&pool);
    json_t *f = preon_json_fruit(id, name, len);
    assert_non_null(f);
    h2o_iovec_t out = preon_json_dump(f, &pool);
    json_decref(f);
    assert_int_equal(out.len, strlen(expected));
    assert_memory_equal(out.base, expected, out.len);
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
    expect_fruit(9, "\x01\x1f", 2, "{\"id\":9,\"name\":\"\\u0001\\u001F\"}");
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
    expect_fruit(4, "a\0b", 3, "{\"id\":4,\"name\":\"a\\u0000b\"}");
    assert_null(preon_json_fruit(5, "\xff\xfe", 2));
}

static void test_array_and_large_output(void **state)
{
    (void)state;
    h2o_mem_pool_t pool;
    h2o_mem_init_pool(&pool);
    json_t *list = json_array();
    char name[600];
    memset(name, 'x', sizeof(name));
    for (int i = 0; i < 50; i++)
        json_array_append_new(list, preon_json_fruit(i, name, sizeof(name)));
    h2o_iovec_t out = preon_json_dump(list, &pool);
    json_decref(list);
    /* the output outgrows the first buffer many times and must still be whole */
    assert_true(out.len > 50 * 600);
    assert_int_equal(out.base[0], '[');
    assert_int_equal(out.base[out.len - 1], ']');
    json_error_t jerr;
    json_t *back = json_loadb(out.base, out.len, 0, &jerr);
    assert_non_null(back);
    assert_int_equal(json_array_size(back), 50);
    json_decref(back);
    h2o_mem_clear_pool(&pool);
}

static void test_error_body(void **state)
{
    (void)state;
    h2o_mem_pool_t pool;
    h2o_mem_init_pool(&pool);
    json_t *e = preon_json_error(404, "no \"such\" fruit");
    h2o_iovec_t out = preon_json_dump(e, &pool);
    json_decref(e);
    const char *expected = "{\"error\":\"no \\\"such\\\" fruit\",\"status\":404}";
    assert_int_equal(out.len, strlen(expected));
    assert_memory_equal(out.base, expected, out.len);
    h2o_mem_clear_pool(&pool);
}

/* In a scope, values come from the request's pool (none of them is malloc'd: the pool grows), serialize to the same
 * bytes, and json_decref leaves them to the pool; a value made outside the scope is still freed by free() when it is
 * dropped inside one (LeakSanitizer and valgrind would see it lost otherwise). */
static void test_pool_scope(void **state)
{
    (void)state;
    h2o_mem_pool_t pool, out_pool;
    h2o_mem_init_pool(&pool);
    h2o_mem_init_pool(&out_pool);
    json_t *outside = preon_json_fruit(7, "Lime", 4);
    assert_null(pool.chunks);
    h2o_mem_pool_t *prev = preon_json_scope(&pool);
    json_t *list = json_array();
    for (int i = 0; i < 200; i++)
        json_array_append_new(list, preon_json_world(i, 10000 - i));
    assert_non_null(pool.chunks); /* the values took the pool's memory */
    json_decref(outside);
    assert_ptr_equal(preon_json_scope(prev), &pool);
    h2o_iovec_t out = preon_json_dump(list, &out_pool);
    assert_int_equal(out.len, 6092); /* [{"id":0,"randomNumber":10000},...,{"id":199,"randomNumber":9801}] */
    const char *head = "[{\"id\":0,\"randomNumber\":10000},{\"id\":1,";
    assert_memory_equal(out.base, head, strlen(head));
    json_decref(list); /* outside the scope now: still nothing freed by free() */
    h2o_mem_clear_pool(&pool);
    h2o_mem_clear_pool(&out_pool);
}

static int setup(void **state)
{
    (void)state;
    preon_json_init(); /* before any other jansson call: every test below runs on preon's allocator */
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_non_ascii_kept_as_utf8),
        cmocka_unit_test(test_embedded_nul_and_invalid_utf8),
        cmocka_unit_test(test_array_and_large_output),
        cmocka_unit_test(test_error_body),
        cmocka_unit_test(test_pool_scope),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
