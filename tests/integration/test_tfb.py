# SPDX-License-Identifier: MIT
"""TechEmpower's seven test types against the real World and Fortune tables."""
import json
import socket

from harness import PreonTestCase, main, psql, read_response


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


if __name__ == "__main__":
    main()
