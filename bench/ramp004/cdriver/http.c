// SPDX-License-Identifier: MIT
// Connections to the target, shared by every user as Go's http.Transport shares them (the Go driver's settings):
// at most max_conns, the most recently idle one reused first, closed after 5 s idle, a dial given up after 5 s,
// users beyond the limit waiting in arrival order. HTTP/1.1 with keep-alive: Content-Length, chunked or
// until-close bodies; a GET whose reused connection the server had closed is sent again once on a new one (Go does
// the same for idempotent requests). Every socket is registered once, edge-triggered: no epoll_ctl per request.
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "driver.h"

#define IDLE_S 5.0
#define DIAL_S 5.0

enum cstate { C_FREE, C_DIAL, C_IDLE, C_BUSY };
enum bmode { B_NONE, B_LENGTH, B_CHUNKED, B_EOF };
enum chunk { CH_SIZE, CH_EXT, CH_DATA, CH_DATA_END, CH_TRAILER };

struct buf {
    char *p;
    size_t n, cap;
};

struct conn {
    int fd, user, reused, next_free;
    uint32_t gen;
    enum cstate state;
    double since;   // dial start, or idle since
    int prev, next; // the idle list
    char w[512];
    size_t wlen, woff;
    // the answer being read
    struct buf head, body;
    int head_done, status, close_after, retry_after, large;
    enum bmode mode;
    long left;         // body bytes still due (B_LENGTH) or of the current chunk
    enum chunk cstate; // B_CHUNKED's state
    int line_len;      // B_CHUNKED: bytes in the trailer line so far
    size_t got;        // bytes received for this request
    char link[NEXT_LEN + 8];
};

static struct conn *conns;
static int ep, free_conn = -1, idle_head = -1, idle_tail = -1, open_n;
static struct sockaddr_storage addr;
static socklen_t addr_len;

// users waiting for a connection, in arrival order: a ring of (user, gen); an entry is stale once the user's gen moved
static struct wait {
    int user;
    uint32_t gen;
} * waits;
static size_t wait_head, wait_n, wait_cap;

static void fail(const char *what)
{
    perror(what);
    exit(2);
}

