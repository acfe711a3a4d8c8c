/* SPDX-License-Identifier: MIT */
#ifndef PREON_CONFIG_H
#define PREON_CONFIG_H

#include <stddef.h>

/* Where the Syncs go (each Sync ends one implicit transaction). The values index config.c's names. */
typedef enum {
    PREON_SYNC_REQUEST = 0, /* one Sync after each request's queries */
    PREON_SYNC_BATCH,       /* reads of many requests share a Sync; writes get their own */
    PREON_SYNC_QUERY,       /* one Sync after every query (TechEmpower's General Requirement 7) */
} preon_sync_mode_t;
/** server.http2: cleartext HTTP/2 (a prior-knowledge preface, or the h2c upgrade) off, on, or on where the build's h2o
 * bounds HTTP/2 rapid reset (preon's patches to h2o's source; Debian's binary libh2o-evloop does not). The values index
 * config.c's names. */
typedef enum { PREON_HTTP2_OFF = 0, PREON_HTTP2_ON, PREON_HTTP2_AUTO } preon_http2_mode_t;
/** What stands between preon and PostgreSQL: nothing, or a pooler (PgBouncer) in session or transaction mode. */
typedef enum { PREON_POOLER_NONE = 0, PREON_POOLER_SESSION, PREON_POOLER_TRANSACTION } preon_pooler_t;

/** Room for every key's origin (more than the table has). */
#define PREON_CONFIG_KEYS 64

/**
 * The whole configuration. Filled once at start-up (defaults, then the YAML file, then PREON_* variables) and
 * passed read-only (`const preon_config_t *`) to every thread afterwards. Strings are owned by the struct.
 */
typedef struct st_preon_config_t {
    struct {
        char *listen;            /* numeric address to bind ("0.0.0.0", "::", "127.0.0.1") */
        int port;                /* TCP port */
        int threads;             /* event loops; 0 = one per CPU */
        int shutdown_timeout_ms; /* how long SIGTERM waits for requests in flight */
        int max_body_bytes;      /* largest request body accepted */
        int max_uri_bytes;       /* longest path with query string accepted (longer: 414) */
        int request_timeout_ms;  /* a request still waiting for the database after this gets 504 */
        int idle_timeout_ms;     /* an idle keep-alive connection (or a slow request head) is closed after this */
        int max_connections;     /* open client connections over all threads; more are refused */
        int http2;               /* a preon_http2_mode_t; the server resolves auto (preon_server_http2) */
        int drain_delay_ms;      /* after SIGTERM: ready turns 503 at once, listeners close after this */
    } server;
    struct {
        char *url;                  /* libpq URI or key=value string; "" = libpq's PG* variables */
        char *read_url;             /* a second pool for reads (standbys); "" = none, reads go to url */
        int connections_per_thread; /* pipelined connections each event loop owns (0: chosen at start-up) */
        int max_queued;             /* queries waiting or in flight per thread before 503 */
        int max_queue_wait_ms;      /* oldest query waiting longer than this: new requests get 503 (0: no bound) */
        int query_timeout_ms;       /* query at the head of a pipeline for longer than this: 504, reconnect */
        int client_check_ms;        /* server's client_connection_check_interval (0: not sent) */
        int connect_timeout_ms;     /* a connection attempt older than this is abandoned */
        int reconnect_min_ms;       /* first back-off after a failed or lost connection */
        int reconnect_max_ms;       /* back-off doubles up to this */
        int sync;                   /* preon_sync_mode_t of the service's own API (/fruits) */
        int strict_sync;            /* preon_sync_mode_t of routes held to strict Syncs (TechEmpower's; alias tfb_sync) */
        int pipeline_depth;         /* batches a connection may have in flight (0: any number) */
        int pooler;                 /* preon_pooler_t: no startup options behind one; unnamed statements in transaction mode */
    } database;
    struct {
        int level;  /* preon_log_level_t */
        int format; /* preon_log_format_t */
        int access; /* one line per request */
    } log;
    struct {
        char *live_path;  /* 200 while the loops run */
        char *ready_path; /* 200 when every thread has a database connection and no drain is under way */
    } health;
    struct {
        int enabled;
        char *path; /* Prometheus text format */
    } metrics;
    struct {
        int techempower; /* TechEmpower's test types mounted: their routes, and their statements on every connection */
    } modules;
    /* Where each key was last set ("FILE:LINE:COL" or "environment NAME"; NULL: its default), by table row, so that
     * a check across keys can point at the line to change. */
    char *origin[PREON_CONFIG_KEYS];
    /* One line "WHERE: old.key is deprecated, use new.key\n" for each renamed key set by its old name; NULL: none.
     * main.c logs them once the log runs. */
    char *deprecated;
} preon_config_t;

/** Fills `cfg` with the built-in defaults. Pair with preon_config_dispose. */
void preon_config_init(preon_config_t *cfg);

/** Frees the strings `cfg` owns. Accepts a config that was only initialised. */
void preon_config_dispose(preon_config_t *cfg);

/**
 * Applies a YAML document (`text`, `len` bytes) on top of `cfg`. `name` is the file name used in messages.
 * On error returns a negative code and writes one line "NAME:LINE:COL: what is wrong" to `err`.
 */
int preon_config_load_string(preon_config_t *cfg, const char *name, const char *text, size_t len, char *err, size_t errlen);

/** Reads the file `path` and applies it as preon_config_load_string does ("PATH: cannot read: ..." if unreadable). */
int preon_config_load_file(preon_config_t *cfg, const char *path, char *err, size_t errlen);

/**
 * Applies every PREON_<SECTION>_<KEY> found in `envp` (a NULL-terminated "NAME=value" array, e.g. environ).
 * On error writes "environment PREON_X_Y: what is wrong" to `err` and returns a negative code.
 */
int preon_config_apply_env(preon_config_t *cfg, char *const *envp, char *err, size_t errlen);

/**
 * Checks what no single key can: keys that cannot work together. Call after the file and the environment. On error
 * writes "ORIGIN: what is wrong and what to set" to `err` (ORIGIN as in `origin`) and returns a negative code.
 */
int preon_config_validate(const preon_config_t *cfg, char *err, size_t errlen);

/**
 * Resolves database.connections_per_thread 0 ("auto") for a server of `threads` event loops: 4 connections in all,
 * at least 1 per thread (4 on one thread, 2 on two or three, 1 from four up). Writes "set" or how it chose into
 * `why`. Returns the number now in force.
 */
int preon_config_choose_connections(preon_config_t *cfg, unsigned threads, char *why, size_t whylen);

/**
 * Fills in defaults that follow other keys, for the keys not set by hand: database.max_queue_wait_ms, when its
 * default is not below server.request_timeout_ms, becomes half of it, so that the queue's 503 still comes before the
 * request's 504.
 * Call after the file and the environment, before preon_config_validate.
 */
void preon_config_settle(preon_config_t *cfg);

/**
 * Names, in `out` ("a.b, c.d"), the keys outside `log` whose values differ between `a` and `b`: what a reload cannot
 * apply to a running server. Returns how many.
 */
int preon_config_changed_keys(const preon_config_t *a, const preon_config_t *b, char *out, size_t outlen);

/** The most queries one request makes at once (/queries?queries=500, /updates?queries=500): database.max_queued must
 * leave room for it, or such a request would be refused for ever. */
#define PREON_MAX_REQUEST_QUERIES 500

/** Writes every key and its value as YAML to `fp` (for --check-config and the start-up log). */
void preon_config_print(const preon_config_t *cfg, void *fp);

#endif
