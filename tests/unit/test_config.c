/* SPDX-License-Identifier: MIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "preon/config.h"
#include "preon/errors.h"

static int load(preon_config_t *cfg, const char *yaml, char *err)
{
    return preon_config_load_string(cfg, "t.yaml", yaml, strlen(yaml), err, 256);
}

/* Loads `yaml` on top of the defaults and checks that it fails with exactly `expected`. */
static void expect_error(const char *yaml, const char *expected)
{
    preon_config_t cfg;
    char err[256] = "";
    preon_config_init(&cfg);
    assert_int_equal(load(&cfg, yaml, err), PREON_EINVAL);
    assert_string_equal(err, expected);
    preon_config_dispose(&cfg);
}

static void test_defaults(void **state)
{
    (void)state;
    preon_config_t cfg;
    preon_config_init(&cfg);
    assert_string_equal(cfg.server.listen, "0.0.0.0");
    assert_int_equal(cfg.server.port, 8080);
    assert_int_equal(cfg.server.threads, 0);
    assert_int_equal(cfg.server.shutdown_timeout_ms, 10000);
    assert_string_equal(cfg.database.url, "");
    assert_int_equal(cfg.database.connections_per_thread, 0); /* chosen at start-up: preon_config_choose_connections */
    assert_int_equal(cfg.database.max_queued, 16384);
    assert_int_equal(cfg.database.max_queue_wait_ms, 1000);
    assert_int_equal(cfg.database.query_timeout_ms, 5000);
    assert_int_equal(cfg.database.sync, PREON_SYNC_BATCH);
    assert_int_equal(cfg.database.pipeline_depth, 2);
    assert_int_equal(cfg.log.level, 2);
    assert_int_equal(cfg.log.format, 0);
    assert_int_equal(cfg.log.access, 0);
    assert_string_equal(cfg.health.live_path, "/health/live");
    assert_string_equal(cfg.health.ready_path, "/health/ready");
    assert_int_equal(cfg.metrics.enabled, 1);
    assert_string_equal(cfg.metrics.path, "/metrics");
    assert_int_equal(cfg.server.drain_delay_ms, 0);
    preon_config_dispose(&cfg);
}

static void test_valid_file(void **state)
{
    (void)state;
    preon_config_t cfg;
    char err[256] = "";
    preon_config_init(&cfg);
    const char *yaml = "# comment\n"
                       "server:\n"
                       "  listen: \"127.0.0.1\"\n"
                       "  port: 18080\n"
                       "  threads: 3\n"
                       "database:\n"
                       "  url: postgresql://u@h/db\n"
                       "  connections_per_thread: 2\n"
                       "  sync: batch\n"
                       "log:\n"
                       "  level: debug\n"
                       "  format: json\n"
                       "  access: true\n"
                       "health:\n"
                       "  live_path: /q/health/live\n";
    assert_int_equal(load(&cfg, yaml, err), 0);
    assert_string_equal(cfg.server.listen, "127.0.0.1");
    assert_int_equal(cfg.server.port, 18080);
    assert_int_equal(cfg.server.threads, 3);
    assert_string_equal(cfg.database.url, "postgresql://u@h/db");
    assert_int_equal(cfg.database.connections_per_thread, 2);
    assert_int_equal(cfg.database.sync, PREON_SYNC_BATCH);
    assert_int_equal(cfg.log.level, 3);
    assert_int_equal(cfg.log.format, 1);
    assert_int_equal(cfg.log.access, 1);
    assert_string_equal(cfg.health.live_path, "/q/health/live");
    /* keys not in the file keep their defaults */
    assert_int_equal(cfg.database.query_timeout_ms, 5000);
    preon_config_dispose(&cfg);
}

static void test_empty_file_keeps_defaults(void **state)
{
    (void)state;
    preon_config_t cfg;
    char err[256] = "";
    preon_config_init(&cfg);
    assert_int_equal(load(&cfg, "# nothing but a comment\n", err), 0);
    assert_int_equal(cfg.server.port, 8080);
    preon_config_dispose(&cfg);
}

