/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>
#include "preon/alloc.h"
#include "preon/config.h"
#include "preon/conninfo.h"
#include "preon/errors.h"
#include "preon/log.h"

/*
 * The configuration is one table of entries (section, key, type, bounds, default), as in redis's config.c:
 * the YAML loader, the environment overrides, the printer and the defaults all walk the same table, so a new
 * key is one new row.
 */
typedef enum { T_INT, T_STRING, T_ENUM } entry_type_t;

typedef struct {
    const char *section;
    const char *key;
    entry_type_t type;
    size_t offset;
    long min, max;            /* T_INT */
    const char *const *names; /* T_ENUM: NULL-terminated; the value stored is the index */
    const char *def;          /* default, in the same text form the file uses */
} config_entry_t;

static const char *const sync_modes[] = {"request", "batch", "query", NULL};
static const char *const poolers[] = {"none", "session", "transaction", NULL};
static const char *const log_formats[] = {"text", "json", NULL};
static const char *const booleans[] = {"false", "true", NULL};
static const char *const http2_modes[] = {"false", "true", "auto", NULL}; /* preon_http2_mode_t */

#define OFF(f) offsetof(preon_config_t, f)
static const config_entry_t entries[] = {
    {"server", "listen", T_STRING, OFF(server.listen), 0, 0, NULL, "0.0.0.0"},
    {"server", "port", T_INT, OFF(server.port), 1, 65535, NULL, "8080"},
    {"server", "threads", T_INT, OFF(server.threads), 0, 256, NULL, "0"},
    {"server", "shutdown_timeout_ms", T_INT, OFF(server.shutdown_timeout_ms), 0, 3600000, NULL, "10000"},
    {"server", "max_body_bytes", T_INT, OFF(server.max_body_bytes), 0, 1 << 30, NULL, "65536"},
    {"server", "max_uri_bytes", T_INT, OFF(server.max_uri_bytes), 16, 1 << 20, NULL, "8192"},
    {"server", "request_timeout_ms", T_INT, OFF(server.request_timeout_ms), 10, 3600000, NULL, "10000"},
    {"server", "idle_timeout_ms", T_INT, OFF(server.idle_timeout_ms), 100, 3600000, NULL, "10000"},
    {"server", "max_connections", T_INT, OFF(server.max_connections), 1, 10000000, NULL, "100000"},
    {"server", "http2", T_ENUM, OFF(server.http2), 0, 0, http2_modes, "auto"},
    {"server", "drain_delay_ms", T_INT, OFF(server.drain_delay_ms), 0, 3600000, NULL, "0"},
    {"database", "url", T_STRING, OFF(database.url), 0, 0, NULL, ""},
    {"database", "read_url", T_STRING, OFF(database.read_url), 0, 0, NULL, ""},
    {"database", "connections_per_thread", T_INT, OFF(database.connections_per_thread), 0, 64, NULL, "0"},
    {"database", "max_queued", T_INT, OFF(database.max_queued), 1, 1000000, NULL, "16384"},
    {"database", "max_queue_wait_ms", T_INT, OFF(database.max_queue_wait_ms), 0, 3600000, NULL, "1000"},
    {"database", "query_timeout_ms", T_INT, OFF(database.query_timeout_ms), 10, 3600000, NULL, "5000"},
    {"database", "client_check_ms", T_INT, OFF(database.client_check_ms), 0, 3600000, NULL, "1000"},
    {"database", "connect_timeout_ms", T_INT, OFF(database.connect_timeout_ms), 10, 3600000, NULL, "3000"},
    {"database", "reconnect_min_ms", T_INT, OFF(database.reconnect_min_ms), 1, 3600000, NULL, "50"},
    {"database", "reconnect_max_ms", T_INT, OFF(database.reconnect_max_ms), 1, 3600000, NULL, "1000"},
    {"database", "sync", T_ENUM, OFF(database.sync), 0, 0, sync_modes, "batch"},
    {"database", "strict_sync", T_ENUM, OFF(database.strict_sync), 0, 0, sync_modes, "query"},
    {"database", "pipeline_depth", T_INT, OFF(database.pipeline_depth), 0, 1024, NULL, "2"},
    {"database", "pooler", T_ENUM, OFF(database.pooler), 0, 0, poolers, "none"},
    {"log", "level", T_ENUM, OFF(log.level), 0, 0, preon_log_level_names, "info"},
    {"log", "format", T_ENUM, OFF(log.format), 0, 0, log_formats, "text"},
    {"log", "access", T_ENUM, OFF(log.access), 0, 0, booleans, "false"},
    {"health", "live_path", T_STRING, OFF(health.live_path), 0, 0, NULL, "/health/live"},
    {"health", "ready_path", T_STRING, OFF(health.ready_path), 0, 0, NULL, "/health/ready"},
    {"metrics", "enabled", T_ENUM, OFF(metrics.enabled), 0, 0, booleans, "true"},
    {"metrics", "path", T_STRING, OFF(metrics.path), 0, 0, NULL, "/metrics"},
    {"modules", "techempower", T_ENUM, OFF(modules.techempower), 0, 0, booleans, "true"},
};
#undef OFF
#define NUM_ENTRIES (sizeof(entries) / sizeof(entries[0]))
_Static_assert(NUM_ENTRIES <= PREON_CONFIG_KEYS, "raise PREON_CONFIG_KEYS");

