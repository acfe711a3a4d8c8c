// SPDX-License-Identifier: MIT
// Command driver (C): users ARRIVE at a rate ramping from -r0 to -r1 users/s over -duration seconds, whether or not
// earlier users got their answers; each plays the journey (journey.c) with think times and leaves. The flags, the
// output (one JSON object a line on stdout, a readable line per window on stderr), the send-lag rule (a window whose
// lag p99 exceeds -lag-bound, or a user it could not start, makes the run fail with exit 3) and the stop rules are
// those of the Go driver (bench/ramp004/driver/main.go), which bench/measure/ramp_open.py also runs.
//
// One thread and one epoll loop carry every user: a user is a struct, a think time an entry of a timer heap, a
// request timeout an entry of a FIFO (every timeout has the same length, so they expire in the order they began).
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>

#include "driver.h"

struct settings S = {.r0 = 1,
                     .r1 = 100,
                     .duration = 60,
                     .think = 1,
                     .timeout = 60,
                     .window = 10,
                     .lag_bound = 100,
                     .break_p95 = 1000,
                     .break_ko = 5,
                     .drain = 15,
                     .max_conns = 4096,
                     .max_active = 200000,
                     .max_id = 3,
                     .seed = 1};
struct user *users;

static struct timespec t0;
static int free_user = -1, user_slots;
static long active, started, finished;
static int stopped;

double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
}

// ---- timers: think times in a min-heap, request timeouts in a FIFO; an entry whose gen is stale is skipped

struct timer {
    double at;
    int user;
    uint32_t gen;
};
static struct {
    struct timer *v;
    size_t n, cap, head; // head: the FIFO's first entry
} heap, fifo;

static void grow(struct timer **v, size_t *cap, size_t need)
{
    if (need <= *cap)
        return;
    *cap = *cap ? *cap * 2 : 4096;
    if ((*v = realloc(*v, *cap * sizeof(**v))) == NULL) {
        fprintf(stderr, "driver: out of memory\n");
        exit(2);
    }
}

static void heap_push(double at, int ui)
{
    grow(&heap.v, &heap.cap, heap.n + 1);
    size_t i = heap.n++;
    while (i > 0 && heap.v[(i - 1) / 2].at > at) {
        heap.v[i] = heap.v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap.v[i] = (struct timer){at, ui, users[ui].gen};
}

static struct timer heap_pop(void)
{
    struct timer top = heap.v[0], last = heap.v[--heap.n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= heap.n)
            break;
        if (c + 1 < heap.n && heap.v[c + 1].at < heap.v[c].at)
            c++;
        if (heap.v[c].at >= last.at)
            break;
        heap.v[i] = heap.v[c];
        i = c;
    }
    if (heap.n > 0)
        heap.v[i] = last;
    return top;
}

static void fifo_push(double at, int ui)
{
    if (fifo.head > 0 && fifo.head == fifo.n) // empty: start over
        fifo.head = fifo.n = 0;
    if (fifo.n == fifo.cap && fifo.head > fifo.cap / 2) { // mostly consumed: compact
        memmove(fifo.v, fifo.v + fifo.head, (fifo.n - fifo.head) * sizeof(*fifo.v));
        fifo.n -= fifo.head, fifo.head = 0;
    }
    grow(&fifo.v, &fifo.cap, fifo.n + 1);
    fifo.v[fifo.n++] = (struct timer){at, ui, users[ui].gen};
}

// ---- users

static void leave(int ui)
{
    struct user *u = &users[ui];
    u->state = U_FREE, u->gen++;
    u->next_free = free_user, free_user = ui;
    active--, finished++;
}

static void think_then_next(int ui)
{
    struct user *u = &users[ui];
    if (++u->step >= journey_steps()) {
        leave(ui);
        return;
    }
    u->state = U_THINK, u->gen++;
    u->planned = now_s() + journey_think(u);
    heap_push(u->planned, ui);
}

// User ui plays its current step now (its planned send time is u->planned).
static void play(int ui)
{
    struct user *u = &users[ui];
    if (stopped) {
        leave(ui);
        return;
    }
    if (!journey_request(u, &u->rq)) {
        stats_skip(); // an id this step needs never came (its POST was KO): not sent, as in Gatling
        think_then_next(ui);
        return;
    }
    double now = now_s();
    u->state = U_REQ, u->gen++, u->retried = 0, u->waiting = 0;
    u->sent = u->pool_start = now, u->got_conn = -1;
    stats_sent(u->planned, fmax(0, (now - u->planned) * 1000));
    fifo_push(now + S.timeout, ui);
    http_send(ui);
}

