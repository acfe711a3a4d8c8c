/* SPDX-License-Identifier: MIT */
#ifndef PREON_DB_H
#define PREON_DB_H

#include <h2o.h>
#include <stddef.h>
#include <stdint.h>
#include "preon/config.h"
#include "preon/metrics.h"

/*
 * The database layer: each event-loop thread owns one pool, and the pool owns a few libpq connections in
 * pipeline mode. A query is a record the caller owns (usually embedded in a larger per-request struct); the
 * pool sends it at the end of the current loop pass, behind whatever is already in flight, and calls exactly one
 * of its callbacks later on the same thread. Nothing here blocks and nothing takes a lock: every function must
 * be called on the thread that owns the pool.
 */

typedef struct st_preon_db_pool_t preon_db_pool_t;
typedef struct st_preon_db_query_t preon_db_query_t;
/** A query's rows; really a PGresult, kept opaque so that only src/db/ includes libpq-fe.h. */
typedef struct st_preon_db_result_t preon_db_result_t;

/** A statement every connection prepares once, by its index in the table given to the pool. */
typedef struct st_preon_db_statement_t {
    const char *name;
    const char *sql;
    int nparams;
} preon_db_statement_t;

#define PREON_DB_MAX_PARAMS 8

/** Query flags. PREON_DB_WRITE and PREON_DB_ADMITTED are the caller's; preon_db_submit sets the others from its sync
 * mode. */
#define PREON_DB_WRITE 0x1u     /* never batched under one Sync with other requests' queries, never re-sent */
#define PREON_DB_ADMITTED 0x10u /* a later step of a request already let in: judged by its age only, not refused */
#define PREON_DB_MORE 0x2u      /* more queries of the same request follow: no Sync after this one (unless OWN_SYNC) */
#define PREON_DB_SHARED 0x4u    /* a read that may share its Sync with other requests' reads (sync: batch) */
#define PREON_DB_OWN_SYNC 0x8u  /* a Sync right after this query (sync: query, TechEmpower's rule) */

/** Called once with the rows. `res` is borrowed: valid only during the call. */
typedef void (*preon_db_result_cb)(preon_db_query_t *q, const preon_db_result_t *res);
/**
 * Called once instead of on_result: `err` is PREON_EDB (the database refused the query; `detail` is its
 * message), PREON_ECONFLICT (it violated a constraint: SQLSTATE class 23, also when found at COMMIT),
 * PREON_ERETRY (serialization failure 40001 or deadlock 40P01: the transaction was rolled back, the same request may
 * succeed if repeated), PREON_ETIMEDOUT, PREON_ECONNLOST (the connection broke before the query's Sync was
 * answered: a write may or may not have committed), PREON_ENOTCONN or PREON_ESHUTDOWN. `detail` is borrowed.
 *
 * Neither callback runs before the query's Sync has been answered: the implicit COMMIT runs at the Sync and can
 * fail there (a deferred constraint, a serialization failure), after the statement itself looked fine.
 */
typedef void (*preon_db_error_cb)(preon_db_query_t *q, int err, const char *detail);

struct st_preon_db_query_t {
    unsigned stmt;                           /* index into the statement table */
    unsigned flags;                          /* PREON_DB_* */
    int nparams;                             /* must equal the statement's nparams */
    const char *params[PREON_DB_MAX_PARAMS]; /* text-format values, borrowed until a callback runs */
    preon_db_result_cb on_result;
    preon_db_error_cb on_error;
    /* owned by the db layer while the query is queued */
    preon_db_query_t *_next;
    uint64_t _queued_ns;
    void *_res;  /* its result, held until the Sync is answered */
    void *_conn; /* the connection it is queued on */
    unsigned char _resent;
    unsigned char _state; /* where it is: not queued, unsent, canceled, taken out, sent (src/db/internal.h) */
};