/* Keys renamed: the old name still sets the new key, in the file and in the environment, and leaves a deprecation
 * note (preon_config_t.deprecated) for the log. database.tfb_sync was named after the benchmark whose rule it keeps;
 * it is the Sync mode of any route that asks for strict Syncs. */
static const struct {
    const char *section, *old_key, *key;
} aliases[] = {
    {"database", "tfb_sync", "strict_sync"},
};
#define NUM_ALIASES (sizeof(aliases) / sizeof(aliases[0]))

static int *int_field(preon_config_t *cfg, const config_entry_t *e)
{
    return (int *)((char *)cfg + e->offset);
}

static char **string_field(preon_config_t *cfg, const config_entry_t *e)
{
    return (char **)((char *)cfg + e->offset);
}

/* Stores `value` into the entry's field. On a bad value writes the reason (without location) to `err`. */
static int set_value(preon_config_t *cfg, const config_entry_t *e, const char *value, char *err, size_t errlen)
{
    switch (e->type) {
    case T_INT: {
        char *end;
        errno = 0;
        long v = strtol(value, &end, 10);
        if (*value == '\0' || *end != '\0' || errno != 0 || v < e->min || v > e->max) {
            snprintf(err, errlen, "%s.%s: expected an integer from %ld to %ld, got '%s'", e->section, e->key, e->min, e->max,
                     value);
            return PREON_EINVAL;
        }
        *int_field(cfg, e) = (int)v;
        return 0;
    }
    case T_STRING: {
        char **f = string_field(cfg, e);
        free(*f);
        *f = preon_strdup(value);
        return 0;
    }
    case T_ENUM:
        for (int i = 0; e->names[i] != NULL; i++) {
            if (strcmp(e->names[i], value) == 0) {
                *int_field(cfg, e) = i;
                return 0;
            }
        }
        int n = snprintf(err, errlen, "%s.%s: expected one of", e->section, e->key);
        for (int i = 0; e->names[i] != NULL && n > 0 && (size_t)n < errlen; i++)
            n += snprintf(err + n, errlen - n, "%s %s", i == 0 ? "" : ",", e->names[i]);
        if (n > 0 && (size_t)n < errlen)
            snprintf(err + n, errlen - n, "; got '%s'", value);
        return PREON_EINVAL;
    }
    return PREON_EINVAL;
}

void preon_config_init(preon_config_t *cfg)
{
    char why[256];
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < NUM_ENTRIES; i++) {
        int rv = set_value(cfg, &entries[i], entries[i].def, why, sizeof(why));
        (void)rv; /* the defaults are part of the program; the unit tests prove they parse */
    }
}

void preon_config_dispose(preon_config_t *cfg)
{
    for (size_t i = 0; i < NUM_ENTRIES; i++) {
        if (entries[i].type == T_STRING) {
            char **f = string_field(cfg, &entries[i]);
            free(*f);
            *f = NULL;
        }
    }
    for (size_t i = 0; i < PREON_CONFIG_KEYS; i++) {
        free(cfg->origin[i]);
        cfg->origin[i] = NULL;
    }
    free(cfg->deprecated);
    cfg->deprecated = NULL;
}

