# SPDX-License-Identifier: MIT
"""TechEmpower's seven test types against the real World and Fortune tables."""
import json
import os
import socket
import subprocess
import time

from harness import PG_SH, REPO, Preon, PreonTestCase, main, pg_url, psql, read_response, scrape


def world(ids):
    rows = psql("SELECT id, randomNumber FROM World WHERE id IN (%s)" % ",".join(str(i) for i in ids))
    return {int(a): int(b) for a, b in (line.split("|") for line in rows.split("\n") if line)}


def html_escape(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;").replace("'", "&#39;")


CLAMPS = [("", 1), ("?queries", 1), ("?queries=", 1), ("?queries=foo", 1), ("?queries=0", 1), ("?queries=1", 1),
          ("?queries=20", 20), ("?queries=500", 500), ("?queries=501", 500), ("?queries=-1", 1),
          ("?other=5&queries=3", 3), ("?queries=99999999999999999999", 500), ("?queries=2x", 1)]


class TfbTest(PreonTestCase):
    def get(self, path):
        status, headers, body = self.preon.request("GET", path)
        self.assertEqual(status, 200, (path, body))
        for h in ("server", "date", "content-length"):
            self.assertIn(h, headers, path)
        self.assertEqual(int(headers["content-length"]), len(body))
        return headers, body

    def assert_worlds(self, items, expect_db=True):
        for w in items:
            self.assertEqual(sorted(w), ["id", "randomNumber"])
            self.assertTrue(1 <= w["id"] <= 10000, w)
            self.assertTrue(1 <= w["randomNumber"] <= 10000, w)
        if expect_db:
            db = world({w["id"] for w in items})
            for w in items:
                self.assertEqual(w["randomNumber"], db[w["id"]], w)

    def test_plaintext(self):
        headers, body = self.get("/plaintext")
        self.assertEqual(body, b"Hello, World!")
        self.assertEqual(headers["content-type"], "text/plain")

    def test_json(self):
        headers, body = self.get("/json")
        self.assertEqual(body, b'{"message":"Hello, World!"}')
        self.assertEqual(headers["content-type"], "application/json")

    def test_db(self):
        headers, body = self.get("/db")
        self.assertEqual(headers["content-type"], "application/json")
        w = json.loads(body)
        self.assertIsInstance(w, dict)
        self.assert_worlds([w])

    def test_db_ids_are_spread(self):
        ids = {json.loads(self.get("/db")[1])["id"] for _ in range(50)}
        self.assertGreater(len(ids), 40)  # 50 draws from 10,000 rarely collide

    def test_queries_clamping(self):
        for qs, n in CLAMPS:
            headers, body = self.get("/queries" + qs)
            self.assertEqual(headers["content-type"], "application/json")
            items = json.loads(body)
            self.assertIsInstance(items, list, qs)
            self.assertEqual(len(items), n, qs)
            self.assert_worlds(items, expect_db=n <= 20)

    def test_updates_persist(self):
        headers, body = self.get("/updates?queries=20")
        self.assertEqual(headers["content-type"], "application/json")
        items = json.loads(body)
        self.assertEqual(len(items), 20)
        # the answer is what the database now holds; an id drawn twice has one value everywhere
        self.assert_worlds(items, expect_db=True)
        seen = {}
        for w in items:
            self.assertEqual(seen.setdefault(w["id"], w["randomNumber"]), w["randomNumber"])

    def test_updates_change_rows(self):
        changed = 0
        for _ in range(5):
            items = json.loads(self.get("/updates?queries=20")[1])
            before = {w["id"]: w["randomNumber"] for w in items}
            self.assertEqual(world(before), before)
            changed += len(before)
        self.assertGreater(changed, 0)

    def test_updates_clamping(self):
        for qs, n in [("", 1), ("?queries=foo", 1), ("?queries=0", 1), ("?queries=501", 500), ("?queries=-1", 1)]:
            items = json.loads(self.get("/updates" + qs)[1])
            self.assertEqual(len(items), n, qs)
            self.assert_worlds(items, expect_db=n == 1)

    def test_fortunes_escaped_and_sorted(self):
        headers, body = self.get("/fortunes")
        self.assertEqual(headers["content-type"], "text/html; charset=UTF-8")
        rows = [line.split("|", 1) for line in psql("SELECT id || '|' || message FROM Fortune").split("\n")]
        rows.append(["0", "Additional fortune added at request time."])
        rows.sort(key=lambda r: r[1].encode("utf-8"))
        expected = ("<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr>"
                    + "".join("<tr><td>%s</td><td>%s</td></tr>" % (i, html_escape(m)) for i, m in rows)
                    + "</table></body></html>")
        self.assertEqual(body.decode("utf-8"), expected)
        self.assertEqual(len(rows), 13)
        self.assertIn("&lt;script&gt;alert(&quot;This should not be displayed in a browser alert box.&quot;);&lt;/script&gt;",
                      body.decode("utf-8"))
        self.assertIn("フレームワークのベンチマーク", body.decode("utf-8"))

    def test_pipelined_plaintext(self):
        with socket.create_connection(("127.0.0.1", self.preon.port), timeout=10) as s:
            s.sendall(b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n" * 16)
            f = s.makefile("rb")
            for _ in range(16):
                status, headers, body = read_response(f)
                self.assertEqual((status, body), (200, b"Hello, World!"))
                self.assertIn("date", headers)
                self.assertIn("server", headers)
        # and in order, when the answers differ
        paths = ["/plaintext" if i % 3 else "/json" for i in range(16)]
        with socket.create_connection(("127.0.0.1", self.preon.port), timeout=10) as s:
            s.sendall(b"".join(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % p.encode() for p in paths))
            f = s.makefile("rb")
            for p in paths:
                status, _, body = read_response(f)
                self.assertEqual(body, b"Hello, World!" if p == "/plaintext" else b'{"message":"Hello, World!"}')


class CachedQueriesTest(PreonTestCase):
    def test_cached_queries(self):
        for qs, n in [(q.replace("queries", "count"), n) for q, n in CLAMPS]:
            status, headers, body = self.preon.request("GET", "/cached-queries" + qs)
            self.assertEqual(status, 200)
            self.assertEqual(headers["content-type"], "application/json")
            items = json.loads(body)
            self.assertEqual(len(items), n, qs)
            if n <= 20:
                # filled from the database on first use; nothing updates World during this class
                db = world({w["id"] for w in items})
                for w in items:
                    self.assertEqual(w["randomNumber"], db[w["id"]])


class TfbBatchSyncTest(TfbTest):
    """The same with one Sync per loop pass: the updates keep their own Sync."""
    preon_settings = {"database_sync": "batch"}


TFB_PATHS = ("/plaintext", "/json", "/db", "/queries", "/updates", "/cached-queries", "/fortunes")
TFB_STATEMENTS = ("world_by_id", "world_all", "world_update", "fortunes")


class ModuleUnmountedTest(PreonTestCase):
    """modules.techempower: false, against a database without TechEmpower's tables (World, Fortune). A connection
    prepares its statements as it connects, each behind its own Sync, and logs each that fails ("statement world_by_id:
    relation "world" does not exist"); with one connection, a /fruits answered on it comes after every one of those
    replies, and its access line is written to the log after those warnings (one loop thread: one ordered ring). So
    once that line is in the log, the log names every module statement preon tried to prepare: none here, all four in
    the control, mounted on the same database."""
    DB = "preon_nomodule"
    SETTINGS = {"server_threads": 1, "database_connections_per_thread": 1, "log_access": "true"}
    preon_settings = dict(SETTINGS, modules_techempower="false")

    @classmethod
    def db_url(cls):
        psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % cls.DB)
        psql("CREATE DATABASE %s" % cls.DB)
        for f in ("01-schema.sql", "02-seed.sql"):  # the service's own schema alone
            with open(os.path.join(REPO, "sql", f)) as sql:
                subprocess.run([PG_SH, "psql", os.environ["PREON_TEST_PGDIR"], "-d", cls.DB, "-v", "ON_ERROR_STOP=1"],
                               stdin=sql, check=True, capture_output=True)
        return cls.url()

    @classmethod
    def url(cls):
        return pg_url().rsplit("/", 1)[0] + "/" + cls.DB

    def failed_statements(self, p):
        self.assertEqual(p.request("GET", "/fruits/424242")[0], 404)  # a query on the one connection
        deadline = time.monotonic() + 30
        while "/fruits/424242" not in p.output():
            self.assertLess(time.monotonic(), deadline, p.output())
            time.sleep(0.05)
        return {name for name in TFB_STATEMENTS if "statement %s: relation" % name in p.output()}

    def test_routes_answer_404(self):
        for path in TFB_PATHS:
            status, _, body = self.preon.request("GET", path)
            self.assertEqual(status, 404, (path, body))
            self.assertEqual(json.loads(body)["error"], "no such resource", path)

    def test_statements_not_prepared(self):
        self.assertEqual(self.failed_statements(self.preon), set())
        samples = scrape(self.preon)
        statements = {dict(labels).get("statement") for (_, labels) in samples}
        self.assertIn("fruit_by_id", statements)
        self.assertEqual(statements & set(TFB_STATEMENTS), set())

    def test_mounted_module_prepares_its_statements(self):
        """The control: mounted, on the same database, every module statement was tried (and failed)."""
        with Preon(db_url=self.url(), **self.SETTINGS).start() as p:
            self.assertEqual(self.failed_statements(p), set(TFB_STATEMENTS))
            self.assertEqual(p.request("GET", "/db")[0], 502)
            self.assertEqual(p.stop(), 0)


if __name__ == "__main__":
    main()