/** Counters of one pool, as preon_db_counters_read gives them, for metrics and readiness. */
typedef struct st_preon_db_stats_t {
    size_t queued;          /* accepted and not yet answered */
    unsigned ready;         /* connections able to take queries */
    unsigned connecting;    /* connections being established */
    unsigned total;         /* configured connections */
    uint64_t reconnects;    /* connections (re)established after the first */
    uint64_t rejected_full; /* submits refused with PREON_EQUEUEFULL (each one request's 503) */
    uint64_t rejected_slow; /* submits refused with PREON_EOVERLOADED (database.max_queue_wait_ms) */
    uint64_t rejected_down; /* submits refused with PREON_ENOTCONN */
    uint64_t moved;         /* queries a lost connection had not sent, moved to another connection */
} preon_db_stats_t;

/** How a query ended, for preon_db_queries_total{outcome}. */
typedef enum {
    PREON_DB_OUTCOME_OK,
    PREON_DB_OUTCOME_ERROR,
    PREON_DB_OUTCOME_CONFLICT,
    PREON_DB_OUTCOME_RETRY,
    PREON_DB_OUTCOME_TIMEOUT,
    PREON_DB_OUTCOME_CONNLOST,
    PREON_DB_OUTCOME_NOTSENT,
    PREON_DB_OUTCOMES
} preon_db_outcome_t;
extern const char *const preon_db_outcome_names[PREON_DB_OUTCOMES];

/**
 * What a pool counts, in memory its owner gives it (the server's, one block per thread) so that a scrape on any thread
 * reads this block and never the pool: a pool lives and dies on its own thread. The owner thread writes with relaxed
 * atomics (preon_counter_add); any thread reads with preon_db_counters_read and preon_db_counters_collect.
 */
typedef struct st_preon_db_counters_t {
    uint64_t queued, reconnects, rejected_full, rejected_slow, rejected_down, moved;
    uint64_t ready, connecting, total;       /* connections by state */
    uint64_t (*outcomes)[PREON_DB_OUTCOMES]; /* [statement] */
    preon_hist_t *durations;                 /* [statement], from submit to callback */
    size_t nstatements;
} preon_db_counters_t;

/** Zeroes a block for `nstatements` statements. Pair with preon_db_counters_dispose. */
void preon_db_counters_init(preon_db_counters_t *c, size_t nstatements);
/** Frees what init allocated. Accepts a block that was never initialised (all zero). */
void preon_db_counters_dispose(preon_db_counters_t *c);
/** Fills `*st` from the block. Any thread. */
void preon_db_counters_read(const preon_db_counters_t *c, preon_db_stats_t *st);
/** Adds the per-statement counters into `queries` ([statement][outcome]) and `durations` ([statement]). Any thread. */
void preon_db_counters_collect(const preon_db_counters_t *c, uint64_t (*queries)[PREON_DB_OUTCOMES], preon_hist_t *durations);

/** Where the pools connect: database.url parsed once, its host name resolved once. Shared read-only by all pools. */
typedef struct st_preon_db_target_t preon_db_target_t;

/**
 * Parses `url` (a libpq URI or key=value string; "" means libpq's PG* variables). With `resolve_host`, a host
 * name is looked up now (this blocks: call at start-up only) and pinned as `hostaddr`, so that reconnects never
 * wait on DNS. A positive `client_check_ms` is sent as the server's client_connection_check_interval (unless
 * the URL's options set it). Returns a new target, or NULL with "database.url: why" (secrets scrubbed) in `err`.
 */
preon_db_target_t *preon_db_target_create(const char *url, int client_check_ms, int resolve_host, char *err, size_t errlen);

/** Frees a target. Accepts NULL. */
void preon_db_target_destroy(preon_db_target_t *t);

/**
 * What a pool needs to know of its setting, filled by its caller (from the configuration's database section: the
 * server does it, src/server/server.c's db_settings): the db layer reads nothing else of the configuration.
 */
typedef struct st_preon_db_settings_t {
    unsigned connections;        /* of the pool (database.connections_per_thread, as chosen at start-up) */
    unsigned pipeline_depth;     /* batches a connection has in flight at most (0: no bound) */
    size_t max_queued;           /* queries the pool holds unanswered at most; more are refused (503) */
    unsigned max_queue_wait_ms;  /* a request that would wait longer than this is refused (503; 0: no bound) */
    unsigned query_timeout_ms;   /* the query at the head of a pipeline may take this long; then 504 and reconnect */
    unsigned connect_timeout_ms; /* one connect attempt, to one host */
    unsigned reconnect_min_ms;   /* back-off after a failure, doubling ... */
    unsigned reconnect_max_ms;   /* ... up to this */
    int unnamed_statements;      /* behind a transaction pooler: nothing prepared, each query Parse+Bind+Execute */
} preon_db_settings_t;

