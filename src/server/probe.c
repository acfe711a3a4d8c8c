/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include "preon/probe.h"

int preon_probe(const preon_config_t *cfg, const char *path)
{
    /* A server on "::" or an IPv6 address is probed over ::1; anything else over 127.0.0.1. */
    int v6 = strchr(cfg->server.listen, ':') != NULL;
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg->server.port)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)cfg->server.port)};
    inet_pton(AF_INET, "127.0.0.1", &a4.sin_addr);
    inet_pton(AF_INET6, "::1", &a6.sin6_addr);
    int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 1;
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int ok = 0;
    if (connect(fd, v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4, v6 ? sizeof(a6) : sizeof(a4)) == 0) {
        char req[512], resp[64];
        int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", path);
        if (n > 0 && (size_t)n < sizeof(req) && write(fd, req, (size_t)n) == n) {
            ssize_t got = read(fd, resp, sizeof(resp) - 1);
            if (got > 0) {
                resp[got] = '\0';
                ok = strncmp(resp, "HTTP/1.1 200 ", 13) == 0 || strncmp(resp, "HTTP/1.0 200 ", 13) == 0;
            }
        }
    }
    close(fd);
    return ok ? 0 : 1;
}
