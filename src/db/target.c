/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "preon/alloc.h"
#include "internal.h"
#include "preon/conninfo.h"
#include "preon/errors.h"
#include "preon/log.h"

/*
 * What every connection of every pool connects to: database.url parsed once at start-up into libpq keywords,
 * plus two of preon's own (results in UTF-8, an application name). A host name is resolved here, once, into
 * `hostaddr`: libpq would otherwise call getaddrinfo() inside PQconnectPoll, blocking an event loop on DNS at
 * every reconnect. The name stays in `host` for authentication and TLS checks.
 */
#define MAX_KEYWORDS 64
#define MAX_HOSTS 16

struct st_preon_db_target_t {
    const char *keywords[MAX_KEYWORDS + 1];
    const char *values[MAX_KEYWORDS + 1];
    size_t n;
    /* With several hosts: the host, hostaddr and port lists rotated to start at host k, in rot[k] (rot[0] is
     * `values`); hosts[] and ports[] name each host as PQhost() and PQport() report it. */
    unsigned nhosts;
    const char **rot[MAX_HOSTS];
    char *hosts[MAX_HOSTS], *ports[MAX_HOSTS];
};

static void add(preon_db_target_t *t, const char *k, const char *v)
{
    if (t->n == MAX_KEYWORDS)
        return;
    t->keywords[t->n] = preon_strdup(k);
    t->values[t->n] = preon_strdup(v);
    t->n++;
}

static const char *find(const preon_db_target_t *t, const char *k)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->keywords[i], k) == 0)
            return t->values[i];
    return NULL;
}

/* Replaces the value of `k`, or adds it. */
static void set(preon_db_target_t *t, const char *k, const char *v)
{
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->keywords[i], k) == 0) {
            free((void *)t->values[i]);
            t->values[i] = preon_strdup(v);
            return;
        }
    }
    add(t, k, v);
}

/*
 * After a query timeout preon drops the connection, but a backend waiting on a lock does not read its socket:
 * without client_connection_check_interval it would wait on, holding a server connection slot, and every
 * further timeout would add one. Sent in the startup packet's options unless the URL's options set it.
 */
static void add_client_check(preon_db_target_t *t, int ms)
{
    const char *options = find(t, "options");
    if (ms <= 0 || (options != NULL && strstr(options, "client_connection_check_interval") != NULL))
        return;
    char buf[1024];
    int n = snprintf(buf, sizeof(buf), "%s%s-c client_connection_check_interval=%d", options != NULL ? options : "",
                     options != NULL ? " " : "", ms);
    if (n > 0 && (size_t)n < sizeof(buf))
        set(t, "options", buf);
}

static int is_numeric_host(const char *h)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, h, buf) == 1 || inet_pton(AF_INET6, h, buf) == 1;
}

static void resolve(preon_db_target_t *t)
{
    const char *found = find(t, "host");
    if (found == NULL)
        found = getenv("PGHOST");
    if (found == NULL || found[0] == '\0' || found[0] == '/' || found[0] == '@' || strchr(found, ',') != NULL ||
        find(t, "hostaddr") != NULL || is_numeric_host(found))
        return;
    /* A copy: set() below replaces the value `found` points into. */
    char host[256];
    snprintf(host, sizeof(host), "%s", found);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int rv = getaddrinfo(host, NULL, &hints, &ai);
    if (rv != 0) {
        preon_log_warn("database host '%s' does not resolve (%s); libpq will try again at each connect", host, gai_strerror(rv));
        return;
    }
    /* Every address, in getaddrinfo's order, as libpq would have tried them: host=n,n hostaddr=a1,a2. */
    char hosts[1024] = "", addrs[1024] = "";
    size_t count = 0;
    for (struct addrinfo *a = ai; a != NULL && count < 8; a = a->ai_next) {
        char addr[INET6_ADDRSTRLEN];
        const void *src = a->ai_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)a->ai_addr)->sin6_addr
                                                   : (const void *)&((struct sockaddr_in *)a->ai_addr)->sin_addr;
        if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) || inet_ntop(a->ai_family, src, addr, sizeof(addr)) == NULL ||
            strstr(addrs, addr) != NULL)
            continue;
        size_t hl = strlen(hosts), al = strlen(addrs);
        if (hl + strlen(host) + 2 > sizeof(hosts) || al + strlen(addr) + 2 > sizeof(addrs))
            break;
        snprintf(hosts + hl, sizeof(hosts) - hl, "%s%s", count ? "," : "", host);
        snprintf(addrs + al, sizeof(addrs) - al, "%s%s", count ? "," : "", addr);
        count++;
    }
    if (count != 0) {
        set(t, "host", hosts);
        add(t, "hostaddr", addrs);
        preon_log_info("database host '%s' resolved to %s (once, at start-up)", host, addrs);
    }
    freeaddrinfo(ai);
}

/* Splits a comma-separated list into at most MAX_HOSTS new strings; returns how many. */
static unsigned split(const char *list, char **items)
{
    unsigned n = 0;
    for (const char *p = list; n < MAX_HOSTS; n++) {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        items[n] = preon_strndup(p, len);
        if (end == NULL) {
            n++;
            break;
        }
        p = end + 1;
    }
    return n;
}

