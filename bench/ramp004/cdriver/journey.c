// SPDX-License-Identifier: MIT
// The journey: the Go driver's 14 requests (bench/ramp004/driver/journey.go), 5 of them writes, each user writing
// and deleting only rows it created; in ceiling mode every step is a GET of one path. In fixed-load mode a user's
// journey is one GET of -only's path, or (-write) a POST of a fruit and the DELETE of the row it created.
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

enum path { P_LIST, P_R, P_A, P_B, P_AFTER_R, P_NEXT, P_POST, P_ONLY };

static const struct step {
    const char *method;
    enum path path;
    int body, save_as, list;
} JOURNEY[] = {
    {"GET", P_LIST, 0, 0, 1}, {"GET", P_R, 0, 0, 0},       {"GET", P_R, 0, 0, 0},    {"POST", P_POST, 1, 1, 0},
    {"GET", P_A, 0, 0, 0},    {"GET", P_AFTER_R, 0, 0, 1}, {"GET", P_NEXT, 0, 0, 1}, {"PUT", P_A, 1, 0, 0},
    {"GET", P_R, 0, 0, 0},    {"POST", P_POST, 1, 2, 0},   {"GET", P_B, 0, 0, 0},    {"GET", P_R, 0, 0, 0},
    {"DELETE", P_A, 0, 0, 0}, {"DELETE", P_B, 0, 0, 0},
};
#define STEPS ((int)(sizeof(JOURNEY) / sizeof(JOURNEY[0])))
static const struct step ONLY[] = {{"GET", P_ONLY, 0, 0, 0}};
static const struct step WRITE[] = {{"POST", P_POST, 1, 1, 0}, {"DELETE", P_A, 0, 0, 0}};

// The steps every user plays (the journey, or a fixed-load mode's), and how many.
static const struct step *steps(int *n)
{
    if (S.only != NULL)
        return *n = 1, ONLY;
    if (S.write)
        return *n = 2, WRITE;
    return *n = STEPS, JOURNEY;
}

static const char *const WORDS[] = {"Apple", "Banana", "Cherry",    "Durian", "Elderberry", "Fig",    "Grape",     "Kiwi",
                                    "Lime",  "Mango",  "Nectarine", "Papaya", "Pomelo",     "Quince", "Raspberry", "Tangerine"};

uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double unit(struct user *u)
{
    return (double)(splitmix(&u->rng) >> 11) / 9007199254740992.0;
}

static int64_t random_id(struct user *u)
{
    return 1 + (int64_t)(splitmix(&u->rng) % (uint64_t)S.max_id);
}

int journey_steps(void)
{
    int n;
    steps(&n);
    return n;
}

double journey_think(struct user *u)
{
    return S.think * (0.5 + unit(u));
}

int journey_request(struct user *u, struct request *rq)
{
    memset(rq, 0, sizeof(*rq));
    if (S.hello != NULL) {
        rq->method = "GET";
        snprintf(rq->path, sizeof(rq->path), "%s", S.hello);
        return 1;
    }
    int n;
    const struct step *s = &steps(&n)[u->step];
    rq->method = s->method;
    rq->list = s->list;
    rq->save_as = s->save_as;
    switch (s->path) {
    case P_LIST:
        snprintf(rq->path, sizeof(rq->path), "/fruits?limit=20");
        break;
    case P_R:
        snprintf(rq->path, sizeof(rq->path), "/fruits/%lld", (long long)random_id(u));
        break;
    case P_A:
    case P_B: {
        int64_t id = u->ids[s->path == P_A ? 0 : 1];
        if (id == 0)
            return 0;
        snprintf(rq->path, sizeof(rq->path), "/fruits/%lld", (long long)id);
        break;
    }
    case P_AFTER_R:
        snprintf(rq->path, sizeof(rq->path), "/fruits?after=%lld&limit=20", (long long)random_id(u));
        break;
    case P_NEXT:
        if (u->next[0] == '\0')
            snprintf(rq->path, sizeof(rq->path), "/fruits?after=%lld&limit=20", (long long)random_id(u));
        else
            snprintf(rq->path, sizeof(rq->path), "%s", u->next);
        break;
    case P_POST:
        snprintf(rq->path, sizeof(rq->path), "/fruits");
        break;
    case P_ONLY:
        snprintf(rq->path, sizeof(rq->path), "%s", S.only);
        break;
    }
    if (s->body) {
        const char *w1 = WORDS[splitmix(&u->rng) % 16], *w2 = WORDS[splitmix(&u->rng) % 16];
        rq->body_len =
            snprintf(rq->body, sizeof(rq->body), "{\"name\":\"%s %s u%d-%d\"}", w1, w2, u->id, (int)(splitmix(&u->rng) % 1000000));
    }
    return 1;
}

// The value of the top-level key "id" (any case, as Go's encoding/json matches a field) of a JSON object; 0 if none.
static int64_t json_id(const char *b, size_t n)
{
    size_t i = 0;
    while (i < n && isspace((unsigned char)b[i]))
        i++;
    if (i >= n || b[i] != '{')
        return 0;
    int depth = 0, in_str = 0;
    for (; i < n; i++) {
        char c = b[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
        } else if (c == '"') {
            if (depth == 1 && i + 3 < n && strncasecmp(b + i + 1, "id\"", 3) == 0) {
                size_t j = i + 4;
                while (j < n && isspace((unsigned char)b[j]))
                    j++;
                if (j < n && b[j] == ':') {
                    j++;
                    while (j < n && isspace((unsigned char)b[j]))
                        j++;
                    int64_t v = 0;
                    int digits = 0;
                    while (j < n && isdigit((unsigned char)b[j]) && digits < 18)
                        v = v * 10 + (b[j++] - '0'), digits++;
                    return digits ? v : 0;
                }
            }
            in_str = 1;
        }
    }
    return 0;
}

int journey_keep(struct user *u, const struct request *rq, const char *body, size_t len, const char *link)
{
    if (rq->save_as) {
        int64_t id = json_id(body, len);
        if (id == 0)
            return K_BODY;
        u->ids[rq->save_as - 1] = id;
    }
    if (rq->list) {
        u->next[0] = '\0';
        if (link != NULL && link[0] == '<' && strstr(link, "rel=\"next\"") != NULL) {
            const char *end = strchr(link, '>');
            size_t n = end ? (size_t)(end - link - 1) : 0;
            if (n > 0 && n < NEXT_LEN) {
                memcpy(u->next, link + 1, n);
                u->next[n] = '\0';
            }
        }
    }
    return K_OK;
}
