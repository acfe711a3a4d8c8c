# SPDX-License-Identifier: MIT
"""PostgreSQL going away and coming back, and a query that does not answer in time.

Uses a cluster of its own (scripts/pg.sh into a temp folder, its own port), since it stops it."""
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

import http.client

from harness import PG_SH, SLOW, Preon, PreonTestCase, free_port, hold_lock, main, pg, pg_url, record, scaled


class OutageTest(PreonTestCase):
    preon_settings = {"database_query_timeout_ms": 800, "database_reconnect_max_ms": 500}

    @classmethod
    def db_url(cls):
        cls.dir = tempfile.mkdtemp(prefix="preon-outage-")
        os.chmod(cls.dir, 0o755)
        subprocess.run([PG_SH, "init", cls.dir, str(free_port())], check=True, env=dict(os.environ, PREON_PG_EXTRA_CONF="fsync = off"))
        return pg_url(cls.dir)

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            pg("stop", cls.dir, "immediate")
            shutil.rmtree(cls.dir, ignore_errors=True)

    def wait_for(self, path, status, within):
        """Waits until 20 requests in a row, each on a new connection (so spread over every thread's
        listener), answer `status`."""
        start, streak = time.monotonic(), 0
        while time.monotonic() - start < within:
            s, _, _ = self.preon.request("GET", path)
            streak = streak + 1 if s == status else 0
            if streak == 20:
                return time.monotonic() - start
            if streak == 0:
                time.sleep(0.02)
        self.fail("%s did not answer %d within %.1fs:\n%s" % (path, status, within, self.preon.output()))

    def test_database_restart(self):
        for round in range(2):
            self.assertEqual(self.preon.request("GET", "/fruits")[0], 200)
            pg("stop", self.dir, "immediate")
            start = time.monotonic()
            for path in ("/fruits", "/fruits/1"):
                status, headers, body = self.preon.request("GET", path, timeout=5)
                self.assertIn(status, (502, 503), body)
                self.assertEqual(json.loads(body)["status"], status)
            # answered within the query timeout, not after a hang
            self.assertLess(time.monotonic() - start, 0.8 + 0.5)
            self.assertEqual(self.preon.request("GET", "/hello")[:3:2], (200, b"Hello"))
            self.assertIsNone(self.preon.proc.poll(), "preon died")
            pg("start", self.dir)
            self.wait_for("/fruits", 200, within=2.0)
            self.assertEqual(self.preon.request("GET", "/fruits/1")[0], 200)

    def test_killed_under_load(self):
        """PostgreSQL killed (-m immediate) and restarted several times while 16 clients keep reading: preon, on
        its default settings, answers every request 200, 502, 503 or 504, and only 200 from 2 s after each
        restart until the next kill."""
        rounds, recover_s = scaled(3, 10, 3), 2.0 if SLOW == 1 else 6.0
        with Preon(db_url=pg_url(self.dir)).start() as p:
            log, lock, stop = [], threading.Lock(), threading.Event()  # (monotonic time sent, status or error)

            def client(n):
                conn = http.client.HTTPConnection("127.0.0.1", p.port, timeout=10 * SLOW)
                i = 0
                while not stop.is_set():
                    t = time.monotonic()
                    try:
                        conn.request("GET", "/fruits" if (n + i) % 2 else "/fruits/1")
                        r = conn.getresponse()
                        r.read()
                        outcome = r.status
                    except (OSError, http.client.HTTPException) as e:
                        outcome = "error " + repr(e)
                        conn.close()
                    with lock:
                        log.append((t, outcome))
                    i += 1
                conn.close()

            clients = [threading.Thread(target=client, args=(n,)) for n in range(16)]
            start = time.monotonic()
            try:
                for c in clients:
                    c.start()
                time.sleep(1)
                windows = []  # (restarted at, next kill at)
                for _ in range(rounds):
                    pg("stop", self.dir, "immediate")
                    time.sleep(1)
                    pg("start", self.dir)
                    up = time.monotonic()
                    time.sleep(recover_s + 1.5)
                    windows.append((up, time.monotonic()))
            finally:
                stop.set()
                for c in clients:
                    c.join()
            statuses = {}
            for _, o in log:
                statuses[str(o)] = statuses.get(str(o), 0) + 1
            recovery = []
            for up, end in windows:
                late = [t for t, o in log if up <= t < end and o != 200]
                recovery.append(round(max(late) - up, 2) if late else 0.0)
                self.assertGreater(len([t for t, o in log if up + recover_s <= t < end]), 0)
            record("postgres-killed", rounds=rounds, clients=16, requests=len(log), statuses=statuses,
                   recovery_s=recovery, seconds=round(time.monotonic() - start, 1))
            self.assertLessEqual(set(statuses), {"200", "502", "503", "504"}, statuses)
            self.assertIn("503", statuses)  # the outages were seen
            for r in recovery:
                self.assertLess(r, recover_s,
                                "not back to 100%% 200 within %.1fs of a restart: %s" % (recover_s, recovery))
            self.assertIsNone(p.proc.poll(), "preon died")
            self.assertEqual(p.stop(timeout=60 * SLOW), 0)

    def test_query_timeout_is_504(self):
        # A lock held by another session makes the SELECT wait longer than the query timeout.
        holder = hold_lock(2, self.dir)
        try:
            results = []
            threads = [threading.Thread(target=lambda: results.append(self.preon.request("GET", "/fruits", timeout=10)))
                       for _ in range(5)]
            start = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.monotonic() - start
            for status, _, body in results:
                self.assertEqual(status, 504, body)
                self.assertEqual(json.loads(body), {"error": "database did not answer in time", "status": 504})
            self.assertLess(elapsed, 2.0)  # answered at the timeout, not when the lock went away
        finally:
            holder.wait(timeout=30)
        self.wait_for("/fruits", 200, within=3.0)


if __name__ == "__main__":
    main()
