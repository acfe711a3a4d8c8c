/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the template compiler, and the renderer's HTML escaping on hostile values: no value may
 * leave a raw '<', '>', '"', '\'' or a '&' that does not start an entity in the output of {{name}}. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "template.h"

typedef struct {
    const char *value;
    size_t len;
} ctx_t;

/* Short names, so that the fuzzer's templates name them often enough to be rendered. */
static const char *const names[] = {"a", "b", "c", "v", "ab", NULL};

static size_t count(void *c, size_t name)
{
    (void)c;
    return name % 3;
}

static h2o_iovec_t value(void *c, size_t name, size_t item)
{
    ctx_t *ctx = c;
    (void)name, (void)item;
    return h2o_iovec_init(ctx->value, ctx->len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const preon_template_data_t source = {count, value};
    h2o_mem_pool_t pool;
    char err[128];
    ctx_t ctx = {(const char *)data, size};
    h2o_mem_init_pool(&pool);

    /* the input as a template, rendered with the input as every value */
    preon_template_t *t = preon__template_compile((const char *)data, size, names, err, sizeof(err));
    if (t != NULL) {
        preon_sink_t out;
        preon_sink_init(&out, &pool, 16);
        preon__template_render(t, &source, &ctx, &out);
        preon__template_destroy(t);
    }
    /* the input as a value through an escaping tag: nothing special may survive */
    static const char tpl[] = "<td>{{v}}</td>";
    t = preon__template_compile(tpl, sizeof(tpl) - 1, names, err, sizeof(err));
    preon_sink_t out;
    preon_sink_init(&out, &pool, 16);
    preon__template_render(t, &source, &ctx, &out);
    preon__template_destroy(t);
    if (out.len < 9)
        __builtin_trap();
    for (size_t i = 4; i < out.len - 5; i++) {
        char c = out.buf[i];
        if (c == '<' || c == '>' || c == '"' || c == '\'')
            __builtin_trap();
    }
    h2o_mem_clear_pool(&pool);
    return 0;
}