static void set_origin(preon_config_t *cfg, const config_entry_t *e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_origin(preon_config_t *cfg, const config_entry_t *e, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    free(cfg->origin[e - entries]);
    cfg->origin[e - entries] = preon_strdup(buf);
}

static const config_entry_t *find_entry(const char *section, const char *key)
{
    for (size_t i = 0; i < NUM_ENTRIES; i++)
        if (strcmp(entries[i].section, section) == 0 && (key == NULL || strcmp(entries[i].key, key) == 0))
            return &entries[i];
    return NULL;
}

/* The entry an old name stands for, or NULL. */
static const config_entry_t *find_alias(const char *section, const char *old_key)
{
    for (size_t i = 0; i < NUM_ALIASES; i++)
        if (strcmp(aliases[i].section, section) == 0 && strcmp(aliases[i].old_key, old_key) == 0)
            return find_entry(section, aliases[i].key);
    return NULL;
}

/* Appends "WHERE: OLD is deprecated, use NEW" to the config's deprecation notes. */
static void note_deprecated(preon_config_t *cfg, const char *where, const char *old_name, const char *new_name)
{
    size_t have = cfg->deprecated != NULL ? strlen(cfg->deprecated) : 0;
    size_t n = strlen(where) + strlen(old_name) + strlen(new_name) + sizeof(": ") + sizeof(" is deprecated, use \n");
    cfg->deprecated = preon_realloc(cfg->deprecated, have + n);
    snprintf(cfg->deprecated + have, n, "%s: %s is deprecated, use %s\n", where, old_name, new_name);
}

/* The YAML walker: a small state machine over libyaml's events for "section: {key: scalar}". */
typedef struct {
    const char *name;
    char *err;
    size_t errlen;
} loader_t;

static int fail_at(loader_t *l, yaml_mark_t mark, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(loader_t *l, yaml_mark_t mark, const char *fmt, ...)
{
    int n = snprintf(l->err, l->errlen, "%s:%zu:%zu: ", l->name, mark.line + 1, mark.column + 1);
    if (n > 0 && (size_t)n < l->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(l->err + n, l->errlen - n, fmt, ap);
        va_end(ap);
    }
    return PREON_EINVAL;
}

static const char *event_kind(yaml_event_type_t t)
{
    switch (t) {
    case YAML_SEQUENCE_START_EVENT:
        return "a list";
    case YAML_MAPPING_START_EVENT:
        return "a mapping";
    case YAML_ALIAS_EVENT:
        return "an alias";
    default:
        return "a scalar";
    }
}

static int next_event(loader_t *l, yaml_parser_t *p, yaml_event_t *ev)
{
    if (!yaml_parser_parse(p, ev))
        return fail_at(l, p->problem_mark, "%s%s%s", p->problem ? p->problem : "YAML syntax error", p->context ? " " : "",
                       p->context ? p->context : "");
    return 0;
}

static int load_section(loader_t *l, yaml_parser_t *p, preon_config_t *cfg, const char *section, unsigned char *seen)
{
    yaml_event_t ev;
    int rv;
    for (;;) {
        if ((rv = next_event(l, p, &ev)) != 0)
            return rv;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            return 0;
        }
        if (ev.type != YAML_SCALAR_EVENT) {
            rv = fail_at(l, ev.start_mark, "expected a key in section '%s', got %s", section, event_kind(ev.type));
            yaml_event_delete(&ev);
            return rv;
        }
        char key[128];
        snprintf(key, sizeof(key), "%s", (const char *)ev.data.scalar.value);
        yaml_mark_t key_mark = ev.start_mark;
        yaml_event_delete(&ev);
        const config_entry_t *e = find_entry(section, key), *renamed = e == NULL ? find_alias(section, key) : NULL;
        if (renamed != NULL) {
            char where[512], old_name[256], new_name[256];
            snprintf(where, sizeof(where), "%.400s:%zu:%zu", l->name, key_mark.line + 1, key_mark.column + 1);
            snprintf(old_name, sizeof(old_name), "%s.%s", section, key);
            snprintf(new_name, sizeof(new_name), "%s.%s", section, renamed->key);
            note_deprecated(cfg, where, old_name, new_name);
            e = renamed;
        }
        if (e == NULL)
            return fail_at(l, key_mark, "unknown key '%s' in section '%s'", key, section);
        if (seen[e - entries]++)
            return fail_at(l, key_mark, "duplicate key '%s.%s'", section, key);
        if ((rv = next_event(l, p, &ev)) != 0)
            return rv;
        if (ev.type != YAML_SCALAR_EVENT) {
            rv = fail_at(l, ev.start_mark, "%s.%s: expected a scalar value, got %s", section, key, event_kind(ev.type));
            yaml_event_delete(&ev);
            return rv;
        }
        char why[256];
        if ((rv = set_value(cfg, e, (const char *)ev.data.scalar.value, why, sizeof(why))) != 0)
            fail_at(l, ev.start_mark, "%s", why);
        else
            set_origin(cfg, e, "%s:%zu:%zu", l->name, ev.start_mark.line + 1, ev.start_mark.column + 1);
        yaml_event_delete(&ev);
        if (rv != 0)
            return rv;
    }
}

static int load_document(loader_t *l, yaml_parser_t *p, preon_config_t *cfg)
{
    unsigned char seen[NUM_ENTRIES] = {0};
    yaml_event_t ev;
    int rv, depth_started = 0;
    for (;;) {
        if ((rv = next_event(l, p, &ev)) != 0)
            return rv;
        switch (ev.type) {
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_START_EVENT:
        case YAML_DOCUMENT_END_EVENT:
            break;
        case YAML_STREAM_END_EVENT:
            yaml_event_delete(&ev);
            return 0;
        case YAML_SCALAR_EVENT:
            if (!depth_started && ev.data.scalar.length == 0) /* an empty document */
                break;
            if (depth_started) {
                char section[64];
                snprintf(section, sizeof(section), "%s", (const char *)ev.data.scalar.value);
                yaml_mark_t mark = ev.start_mark;
                yaml_event_delete(&ev);
                if (find_entry(section, NULL) == NULL)
                    return fail_at(l, mark, "unknown section '%s' (expected server, database, log, health, metrics or modules)",
                                   section);
                if ((rv = next_event(l, p, &ev)) != 0)
                    return rv;
                if (ev.type != YAML_MAPPING_START_EVENT) {
                    rv = fail_at(l, ev.start_mark, "section '%s' must be a mapping of keys, got %s", section, event_kind(ev.type));
                    yaml_event_delete(&ev);
                    return rv;
                }
                yaml_event_delete(&ev);
                if ((rv = load_section(l, p, cfg, section, seen)) != 0)
                    return rv;
                continue;
            }
            /* fallthrough */
        default:
            if (ev.type == YAML_MAPPING_START_EVENT && !depth_started) {
                depth_started = 1;
                break;
            }
            if (ev.type == YAML_MAPPING_END_EVENT && depth_started) {
                depth_started = 0;
                break;
            }
            rv = fail_at(l, ev.start_mark,
                         "expected a mapping of sections (server, database, log, health, metrics, modules), got %s",
                         event_kind(ev.type));
            yaml_event_delete(&ev);
            return rv;
        }
        yaml_event_delete(&ev);
    }
}

int preon_config_load_string(preon_config_t *cfg, const char *name, const char *text, size_t len, char *err, size_t errlen)
{
    loader_t l = {name, err, errlen};
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        abort();
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int rv = load_document(&l, &parser, cfg);
    yaml_parser_delete(&parser);
    return rv;
}

int preon_config_load_file(preon_config_t *cfg, const char *path, char *err, size_t errlen)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return PREON_EIO;
    }
    char *text = NULL;
    size_t len = 0, cap = 0, n;
    do {
        if (cap - len < 4096)
            text = preon_realloc(text, cap = cap * 2 + 4096);
        n = fread(text + len, 1, cap - len, fp);
        len += n;
    } while (n != 0);
    int failed = ferror(fp);
    fclose(fp);
    int rv;
    if (failed) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        rv = PREON_EIO;
    } else {
        rv = preon_config_load_string(cfg, path, text, len, err, errlen);
    }
    free(text);
    return rv;
}

