// SPDX-License-Identifier: MIT
// bench/ramp004's open-workload driver in C: one thread, one epoll loop, no allocation per request. It takes the
// Go driver's flags (bench/ramp004/driver) and writes the same JSON lines, so that bench/measure/ramp_open.py reads
// either; it costs several times less CPU per request (docs/benchmarks.md has both measured). Its fixed-load mode
// (-only, -write, -latency-from planned: bench/scenarios/fixed.py) is its own.
#ifndef RAMP004_DRIVER_H
#define RAMP004_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#define MAX_BODY (1 << 20) // the most of an answer read; more is KO "too_large" and the connection closed
#define MAX_HEAD 65536
#define NEXT_LEN 160

// The outcome of a request: OK (2xx/3xx) or why it is KO; names as the Go driver's (stats.go).
enum kind { K_OK, K_TIMEOUT, K_REFUSED, K_RESET, K_503, K_5XX, K_4XX, K_BODY, K_LARGE, K_OTHER, K_N };
extern const char *const kind_names[K_N];

// ---- the run's settings (main.c) ----
struct settings {
    char host[64], hostport[80];
    int port;
    double r0, r1, duration, think, timeout, window, lag_bound, break_p95, break_ko, drain;
    int max_conns, max_active, stop_after;
    int64_t max_id, seed;
    const char *hello; // ceiling mode: every step GET of this path; NULL for the journey
    // fixed-load mode (-only PATH, -write): each user sends one GET of `only`, or POSTs a fruit and DELETEs it, and
    // leaves; NULL / 0 for the journey
    const char *only;
    int write;
    int from_planned; // -latency-from planned: a request's latency from its planned send time, not its actual one
};
extern struct settings S;

double now_s(void); // seconds since the run's start (CLOCK_MONOTONIC)

// ---- users and the journey (journey.c) ----
struct request {
    const char *method;
    char path[NEXT_LEN + 64];
    char body[160];
    int body_len;
    int list, save_as; // save_as: 0 none, 1 "a", 2 "b"
};

enum ustate { U_FREE, U_THINK, U_REQ };

struct user {
    struct request rq; // the request of its current step
    enum ustate state;
    uint32_t gen;        // bumped at every state change that voids a pending timer, wait or connection
    int step;            // the journey's step being played
    int id;              // the arrival's number
    int waiting;         // in the wait for a pooled connection
    int retried;         // the current request was resent once on a fresh connection
    int64_t ids[2];      // the rows its POSTs created ("a", "b"); 0: none
    char next[NEXT_LEN]; // the next page's path, from the last list's Link
    uint64_t rng;
    double planned, sent, pool_start, got_conn;
    int conn; // the connection carrying its request, or -1
    int next_free;
};

extern struct user *users;
int journey_steps(void);
// The request of user u's current step; 0 when an id it needs never came (its POST was KO): the step is skipped.
int journey_request(struct user *u, struct request *rq);
// What a later step needs from a 2xx answer; returns K_OK or K_BODY (a POST's answer without an id).
int journey_keep(struct user *u, const struct request *rq, const char *body, size_t len, const char *link);
double journey_think(struct user *u);
uint64_t splitmix(uint64_t *s);

// ---- connections and HTTP/1.1 (http.c) ----
int http_init(void);
// Sends user ui's request (users[ui].rq): on an idle connection, a new one, or after a wait for one (at most
// max_conns connections).
void http_send(int ui);
// A user's request ended before its answer (timeout): its connection is closed, or it leaves the wait.
void http_abandon(int ui);
void http_event(uint64_t data, uint32_t events);
void http_tick(double now); // closes connections idle for 5 s, fails dials older than 5 s
// Called by http.c when user ui's request has ended: kind, the body of a 2xx and its Link header (may be NULL).
void request_done(int ui, int kind, int retry_after, const char *body, size_t len, const char *link);
// Called by http.c when user ui got a connection (the end of its pool wait).
void request_got_conn(int ui);

// ---- figures (stats.c) ----
void stats_init(double window_s);
void stats_add(double done, double latency_ms, double pool_wait_ms, int kind, int retry);
void stats_sent(double planned, double lag_ms);
void stats_arrival(double t, int started, double lag_ms);
void stats_active(double t, int n);
void stats_skip(void);
long stats_not_started(void);
int stats_windows(void);
// Window i's JSON line (stdout) and readable line (stderr); returns its flags: 1 behind, 2 broken.
int stats_close_window(int i, int active, char *behind_note, size_t note_len);
void stats_summary(double span, long started, long finished, long planned, int windows, const char *behind_json, int behind_n);
double ramp_rate(double t);
double ramp_count(double t);
double ramp_at(long n);

#endif
