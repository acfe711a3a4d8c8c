# SPDX-License-Identifier: MIT
"""database.read_url: requests that only read go to a second pool, writes to database.url, and reads fall back to
database.url when no read connection is ready.

The read side is told apart without a standby: read_url names the same test PostgreSQL with a search_path whose
own `fruits` table holds other rows (as a lagging standby would answer). A GET answered from there came through the
read pool; a POST that lands in public.fruits came through the primary pool; with read_url on a closed port, GETs
are answered from public.fruits. (deploy/stack/'s tests do the same against real Patroni standbys.)"""
import json
import subprocess
import threading
import time
import unittest

from harness import BIN, PG_SH, PGDIR, SLOW, Preon, end, free_port, main, pg_url, psql, require_env, scrape, value

JSON = {"Content-Type": "application/json"}


class ReadPoolTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_env()
        psql("DROP SCHEMA IF EXISTS readside CASCADE; CREATE SCHEMA readside;"
             "CREATE TABLE readside.fruits (id int PRIMARY KEY, name text NOT NULL);"
             "INSERT INTO readside.fruits VALUES (1, 'read-side')")

    @classmethod
    def tearDownClass(cls):
        psql("DROP SCHEMA IF EXISTS readside CASCADE")

    def read_url(self):
        return pg_url() + "?options=-csearch_path%3Dreadside"

    def test_reads_on_read_pool_writes_on_primary(self):
        with Preon(database_read_url=self.read_url(), database_connections_per_thread=1).start() as p:
            # until both threads' read connections are up, reads fall back to the primary (start() saw 200 there)
            deadline = time.monotonic() + 10 * SLOW
            while p.output().count("connected (server") < 4:
                self.assertLess(time.monotonic(), deadline, p.output())
                time.sleep(0.02)
            for _ in range(10):
                status, _, body = p.request("GET", "/fruits")
                self.assertEqual((status, json.loads(body)), (200, [{"id": 1, "name": "read-side"}]), p.output())
            self.assertEqual(json.loads(p.request("GET", "/fruits/1")[2])["name"], "read-side")
            status, _, body = p.request("POST", "/fruits", json.dumps({"name": "readpool-write"}).encode(), JSON)
            self.assertEqual(status, 201, body)
            fid = json.loads(body)["id"]
            self.assertEqual(psql("SELECT name FROM public.fruits WHERE id = %d" % fid), "readpool-write")
            self.assertEqual(psql("SELECT count(*) FROM readside.fruits"), "1")
            # what a client sees after a write when reads go elsewhere: not its write (here, never; on a standby,
            # until replay catches up)
            self.assertEqual(p.request("GET", "/fruits/%d" % fid)[0], 404)
            self.assertEqual(p.request("DELETE", "/fruits/%d" % fid)[0], 204)
            self.assertIn("db r0#0: connected", p.output())
            self.assertEqual(p.stop(), 0)

    def test_metrics_show_a_stuck_read_pool(self):
        """Issue 30, part 3: with the read side stuck (its table locked: each read waits, as on a frozen standby),
        the read pool's queue, its 503s and its connections are in /metrics under pool="read", and the primary's
        under pool="primary" are untouched. Before, the scrape read only the primary pool's counters."""
        bound = 300 * SLOW
        settings = dict(database_read_url=self.read_url(), server_threads=1, database_connections_per_thread=1,
                        database_max_queue_wait_ms=bound,
                        server_request_timeout_ms=60000 * SLOW, database_query_timeout_ms=60000 * SLOW)
        with Preon(**settings).start() as p:
            deadline = time.monotonic() + 10 * SLOW
            while p.output().count("connected (server") < 2:  # the read connection too, not only the primary's
                self.assertLess(time.monotonic(), deadline, p.output())
                time.sleep(0.02)
            holder = subprocess.Popen([PG_SH, "psql", PGDIR, "-c", "BEGIN; LOCK TABLE readside.fruits IN ACCESS "
                                       "EXCLUSIVE MODE; SELECT pg_sleep(60); COMMIT;"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                while psql("SELECT count(*) FROM pg_locks WHERE relation = 'readside.fruits'::regclass AND granted "
                           "AND mode = 'AccessExclusiveLock'") != "1":
                    self.assertLess(time.monotonic(), deadline, "the lock was never taken")
                    time.sleep(0.02)
                held = []
                waiting = [threading.Thread(target=lambda: held.append(p.request("GET", "/fruits/1", timeout=120)))
                           for _ in range(20)]
                for t in waiting:
                    t.start()
                # What was sent waits on the lock; what was not is refused once it has waited out the bound
                while value(scrape(p), "preon_db_queue_depth", pool="read") + len(held) < 20:
                    self.assertLess(time.monotonic(), deadline + 10 * SLOW, scrape(p))
                    time.sleep(0.02)
                time.sleep(2 * bound / 1000.0)
                refused = [p.request("GET", "/fruits/1")[0] for _ in range(5)]  # behind a head older than the bound
                m = scrape(p)
                stuck = value(m, "preon_db_queue_depth", pool="read")
                self.assertEqual(refused, [503] * 5)
                self.assertGreaterEqual(stuck, 1)
                self.assertEqual(sorted(s for s, _, _ in held), [503] * len(held))
                self.assertEqual(stuck + len(held), 20)
                self.assertEqual(value(m, "preon_db_rejected_total", pool="read", reason="queue_wait"), len(held) + 5)
                self.assertEqual(value(m, "preon_db_connections", pool="read", state="ready"), 1)
                self.assertEqual(value(m, "preon_db_queue_depth", pool="primary"), 0)
                self.assertEqual(value(m, "preon_db_rejected_total", pool="primary", reason="queue_wait"), 0)
                self.assertEqual(value(m, "preon_db_connections", pool="primary", state="ready"), 1)
            finally:
                # The lock goes with its backend, at once: killing psql alone would leave the backend in its
                # pg_sleep(60) (PostgreSQL notices a client gone only when it next reads), and the held requests
                # would race their own 60-s timeout.
                psql("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE relation = 'readside.fruits'::regclass "
                     "AND granted AND mode = 'AccessExclusiveLock'")
                end(holder)
            for t in waiting:
                t.join(60 * SLOW)
            self.assertEqual(sorted(s for s, _, _ in held), [200] * int(stuck) + [503] * (20 - int(stuck)))
            self.assertEqual(value(scrape(p), "preon_db_queue_depth", pool="read"), 0)
            self.assertEqual(p.stop(), 0)

    def test_reads_fall_back_to_primary(self):
        dead = "postgresql://postgres@127.0.0.1:%d/preon" % free_port()
        with Preon(database_read_url=dead, server_threads=1).start() as p:
            for _ in range(20):
                status, _, body = p.request("GET", "/fruits/1")
                self.assertEqual(status, 200, p.output()[-2000:])
                self.assertNotEqual(json.loads(body)["name"], "read-side")
            self.assertEqual(p.stop(), 0)

    def test_bad_read_url_refused_at_start(self):
        r = subprocess.run([BIN, "--check-config"], env={"PREON_DATABASE_READ_URL": "postgresql://h/d?nosuchkey=1"},
                           capture_output=True, text=True, timeout=20, cwd="/")
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertTrue(r.stderr.startswith("database.read_url: "), r.stderr)


if __name__ == "__main__":
    main()