void request_got_conn(int ui)
{
    if (users[ui].got_conn < 0)
        users[ui].got_conn = now_s();
}

void request_done(int ui, int kind, int retry_after, const char *body, size_t len, const char *link)
{
    struct user *u = &users[ui];
    if (u->state != U_REQ)
        return;
    if (kind == K_OK)
        kind = journey_keep(u, &u->rq, body ? body : "", body ? len : 0, link);
    double now = now_s();
    // from the planned send time (-latency-from planned): a stall of the target or of the driver is counted in full
    stats_add(now, (now - (S.from_planned ? u->planned : u->sent)) * 1000,
              u->got_conn >= 0 ? (u->got_conn - u->pool_start) * 1000 : 0, kind, kind == K_503 && retry_after);
    think_then_next(ui);
}

static void arrive(long n, double due)
{
    if (active >= S.max_active) {
        stats_arrival(due, 0, 0);
        return;
    }
    int ui;
    if (free_user >= 0) {
        ui = free_user, free_user = users[ui].next_free;
    } else {
        ui = user_slots++;
    }
    struct user *u = &users[ui];
    uint32_t gen = u->gen;
    memset(u, 0, sizeof(*u));
    u->gen = gen + 1, u->id = (int)n, u->conn = -1, u->rng = (uint64_t)(S.seed * 1000003 + n);
    u->planned = due;
    active++, started++;
    stats_arrival(due, 1, fmax(0, (now_s() - due) * 1000));
    play(ui);
}

// ---- flags

static int parse_url(const char *url)
{
    const char *p = strncmp(url, "http://", 7) == 0 ? url + 7 : NULL;
    if (p == NULL)
        return -1;
    const char *end = p + strcspn(p, "/");
    const char *colon = NULL;
    if (*p == '[') {
        const char *rb = memchr(p, ']', (size_t)(end - p));
        if (rb == NULL || (size_t)(rb - p - 1) >= sizeof(S.host))
            return -1;
        memcpy(S.host, p + 1, (size_t)(rb - p - 1)), S.host[rb - p - 1] = '\0';
        colon = rb[1] == ':' ? rb + 1 : NULL;
    } else {
        colon = memchr(p, ':', (size_t)(end - p));
        size_t hl = (size_t)((colon ? colon : end) - p);
        if (hl == 0 || hl >= sizeof(S.host))
            return -1;
        memcpy(S.host, p, hl), S.host[hl] = '\0';
    }
    S.port = colon ? atoi(colon + 1) : 80;
    if ((size_t)(end - p) >= sizeof(S.hostport) || S.port <= 0 || S.port > 65535)
        return -1;
    memcpy(S.hostport, p, (size_t)(end - p)), S.hostport[end - p] = '\0';
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: driver -url http://127.0.0.1:PORT [-r0 -r1 -duration -think -timeout -max-conns "
                    "-max-active -max-id -window -lag-bound -break-p95 -break-ko -stop-after -drain -hello -seed "
                    "-only PATH | -write 1, -latency-from sent|planned]\n");
    exit(2);
}

static const char *latency_from = "sent";

