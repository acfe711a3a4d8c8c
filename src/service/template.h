/* SPDX-License-Identifier: MIT */
#ifndef PREON_TEMPLATE_H
#define PREON_TEMPLATE_H

#include <h2o.h>
#include "preon/sink.h"

/*
 * A small logic-less template language, a subset of mustache:
 *   {{name}}                 the value of `name`, HTML-escaped
 *   {{{name}}}               the value of `name`, as is
 *   {{#list}} ... {{/list}}  the inside once per item of `list`; names inside refer to the item's fields
 * Sections do not nest. A template is compiled once (at start-up) and is then read-only: any thread may render it.
 */
typedef struct st_preon_template_t preon_template_t;

/**
 * Where a render gets its values from. A name reaches the callbacks as its index in the list the template was
 * compiled with, so that a render compares no strings.
 */
typedef struct st_preon_template_data_t {
    /** Items in section `name`. */
    size_t (*count)(void *ctx, size_t name);
    /** The text of `name`; `item` is the section's item, or SIZE_MAX outside sections. Borrowed until the render ends. */
    h2o_iovec_t (*value)(void *ctx, size_t name, size_t item);
} preon_template_data_t;

/**
 * Compiles `len` bytes of `text` (copied) whose tags may name only `names` (a NULL-terminated list, borrowed for the
 * call): a misspelt name is refused at start-up rather than rendered empty on every request. Returns a new template,
 * or NULL with "line L: why" in `err` (unclosed tag, unbalanced or nested section, empty or unknown name).
 */
preon_template_t *preon__template_compile(const char *text, size_t len, const char *const *names, char *err, size_t errlen);

/** Frees a template. Accepts NULL. */
void preon__template_destroy(preon_template_t *t);

/** Renders `t` with `data`/`ctx` onto `out`. */
void preon__template_render(const preon_template_t *t, const preon_template_data_t *data, void *ctx, preon_sink_t *out);

#endif
