/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "preon/rand.h"
#include "template.h"

typedef struct {
    const char *items[3];
    size_t n;
} ctx_t;

static size_t count(void *c, const char *name)
{
    return strcmp(name, "list") == 0 ? ((ctx_t *)c)->n : 0;
}

static h2o_iovec_t value(void *c, const char *name, size_t item)
{
    ctx_t *ctx = c;
    if (item == SIZE_MAX)
        return strcmp(name, "title") == 0 ? h2o_iovec_init(H2O_STRLIT("<T&T>")) : h2o_iovec_init("", 0);
    if (strcmp(name, "v") == 0)
        return h2o_iovec_init(ctx->items[item], strlen(ctx->items[item]));
    return h2o_iovec_init("", 0);
}

static void expect_render(const char *tpl, ctx_t *ctx, const char *expected)
{
    char err[128] = "";
    preon_template_t *t = preon_template_compile(tpl, strlen(tpl), err, sizeof(err));
    assert_non_null(t);
    h2o_mem_pool_t pool;
    h2o_mem_init_pool(&pool);
    preon_sink_t out;
    preon_sink_init(&out, &pool, 4); /* tiny, so the sink must grow */
    static const preon_template_data_t data = {count, value};
    preon_template_render(t, &data, ctx, &out);
    assert_int_equal(out.len, strlen(expected));
    assert_memory_equal(out.buf, expected, out.len);
    h2o_mem_clear_pool(&pool);
    preon_template_destroy(t);
}

static void test_render(void **state)
{
    (void)state;
    ctx_t ctx = {{"a<b", "\"q\" & 'r'", "plain"}, 3};
    expect_render("<h1>{{title}}</h1>{{#list}}<li>{{v}}</li>{{/list}}.", &ctx,
                  "<h1>&lt;T&amp;T&gt;</h1><li>a&lt;b</li><li>&quot;q&quot; &amp; &#39;r&#39;</li><li>plain</li>.");
    expect_render("{{{title}}}|{{ title }}", &ctx, "<T&T>|&lt;T&amp;T&gt;");
    ctx.n = 0;
    expect_render("[{{#list}}x{{/list}}]", &ctx, "[]");
    expect_render("no tags at all", &ctx, "no tags at all");
    expect_render("", &ctx, "");
}

static void expect_error(const char *tpl, const char *expected)
{
    char err[128] = "";
    assert_null(preon_template_compile(tpl, strlen(tpl), err, sizeof(err)));
    assert_string_equal(err, expected);
}

static void test_compile_errors(void **state)
{
    (void)state;
    expect_error("a\nb {{x", "line 2: unclosed tag");
    expect_error("{{}}", "line 1: empty name");
    expect_error("{{#a}}{{#b}}{{/b}}{{/a}}", "line 1: sections do not nest");
    expect_error("{{/a}}", "line 1: {{/a}} closes no open section");
    expect_error("{{#a}}{{/b}}", "line 1: {{/b}} closes no open section");
    expect_error("\n\n{{#a}}", "line 3: section 'a' is not closed");
}

static void test_rand_range(void **state)
{
    (void)state;
    preon_rand_t r;
    preon_rand_seed(&r);
    int seen[4] = {0};
    for (int i = 0; i < 100000; i++) {
        uint32_t v = preon_rand_range(&r, 10000);
        assert_true(v >= 1 && v <= 10000);
        uint32_t s = preon_rand_range(&r, 3);
        assert_true(s >= 1 && s <= 3);
        seen[s]++;
    }
    /* roughly uniform: each of 1..3 within 10% of a third */
    for (int k = 1; k <= 3; k++)
        assert_true(seen[k] > 30000 && seen[k] < 36667);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_compile_errors),
        cmocka_unit_test(test_rand_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