/* `list` rotated to start at item k, if it has one item per host; else `list` itself. */
static const char *rotate(preon_db_target_t *t, const char *list, unsigned k)
{
    char *items[MAX_HOSTS];
    unsigned n = split(list, items);
    const char *out = list;
    if (n == t->nhosts) {
        size_t cap = strlen(list) + 2, len = 0;
        char *buf = preon_malloc(cap);
        for (unsigned i = 0; i < n; i++)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? "," : "", items[(k + i) % n]);
        out = buf;
    }
    for (unsigned i = 0; i < n; i++)
        free(items[i]);
    return out;
}

/*
 * libpq tries the hosts of a multi-host URL in order, but preon's connect timeout (libpq ignores connect_timeout
 * under PQconnectPoll) throws the whole attempt away: without rotation the retry would start at the same
 * blackholed first host for ever. So every rotation of the host list is prepared once, and a connection that
 * timed out on host k next starts at host k + 1, as blocking libpq would have moved on.
 */
static void prepare_rotations(preon_db_target_t *t)
{
    const char *host = find(t, "host"), *hostaddr = find(t, "hostaddr"), *port = find(t, "port");
    const char *names = host != NULL ? host : hostaddr;
    t->nhosts = 1;
    t->rot[0] = t->values;
    if (names == NULL || strchr(names, ',') == NULL)
        return;
    t->nhosts = split(names, t->hosts);
    char *ports[MAX_HOSTS];
    unsigned nports = port != NULL ? split(port, ports) : 0;
    for (unsigned i = 0; i < t->nhosts; i++)
        t->ports[i] = preon_strdup(nports == t->nhosts ? ports[i] : nports == 1 ? ports[0] : "5432");
    for (unsigned i = 0; i < nports; i++)
        free(ports[i]);
    for (unsigned k = 1; k < t->nhosts; k++) {
        t->rot[k] = preon_calloc(MAX_KEYWORDS + 1, sizeof(char *));
        for (size_t i = 0; i < t->n; i++) {
            const char *kw = t->keywords[i];
            int listed = strcmp(kw, "host") == 0 || strcmp(kw, "hostaddr") == 0 || strcmp(kw, "port") == 0;
            t->rot[k][i] = listed ? rotate(t, t->values[i], k) : t->values[i];
        }
    }
}

unsigned preon__db_target_hosts(const preon_db_target_t *t)
{
    return t->nhosts;
}

const char *const *preon__db_target_values_from(const preon_db_target_t *t, unsigned start)
{
    return t->rot[start % t->nhosts];
}

unsigned preon__db_target_position(const preon_db_target_t *t, unsigned start, const char *host, const char *port)
{
    for (unsigned i = 0; i < t->nhosts && host != NULL && port != NULL; i++) {
        unsigned k = (start + i) % t->nhosts;
        if (t->hosts[k] != NULL && strcmp(t->hosts[k], host) == 0 && strcmp(t->ports[k], port) == 0)
            return i;
    }
    return 0;
}

preon_db_target_t *preon_db_target_create(const char *url, int client_check_ms, int resolve_host, char *err, size_t errlen)
{
    char *perr = NULL;
    PQconninfoOption *opts = PQconninfoParse(url, &perr);
    if (opts == NULL) {
        size_t n = strlen(perr != NULL ? perr : "");
        while (n > 0 && perr[n - 1] == '\n')
            perr[--n] = '\0';
        /* libpq quotes the token it could not decode, which may be the password ("invalid percent-encoded token") */
        char *why = preon_conninfo_scrub(url, perr != NULL ? perr : "out of memory");
        snprintf(err, errlen, "database.url: %s", why);
        free(why);
        PQfreemem(perr);
        return NULL;
    }
    preon_db_target_t *t = preon_calloc(1, sizeof(*t));
    for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
        if (o->val != NULL && o->val[0] != '\0')
            add(t, o->keyword, o->val);
    PQconninfoFree(opts);
    if (find(t, "client_encoding") == NULL)
        add(t, "client_encoding", "UTF8");
    if (find(t, "application_name") == NULL)
        add(t, "fallback_application_name", "preon");
    add_client_check(t, client_check_ms);
    if (resolve_host)
        resolve(t);
    prepare_rotations(t);
    return t;
}

void preon_db_target_destroy(preon_db_target_t *t)
{
    if (t == NULL)
        return;
    for (unsigned k = 1; k < t->nhosts; k++) {
        for (size_t i = 0; i < t->n; i++)
            if (t->rot[k][i] != t->values[i])
                free((void *)t->rot[k][i]);
        free(t->rot[k]);
    }
    for (unsigned k = 0; k < MAX_HOSTS; k++) {
        free(t->hosts[k]);
        free(t->ports[k]);
    }
    for (size_t i = 0; i < t->n; i++) {
        free((void *)t->keywords[i]);
        free((void *)t->values[i]);
    }
    free(t);
}

const char *const *preon__db_target_keywords(const preon_db_target_t *t)
{
    return t->keywords;
}

const char *const *preon__db_target_values(const preon_db_target_t *t)
{
    return t->values;
}
