/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "preon/rand.h"
#include "preon/sink.h"
#include "template.h"

typedef struct {
    const char *items[3];
    size_t n;
} ctx_t;

/* The names a template here may use; the callbacks get their indexes. */
enum { NAME_LIST, NAME_TITLE, NAME_V, NAME_EMPTY };
static const char *const names[] = {"list", "title", "v", "empty", "a", "b", "x", NULL};

static size_t count(void *c, size_t name)
{
    return name == NAME_LIST ? ((ctx_t *)c)->n : 0;
}

static h2o_iovec_t value(void *c, size_t name, size_t item)
{
    ctx_t *ctx = c;
    if (item == SIZE_MAX)
        return name == NAME_TITLE ? h2o_iovec_init(H2O_STRLIT("<T&T>")) : h2o_iovec_init("", 0);
    if (name == NAME_V)
        return h2o_iovec_init(ctx->items[item], strlen(ctx->items[item]));
    return h2o_iovec_init("", 0);
}

static void expect_render(const char *tpl, ctx_t *ctx, const char *expected)
{
    char err[128] = "";
    preon_template_t *t = preon__template_compile(tpl, strlen(tpl), names, err, sizeof(err));
    assert_non_null(t);
    h2o_mem_pool_t pool;
    h2o_mem_init_pool(&pool);
    preon_sink_t out;
    preon_sink_init(&out, &pool, 4); /* tiny, so the sink must grow */
    static const preon_template_data_t data = {count, value};
    preon__template_render(t, &data, ctx, &out);
    assert_int_equal(out.len, strlen(expected));
    assert_memory_equal(out.buf, expected, out.len);
    h2o_mem_clear_pool(&pool);
    preon__template_destroy(t);
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
    expect_render("[{{empty}}|{{#empty}}never{{/empty}}]", &ctx, "[|]");
}

static void expect_error(const char *tpl, const char *expected)
{
    char err[128] = "";
    assert_null(preon__template_compile(tpl, strlen(tpl), names, err, sizeof(err)));
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
    expect_error("<td>{{id}}</td>\n<td>{{ mesage }}</td>", "line 1: unknown name 'id'");
    expect_error("{{v}}\n{{#lists}}{{/lists}}", "line 2: unknown name 'lists'");
    expect_error("{{{titles}}}", "line 1: unknown name 'titles'");
    expect_error("{{#a}}{{/list}}", "line 1: {{/list}} closes no open section");
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

/* The escaping as the rules say it, one byte at a time: what preon_sink_append_html's 16-byte scan must equal. */
static size_t naive_html(const char *text, size_t len, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        const char *e = text[i] == '&'    ? "&amp;"
                        : text[i] == '<'  ? "&lt;"
                        : text[i] == '>'  ? "&gt;"
                        : text[i] == '"'  ? "&quot;"
                        : text[i] == '\'' ? "&#39;"
                                          : NULL;
        if (e != NULL) {
            memcpy(out + n, e, strlen(e));
            n += strlen(e);
        } else {
            out[n++] = text[i];
        }
    }
    return n;
}

/* Every special character at every offset of texts up to 40 bytes (runs shorter and longer than one 16-byte block,
 * the character first, last, or in the tail), next to plain ASCII, UTF-8 and NUL bytes. */
static void test_html_escape_every_position(void **state)
{
    (void)state;
    const char specials[] = "&<>\"'";
    h2o_mem_pool_t pool;
    h2o_mem_init_pool(&pool);
    for (size_t len = 0; len <= 40; len++) {
        for (size_t at = 0; at <= len; at++) {
            for (size_t k = 0; k < sizeof(specials) - 1; k++) {
                char text[48], want[48 * 6];
                for (size_t i = 0; i < len; i++)
                    text[i] = (char)(i % 7 == 3 ? 0 : i % 5 == 1 ? 0xc3 : 'a' + (char)(i % 26));
                if (at < len)
                    text[at] = specials[k];
                preon_sink_t sink;
                preon_sink_init(&sink, &pool, 8);
                preon_sink_append_html(&sink, text, len);
                size_t n = naive_html(text, len, want);
                assert_int_equal(sink.len, n);
                assert_memory_equal(sink.buf, want, n);
            }
        }
    }
    h2o_mem_clear_pool(&pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_html_escape_every_position),
        cmocka_unit_test(test_compile_errors),
        cmocka_unit_test(test_rand_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