static void env_name(const config_entry_t *e, char *buf, size_t len)
{
    snprintf(buf, len, "PREON_%s_%s", e->section, e->key);
    for (char *s = buf; *s != '\0'; s++)
        *s = (char)toupper((unsigned char)*s);
}

int preon_config_apply_env(preon_config_t *cfg, char *const *envp, char *err, size_t errlen)
{
    for (char *const *v = envp; *v != NULL; v++) {
        if (strncmp(*v, "PREON_", 6) != 0)
            continue;
        const char *eq = strchr(*v, '=');
        if (eq == NULL)
            continue;
        const config_entry_t *e = NULL;
        char name[128];
        for (size_t i = 0; i < NUM_ENTRIES && e == NULL; i++) {
            env_name(&entries[i], name, sizeof(name));
            if (strlen(name) == (size_t)(eq - *v) && memcmp(name, *v, eq - *v) == 0)
                e = &entries[i];
        }
        for (size_t i = 0; i < NUM_ALIASES && e == NULL; i++) {
            char old_name[128], where[160 + sizeof(old_name)];
            env_name(&(config_entry_t){.section = aliases[i].section, .key = aliases[i].old_key}, old_name, sizeof(old_name));
            if (strlen(old_name) != (size_t)(eq - *v) || memcmp(old_name, *v, eq - *v) != 0)
                continue;
            e = find_entry(aliases[i].section, aliases[i].key);
            env_name(e, name, sizeof(name));
            snprintf(where, sizeof(where), "environment %s", old_name);
            note_deprecated(cfg, where, old_name, name);
            snprintf(name, sizeof(name), "%s", old_name); /* the origin and any error name the variable as set */
        }
        /* PREON_<SECTION>_<KEY> of a known section must name a known key: a misspelt override silently ignored
         * is a setting the operator believes in and does not have (a file's unknown keys are errors too). Other
         * PREON_* variables belong to scripts and tests (PREON_BIN, ...). */
        if (e == NULL) {
            for (size_t i = 0; i < NUM_ENTRIES; i++) {
                const char *sec = entries[i].section;
                size_t n = strlen(sec);
                if ((size_t)(eq - *v) > 6 + n + 1 && strncasecmp(*v + 6, sec, n) == 0 && (*v)[6 + n] == '_') {
                    snprintf(err, errlen, "environment %.*s: unknown key in section '%s'", (int)(eq - *v), *v, sec);
                    return PREON_EINVAL;
                }
            }
            continue;
        }
        char why[256];
        if (set_value(cfg, e, eq + 1, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "environment %s: %s", name, why);
            return PREON_EINVAL;
        }
        set_origin(cfg, e, "environment %s", name);
    }
    return 0;
}

