/* SPDX-License-Identifier: MIT */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "preon/app.h"
#include "preon/config.h"
#include "preon/json.h"
#include "preon/db.h"
#include "preon/errors.h"
#include "preon/log.h"
#include "preon/probe.h"
#include "preon/server.h"

extern char **environ;

#define DEFAULT_CONFIG "config/preon.yaml"

/* What a reload reads again and compares with: the file named at start (or none) and the settings in force. */
static const char *config_path;
static const preon_config_t *running;

/* Writes each of the configuration's deprecation notes to the log (or, with `fp`, there). */
static void warn_deprecated(const preon_config_t *cfg, FILE *fp)
{
    for (const char *line = cfg->deprecated; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n');
        int len = (int)(end - line);
        if (fp != NULL)
            fprintf(fp, "preon: warning: %.*s\n", len, line);
        else
            preon_log_warn("%.*s", len, line);
        line = end + 1;
    }
}

/* Loads the file (and the environment) as at start-up; 0, or a negative code with the reason in `err`. */
static int load(preon_config_t *cfg, const char *path, char *err, size_t errlen)
{
    if ((path != NULL && preon_config_load_file(cfg, path, err, errlen) != 0) ||
        preon_config_apply_env(cfg, environ, err, errlen) != 0)
        return PREON_EINVAL;
    preon_config_settle(cfg);
    return preon_config_validate(cfg, err, errlen);
}

/*
 * SIGHUP, on the main thread: the file is read again and, if valid, what can change while requests are served takes
 * effect at once (log.level, log.format, log.access); the rest is said to need a restart. A bad file changes nothing:
 * its error is logged with FILE:LINE:COL and the running settings stay. preon writes its log to stderr, which the
 * supervisor owns (docker, journald, a shell redirect): there is no file to reopen.
 */
static void on_reload(void)
{
    preon_config_t next;
    char err[512], changed[512];
    preon_config_init(&next);
    if (load(&next, config_path, err, sizeof(err)) != 0) {
        next.database.connections_per_thread = running->database.connections_per_thread; /* not compared below */
        preon_log_warn("SIGHUP: configuration not reloaded, the running settings stay: %s", err);
    } else {
        char why[160];
        (void)preon_config_choose_connections(&next, preon_server_threads(&next), why, sizeof(why)); /* as at start */
        preon_log_configure((preon_log_level_t)next.log.level, (preon_log_format_t)next.log.format, next.log.access);
        preon_log_info("SIGHUP: reloaded %s: log.level %s, log.access %s", config_path != NULL ? config_path : "(no file)",
                       preon_log_level_names[next.log.level], next.log.access ? "true" : "false");
        if (preon_config_changed_keys(running, &next, changed, sizeof(changed)) != 0)
            preon_log_warn("SIGHUP: %s changed; they take effect at the next start", changed);
    }
    preon_config_dispose(&next);
}

static void usage(FILE *fp)
{
    fprintf(fp, "Usage: preon [--config FILE] [--check-config] [--version] [--help]\n"
                "\n"
                "  -c, --config FILE   YAML configuration (default: " DEFAULT_CONFIG " if it exists)\n"
                "      --check-config  validate the configuration, print it, and exit (0 valid, 2 invalid)\n"
                "      --probe PATH    ask the running preon (server.port on loopback) for PATH; exit 0 on 200\n"
                "  -v, --version       print the version and exit\n"
                "  -h, --help          print this help and exit\n"
                "\n"
                "Every key can be overridden by PREON_<SECTION>_<KEY>, e.g. PREON_SERVER_PORT=8081,\n"
                "PREON_DATABASE_URL=postgresql://user@host/db. Exit status: 0 after a clean shutdown,\n"
                "1 if the server cannot start, 2 for a bad configuration or bad arguments.\n");
}

/* What the command line asks for. */
typedef struct {
    const char *path;  /* --config, or NULL */
    const char *probe; /* --probe PATH, or NULL */
    int check;         /* --check-config */
} args_t;

