# SPDX-License-Identifier: MIT
"""Command line and configuration errors: file:line:col and exit 2; --check-config, --version, --help;
a database that is down at start-up is not fatal."""
import json
import os
import subprocess
import tempfile
import unittest

from harness import BIN, REPO, SLOW, WRAPPER, Preon, free_port, main, pg_url, require_env


def run(*args, env=None, cwd=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([*WRAPPER, BIN, *args], capture_output=True, text=True, env=e, cwd=cwd or tempfile.gettempdir(),
                          timeout=30 * SLOW)


def write(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write(text)
    f.close()
    return f.name


class CliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_env()

    def test_bad_config_exit_2_with_location(self):
        cases = [
            ("server:\n  port: 99999\n", ":2:9: server.port: expected an integer from 1 to 65535, got '99999'"),
            ("server:\n  color: blue\n", ":2:3: unknown key 'color' in section 'server'"),
            ("database:\n  url: [x]\n", ":2:8: database.url: expected a scalar value, got a list"),
            ("server:\n  port: 1\n  bad: [\n", ":3:"),
        ]
        for text, expected in cases:
            path = write(text)
            try:
                r = run("--config", path)
                self.assertEqual(r.returncode, 2, r.stderr)
                lines = r.stderr.strip().split("\n")
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertTrue(lines[0].startswith(path + expected), lines[0])
                # --check-config says the same
                r = run("--check-config", "--config", path)
                self.assertEqual(r.returncode, 2)
                self.assertTrue(r.stderr.startswith(path + expected))
            finally:
                os.unlink(path)

    def test_shipped_config_is_valid_and_documented(self):
        path = os.path.join(REPO, "config", "preon.yaml")
        r = run("--check-config", "--config", path, env={k: "" for k in ()})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("port: 8080", r.stdout)
        # every key the program knows is in the shipped file, with a comment above it
        with open(path) as f:
            lines = f.read().split("\n")
        for line in r.stdout.split("\n"):
            if line.startswith("  "):
                key = line.strip().split(":")[0]
                idx = [i for i, l in enumerate(lines) if l.strip().startswith(key + ":")]
                self.assertTrue(idx, "key %s missing from config/preon.yaml" % key)
                self.assertTrue(lines[idx[0] - 1].strip().startswith("#"), "key %s has no comment" % key)

    def test_old_key_name_warns(self):
        """database.tfb_sync, the Sync rule's old name, still sets database.strict_sync and says where it was set and
        what to write instead; the shipped file and the new name say nothing."""
        path = write("database:\n  tfb_sync: batch\n")
        try:
            r = run("--check-config", "--config", path)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("strict_sync: batch", r.stdout)
            self.assertIn("warning: %s:2:3: database.tfb_sync is deprecated, use database.strict_sync" % path, r.stderr)
            r = run("--check-config", "--config", path, env={"PREON_DATABASE_TFB_SYNC": "request"})
            self.assertIn("strict_sync: request", r.stdout)
            self.assertIn("environment PREON_DATABASE_TFB_SYNC: PREON_DATABASE_TFB_SYNC is deprecated, use "
                          "PREON_DATABASE_STRICT_SYNC", r.stderr)
        finally:
            os.unlink(path)
        r = run("--check-config", "--config", os.path.join(REPO, "config", "preon.yaml"))
        self.assertNotIn("deprecated", r.stderr)

    def test_env_overrides_file(self):
        path = write("server:\n  port: 1234\n")
        try:
            r = run("--check-config", "--config", path, env={"PREON_SERVER_PORT": "4321", "PREON_DATABASE_URL": "postgresql://a:pw@h/d"})
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("port: 4321", r.stdout)
            self.assertIn("postgresql://a:***@h/d", r.stdout)
            self.assertNotIn("a:pw@", r.stdout)
            r = run("--check-config", "--config", path, env={"PREON_SERVER_PORT": "http"})
            self.assertEqual(r.returncode, 2)
            self.assertIn("PREON_SERVER_PORT", r.stderr)
        finally:
            os.unlink(path)

    def test_bad_database_url_exit_2(self):
        r = run("--check-config", env={"PREON_DATABASE_URL": "postgresql://[::1/db"})
        self.assertEqual(r.returncode, 2)
        self.assertTrue(r.stderr.startswith("database.url: "), r.stderr)
        r = run("--check-config", env={"PREON_DATABASE_URL": "host=x bogus_option=1"})
        self.assertEqual(r.returncode, 2)
        self.assertIn("bogus_option", r.stderr)

    def test_host_name_resolved_once_at_start(self):
        # "localhost" is looked up at start-up and pinned as hostaddr, so reconnects never wait on DNS.
        url = pg_url().replace("127.0.0.1", "localhost")
        with Preon(db_url=url) as p:
            p.start()
            self.assertEqual(p.request("GET", "/fruits")[0], 200)
            self.assertEqual(p.stop(), 0)
            self.assertRegex(p.output(), r"database host 'localhost' resolved to \S*127\.0\.0\.1")

    def test_missing_config_file(self):
        r = run("--config", "/nonexistent/preon.yaml")
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent/preon.yaml: cannot read", r.stderr)

    def test_version_help_and_bad_option(self):
        r = run("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^preon \d+\.\d+\.\d+")
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--check-config", r.stdout)
        r = run("--bogus")
        self.assertEqual(r.returncode, 2)
        r = run("extra-arg")
        self.assertEqual(r.returncode, 2)

    def test_probe(self):
        with Preon(db_url="postgresql://postgres@127.0.0.1:%d/preon" % free_port()) as p:
            p.start(probe="/hello")
            env = {"PREON_SERVER_PORT": str(p.port)}
            self.assertEqual(run("--probe", "/health/live", env=env).returncode, 0)
            self.assertEqual(run("--probe", "/health/ready", env=env).returncode, 1)  # no database: 503
            self.assertEqual(run("--probe", "/nope", env=env).returncode, 1)
            self.assertEqual(p.stop(), 0)
            self.assertEqual(run("--probe", "/health/live", env=env).returncode, 1)  # nobody listening

    def test_port_in_use_fails_clearly(self):
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            port = s.getsockname()[1]
            r = run(env={"PREON_SERVER_PORT": str(port), "PREON_SERVER_LISTEN": "127.0.0.1",
                         "PREON_DATABASE_URL": "postgresql://127.0.0.1:1/x"})
            self.assertEqual(r.returncode, 1)
            self.assertIn("cannot listen on 127.0.0.1:%d" % port, r.stderr)

    def test_database_down_at_start_is_not_fatal(self):
        dead = "postgresql://postgres@127.0.0.1:%d/preon" % free_port()
        with Preon(db_url=dead) as p:
            p.start(probe="/hello")
            status, _, body = p.request("GET", "/hello")
            self.assertEqual((status, body), (200, b"Hello"))
            for path in ("/fruits", "/fruits/1"):
                status, headers, body = p.request("GET", path)
                self.assertEqual(status, 503)
                self.assertEqual(headers.get("retry-after"), "1")
                self.assertEqual(json.loads(body), {"error": "database is not connected", "status": 503})
            self.assertEqual(p.stop(), 0)
            self.assertIn("Connection refused", p.output())  # the log says why


if __name__ == "__main__":
    main()