/* Where the row for section.key was set, or "(default) section.key". */
static const char *origin_of(const preon_config_t *cfg, const char *section, const char *key, char *buf, size_t len)
{
    const config_entry_t *e = find_entry(section, key);
    if (cfg->origin[e - entries] != NULL)
        return cfg->origin[e - entries];
    snprintf(buf, len, "(default) %s.%s", section, key);
    return buf;
}

int preon_config_validate(const preon_config_t *cfg, char *err, size_t errlen)
{
    if (cfg->database.pooler != PREON_POOLER_NONE && cfg->database.client_check_ms > 0) {
        /* Pointed at whichever of the two was set last by hand: that is the line the operator just wrote. */
        const config_entry_t *check = find_entry("database", "client_check_ms");
        char buf[64];
        const char *where = cfg->origin[check - entries] != NULL ? cfg->origin[check - entries]
                                                                 : origin_of(cfg, "database", "pooler", buf, sizeof(buf));
        snprintf(err, errlen,
                 "%s: database.client_check_ms %d cannot work with database.pooler: %s (a pooler refuses the startup option "
                 "that carries it, and the server would watch the pooler's connection, not preon's): set "
                 "database.client_check_ms: 0",
                 where, cfg->database.client_check_ms, poolers[cfg->database.pooler]);
        return PREON_EINVAL;
    }
    /* A request larger than the queue's bound would be refused "queue full, retry" on an idle server, for ever. */
    if (cfg->database.max_queued < PREON_MAX_REQUEST_QUERIES) {
        char buf[64];
        snprintf(err, errlen,
                 "%s: database.max_queued %d is below %d, the most queries one request makes at once (/queries?queries=500, "
                 "/updates?queries=500): such a request would be refused for ever; set at least %d",
                 origin_of(cfg, "database", "max_queued", buf, sizeof(buf)), cfg->database.max_queued, PREON_MAX_REQUEST_QUERIES,
                 PREON_MAX_REQUEST_QUERIES);
        return PREON_EINVAL;
    }
    /* Set by hand; when it is not, preon_config_settle has made the default fit below request_timeout_ms. */
    const char *wait_origin = cfg->origin[find_entry("database", "max_queue_wait_ms") - entries];
    if (wait_origin != NULL && cfg->database.max_queue_wait_ms != 0 &&
        cfg->database.max_queue_wait_ms >= cfg->server.request_timeout_ms) {
        snprintf(err, errlen,
                 "%s: database.max_queue_wait_ms %d must be below server.request_timeout_ms %d (a request that may wait "
                 "that long times out first: 504 instead of the queue's 503), or 0 for no bound",
                 wait_origin, cfg->database.max_queue_wait_ms, cfg->server.request_timeout_ms);
        return PREON_EINVAL;
    }
    return 0;
}