int http_init(void)
{
    struct sockaddr_in *a4 = (struct sockaddr_in *)&addr;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&addr;
    memset(&addr, 0, sizeof(addr));
    if (inet_pton(AF_INET, S.host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET, a4->sin_port = htons((uint16_t)S.port), addr_len = sizeof(*a4);
    } else if (inet_pton(AF_INET6, S.host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6, a6->sin6_port = htons((uint16_t)S.port), addr_len = sizeof(*a6);
    } else {
        fprintf(stderr, "driver: -url must name an IP address (127.0.0.1, [::1]), not %s\n", S.host);
        return -1;
    }
    if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
        fail("epoll_create1");
    conns = calloc((size_t)S.max_conns, sizeof(*conns));
    if (conns == NULL)
        fail("calloc");
    for (int i = S.max_conns - 1; i >= 0; i--)
        conns[i].fd = -1, conns[i].next_free = free_conn, free_conn = i;
    return ep;
}

// ---- the idle list (most recent first) and the wait

static void idle_push(int ci)
{
    struct conn *c = &conns[ci];
    c->state = C_IDLE, c->since = now_s(), c->prev = -1, c->next = idle_head;
    if (idle_head >= 0)
        conns[idle_head].prev = ci;
    idle_head = ci;
    if (idle_tail < 0)
        idle_tail = ci;
}

static void idle_remove(int ci)
{
    struct conn *c = &conns[ci];
    if (c->prev >= 0)
        conns[c->prev].next = c->next;
    else
        idle_head = c->next;
    if (c->next >= 0)
        conns[c->next].prev = c->prev;
    else
        idle_tail = c->prev;
}

static void wait_push(int ui)
{
    if (wait_n == wait_cap) {
        size_t cap = wait_cap ? wait_cap * 2 : 1024;
        struct wait *w = malloc(cap * sizeof(*w));
        if (w == NULL)
            fail("malloc");
        for (size_t i = 0; i < wait_n; i++)
            w[i] = waits[(wait_head + i) % wait_cap];
        free(waits);
        waits = w, wait_cap = cap, wait_head = 0;
    }
    waits[(wait_head + wait_n++) % wait_cap] = (struct wait){ui, users[ui].gen};
    users[ui].waiting = 1;
}

// The first user still waiting, or -1.
static int wait_pop(void)
{
    while (wait_n > 0) {
        struct wait w = waits[wait_head];
        wait_head = (wait_head + 1) % wait_cap, wait_n--;
        struct user *u = &users[w.user];
        if (u->state == U_REQ && u->gen == w.gen && u->waiting) {
            u->waiting = 0;
            return w.user;
        }
    }
    return -1;
}

// ---- a request on a connection

static void conn_close(int ci);
static void give(int ci);

static void reset_answer(struct conn *c)
{
    c->head.n = c->body.n = 0;
    c->head_done = c->status = c->close_after = c->retry_after = c->large = 0;
    c->mode = B_NONE, c->left = 0, c->cstate = CH_SIZE, c->line_len = 0, c->got = 0, c->link[0] = '\0';
}

// The user's request ended on connection ci (kind K_RESET etc. before an answer, or the answer's): the user goes on,
// then the connection goes back to the pool or is closed.
static void finish(int ci, int kind, int keep)
{
    struct conn *c = &conns[ci];
    int ui = c->user;
    c->user = -1;
    if (ui >= 0) {
        users[ui].conn = -1;
        request_done(ui, kind, c->status == 503 && c->retry_after, c->body.p, c->body.n, c->link[0] ? c->link : NULL);
    }
    if (keep)
        give(ci);
    else
        conn_close(ci);
}

static int is_replayable(const struct request *rq)
{
    return strcmp(rq->method, "GET") == 0;
}

// The connection failed before a complete answer: KO, or the request again on a new connection when the server had
// closed a reused one before answering anything.
static void broken(int ci, int kind)
{
    struct conn *c = &conns[ci];
    int ui = c->user;
    if (ui >= 0 && c->reused && c->got == 0 && !users[ui].retried && is_replayable(&users[ui].rq)) {
        users[ui].retried = 1, users[ui].conn = -1, c->user = -1;
        conn_close(ci);
        http_send(ui);
        return;
    }
    finish(ci, kind, 0);
}

static void flush(int ci)
{
    struct conn *c = &conns[ci];
    while (c->woff < c->wlen) {
        ssize_t n = send(c->fd, c->w + c->woff, c->wlen - c->woff, MSG_NOSIGNAL);
        if (n > 0) {
            c->woff += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            return; // EPOLLOUT will come
        } else {
            broken(ci, K_RESET);
            return;
        }
    }
}

// Connection ci carries user ui's request now.
static void assign(int ci, int ui)
{
    struct conn *c = &conns[ci];
    struct user *u = &users[ui];
    const struct request *rq = &u->rq;
    c->state = C_BUSY, c->user = ui, u->conn = ci;
    reset_answer(c);
    int n = snprintf(c->w, sizeof(c->w), "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: preon-ramp004\r\n", rq->method, rq->path,
                     S.hostport);
    if (rq->body_len > 0)
        n += snprintf(c->w + n, sizeof(c->w) - (size_t)n, "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
                      rq->body_len, rq->body);
    else
        n += snprintf(c->w + n, sizeof(c->w) - (size_t)n, "\r\n");
    c->wlen = (size_t)n, c->woff = 0;
    request_got_conn(ui);
    flush(ci);
}

// A free or newly connected connection: to the first waiting user, else idle.
static void give(int ci)
{
    int ui = wait_pop();
    if (ui >= 0) {
        conns[ci].reused = conns[ci].state == C_BUSY || conns[ci].state == C_IDLE;
        assign(ci, ui);
    } else {
        idle_push(ci);
    }
}

static int kind_of_errno(int e)
{
    switch (e) {
    case ECONNREFUSED:
        return K_REFUSED;
    case ETIMEDOUT:
        return K_TIMEOUT;
    case ECONNRESET:
    case EPIPE:
        return K_RESET;
    default:
        return K_OTHER;
    }
}

static void dial(int ui)
{
    int ci = free_conn;
    struct conn *c = &conns[ci];
    free_conn = c->next_free;
    open_n++;
    c->gen++, c->user = ui, c->reused = 0, c->state = C_DIAL, c->since = now_s();
    users[ui].conn = ci;
    c->fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        finish(ci, K_OTHER, 0);
        return;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                             .data.u64 = ((uint64_t)c->gen << 32) | (uint32_t)ci};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) != 0)
        fail("epoll_ctl");
    if (connect(c->fd, (struct sockaddr *)&addr, addr_len) == 0) {
        c->reused = 0;
        assign(ci, ui);
    } else if (errno != EINPROGRESS) {
        finish(ci, kind_of_errno(errno), 0);
    }
}

static void conn_close(int ci)
{
    struct conn *c = &conns[ci];
    if (c->state == C_IDLE)
        idle_remove(ci);
    if (c->fd >= 0)
        close(c->fd); // also leaves the epoll set
    c->fd = -1, c->state = C_FREE, c->user = -1, c->gen++;
    c->next_free = free_conn, free_conn = ci;
    open_n--;
    int ui = wait_pop(); // a slot is free: the first waiting user dials
    if (ui >= 0)
        dial(ui);
}

