/* SPDX-License-Identifier: MIT */
#ifndef PREON_DB_INTERNAL_H
#define PREON_DB_INTERNAL_H

/* Shared by the files of src/db/, the only place that includes libpq-fe.h. */
#include <libpq-fe.h>
#include <sys/stat.h>
#include "preon/db.h"

typedef enum {
    CONN_IDLE,       /* not connected; connects again at retry_at */
    CONN_CONNECTING, /* PQconnectPoll driven by socket readiness */
    CONN_READY,      /* in pipeline mode, taking queries */
} conn_state_t;

typedef enum { ENTRY_QUERY, ENTRY_PREPARE, ENTRY_SYNC } entry_kind_t;

/* A request of one query goes to the first connection with fewer than this many queries in flight (pool.c's pick)... */
#define PREON_DB_SPILL_AT 64
/* ... whose query at the head of its pipeline has been running for less than this (ms): a healthy batch's head changes
 * every few microseconds; one held by a lock or a slow statement does not. Not lower: on one CPU shared with
 * PostgreSQL, a backend waiting for its turn looks stuck for a few ms (2 ms spread /db's batches now and then). */
#define PREON_DB_STALL_MS 10

/* Reads and writes are priced apart (shed.c's preon__db_cost_ms) once this many writes have been measured, and a
 * write's worth of them is in the recent busy time. */
#define PREON_DB_SVC_WRITES_SPLIT 8

/* The service-time estimate is used once it rests on this many queries, or on this much busy time (ms). Until then a
 * connection is judged only by the age of its oldest query, and sends at most PREON_DB_SVC_FIRST_BATCH queries per
 * batch: its first answers say little of its rate (a backend's cold caches; a loop busy accepting the very burst that
 * brought them, while their results wait in the socket), and a database slow enough to matter shows itself within the
 * time. */
#define PREON_DB_SVC_TRUSTED 256
#define PREON_DB_SVC_TRUSTED_MS 200
#define PREON_DB_SVC_FIRST_BATCH 256
/* ... and rests on about this much of the connection's most recent busy time (ms). */
#define PREON_DB_SVC_HORIZON_MS 100.0

/*
 * A connection's service time, from its recent busy windows (pipeline.c): per query, the busy time over the queries
 * answered in it (a ratio of sums), and the sums that split it between reads and writes (least squares over the
 * windows: time = reads x read + writes x write; shed.c's preon__db_cost_ms), over about the last
 * PREON_DB_SVC_HORIZON_MS of busy time.
 */
typedef struct {
    double ms;                 /* per query, reads and writes alike (0 until measured) */
    double busy_ms;            /* the recent busy time it rests on (at most PREON_DB_SVC_HORIZON_MS) */
    double reads, writes;      /* ... and the reads and writes answered in it (scaled with it) */
    double rr, rw, ww, rt, wt; /* ... and over its windows, the sums of reads^2, reads x writes, writes^2, reads x
                                * time, writes x time (scaled with it) */
    unsigned n, writes_n;      /* queries, writes measured since the connection was made (saturating) */
} svc_t;

/* preon_db_query_t._state: where a query is. Only an unsent query can be canceled or shed. */
enum {
    QUERY_IDLE = 0, /* not queued (never, or its callback has run) */
    QUERY_UNSENT,   /* on its connection's unsent list */
    QUERY_CANCELED, /* on the unsent list, canceled: taken out at the end of the pass, never sent */
    QUERY_DETACHED, /* taken off every list, its callback about to run */
    QUERY_SENT,     /* handed to libpq: it runs, and its callback comes with the answer */
};

/* One thing sent and not yet answered, in the order libpq will answer it (libpq does not say which). */
typedef struct {
    entry_kind_t kind;
    unsigned char ends_send; /* ENTRY_SYNC: the last entry of one preon_db_conn_send (one write, one batch) */
    unsigned stmt;           /* ENTRY_PREPARE */
    preon_db_query_t *q;     /* ENTRY_QUERY */
} ring_entry_t;

/*
 * What the statements sent since the last Sync (one implicit transaction, a "segment") have come to. Filled as their
 * results arrive, taken whole by settle() when the Sync is answered and reset there or when the connection closes.
 */
typedef struct {
    PGresult *sync_err; /* an error that arrived at the Sync: the COMMIT failed */
    int sync_null_ok;   /* libpq ends that error with a NULL before PGRES_PIPELINE_SYNC */
    int failed;         /* a statement failed: the transaction rolled back */
    int err;            /* ... with this error code */
    char why[256];      /* ... and this message */
} segment_t;

/*
 * How a connection, its pipeline and the shedding of its queue report to the pool that owns them (pool.c fills it):
 * the pool calls down into conn.c, pipeline.c and shed.c, and they call back only through this table.
 */