int preon_config_choose_connections(preon_config_t *cfg, unsigned threads, char *why, size_t whylen)
{
    if (cfg->database.connections_per_thread != 0) {
        snprintf(why, whylen, "set");
        return cfg->database.connections_per_thread;
    }
    /* Four PostgreSQL connections in all, at least one per thread: four on one thread, two each on two or three, one
     * each from four threads up. A backend serves its pipeline one query at a time, and on a small machine
     * PostgreSQL's share of the CPUs follows its number of busy backends: with one per thread a two-thread preon gave
     * its database up to half the throughput it could have. One thread alone (a container with one CPU, or the
     * benchmarks' pinned server) had two until 2026-12-03: four had been no better on 2026-12-01, but with the pool's
     * later changes four were ahead on /updates=20 in 11 of 12 recorded runs on both kinds of machine (by 3-8 % on
     * the fast kind, the ranges apart in four) and never behind with the ranges apart (CHANGELOG.md,
     * 0.5.0, 2026-12-03). Three on one thread were ahead of four on /queries=20 where the database host's TCP congestion control
     * was BBR and behind where it was CUBIC, Debian's default (2026-12-03; the benefit is PostgreSQL's flushes
     * joined in fewer packets): four stay. A one-query request costs the extra connections nothing: those fill the
     * first connection until it has a queue (src/db/pool.c, pick), while the many queries of one request spread over
     * them. */
    unsigned t = threads != 0 ? threads : 1, n = (4 + t - 1) / t;
    cfg->database.connections_per_thread = (int)n;
    snprintf(why, whylen,
             "auto: %u per thread for %u thread%s, %u PostgreSQL connections in all (aiming at 4 in all, at least 1 per thread)", n,
             t, t == 1 ? "" : "s", n * t);
    return (int)n;
}

void preon_config_settle(preon_config_t *cfg)
{
    const config_entry_t *wait = find_entry("database", "max_queue_wait_ms");
    if (cfg->origin[wait - entries] == NULL && cfg->database.max_queue_wait_ms >= cfg->server.request_timeout_ms)
        cfg->database.max_queue_wait_ms = cfg->server.request_timeout_ms / 2;
}

int preon_config_changed_keys(const preon_config_t *a, const preon_config_t *b, char *out, size_t outlen)
{
    int n = 0;
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < NUM_ENTRIES; i++) {
        const config_entry_t *e = &entries[i];
        const void *fa = (const char *)a + e->offset, *fb = (const char *)b + e->offset;
        int same = e->type == T_STRING ? strcmp(*(char *const *)fa, *(char *const *)fb) == 0 : *(const int *)fa == *(const int *)fb;
        if (same || strcmp(e->section, "log") == 0)
            continue;
        if (len < outlen)
            len += (size_t)snprintf(out + len, outlen - len, "%s%s.%s", n ? ", " : "", e->section, e->key);
        n++;
    }
    return n;
}

void preon_config_print(const preon_config_t *cfg, void *_fp)
{
    FILE *fp = _fp;
    const char *section = "";
    for (size_t i = 0; i < NUM_ENTRIES; i++) {
        const config_entry_t *e = &entries[i];
        if (strcmp(section, e->section) != 0)
            fprintf(fp, "%s:\n", section = e->section);
        const void *field = (const char *)cfg + e->offset;
        switch (e->type) {
        case T_INT:
            fprintf(fp, "  %s: %d\n", e->key, *(const int *)field);
            break;
        case T_ENUM:
            fprintf(fp, "  %s: %s\n", e->key, e->names[*(const int *)field]);
            break;
        case T_STRING: {
            /* Only database.url can hold a secret, but every string goes through the same redaction. */
            char *shown = preon_conninfo_redact(*(char *const *)field);
            fprintf(fp, "  %s: \"%s\"\n", e->key, shown);
            free(shown);
            break;
        }
        }
    }
}