void http_send(int ui)
{
    users[ui].conn = -1;
    if (idle_head >= 0) {
        int ci = idle_head;
        idle_remove(ci);
        conns[ci].reused = 1;
        assign(ci, ui);
    } else if (open_n < S.max_conns) {
        dial(ui);
    } else {
        wait_push(ui);
    }
}

void http_abandon(int ui)
{
    struct user *u = &users[ui];
    u->waiting = 0; // a stale entry of the wait: skipped
    if (u->conn < 0)
        return;
    struct conn *c = &conns[u->conn];
    u->conn = -1, c->user = -1;
    if (c->state == C_BUSY)
        conn_close((int)(c - conns)); // what Go does when a request's context ends
    // a dial goes on; its connection joins the pool
}

// ---- reading an answer

static void append(struct buf *b, const char *p, size_t n, size_t limit)
{
    if (b->n + n > limit)
        n = limit > b->n ? limit - b->n : 0;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        b->p = realloc(b->p, cap + 1);
        if (b->p == NULL)
            fail("realloc");
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static int body_data(struct conn *c, const char *p, size_t n)
{
    if (c->body.n + n > MAX_BODY)
        c->large = 1;
    append(&c->body, p, n, MAX_BODY + 1);
    return c->large;
}

static int has_token(const char *v, const char *tok)
{
    return strcasestr(v, tok) != NULL;
}

// Parses the head in c->head (ending with the blank line); returns -1 on a malformed one.
static int parse_head(struct conn *c, const struct request *rq)
{
    char *line = c->head.p, *end;
    if (strncmp(line, "HTTP/1.", 7) != 0 || c->head.n < 12)
        return -1;
    int http10 = line[7] == '0';
    c->status = atoi(line + 9);
    if (c->status < 100)
        return -1;
    long length = -1;
    int chunked = 0, keep_alive = 0;
    while ((end = strstr(line, "\r\n")) != NULL && end != line) {
        *end = '\0';
        char *colon = strchr(line, ':');
        if (colon != NULL) {
            char *v = colon + 1;
            *colon = '\0';
            while (*v == ' ' || *v == '\t')
                v++;
            if (strcasecmp(line, "content-length") == 0)
                length = atol(v);
            else if (strcasecmp(line, "transfer-encoding") == 0)
                chunked = has_token(v, "chunked");
            else if (strcasecmp(line, "connection") == 0)
                c->close_after |= has_token(v, "close"), keep_alive = has_token(v, "keep-alive");
            else if (strcasecmp(line, "retry-after") == 0)
                c->retry_after = *v != '\0';
            else if (strcasecmp(line, "link") == 0 && c->link[0] == '\0')
                snprintf(c->link, sizeof(c->link), "%s", v);
        }
        line = end + 2;
    }
    if (line == c->head.p)
        return -1;
    if (http10 && !keep_alive)
        c->close_after = 1;
    if (c->status < 200 || c->status == 204 || c->status == 304 || strcmp(rq->method, "HEAD") == 0)
        c->mode = B_NONE;
    else if (chunked)
        c->mode = B_CHUNKED, c->cstate = CH_SIZE, c->left = 0;
    else if (length >= 0)
        c->mode = B_LENGTH, c->left = length;
    else
        c->mode = B_EOF, c->close_after = 1;
    return 0;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if ((ch | 32) >= 'a' && (ch | 32) <= 'f')
        return (ch | 32) - 'a' + 10;
    return -1;
}

// Body bytes of a chunked answer; returns 1 when the answer is complete, -1 when malformed, 0 for more.
static int chunked(struct conn *c, const char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        char ch = p[i];
        switch (c->cstate) {
        case CH_SIZE:
            if (hexval(ch) >= 0) {
                if (c->left > MAX_BODY * 4L)
                    return -1;
                c->left = c->left * 16 + hexval(ch);
            } else if (ch == '\n') {
                c->cstate = c->left == 0 ? CH_TRAILER : CH_DATA, c->line_len = 0;
            } else if (ch != '\r') {
                c->cstate = CH_EXT;
            }
            i++;
            break;
        case CH_EXT:
            if (ch == '\n')
                c->cstate = c->left == 0 ? CH_TRAILER : CH_DATA, c->line_len = 0;
            i++;
            break;
        case CH_DATA: {
            size_t take = (size_t)c->left < n - i ? (size_t)c->left : n - i;
            body_data(c, p + i, take);
            c->left -= (long)take, i += take;
            if (c->left == 0)
                c->cstate = CH_DATA_END;
            break;
        }
        case CH_DATA_END:
            if (ch == '\n')
                c->cstate = CH_SIZE, c->left = 0;
            i++;
            break;
        case CH_TRAILER:
            if (ch == '\n') {
                if (c->line_len == 0)
                    return 1;
                c->line_len = 0;
            } else if (ch != '\r') {
                c->line_len++;
            }
            i++;
            break;
        }
    }
    return 0;
}