static void parse_flags(int argc, char **argv, const char **url)
{
    static const struct {
        const char *name;
        char type; // d: double, i: int, l: int64, s: string
        void *p;
    } F[] = {{"url", 's', NULL},
             {"r0", 'd', &S.r0},
             {"r1", 'd', &S.r1},
             {"duration", 'd', &S.duration},
             {"think", 'd', &S.think},
             {"timeout", 'd', &S.timeout},
             {"max-conns", 'i', &S.max_conns},
             {"max-active", 'i', &S.max_active},
             {"max-id", 'l', &S.max_id},
             {"window", 'd', &S.window},
             {"lag-bound", 'd', &S.lag_bound},
             {"break-p95", 'd', &S.break_p95},
             {"break-ko", 'd', &S.break_ko},
             {"stop-after", 'i', &S.stop_after},
             {"drain", 'd', &S.drain},
             {"hello", 's', &S.hello},
             {"seed", 'l', &S.seed},
             {"only", 's', &S.only},
             {"write", 'i', &S.write},
             {"latency-from", 's', &latency_from}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (a[0] != '-')
            usage();
        a += a[1] == '-' ? 2 : 1;
        const char *eq = strchr(a, '=');
        size_t n = eq ? (size_t)(eq - a) : strlen(a);
        size_t k = 0;
        while (k < sizeof(F) / sizeof(F[0]) && (strlen(F[k].name) != n || strncmp(F[k].name, a, n) != 0))
            k++;
        if (k == sizeof(F) / sizeof(F[0])) {
            fprintf(stderr, "driver: unknown flag %s\n", argv[i]);
            usage();
        }
        if (eq)
            v = eq + 1;
        else if (i + 1 < argc)
            v = argv[++i];
        else
            usage();
        char *end = NULL;
        errno = 0;
        switch (F[k].type) {
        case 'd':
            *(double *)F[k].p = strtod(v, &end);
            break;
        case 'i':
            *(int *)F[k].p = (int)strtol(v, &end, 10);
            break;
        case 'l':
            *(int64_t *)F[k].p = strtoll(v, &end, 10);
            break;
        default:
            if (F[k].p)
                *(const char **)F[k].p = *v ? v : NULL;
            else
                *url = v;
            end = (char *)v + strlen(v);
        }
        if (errno || end == v || *end != '\0') {
            fprintf(stderr, "driver: bad value %s for -%s\n", v, F[k].name);
            usage();
        }
    }
}

// ---- the run

static void config_line(const char *url)
{
    printf("{\"type\":\"config\",\"driver\":\"c-epoll\",\"url\":\"%s\",\"r0\":%g,\"r1\":%g,\"duration_s\":%g,"
           "\"think_s\":%g,\"timeout_s\":%g,\"max_conns\":%d,\"max_active\":%d,\"max_id\":%lld,\"window_s\":%g,"
           "\"lag_bound_ms\":%g,\"break_p95_ms\":%g,\"break_ko_pct\":%g,\"stop_after\":%d,\"drain_s\":%g,"
           "\"steps\":%d,\"users_planned\":%ld,\"hello\":\"%s\",\"only\":\"%s\",\"write\":%d,"
           "\"latency_from\":\"%s\",\"threads\":1}\n",
           url, S.r0, S.r1, S.duration, S.think, S.timeout, S.max_conns, S.max_active, (long long)S.max_id, S.window, S.lag_bound,
           S.break_p95, S.break_ko, S.stop_after, S.drain, journey_steps(), (long)floor(ramp_count(S.duration)),
           S.hello ? S.hello : "", S.only ? S.only : "", S.write, S.from_planned ? "planned" : "sent");
    fflush(stdout);
}

static void note_behind(char *json, size_t cap, int *n, const char *note)
{
    size_t off = strlen(json);
    if (off > 0)
        json[--off] = '\0'; // drop the closing bracket
    snprintf(json + off, cap - off, "%s\"%s\"]", *n ? "," : "", note);
    (*n)++;
    fprintf(stderr, "%s\n", note);
}

