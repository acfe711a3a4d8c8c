/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "preon/alloc.h"
#include "template.h"

/* A compiled template is a flat list of operations over one copy of the source text. */
typedef enum { OP_TEXT, OP_VAR, OP_RAW, OP_SECTION, OP_END } op_kind_t;

typedef struct {
    op_kind_t kind;
    const char *text; /* OP_TEXT: the bytes; others: the name, NUL-terminated in `names` */
    size_t len;
    size_t name;    /* not OP_TEXT: the name's index in the list the template was compiled with */
    size_t end;     /* OP_SECTION: index of its OP_END */
    const char *at; /* where the tag starts in the source, for messages */
} op_t;

struct st_preon_template_t {
    char *source;
    char *names; /* the names, each NUL-terminated */
    op_t *ops;
    size_t nops;
};

static int line_of(const char *text, const char *at)
{
    int line = 1;
    for (const char *p = text; p < at; p++)
        line += *p == '\n';
    return line;
}

/* The index of the `n` bytes at `name` in `names`, or SIZE_MAX. */
static size_t find_name(const char *const *names, const char *name, size_t n)
{
    for (size_t i = 0; names[i] != NULL; i++)
        if (strlen(names[i]) == n && memcmp(names[i], name, n) == 0)
            return i;
    return SIZE_MAX;
}

preon_template_t *preon__template_compile(const char *text, size_t len, const char *const *names_known, char *err, size_t errlen)
{
    preon_template_t *t = preon_calloc(1, sizeof(*t));
    t->source = preon_malloc(len + 1);
    t->names = preon_malloc(len + 1);
    t->ops = preon_calloc(len + 1, sizeof(op_t));
    memcpy(t->source, text, len);
    t->source[len] = '\0';
    const char *p = t->source, *end = t->source + len;
    char *names = t->names;
    size_t open_section = SIZE_MAX;

    while (p < end) {
        const char *tag = strstr(p, "{{");
        if (tag == NULL || tag >= end)
            tag = end;
        if (tag > p)
            t->ops[t->nops++] = (op_t){.kind = OP_TEXT, .text = p, .len = (size_t)(tag - p), .at = p};
        if (tag == end)
            break;
        int raw = tag + 2 < end && tag[2] == '{';
        const char *name = tag + (raw ? 3 : 2), *close = strstr(name, raw ? "}}}" : "}}");
        if (close == NULL) {
            snprintf(err, errlen, "line %d: unclosed tag", line_of(t->source, tag));
            goto Error;
        }
        op_kind_t kind = raw ? OP_RAW : OP_VAR;
        if (!raw && (*name == '#' || *name == '/'))
            kind = *name++ == '#' ? OP_SECTION : OP_END;
        while (name < close && *name == ' ')
            name++;
        size_t n = (size_t)(close - name);
        while (n > 0 && name[n - 1] == ' ')
            n--;
        if (n == 0) {
            snprintf(err, errlen, "line %d: empty name", line_of(t->source, tag));
            goto Error;
        }
        memcpy(names, name, n);
        names[n] = '\0';
        op_t op = {.kind = kind, .text = names, .len = n, .name = find_name(names_known, name, n), .at = tag};
        if (op.name == SIZE_MAX) {
            snprintf(err, errlen, "line %d: unknown name '%s'", line_of(t->source, tag), names);
            goto Error;
        }
        names += n + 1;
        if (kind == OP_SECTION) {
            if (open_section != SIZE_MAX) {
                snprintf(err, errlen, "line %d: sections do not nest", line_of(t->source, tag));
                goto Error;
            }
            open_section = t->nops;
        } else if (kind == OP_END) {
            if (open_section == SIZE_MAX || t->ops[open_section].name != op.name) {
                snprintf(err, errlen, "line %d: {{/%s}} closes no open section", line_of(t->source, tag), op.text);
                goto Error;
            }
            t->ops[open_section].end = t->nops;
            open_section = SIZE_MAX;
        }
        t->ops[t->nops++] = op;
        p = close + (raw ? 3 : 2);
    }
    if (open_section != SIZE_MAX) {
        snprintf(err, errlen, "line %d: section '%s' is not closed", line_of(t->source, t->ops[open_section].at),
                 t->ops[open_section].text);
        goto Error;
    }
    return t;

Error:
    preon__template_destroy(t);
    return NULL;
}

void preon__template_destroy(preon_template_t *t)
{
    if (t == NULL)
        return;
    free(t->source);
    free(t->names);
    free(t->ops);
    free(t);
}

static void render_range(const preon_template_t *t, size_t from, size_t to, size_t item, const preon_template_data_t *data,
                         void *ctx, preon_sink_t *out)
{
    for (size_t i = from; i < to; i++) {
        const op_t *op = &t->ops[i];
        switch (op->kind) {
        case OP_TEXT:
            preon_sink_append(out, op->text, op->len);
            break;
        case OP_VAR:
        case OP_RAW: {
            h2o_iovec_t v = data->value(ctx, op->name, item);
            if (op->kind == OP_VAR)
                preon_sink_append_html(out, v.base, v.len);
            else
                preon_sink_append(out, v.base, v.len);
            break;
        }
        case OP_SECTION: {
            size_t n = data->count(ctx, op->name);
            for (size_t k = 0; k < n; k++)
                render_range(t, i + 1, op->end, k, data, ctx, out);
            i = op->end;
            break;
        }
        case OP_END:
            break;
        }
    }
}

void preon__template_render(const preon_template_t *t, const preon_template_data_t *data, void *ctx, preon_sink_t *out)
{
    render_range(t, 0, t->nops, SIZE_MAX, data, ctx, out);
}