static void test_errors_have_line_and_column(void **state)
{
    (void)state;
    expect_error("server:\n  port: 80800\n", "t.yaml:2:9: server.port: expected an integer from 1 to 65535, got '80800'");
    expect_error("server:\n  port: abc\n", "t.yaml:2:9: server.port: expected an integer from 1 to 65535, got 'abc'");
    expect_error("server:\n  prot: 1\n", "t.yaml:2:3: unknown key 'prot' in section 'server'");
    expect_error("log:\n  level: loud\n", "t.yaml:2:10: log.level: expected one of error, warn, info, debug; got 'loud'");
    expect_error("database:\n  max_queued: 0\n",
                 "t.yaml:2:15: database.max_queued: expected an integer from 1 to 1000000, got '0'");
    expect_error("srv:\n  port: 1\n",
                 "t.yaml:1:1: unknown section 'srv' (expected server, database, log, health, metrics or modules)");
    expect_error("server:\n  port: [1, 2]\n", "t.yaml:2:9: server.port: expected a scalar value, got a list");
    expect_error("server: 8080\n", "t.yaml:1:9: section 'server' must be a mapping of keys, got a scalar");
    expect_error("server:\n  port: 1\n  port: 2\n", "t.yaml:3:3: duplicate key 'server.port'");
    expect_error("log:\n  access: yes\n", "t.yaml:2:11: log.access: expected one of false, true; got 'yes'");
    expect_error("- a\n- b\n",
                 "t.yaml:1:1: expected a mapping of sections (server, database, log, health, metrics, modules), got a list");
}

static void test_syntax_error(void **state)
{
    (void)state;
    preon_config_t cfg;
    char err[256] = "";
    preon_config_init(&cfg);
    assert_int_equal(load(&cfg, "server:\n  port: 1\n bad: [\n", err), PREON_EINVAL);
    /* libyaml's own words follow the location; the location is what matters */
    assert_true(strncmp(err, "t.yaml:3:", 9) == 0);
    preon_config_dispose(&cfg);
}

static void test_env_overrides(void **state)
{
    (void)state;
    preon_config_t cfg;
    char err[256] = "";
    preon_config_init(&cfg);
    assert_int_equal(load(&cfg, "server:\n  port: 9000\n", err), 0);
    char *env[] = {"PATH=/bin",
                   "PREON_SERVER_PORT=18081",
                   "PREON_DATABASE_URL=host=/tmp dbname=x",
                   "PREON_LOG_LEVEL=warn",
                   "PREON_BIN=/ignored",
                   NULL};
    assert_int_equal(preon_config_apply_env(&cfg, env, err, sizeof(err)), 0);
    assert_int_equal(cfg.server.port, 18081);
    assert_string_equal(cfg.database.url, "host=/tmp dbname=x");
    assert_int_equal(cfg.log.level, 1);
    preon_config_dispose(&cfg);
}

static void test_env_bad_value(void **state)
{
    (void)state;
    preon_config_t cfg;
    char err[256] = "";
    preon_config_init(&cfg);
    char *env[] = {"PREON_SERVER_THREADS=-1", NULL};
    assert_int_equal(preon_config_apply_env(&cfg, env, err, sizeof(err)), PREON_EINVAL);
    assert_string_equal(err, "environment PREON_SERVER_THREADS: server.threads: expected an integer from 0 to 256, got '-1'");
    preon_config_dispose(&cfg);
}

/* A pooler with client_check_ms > 0 cannot work: refused at start-up, pointing at the line to change; with 0 it is
 * valid, and the environment can make it so after the file. */
