// SPDX-License-Identifier: MIT
// The floor of an HTTP/1.1 server on this machine, for bench/throughput.py: one epoll loop per thread, each with
// its own SO_REUSEPORT listener on 127.0.0.1, and one canned answer written per request. It does not parse
// requests: it counts the blank lines that end request heads ("\r\n\r\n", also when split across reads), so
// pipelined requests get one answer each, all of one read's answers in one write. No server that actually looks
// at the request can do less per request.
//
// usage: epoll_hello PORT [THREADS]    (THREADS defaults to 2; runs until killed)
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static const char ANSWER[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nHello";
#define ANSWER_LEN (sizeof(ANSWER) - 1)
#define MAX_CONNS 65536
#define READ_SIZE 16384
#define MAX_BATCH 64 // answers per write; larger bursts are written in several writes

static int port;

// How far into "\r\n\r\n" each connection's bytes have matched so far, indexed by descriptor (one thread owns a
// descriptor at a time, so no lock is needed).
static unsigned char matched[MAX_CONNS];

static int listener(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(fd, 4096) != 0) {
        perror("epoll_hello: listen");
        exit(1);
    }
    return fd;
}

// Counts the request heads that end in buf, carrying the partial match of "\r\n\r\n" in *state.
static size_t count_heads(const char *buf, size_t n, unsigned char *state)
{
    static const char END[] = "\r\n\r\n";
    size_t heads = 0;
    unsigned s = *state;
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == END[s]) {
            if (++s == 4) {
                heads++;
                s = 0;
            }
        } else {
            s = buf[i] == '\r' ? 1 : 0;
        }
    }
    *state = (unsigned char)s;
    return heads;
}

// Writes `count` answers; a client that does not read them fast enough is dropped (wrk always reads).
static int answer(int fd, size_t count, const char *batch)
{
    while (count > 0) {
        size_t k = count < MAX_BATCH ? count : MAX_BATCH, len = k * ANSWER_LEN, off = 0;
        while (off < len) {
            ssize_t w = write(fd, batch + off, len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return -1;
            off += (size_t)w;
        }
        count -= k;
    }
    return 0;
}

static void *loop(void *arg)
{
    (void)arg;
    int lfd = listener(), ep = epoll_create1(0);
    char *buf = malloc(READ_SIZE), *batch = malloc(MAX_BATCH * ANSWER_LEN);
    for (int i = 0; i < MAX_BATCH; i++)
        memcpy(batch + i * ANSWER_LEN, ANSWER, ANSWER_LEN);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd}, events[256];
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    for (;;) {
        int n = epoll_wait(ep, events, 256, -1);
        for (int i = 0; i < n; i++) {
            int fd = events[i].data.fd;
            if (fd == lfd) {
                int c, one = 1;
                while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    if (c >= MAX_CONNS) {
                        close(c);
                        continue;
                    }
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                    matched[c] = 0;
                    struct epoll_event cev = {.events = EPOLLIN, .data.fd = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
                }
                continue;
            }
            ssize_t r;
            size_t heads = 0;
            while ((r = read(fd, buf, READ_SIZE)) > 0) {
                heads += count_heads(buf, (size_t)r, &matched[fd]);
                if (r < READ_SIZE)
                    break;
            }
            int gone = r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR);
            if ((heads > 0 && answer(fd, heads, batch) != 0) || gone)
                close(fd); // closing removes it from the epoll set
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (port = atoi(argv[1])) <= 0) {
        fprintf(stderr, "usage: epoll_hello PORT [THREADS]\n");
        return 2;
    }
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    if (threads < 1)
        threads = 1;
    pthread_t t;
    for (int i = 1; i < threads; i++)
        pthread_create(&t, NULL, loop, NULL);
    loop(NULL);
    return 0;
}