// Bytes of the answer; returns 1 when it is complete, -1 when malformed, 0 for more.
static int feed(struct conn *c, const char *p, size_t n, const struct request *rq)
{
    c->got += n;
    if (!c->head_done) {
        size_t had = c->head.n, from = had > 3 ? had - 3 : 0;
        append(&c->head, p, n, MAX_HEAD + 1);
        char *end = strstr(c->head.p + from, "\r\n\r\n");
        if (end == NULL)
            return c->head.n > MAX_HEAD ? -1 : 0;
        size_t head_len = (size_t)(end - c->head.p) + 4;
        c->head.n = head_len;
        c->head_done = 1;
        if (parse_head(c, rq) < 0)
            return -1;
        p += head_len - had, n -= head_len - had;
    }
    switch (c->mode) {
    case B_NONE:
        return 1;
    case B_LENGTH: {
        size_t take = (size_t)c->left < n ? (size_t)c->left : n;
        body_data(c, p, take);
        c->left -= (long)take;
        return c->left == 0 || c->large ? 1 : 0;
    }
    case B_CHUNKED: {
        int r = chunked(c, p, n);
        return c->large ? 1 : r;
    }
    case B_EOF:
        body_data(c, p, n);
        return c->large ? 1 : 0;
    }
    return -1;
}

static int status_kind(int status)
{
    if (status >= 200 && status < 400)
        return K_OK;
    if (status == 503)
        return K_503;
    if (status >= 500)
        return K_5XX;
    return K_4XX;
}

static void complete(int ci)
{
    struct conn *c = &conns[ci];
    int kind = c->large ? K_LARGE : status_kind(c->status);
    finish(ci, kind, !c->close_after && !c->large);
}

static void readable(int ci)
{
    static char in[65536];
    struct conn *c = &conns[ci];
    uint32_t gen = c->gen;
    for (;;) {
        ssize_t n = recv(c->fd, in, sizeof(in), 0);
        if (n > 0) {
            if (c->state != C_BUSY || c->user < 0) { // bytes nobody asked for: the connection is not usable
                conn_close(ci);
                return;
            }
            int r = feed(c, in, (size_t)n, &users[c->user].rq);
            if (r != 0) {
                if (r > 0)
                    complete(ci);
                else
                    finish(ci, K_OTHER, 0);
                return;
            }
        } else if (n == 0) {
            if (c->state == C_BUSY && c->user >= 0 && c->head_done && c->mode == B_EOF)
                complete(ci);
            else if (c->state == C_BUSY && c->user >= 0)
                broken(ci, K_RESET);
            else
                conn_close(ci);
            return;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN) {
            return;
        } else {
            if (c->state == C_BUSY && c->user >= 0)
                broken(ci, kind_of_errno(errno));
            else
                conn_close(ci);
            return;
        }
        if (c->gen != gen)
            return;
    }
}

void http_event(uint64_t data, uint32_t events)
{
    int ci = (int)(uint32_t)data;
    struct conn *c = &conns[ci];
    if (c->gen != (uint32_t)(data >> 32) || c->state == C_FREE)
        return; // an event of a connection closed meanwhile
    if (c->state == C_DIAL) {
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
            if (c->user >= 0)
                finish(ci, kind_of_errno(err), 0);
            else
                conn_close(ci);
            return;
        }
        if (c->user >= 0)
            assign(ci, c->user);
        else
            give(ci); // its user left (timeout): the connection joins the pool
        return;
    }
    uint32_t gen = c->gen;
    if ((events & EPOLLOUT) && c->state == C_BUSY && c->woff < c->wlen)
        flush(ci);
    if (c->gen == gen && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
        readable(ci);
}

void http_tick(double now)
{
    while (idle_tail >= 0 && now - conns[idle_tail].since >= IDLE_S)
        conn_close(idle_tail);
    for (int ci = 0; ci < S.max_conns; ci++)
        if (conns[ci].state == C_DIAL && now - conns[ci].since >= DIAL_S) {
            if (conns[ci].user >= 0)
                finish(ci, K_TIMEOUT, 0);
            else
                conn_close(ci);
        }
}
