# SPDX-License-Identifier: MIT
"""database.read_url: requests that only read go to a second pool, writes to database.url, and reads fall back to
database.url when no read connection is ready.

The read side is told apart without a standby: read_url names the same test PostgreSQL with a search_path whose
own `fruits` table holds other rows (as a lagging standby would answer). A GET answered from there came through the
read pool; a POST that lands in public.fruits came through the primary pool; with read_url on a closed port, GETs
are answered from public.fruits. (deploy/stack/'s tests do the same against real Patroni standbys.)"""
import contextlib
import json
import re
import subprocess
import threading
import time
import unittest

from harness import BIN, PG_SH, PGDIR, SLOW, Preon, end, free_port, main, pg_url, psql, require_env, scrape, value

JSON = {"Content-Type": "application/json"}


LOCKED = ("SELECT count(*) FROM pg_locks WHERE relation = 'readside.fruits'::regclass AND granted "
          "AND mode = 'AccessExclusiveLock'")


@contextlib.contextmanager
def read_side_locked(deadline):
    """readside.fruits locked by another session (each read waits, as on a frozen standby) until the block ends."""
    holder = subprocess.Popen([PG_SH, "psql", PGDIR, "-c", "BEGIN; LOCK TABLE readside.fruits IN ACCESS "
                               "EXCLUSIVE MODE; SELECT pg_sleep(60); COMMIT;"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while psql(LOCKED) != "1":
            if time.monotonic() > deadline:
                raise AssertionError("the lock was never taken")
            time.sleep(0.02)
        yield
    finally:
        # The lock goes with its backend, at once: killing psql alone would leave the backend in its pg_sleep(60)
        # (PostgreSQL notices a client gone only when it next reads), and the held requests would race their own
        # 60-s timeout.
        psql("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE relation = 'readside.fruits'::regclass "
             "AND granted AND mode = 'AccessExclusiveLock'")
        end(holder)


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
        """With the read side stuck (its table locked: each read waits, as on a frozen standby),
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
            with read_side_locked(deadline):
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
            for t in waiting:
                t.join(60 * SLOW)
            self.assertEqual(sorted(s for s, _, _ in held), [200] * int(stuck) + [503] * (20 - int(stuck)))
            self.assertEqual(value(scrape(p), "preon_db_queue_depth", pool="read"), 0)
            self.assertEqual(p.stop(), 0)

    def lose_a_read_connection_with_reads_held(self, per_thread):
        """Reads pile up on the read side behind a lock, held back unsent (pipeline_depth 1); then the backend of the
        newest read connection is terminated. Returns ([(status, name)] of the 20 reads in order of sending, the log).
        The first read waits alone on one connection; the second, sent once it does, alone on the next (with one
        read connection, behind the first); the other 18 queue behind them, held back."""
        big = 60000 * SLOW
        settings = dict(database_read_url=self.read_url(), server_threads=1, database_connections_per_thread=per_thread,
                        database_pipeline_depth=1, database_max_queue_wait_ms=0, server_request_timeout_ms=big,
                        database_query_timeout_ms=big)
        waiters = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'preon' AND wait_event_type = 'Lock'"
        with Preon(**settings).start() as p:
            deadline = time.monotonic() + 20 * SLOW
            while p.output().count("connected (server") < 2 * per_thread:
                self.assertLess(time.monotonic(), deadline, p.output())
                time.sleep(0.02)
            answers = [None] * 20

            def read(i):
                status, _, body = p.request("GET", "/fruits/1", timeout=120)
                answers[i] = (status, json.loads(body).get("name") if status == 200 else None)
            threads = [threading.Thread(target=read, args=(i,)) for i in range(20)]
            with read_side_locked(deadline):
                for i, (start, queued, waiting) in enumerate(((0, 1, 1), (1, 2, min(per_thread, 2)), (2, 20, None))):
                    for t in threads[start:20 if waiting is None else start + 1]:
                        t.start()
                    while (value(scrape(p), "preon_db_queue_depth", pool="read") != queued
                           or (waiting is not None and psql(waiters) != str(waiting))):
                        self.assertLess(time.monotonic(), deadline + 10 * SLOW, p.output()[-2000:])
                        time.sleep(0.02)
                    time.sleep(0.05)  # a head waiting longer than PREON_DB_STALL_MS (10 ms): the next read spreads
                # the newest read connection's backend: the one that took the last batch sent
                psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'preon' "
                     "AND wait_event_type = 'Lock' ORDER BY query_start DESC LIMIT 1")
                deadline = time.monotonic() + 10 * SLOW
                while sum(a is not None for a in answers) < (1 if per_thread > 1 else 19):
                    self.assertLess(time.monotonic(), deadline, (answers, p.output()[-2000:]))
                    time.sleep(0.02)
            for t in threads:
                t.join(60 * SLOW)
            m = scrape(p)
            self.assertEqual((value(m, "preon_db_queue_depth", pool="read"), value(m, "preon_db_queue_depth",
                                                                                   pool="primary")), (0, 0))
            moved = (value(m, "preon_db_moved_total", pool="read"), value(m, "preon_db_moved_total", pool="primary"))
            self.assertEqual(p.stop(), 0)
            return answers, p.output(), moved

    def test_reads_not_sent_move_to_the_other_read_connection(self):
        """A read connection lost with reads queued on it but never sent: the database never saw them, so they go to
        the other read connection instead of failing. Only what was sent fails (502: the second read, alone in its
        batch); before, the held-back reads were answered 503 too (the cause of integration.stack's extra failed
        reads when a standby stops)."""
        answers, log, moved = self.lose_a_read_connection_with_reads_held(2)
        self.assertEqual(answers[1], (502, None), answers)
        self.assertEqual(answers[:1] + answers[2:], [(200, "read-side")] * 19, answers)
        said = re.search(r"db r0#[01]: ([1-9][0-9]*) queries it had not sent moved to other connections", log)
        self.assertIsNotNone(said, log)
        self.assertEqual(moved, (int(said.group(1)), 0))  # preon_db_moved_total, by the pool they left

    def test_reads_not_sent_move_to_the_primary(self):
        """With no other read connection ready, reads never sent go to the primary, as a new read would."""
        answers, log, moved = self.lose_a_read_connection_with_reads_held(1)
        self.assertEqual(answers[0], (502, None), answers)
        self.assertEqual([s for s, _ in answers[1:]], [200] * 19, answers)
        self.assertNotIn("read-side", [n for _, n in answers[1:]], answers)
        self.assertIn("db r0#0: 19 queries it had not sent moved to other connections", log)
        self.assertEqual(moved, (19, 0))  # counted against the read pool they left, not the primary

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