typedef struct st_preon_db_owner_t {
    /**
     * The one way a query is handed back: `err` 0 completes it with `res` (borrowed) through on_result,
     * PREON_DB_RESEND queues it again alone (or fails it if no connection is ready), anything else completes it
     * through on_error with `detail` (NULL: the code's message). The pool counts its outcome and time.
     */
    void (*done)(preon_db_pool_t *pool, preon_db_query_t *q, int err, const char *detail, const PGresult *res);
    /**
     * Queues again the never-sent queries of `list` (linked by _next, oldest first, taken off a connection that was
     * given up): each request's on another ready connection of the pool, else of its fallback pool, as a submit would
     * have placed them. Not placed: canceled ones, with `head_continues` the first request's (its transaction's first
     * statements were sent on the lost connection), and all when no connection is ready. Returns those, linked by
     * _next in order, for the caller to fail; `*moved` receives how many were placed.
     */
    preon_db_query_t *(*requeue)(preon_db_pool_t *pool, preon_db_query_t *list, int head_continues, unsigned *moved);
    /** Makes sure the end-of-pass flush will run. */
    void (*arm_flush)(preon_db_pool_t *pool);
} preon_db_owner_t;

typedef struct st_preon_db_conn_t {
    preon_db_pool_t *pool;
    const preon_db_owner_t *owner; /* the pool's callbacks */
    unsigned index;
    conn_state_t state; /* changed only by set_state, which keeps the pool's counters by state */
    PGconn *pg;
    h2o_socket_t *sock; /* owns a dup() of PQsocket(pg), so that h2o's close does not close libpq's fd */
    int pg_fd;          /* the PQsocket() value `sock` duplicates; libpq may change it while connecting */
    dev_t pg_dev;       /* ... and that socket's identity: libpq may close its socket and get a new one under */
    ino_t pg_ino;       /* the same number within one connect (next host, SSL retry) */
    int write_wait;     /* h2o_socket_notify_write pending on sock */
    uint64_t state_since;
    uint64_t retry_at;
    unsigned backoff_ms;
    int ever_ready;
    int down_logged; /* a failure was logged since the connection was last ready */
    /* queries accepted on this connection but not yet handed to libpq (sent at the end of the loop pass) */
    preon_db_query_t *unsent_head, **unsent_tail;
    /* a ring of what libpq has been given, oldest first */
    ring_entry_t *ring;
    size_t ring_cap, ring_head, ring_count;
    uint64_t head_since; /* see preon__db_conn_head_since */
    size_t nqueries;     /* unsent + in-flight queries, to pick the least loaded connection */
    size_t nwrites;      /* of which writes (PREON_DB_WRITE): they cost what their commit waits for (shed.c) */
    size_t nunsent;      /* of which unsent (canceled ones included until taken out) */
    size_t ncanceled;    /* unsent queries canceled, to be taken out at the end of the pass */
    /* The service time while the connection is busy, from its recent windows (each at least 10 ms of continuous
     * work): what the queue ahead of a new request will cost it (Little's law), reads and writes apart once it can
     * tell them (a write waits for its commit: the WAL flush, with synchronous_commit on). */
    svc_t svc;
    uint64_t svc_busy_total;  /* the busy time svc.n took (ms) */
    uint64_t svc_mark;        /* start of the current window (loop time, ms) */
    unsigned svc_k;           /* queries answered in it */
    unsigned svc_kw;          /* ... of which writes */
    unsigned sends_in_flight; /* batches written and not yet answered to their last Sync (database.pipeline_depth) */
    PGresult *cur;            /* the head entry's first result, kept until libpq's terminating NULL */
    /* Queries whose results are in, waiting for their Sync's answer (the implicit COMMIT), oldest first; each
     * holds its PGresult in q->_res. */
    preon_db_query_t *done_head, **done_tail;
    segment_t seg;           /* what the statements since the last Sync came to */
    char server_said[256];   /* the last FATAL the server sent (as a notice, on an idle connection) */
    unsigned host_start;     /* multi-host URLs: the host the next connect starts at */
    unsigned hosts_passed;   /* hosts timed out or refused since the last back-off, to back off once all were */
    int retry_now;           /* the next schedule_retry reconnects at once (moving on to the next host) */
    unsigned char *prepared; /* per statement: prepared, or its Prepare is in flight */
    char prepare_error[256]; /* why the last Prepare failed, for the queries it took down */
} preon_db_conn_t;

struct st_preon_db_pool_t {
    h2o_loop_t *loop;
    preon_db_settings_t settings;
    const preon_db_statement_t *stmts;
    size_t nstmts;
    char tag[32];
    preon_db_conn_t *conns;
    unsigned nconns;
    preon_db_counters_t *counters; /* the owner's: everything a scrape reads (never the pool itself) */
    size_t queued;                 /* accepted and not yet answered (also in counters->queued) */
    h2o_timeout_t zero_timeout;    /* fires at the end of the loop pass: the batch is sent then */
    h2o_timeout_entry_t flush_entry;
    h2o_timeout_t tick_timeout; /* drives back-off, connect and query timeouts */
    h2o_timeout_entry_t tick_entry;
    const preon_db_target_t *target;
    int closed;                /* preon_db_pool_close ran: submits are refused, the counters stay readable */
    preon_db_pool_t *fallback; /* a read pool's primary: takes the never-sent queries no connection here can */
};