static void test_pooler_needs_no_client_check(void **state)
{
    (void)state;
    preon_config_t cfg;
    char err[512] = "";
    preon_config_init(&cfg);
    assert_int_equal(cfg.database.pooler, PREON_POOLER_NONE);
    assert_int_equal(preon_config_validate(&cfg, err, sizeof(err)), 0);
    assert_int_equal(load(&cfg, "database:\n  pooler: transaction\n", err), 0);
    assert_int_equal(cfg.database.pooler, PREON_POOLER_TRANSACTION);
    assert_int_equal(preon_config_validate(&cfg, err, sizeof(err)), PREON_EINVAL);
    assert_non_null(strstr(err, "t.yaml:2:11: database.client_check_ms 1000 cannot work with database.pooler: transaction"));
    assert_non_null(strstr(err, "set database.client_check_ms: 0"));
    assert_int_equal(load(&cfg, "database:\n  client_check_ms: 300\n", err), 0);
    assert_int_equal(preon_config_validate(&cfg, err, sizeof(err)), PREON_EINVAL);
    assert_non_null(strstr(err, "t.yaml:2:20: database.client_check_ms 300 cannot"));
    char *env[] = {"PREON_DATABASE_CLIENT_CHECK_MS=0", NULL};
    assert_int_equal(preon_config_apply_env(&cfg, env, err, sizeof(err)), 0);
    assert_int_equal(preon_config_validate(&cfg, err, sizeof(err)), 0);
    char *session[] = {"PREON_DATABASE_POOLER=session", "PREON_DATABASE_CLIENT_CHECK_MS=5", NULL};
    assert_int_equal(preon_config_apply_env(&cfg, session, err, sizeof(err)), 0);
    assert_int_equal(preon_config_validate(&cfg, err, sizeof(err)), PREON_EINVAL);
    assert_non_null(strstr(err, "environment PREON_DATABASE_CLIENT_CHECK_MS: database.client_check_ms 5 cannot work with "
                                "database.pooler: session"));
    preon_config_dispose(&cfg);
}

/* A queue-wait bound the request timeout always beats is refused when written by hand, pointing at its line; the
 * default is not (someone who shortens request_timeout_ms did not choose it), and 0 turns the bound off. */
static void test_queue_wait_below_request_timeout(void **state)
{
    (void)state;
    preon_config_t cfg;
    char err[512] = "";
    preon_config_init(&cfg);
    assert_int_equal(load(&cfg, "server:\n  request_timeout_ms: 500\n", err), 0);
    assert_int_equal(preon_config_validate(&cfg, err, sizeof(err)), 0);
    assert_int_equal(load(&cfg, "database:\n  max_queue_wait_ms: 500\n", err), 0);
    assert_int_equal(preon_config_validate(&cfg, err, sizeof(err)), PREON_EINVAL);
    assert_non_null(strstr(err, "t.yaml:2:22: database.max_queue_wait_ms 500 must be below server.request_timeout_ms 500"));
    assert_int_equal(load(&cfg, "database:\n  max_queue_wait_ms: 0\n", err), 0);
    assert_int_equal(preon_config_validate(&cfg, err, sizeof(err)), 0);
    char *env[] = {"PREON_DATABASE_MAX_QUEUE_WAIT_MS=499", NULL};
    assert_int_equal(preon_config_apply_env(&cfg, env, err, sizeof(err)), 0);
    assert_int_equal(preon_config_validate(&cfg, err, sizeof(err)), 0);
    preon_config_dispose(&cfg);
}

/* A request larger than the queue's length bound would get "queue full, retry" on an idle server for
 * ever; such a bound is refused at its line. The queue-wait default follows a short request timeout. */
static void test_queue_bounds_fit_the_largest_request(void **state)
{
    (void)state;
    preon_config_t cfg;
    char err[512] = "";
    preon_config_init(&cfg);
    assert_int_equal(load(&cfg, "database:\n  max_queued: 100\n", err), 0);
    assert_int_equal(preon_config_validate(&cfg, err, sizeof(err)), PREON_EINVAL);
    assert_non_null(strstr(err, "t.yaml:2:15: database.max_queued 100 is below 500, the most queries one request makes"));
    assert_int_equal(load(&cfg, "database:\n  max_queued: 500\n", err), 0);
    assert_int_equal(preon_config_validate(&cfg, err, sizeof(err)), 0);
    assert_int_equal(load(&cfg, "server:\n  request_timeout_ms: 500\n", err), 0);
    preon_config_settle(&cfg);
    assert_int_equal(cfg.database.max_queue_wait_ms, 250);
    assert_int_equal(preon_config_validate(&cfg, err, sizeof(err)), 0);
    preon_config_dispose(&cfg);
    preon_config_init(&cfg); /* a hand-set bound is the operator's: settle leaves it, validate refuses it */
    assert_int_equal(load(&cfg, "server:\n  request_timeout_ms: 500\ndatabase:\n  max_queue_wait_ms: 600\n", err), 0);
    preon_config_settle(&cfg);
    assert_int_equal(cfg.database.max_queue_wait_ms, 600);
    assert_int_equal(preon_config_validate(&cfg, err, sizeof(err)), PREON_EINVAL);
    preon_config_dispose(&cfg);
}

