# SPDX-License-Identifier: MIT
"""Database faults that hit some statements only: a dropped table, a user without rights. Only the affected
requests fail (502, with the database's reason); their neighbours in the same pipeline succeed; the service
recovers by itself when the table is back."""
import json
import threading
import time

from harness import Preon, PreonTestCase, main, parallel, pg_url, psql, record, require_env


def tally(results):
    """{path: {status: count}} of (path, status, body) triples."""
    out = {}
    for path, status, _ in results:
        out.setdefault(path, {}).setdefault(str(status), 0)
        out[path][str(status)] += 1
    return out


class DroppedTableTest(PreonTestCase):
    # one thread, one connection: every request below shares one pipeline
    preon_settings = {"server_threads": 1, "database_connections_per_thread": 1}

    def mixed(self):
        results, lock = [], threading.Lock()

        def client(n):
            for path in ("/fortunes", "/fruits", "/db", "/fortunes", "/fruits/1"):
                status, _, body = self.preon.request("GET", path)
                with lock:
                    results.append((path, status, body))
        self.assertEqual(parallel(client, 8), [])
        return results

    def test_dropped_table_fails_only_its_requests(self):
        psql("CREATE TABLE fortune_saved AS SELECT * FROM fortune; DROP TABLE fortune")
        try:
            results = self.mixed()
            record("dropped-table", sync=self.preon_settings.get("database_sync", "request"), answers=tally(results))
            for path, status, body in results:
                if path == "/fortunes":
                    self.assertEqual(status, 502, body)
                    self.assertIn("does not exist", json.loads(body)["error"])
                    self.assertNotIn("SELECT", json.loads(body)["error"])  # no SQL text in error bodies
                else:
                    self.assertEqual(status, 200, (path, body))
        finally:
            psql("ALTER TABLE fortune_saved RENAME TO fortune; ALTER TABLE fortune ADD PRIMARY KEY (id)")
        # back without a restart: the statement is prepared again on its next use
        for path, status, body in self.mixed():
            self.assertEqual(status, 200, (path, body))


class DroppedTableBatchTest(DroppedTableTest):
    preon_settings = {"server_threads": 1, "database_connections_per_thread": 1, "database_sync": "batch"}


class NoRightsTest(PreonTestCase):
    @classmethod
    def setUpClass(cls):
        require_env()
        psql("DROP ROLE IF EXISTS preon_norights; CREATE ROLE preon_norights LOGIN")
        # Wait until connected, so that the queries below fail for want of rights and not for want of a connection
        # (under valgrind, /hello answered before the database connections were up).
        cls.preon = Preon(db_url=pg_url().replace("postgres@", "preon_norights@")).start(probe="/health/ready")

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            psql("DROP ROLE IF EXISTS preon_norights")

    def test_permission_denied_is_502(self):
        self.assertEqual(self.preon.request("GET", "/hello")[2], b"Hello")
        answers = {}
        for path in ("/fruits", "/fruits/1", "/db", "/fortunes"):
            status, _, body = self.preon.request("GET", path)
            answers[path] = status
            self.assertEqual(status, 502, (path, body))
            self.assertIn("permission denied", json.loads(body)["error"])
        self.assertEqual(self.preon.request("GET", "/json")[0], 200)
        record("user-without-rights", answers=answers)
        # logged with the reason (the writer thread copies log lines out every few milliseconds)
        deadline = time.monotonic() + 3
        while "permission denied" not in self.preon.output() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertIn("permission denied", self.preon.output())


if __name__ == "__main__":
    main()
