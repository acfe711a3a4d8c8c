# SPDX-License-Identifier: MIT
"""The database password is never shown: not in the log (at debug level, with the access log on, when the
password is right, when it is wrong, when the database is down), not in answers, not in --check-config's
output, not in the error about a URL libpq cannot parse. The shared cluster trusts loopback; for one role of
its own this test asks for a password (scram-sha-256 in pg_hba.conf, restored afterwards)."""
import os
import unittest
import urllib.parse

from harness import PGDIR, Preon, free_port, main, pg_url, psql, record, require_env
from test_cli import run

ROLE = "preon_pw"
RIGHT = "R1ght-pw with spaces/and'quote"   # a password that needs encoding in a URI and quoting in key=value
WRONG = "Wr0ng-pw-7c5e"
SSL_KEY_PW = "Ssl-key-pw-41d2"
SECRETS = (RIGHT, urllib.parse.quote(RIGHT, safe=""), WRONG, SSL_KEY_PW)
PATHS = ("/fruits", "/fruits/1", "/fruits/x", "/db", "/nope", "/health/ready", "/health/live", "/metrics")


def kv_quote(value):
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class PasswordNeverShownTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_env()
        cls.port = int(urllib.parse.urlsplit(pg_url()).port)
        psql("DROP ROLE IF EXISTS %s; CREATE ROLE %s LOGIN SUPERUSER PASSWORD %s" % (ROLE, ROLE, "'" + RIGHT.replace("'", "''") + "'"))
        cls.hba = os.path.join(PGDIR, "data", "pg_hba.conf")
        with open(cls.hba) as f:
            cls.hba_text = f.read()
        with open(cls.hba, "w") as f:
            f.write("host all %s 127.0.0.1/32 scram-sha-256\n" % ROLE + cls.hba_text)
        psql("SELECT pg_reload_conf()")

    checked = {"texts": 0, "bytes": 0, "shown": 0}

    @classmethod
    def tearDownClass(cls):
        record("password-never-shown", secrets=len(SECRETS), texts_checked=cls.checked["texts"],
               bytes_checked=cls.checked["bytes"], shown=cls.checked["shown"])
        with open(cls.hba, "w") as f:
            f.write(cls.hba_text)
        psql("SELECT pg_reload_conf(); DROP ROLE IF EXISTS %s" % ROLE)

    def uri(self, password, port=None):
        return "postgresql://%s:%s@127.0.0.1:%d/preon?sslmode=disable&sslpassword=%s" % (
            ROLE, urllib.parse.quote(password, safe=""), port or self.port, SSL_KEY_PW)

    def keywords(self, password, port=None):
        return "host=127.0.0.1 port=%d dbname=preon user=%s password=%s sslpassword=%s" % (
            port or self.port, ROLE, kv_quote(password), SSL_KEY_PW)

    def assertHidden(self, text, where):
        self.checked["texts"] += 1
        self.checked["bytes"] += len(text)
        self.checked["shown"] += sum(secret in text for secret in SECRETS)
        for secret in SECRETS:
            self.assertNotIn(secret, text, where)

    def serve(self, url, expect):
        """Runs preon on url at debug level with the access log, asks every path; returns its whole log."""
        with Preon(db_url=url, log_level="debug", log_access="true") as p:
            p.start(probe=None if expect == 200 else "/hello")  # None: until the database serves
            for path in PATHS:
                status, headers, body = p.request("GET", path)
                self.assertHidden(body.decode(errors="replace") + repr(headers), path)
            self.assertEqual(p.request("GET", "/fruits")[0], expect)
            self.assertEqual(p.stop(), 0)
            return p.output()

    def test_right_password(self):
        for url in (self.uri(RIGHT), self.keywords(RIGHT)):
            log = self.serve(url, 200)
            self.assertIn("connected", log)
            self.assertHidden(log, url)

    def test_wrong_password(self):
        for url in (self.uri(WRONG), self.keywords(WRONG)):
            log = self.serve(url, 503)
            self.assertIn("password authentication failed", log)  # the log says why, without the password
            self.assertHidden(log, url)

    def test_database_down(self):
        dead = free_port()
        for url in (self.uri(RIGHT, dead), self.keywords(RIGHT, dead)):
            log = self.serve(url, 503)
            self.assertIn("Connection refused", log)
            self.assertHidden(log, url)

    def test_check_config(self):
        for url in (self.uri(RIGHT), self.keywords(RIGHT), self.uri(WRONG), self.keywords(WRONG)):
            r = run("--check-config", env={"PREON_DATABASE_URL": url})
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("***", r.stdout)
            self.assertIn(ROLE, r.stdout)  # only the secrets are hidden
            self.assertHidden(r.stdout + r.stderr, url)

    def test_url_libpq_cannot_parse(self):
        # libpq quotes the token it could not decode: here the password itself
        bad = "postgresql://%s:%s%%zz@127.0.0.1/preon" % (ROLE, WRONG)
        r = run("--check-config", env={"PREON_DATABASE_URL": bad})
        self.assertEqual(r.returncode, 2)
        self.assertIn("invalid percent-encoded token", r.stderr)
        self.assertHidden(r.stdout + r.stderr, bad)
        # a URI after a blank is a bad keyword to libpq, which quotes it whole
        r = run("--check-config", env={"PREON_DATABASE_URL": " " + self.uri(WRONG)})
        self.assertEqual(r.returncode, 2)
        self.assertIn("database.url: invalid connection option \"postgresql://%s:***@" % ROLE, r.stderr)
        self.assertHidden(r.stdout + r.stderr, "leading blank")
        r = run(env={"PREON_DATABASE_URL": bad, "PREON_SERVER_PORT": str(free_port())})
        self.assertEqual(r.returncode, 2)
        self.assertHidden(r.stdout + r.stderr, bad)


if __name__ == "__main__":
    main()