/* The loop's time in ms, as every timer of the db layer counts it. */
static inline uint64_t preon__db_conn_now_ms(const preon_db_conn_t *c)
{
    return h2o_now(c->pool->loop);
}

/* conn.c: connecting, the socket, failing everything */
void preon__db_conn_init(preon_db_conn_t *c, preon_db_pool_t *pool, const preon_db_owner_t *owner, unsigned index);
void preon__db_conn_dispose(preon_db_conn_t *c);
void preon__db_conn_connect(preon_db_conn_t *c);
/** Fails everything the connection holds with `err` and schedules a reconnect. */
void preon__db_conn_fail(preon_db_conn_t *c, int err, const char *why);
/** The connect attempt took longer than database.connect_timeout_ms: fail it and move on to the next host. */
void preon__db_conn_connect_timed_out(preon_db_conn_t *c);
/** Writes what libpq holds (one write for the whole loop pass); waits for writability if the socket is full; fails the
 * connection if it broke. */
void preon__db_conn_flush(preon_db_conn_t *c);

/* pipeline.c: what flows through a ready connection (it reports trouble to its caller, never calls up) */
/** Records one thing handed to libpq, in the order its answer will come. */
void preon__db_conn_push(preon_db_conn_t *c, entry_kind_t kind, unsigned stmt, preon_db_query_t *q);
/** Queues a Sync behind the queries before it: 1, or 0 when libpq could not (the connection is broken). With a libpq
 * that has PQsendPipelineSync (preon's patched one, or PostgreSQL 17's) the Sync leaves with the next flush; with
 * Debian's libpq 15 as shipped it is written at once (PQpipelineSync). */
int preon__db_conn_queue_sync(preon_db_conn_t *c);
/** Takes every result libpq can give without blocking and hands each to its entry: 0, or PREON_ECONNLOST with the
 * reason in `*why` (borrowed) when the connection broke; the caller fails it. */
int preon__db_conn_read_results(preon_db_conn_t *c, const char **why);
/** Hands at most about `cap` unsent queries (whole requests; 0: all) to libpq, with their Syncs, queued in libpq until
 * preon__db_conn_flush writes them: 0, or PREON_ECONNLOST when libpq refused one (the caller fails the connection with
 * PQerrorMessage; what was not handed over stays on the unsent list). */
int preon__db_conn_send_some(preon_db_conn_t *c, size_t cap);
/** Whether a batch may be written now: fewer than database.pipeline_depth are out (0: no bound). */
int preon__db_conn_may_send(const preon_db_conn_t *c);
/** Since when the oldest entry in flight has been the one the server works on (it was sent to an idle
 * connection, or the entry before it was answered): the time the server has spent on it. 0 when idle. */
uint64_t preon__db_conn_head_since(const preon_db_conn_t *c);

/* target.c */
const char *const *preon__db_target_keywords(const preon_db_target_t *t);
const char *const *preon__db_target_values(const preon_db_target_t *t);
/** How many hosts the URL names (1 when it names one, or none). */
unsigned preon__db_target_hosts(const preon_db_target_t *t);
/** The values with the host list rotated to start at host `start` (mod the host count); same keywords. */
const char *const *preon__db_target_values_from(const preon_db_target_t *t, unsigned start);
/** Where (host, port), as PQhost/PQport report it, stands in the list rotated to `start`: 0 for the first. */
unsigned preon__db_target_position(const preon_db_target_t *t, unsigned start, const char *host, const char *port);

/** Not an error: the query is to be sent again, alone (its batch was aborted by a neighbour); see preon_db_owner_t. */
#define PREON_DB_RESEND 1

/* shed.c */
/**
 * Takes out of `c`'s unsent list what must not be sent: canceled queries, and whole requests that can no longer be
 * answered within database.max_queue_wait_ms (their wait so far plus the work ahead of them at the connection's
 * service time). Their callbacks run after all are out: PREON_ECANCELED, or PREON_EOVERLOADED (503: nothing was sent).
 */
void preon__db_shed(preon_db_conn_t *c, uint64_t now_ns);
/** How many queries one batch may carry so that what is in flight can be answered within the bound (0: no cap). */
size_t preon__db_batch_cap(const preon_db_conn_t *c);
/** Whether a request of `n` queries, `writes` of them writes, queued on `c` now would wait longer than the bound. */
int preon__db_would_wait_too_long(const preon_db_conn_t *c, size_t n, size_t writes, uint64_t now_ns);
/** What `reads` reads and `writes` writes cost `c`, in ms, at its measured service times: each kind at its own once
 * the recent windows tell them apart, else every query at the rate of all (0 before any). Owner thread. */
double preon__db_cost_ms(const preon_db_conn_t *c, size_t reads, size_t writes);

#endif