/* database.connections_per_thread 0: 4 connections in all, at least 1 per thread; a set value stays. */
static void test_connections_chosen_for_the_threads(void **state)
{
    (void)state;
    const unsigned threads[] = {1, 2, 3, 4, 16};
    const int want[] = {4, 2, 2, 1, 1};
    char why[160];
    for (size_t i = 0; i < 5; i++) {
        preon_config_t cfg;
        preon_config_init(&cfg);
        assert_int_equal(preon_config_choose_connections(&cfg, threads[i], why, sizeof(why)), want[i]);
        assert_int_equal(cfg.database.connections_per_thread, want[i]);
        assert_non_null(strstr(why, "auto:"));
        preon_config_dispose(&cfg);
    }
    preon_config_t cfg;
    char err[256] = "";
    preon_config_init(&cfg);
    assert_int_equal(load(&cfg, "database:\n  connections_per_thread: 1\n", err), 0);
    assert_int_equal(preon_config_choose_connections(&cfg, 2, why, sizeof(why)), 1);
    assert_string_equal(why, "set");
    preon_config_dispose(&cfg);
}

/* What a reload cannot apply: every key outside log that differs, named. */
static void test_changed_keys(void **state)
{
    (void)state;
    preon_config_t a, b;
    char err[512] = "", out[256];
    preon_config_init(&a);
    preon_config_init(&b);
    assert_int_equal(preon_config_changed_keys(&a, &b, out, sizeof(out)), 0);
    assert_string_equal(out, "");
    assert_int_equal(load(&b, "log:\n  level: debug\nserver:\n  port: 9\ndatabase:\n  url: x\n", err), 0);
    assert_int_equal(preon_config_changed_keys(&a, &b, out, sizeof(out)), 2);
    assert_string_equal(out, "server.port, database.url");
    preon_config_dispose(&a);
    preon_config_dispose(&b);
}

static void test_env_unknown_key(void **state)
{
    (void)state;
    preon_config_t cfg;
    char err[256] = "";
    preon_config_init(&cfg);
    /* a misspelt override of a known section is an error; other PREON_* variables belong to scripts */
    char *ok[] = {"PREON_BIN=/x", "PREON_TEST_PGDIR=/tmp", "PREON_SERVERS=1", "PREON_SERVER_PORT=81", NULL};
    assert_int_equal(preon_config_apply_env(&cfg, ok, err, sizeof(err)), 0);
    assert_int_equal(cfg.server.port, 81);
    char *typo[] = {"PREON_DATABASE_QUERY_TIMEOUT=5", NULL};
    assert_int_equal(preon_config_apply_env(&cfg, typo, err, sizeof(err)), PREON_EINVAL);
    assert_string_equal(err, "environment PREON_DATABASE_QUERY_TIMEOUT: unknown key in section 'database'");
    preon_config_dispose(&cfg);
}

/* The Sync rule's key has a name of its own; the benchmark's name still sets it, in the file and the environment,
 * and leaves a note naming where and what to write instead. A file giving both names is a duplicate. */
