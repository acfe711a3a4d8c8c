/* SPDX-License-Identifier: MIT */
/* The password of database.url is hidden wherever libpq would read one, and only there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "preon/conninfo.h"

static const struct {
    const char *in, *shown;
} cases[] = {
    /* URIs: the user info's password, and password / sslpassword query parameters (names may be encoded) */
    {"postgresql://app:s3cret@db:5432/preon", "postgresql://app:***@db:5432/preon"},
    {"postgres://app:s3cret@db/preon", "postgres://app:***@db/preon"},
    {"postgresql://app:pa:ss?w@rd@db/preon", "postgresql://app:***@rd@db/preon"}, /* libpq: up to the first '@' */
    {"postgresql://app@db/preon", "postgresql://app@db/preon"},
    {"postgresql://app:@db/preon", "postgresql://app:@db/preon"},
    {"postgresql://db:5432/preon?user=a@b", "postgresql://db:5432/preon?user=a@b"}, /* '/' first: no user info */
    {"postgresql://db/preon?sslmode=disable&password=s3cret&user=app",
     "postgresql://db/preon?sslmode=disable&password=***&user=app"},
    {"postgresql://db/preon?p%61ssword=s3cret", "postgresql://db/preon?p%61ssword=***"},
    {"postgresql://db/preon?sslpassword=k3y&password=", "postgresql://db/preon?sslpassword=***&password="},
    {"postgresql://u:a@db/preon?password=b", "postgresql://u:***@db/preon?password=***"},
    {"postgresql://u:a@[::1]:5432/preon?password=b", "postgresql://u:***@[::1]:5432/preon?password=***"},
    {"postgresql://[a?b&password=c]/preon?password=d", "postgresql://[a?b&password=c]/preon?password=***"}, /* libpq: host */
    {"postgresql://h1:1,h2:2/preon?password=d", "postgresql://h1:1,h2:2/preon?password=***"},
    {"postgresql://h?password=d", "postgresql://h?password=***"},
    {"POSTGRESQL://u:a@db/preon", "POSTGRESQL://u:***@db/preon"}, /* not a URI to libpq: a bad keyword, quoted */
    /* key=value strings: quoted or not, blanks around '=', backslash escapes, every occurrence */
    {" postgresql://app:s3cret@db/preon", " postgresql://app:***@db/preon"}, /* libpq: a bad keyword, quoted */
    {"host=db postgresql://app:s3cret@db/preon?password=x", "host=db postgresql://app:***@db/preon?password=***"},
    {"host=db password=s3cret user=app", "host=db password=*** user=app"},
    {"host=db password='my s3cret' user=app", "host=db password='***' user=app"},
    {"host=db password = 's3\\'cret' user=app", "host=db password = '***' user=app"},
    {"password=s3\\ cret host=db", "password=*** host=db"},
    {"sslpassword=k3y password=a password=b", "sslpassword=*** password=*** password=***"},
    {"host=db mypassword=x passwordx=y", "host=db mypassword=x passwordx=y"},
    {"host=db password='unterminated", "host=db password='***"},
    {"host=db password=", "host=db password="},
    {"", ""},
};

static void test_redact(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *shown = preon_conninfo_redact(cases[i].in);
        assert_string_equal(shown, cases[i].shown);
        free(shown);
    }
    assert_null(preon_conninfo_redact(NULL));
}

static void test_scrub(void **state)
{
    (void)state;
    char *s = preon_conninfo_scrub("postgresql://u:pa%zz@db/preon", "invalid percent-encoded token: \"pa%zz\"");
    assert_string_equal(s, "invalid percent-encoded token: \"***\"");
    free(s);
    /* a secret shorter than its mask grows the text */
    s = preon_conninfo_scrub("password=ab", "ab ab ab ab ab ab ab ab ab ab");
    assert_string_equal(s, "*** *** *** *** *** *** *** *** *** ***");
    free(s);
    s = preon_conninfo_scrub(" postgresql://u:s3cret@db", "missing \"=\" after \"postgresql://u:s3cret@db\"");
    assert_string_equal(s, "missing \"=\" after \"postgresql://u:***@db\"");
    free(s);
    s = preon_conninfo_scrub("host=db", "could not connect to db");
    assert_string_equal(s, "could not connect to db");
    free(s);
}

static void test_too_many_secrets(void **state)
{
    (void)state;
    char in[64 * 12 + 1] = "";
    for (int i = 0; i < 64; i++)
        strcat(in, "password=xy ");
    char *shown = preon_conninfo_redact(in);
    assert_null(strstr(shown, "xy"));
    free(shown);
    char *s = preon_conninfo_scrub(in, "xy");
    assert_null(strstr(s, "xy"));
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redact),
        cmocka_unit_test(test_scrub),
        cmocka_unit_test(test_too_many_secrets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