/* Reads the command line into `a`; returns -1 to go on, or the exit status when it is all done (--help, --version,
 * a bad argument). */
static int parse_args(int argc, char **argv, args_t *a)
{
    static const struct option longopts[] = {{"config", required_argument, NULL, 'c'}, {"check-config", no_argument, NULL, 'C'},
                                             {"probe", required_argument, NULL, 'P'},  {"version", no_argument, NULL, 'v'},
                                             {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "c:vh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            a->path = optarg;
            break;
        case 'C':
            a->check = 1;
            break;
        case 'P':
            a->probe = optarg;
            break;
        case 'v':
            printf("preon %s\n", PREON_VERSION);
            return 0;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "preon: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return -1;
}

/* database.read_url's target, checked and resolved as database.url's; NULL with the reason on stderr. */
static preon_db_target_t *create_read_target(const preon_config_t *cfg, int resolve)
{
    char err[512];
    preon_db_target_t *t = preon_db_target_create(cfg->database.read_url, cfg->database.client_check_ms, resolve, err, sizeof(err));
    if (t == NULL) {
        /* its message names database.url: this one is database.read_url */
        const char *prefix = "database.url: ";
        fprintf(stderr, "database.read_url: %s\n", strncmp(err, prefix, strlen(prefix)) == 0 ? err + strlen(prefix) : err);
    }
    return t;
}

/* --check-config: the configuration as it would run, on stdout. */
static void print_check(const preon_config_t *cfg, const char *path, unsigned threads, int per_thread, const char *chosen)
{
    warn_deprecated(cfg, stderr);
    printf("# %s: valid\n", path != NULL ? path : "(built-in defaults)");
    printf("# server.threads: %u (%s)\n", threads, cfg->server.threads != 0 ? "set" : "one per usable CPU");
    printf("# database.connections_per_thread: %d (%s)\n", per_thread, chosen);
    preon_config_print(cfg, stdout);
}

int main(int argc, char **argv)
{
    args_t args = {0};
    int status = parse_args(argc, argv, &args);
    if (status >= 0)
        return status;

    preon_config_t cfg;
    preon_db_target_t *target = NULL, *read_target = NULL;
    char err[512];
    preon_config_init(&cfg);
    status = 2; /* a bad configuration, until it is known good */
    /* The default file is optional (the binary may run from anywhere); a file named on the command line is not. */
    if (args.path == NULL && access(DEFAULT_CONFIG, F_OK) == 0)
        args.path = DEFAULT_CONFIG;
    if (load(&cfg, args.path, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        goto Exit;
    }
    if (args.probe != NULL) {
        status = preon_probe(&cfg, args.probe);
        goto Exit;
    }
    preon_log_configure((preon_log_level_t)cfg.log.level, (preon_log_format_t)cfg.log.format, cfg.log.access);
    /* The URLs are checked with libpq's own parser; host names are resolved here, not on an event loop. */
    target = preon_db_target_create(cfg.database.url, cfg.database.client_check_ms, !args.check, err, sizeof(err));
    if (target == NULL) {
        fprintf(stderr, "%s\n", err);
        goto Exit;
    }
    if (cfg.database.read_url[0] != '\0' && (read_target = create_read_target(&cfg, !args.check)) == NULL)
        goto Exit;
    char chosen[160];
    unsigned threads = preon_server_threads(&cfg);
    int per_thread = preon_config_choose_connections(&cfg, threads, chosen, sizeof(chosen));
    if (args.check) {
        print_check(&cfg, args.path, threads, per_thread, chosen);
        status = 0;
        goto Exit;
    }
    preon_log_start();
    warn_deprecated(&cfg, NULL);
    preon_log_info("database.connections_per_thread: %d (%s)", per_thread, chosen);
    config_path = args.path;
    running = &cfg;
    status = preon_server_run(&cfg, target, read_target, preon_app(&cfg), on_reload) == 0 ? 0 : 1;
    preon_log_stop();

Exit:
    preon_db_target_destroy(read_target);
    preon_db_target_destroy(target);
    preon_config_dispose(&cfg);
    return status;
}
