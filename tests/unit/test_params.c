/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "preon/errors.h"
#include "params.h"

static int parse(const char *s, int32_t *out)
{
    char why[64] = "";
    int rv = preon__parse_id(s, strlen(s), out, why, sizeof(why));
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
    assert_int_equal(preon__parse_id("12/3", 2, &v, why, sizeof(why)), 0);
    assert_int_equal(v, 12);
}

static int clamped(const char *qs)
{
    return preon__query_int_clamped(qs, strlen(qs), "queries", 1, 500);
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
    assert_int_equal(preon__query_int_clamped("queries=12", 9, "queries", 1, 500), 1);
}

/* The page of GET /fruits: 0 with *page set, or PREON_EINVAL with the client's message (checked here). */
static int page(const char *qs, preon_page_t *p, const char *want_err)
{
    char why[96] = "";
    p->after = -7, p->limit = -7;
    int rv = preon__query_page(qs, qs != NULL ? strlen(qs) : 0, p, why, sizeof(why));
    if (rv != 0) {
        assert_string_equal(why, want_err);
        assert_int_equal(p->after, -7); /* untouched on failure */
        assert_int_equal(p->limit, -7);
    }
    return rv;
}

static void test_page_defaults_and_bounds(void **state)
{
    (void)state;
    preon_page_t p;
    const char *const ok[][3] = {
        {"", "0", "100"},
        {"limit=1", "0", "1"},
        {"limit=1000", "0", "1000"},
        {"after=0", "0", "100"},
        {"after=2147483647", "2147483647", "100"},
        {"after=5&limit=7", "5", "7"},
        {"limit=7&after=5", "5", "7"},
        {"x=1&limit=3&y", "0", "3"},
        {"limit=0042", "0", "42"},
        {"limit=3&limit=9", "0", "3"},
        {"xlimit=5&limitx=6", "0", "100"},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_int_equal(page(ok[i][0], &p, NULL), 0);
        assert_int_equal(p.after, atoi(ok[i][1]));
        assert_int_equal(p.limit, atoi(ok[i][2]));
    }
    assert_int_equal(page(NULL, &p, NULL), 0);
    assert_int_equal(p.limit, PREON_PAGE_DEFAULT_LIMIT);
}

static void test_page_bad_values(void **state)
{
    (void)state;
    preon_page_t p;
    const char *limit_err = "limit: must be an integer from 1 to 1000";
    const char *after_err = "after: must be an integer from 0 to 2147483647";
    const char *bad_limit[] = {"limit=0",         "limit=1001", "limit=",    "limit",    "limit=-1",
                               "limit=+5",        "limit=abc",  "limit=1e3", "limit= 5", "limit=99999999999999999999999",
                               "after=1&limit=5x"};
    for (size_t i = 0; i < sizeof(bad_limit) / sizeof(bad_limit[0]); i++)
        assert_int_equal(page(bad_limit[i], &p, limit_err), PREON_EINVAL);
    const char *bad_after[] = {
        "after=-1", "after=2147483648", "after=", "after=x", "after=99999999999999999999", "limit=5&after=0x10"};
    for (size_t i = 0; i < sizeof(bad_after) / sizeof(bad_after[0]); i++)
        assert_int_equal(page(bad_after[i], &p, after_err), PREON_EINVAL);
    /* only `len` bytes are the query string */
    char why[96];
    assert_int_equal(preon__query_page("limit=12", 7, &p, why, sizeof(why)), 0);
    assert_int_equal(p.limit, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_length_is_respected),
        cmocka_unit_test(test_query_count_clamping),
        cmocka_unit_test(test_page_defaults_and_bounds),
        cmocka_unit_test(test_page_bad_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