int main(int argc, char **argv)
{
    const char *url = "";
    parse_flags(argc, argv, &url);
    S.from_planned = latency_from != NULL && strcmp(latency_from, "planned") == 0;
    if ((latency_from == NULL || (!S.from_planned && strcmp(latency_from, "sent") != 0)) || (S.only && S.write) ||
        (S.only && S.only[0] != '/'))
        usage();
    if (parse_url(url) < 0 || S.r0 < 0 || S.r1 < 0 || S.r0 + S.r1 <= 0 || S.duration <= 0 || S.think < 0 || S.max_id < 1 ||
        S.window <= 0 || S.max_conns < 1 || S.max_active < 1 || S.timeout <= 0)
        usage();
    struct rlimit l;
    if (getrlimit(RLIMIT_NOFILE, &l) == 0 && l.rlim_cur < l.rlim_max) {
        l.rlim_cur = l.rlim_max;
        setrlimit(RLIMIT_NOFILE, &l);
    }
    users = calloc((size_t)S.max_active, sizeof(*users)); // touched only as far as users are at once
    int ep = http_init();
    if (users == NULL || ep < 0)
        return 2;
    stats_init(S.window);
    config_line(url);

    clock_gettime(CLOCK_MONOTONIC, &t0);
    long n_next = 0;
    double next_at = ramp_at(0), next_window = S.window + 0.2, next_tick = 0.1, last_arrival = 0;
    int arrivals_over = next_at < 0, windows = 0, broken_at = -1, prev_broken = 0, behind_n = 0;
    char behind[65536] = "[]", note[256];
    struct epoll_event ev[512];
    for (;;) {
        double now = now_s();
        while (!arrivals_over && next_at <= now) {
            arrive(n_next, next_at);
            next_at = ramp_at(++n_next);
            if (next_at < 0 || stopped)
                arrivals_over = 1, last_arrival = now;
        }
        if (!arrivals_over && stopped)
            arrivals_over = 1, last_arrival = now;
        while (fifo.head < fifo.n && fifo.v[fifo.head].at <= now) {
            struct timer t = fifo.v[fifo.head++];
            struct user *u = &users[t.user];
            if (u->state == U_REQ && u->gen == t.gen) {
                http_abandon(t.user);
                request_done(t.user, K_TIMEOUT, 0, NULL, 0, NULL);
            }
        }
        while (heap.n > 0 && heap.v[0].at <= now) {
            struct timer t = heap_pop();
            if (users[t.user].state == U_THINK && users[t.user].gen == t.gen)
                play(t.user);
        }
        if (now >= next_tick) {
            next_tick = now + 0.1;
            stats_active(now, (int)active);
            http_tick(now);
            if (arrivals_over && now - last_arrival >= S.drain)
                stopped = 1; // users send nothing more; answers in flight are waited for (at most -timeout)
            if (arrivals_over && active == 0)
                break;
            if (now >= next_window) {
                note[0] = '\0';
                int flags = stats_close_window(windows, (int)active, note, sizeof(note));
                if (flags & 1)
                    note_behind(behind, sizeof(behind), &behind_n, note);
                // the target broke when two windows in a row are broken (one alone may be a stall of the machine)
                if ((flags & 2) && prev_broken && broken_at < 0 && !stopped)
                    broken_at = windows - 1;
                prev_broken = (flags & 2) != 0;
                windows++;
                if (S.stop_after > 0 && broken_at >= 0 && windows - 1 >= broken_at + S.stop_after && !stopped)
                    stopped = 1;
                next_window += S.window;
            }
        }
        double wake = next_tick;
        if (!arrivals_over && next_at < wake)
            wake = next_at;
        if (heap.n > 0 && heap.v[0].at < wake)
            wake = heap.v[0].at;
        if (fifo.head < fifo.n && fifo.v[fifo.head].at < wake)
            wake = fifo.v[fifo.head].at;
        // to the microsecond (epoll_wait's milliseconds would add half a millisecond of send lag on average)
        double wait = wake - now_s();
        struct timespec ts = {0, 0};
        if (wait > 0)
            ts.tv_sec = (time_t)wait, ts.tv_nsec = (long)((wait - (double)(time_t)wait) * 1e9);
        int nev = epoll_pwait2(ep, ev, 512, &ts, NULL);
        if (nev < 0 && errno != EINTR) {
            perror("epoll_wait");
            return 2;
        }
        for (int i = 0; i < nev; i++)
            http_event(ev[i].data.u64, ev[i].events);
    }
    double span = now_s();
    for (; windows < stats_windows(); windows++) { // the last, partial windows
        note[0] = '\0';
        if (stats_close_window(windows, 0, note, sizeof(note)) & 1)
            note_behind(behind, sizeof(behind), &behind_n, note);
    }
    if (stats_not_started() > 0) {
        snprintf(note, sizeof(note), "%ld users could not be started (-max-active %d)", stats_not_started(), S.max_active);
        note_behind(behind, sizeof(behind), &behind_n, note);
    }
    stats_summary(span, started, finished, (long)floor(ramp_count(S.duration)), windows, behind, behind_n);
    if (behind_n > 0) {
        fprintf(stderr, "DRIVER FELL BEHIND: %s — the figures understate the load offered; this run does not count\n", behind);
        return 3;
    }
    return 0;
}