static void test_strict_sync_and_its_old_name(void **state)
{
    (void)state;
    preon_config_t cfg;
    char err[256] = "";
    preon_config_init(&cfg);
    assert_int_equal(cfg.database.strict_sync, PREON_SYNC_QUERY);
    assert_null(cfg.deprecated);
    assert_int_equal(load(&cfg, "database:\n  strict_sync: request\n", err), 0);
    assert_int_equal(cfg.database.strict_sync, PREON_SYNC_REQUEST);
    assert_null(cfg.deprecated);
    assert_int_equal(load(&cfg, "database:\n  tfb_sync: batch\n", err), 0);
    assert_int_equal(cfg.database.strict_sync, PREON_SYNC_BATCH);
    assert_string_equal(cfg.deprecated, "t.yaml:2:3: database.tfb_sync is deprecated, use database.strict_sync\n");
    char *env[] = {"PREON_DATABASE_TFB_SYNC=query", NULL};
    assert_int_equal(preon_config_apply_env(&cfg, env, err, sizeof(err)), 0);
    assert_int_equal(cfg.database.strict_sync, PREON_SYNC_QUERY);
    assert_non_null(strstr(cfg.deprecated, "\nenvironment PREON_DATABASE_TFB_SYNC: PREON_DATABASE_TFB_SYNC is deprecated, "
                                           "use PREON_DATABASE_STRICT_SYNC\n"));
    char *bad[] = {"PREON_DATABASE_TFB_SYNC=always", NULL};
    assert_int_equal(preon_config_apply_env(&cfg, bad, err, sizeof(err)), PREON_EINVAL);
    assert_string_equal(err, "environment PREON_DATABASE_TFB_SYNC: database.strict_sync: expected one of request, batch, "
                             "query; got 'always'");
    preon_config_dispose(&cfg);
    expect_error("database:\n  strict_sync: query\n  tfb_sync: query\n", "t.yaml:3:3: duplicate key 'database.tfb_sync'");
}

/* TechEmpower's module is mounted unless the configuration says otherwise. */
static void test_techempower_module_switch(void **state)
{
    (void)state;
    preon_config_t cfg;
    char err[256] = "";
    preon_config_init(&cfg);
    assert_int_equal(cfg.modules.techempower, 1);
    assert_int_equal(load(&cfg, "modules:\n  techempower: false\n", err), 0);
    assert_int_equal(cfg.modules.techempower, 0);
    char *env[] = {"PREON_MODULES_TECHEMPOWER=true", NULL};
    assert_int_equal(preon_config_apply_env(&cfg, env, err, sizeof(err)), 0);
    assert_int_equal(cfg.modules.techempower, 1);
    preon_config_dispose(&cfg);
    expect_error("modules:\n  techempower: off\n", "t.yaml:2:16: modules.techempower: expected one of false, true; got 'off'");
}

static void test_print_hides_password(void **state)
{
    (void)state;
    preon_config_t cfg;
    char err[256] = "", *buf = NULL;
    size_t len = 0;
    preon_config_init(&cfg);
    assert_int_equal(load(&cfg, "database:\n  url: postgresql://app:s3cret@db:5432/preon\n", err), 0);
    FILE *fp = open_memstream(&buf, &len);
    preon_config_print(&cfg, fp);
    fclose(fp);
    assert_null(strstr(buf, "s3cret"));
    assert_non_null(strstr(buf, "url: \"postgresql://app:***@db:5432/preon\""));
    assert_non_null(strstr(buf, "  port: 8080\n"));
    free(buf);
    preon_config_dispose(&cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_valid_file),
        cmocka_unit_test(test_empty_file_keeps_defaults),
        cmocka_unit_test(test_errors_have_line_and_column),
        cmocka_unit_test(test_syntax_error),
        cmocka_unit_test(test_env_overrides),
        cmocka_unit_test(test_env_bad_value),
        cmocka_unit_test(test_env_unknown_key),
        cmocka_unit_test(test_pooler_needs_no_client_check),
        cmocka_unit_test(test_queue_wait_below_request_timeout),
        cmocka_unit_test(test_queue_bounds_fit_the_largest_request),
        cmocka_unit_test(test_changed_keys),
        cmocka_unit_test(test_connections_chosen_for_the_threads),
        cmocka_unit_test(test_strict_sync_and_its_old_name),
        cmocka_unit_test(test_techempower_module_switch),
        cmocka_unit_test(test_print_hides_password),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