/**
 * Creates a pool on `loop` and starts connecting its connections in the background (a database that is down
 * is not an error: the pool keeps retrying with back-off). `settings` are copied; `target`, `statements` and
 * `counters` (initialised for `nstatements`, where the pool counts) are borrowed for the pool's lifetime. `tag` names
 * the pool in logs.
 */
preon_db_pool_t *preon_db_pool_create(h2o_loop_t *loop, const preon_db_settings_t *settings, const preon_db_target_t *target,
                                      const preon_db_statement_t *statements, size_t nstatements, preon_db_counters_t *counters,
                                      const char *tag);

/**
 * Names the pool that takes `pool`'s never-sent queries when the connection they waited on is lost and no other
 * connection of `pool` is ready (a read pool's primary: the database never saw them, so they may go there as a new
 * request's would). Both pools must be the same thread's, with the same statements; `fallback` is borrowed and must
 * outlive `pool`'s last loop pass. Owner thread, before the loop runs.
 */
void preon_db_pool_set_fallback(preon_db_pool_t *pool, preon_db_pool_t *fallback);

/**
 * Fails every query still queued with PREON_ESHUTDOWN (their callbacks run before this returns) and closes the
 * connections; from then on submits return PREON_ESHUTDOWN. Call on the owner thread, with its loop still to run
 * once (the sockets close there). Idempotent.
 */
void preon_db_pool_close(preon_db_pool_t *pool);

/** Frees the pool, closing it first if that was not done. Owner thread. Accepts NULL. */
void preon_db_pool_destroy(preon_db_pool_t *pool);

/**
 * Queues the `n` queries of one request for sending at the end of this loop pass, all on the same connection (under
 * PREON_SYNC_QUERY each on the least loaded one: they share no transaction), with their Syncs as `sync` (a
 * preon_sync_mode_t) says: PREON_SYNC_QUERY a Sync after each query,
 * PREON_SYNC_REQUEST one after the last, PREON_SYNC_BATCH the reads behind a Sync shared with other requests'
 * reads. All or nothing: returns 0, after which exactly one callback of each query will run later; or, with no
 * callback ever called, PREON_ENOTCONN (no connection is ready), PREON_EOVERLOADED (its queries would wait longer than
 * database.max_queue_wait_ms: the work queued ahead of them on the least loaded connection at that connection's recent
 * service time per query, or the age of its oldest query), PREON_EQUEUEFULL (database.max_queued would be
 * exceeded on this thread), PREON_ESHUTDOWN (the pool is closed) or PREON_EINVAL (bad statement or parameter
 * count). Queries marked PREON_DB_ADMITTED are not judged by the wait (their request was, at its first step), only
 * by the queue's length and, while unsent, by their own age. Sets PREON_DB_MORE, PREON_DB_SHARED and
 * PREON_DB_OWN_SYNC itself.
 */
int preon_db_submit(preon_db_pool_t *pool, preon_db_query_t *const *qs, size_t n, int sync);

/**
 * Takes back a query whose request no longer needs it (answered already: a timeout, a sibling query's failure, the
 * client gone). If it has not been handed to the database, it never will be: returns 0, and its on_error runs with
 * PREON_ECANCELED at the end of this loop pass (every accepted query still gets exactly one callback). If it was sent,
 * returns PREON_EBUSY and its callback comes when the database answers. Owner thread.
 */
int preon_db_cancel(preon_db_query_t *q);

/** Rows in a result. */
int preon_db_result_rows(const preon_db_result_t *res);
/** The text of (row, col); NULL for SQL NULL. `*len` receives its length. Borrowed from `res`. */
const char *preon_db_result_value(const preon_db_result_t *res, int row, int col, size_t *len);
/** Rows an UPDATE/INSERT/DELETE touched (0 if not such a command). */
long preon_db_result_affected(const preon_db_result_t *res);

#endif
