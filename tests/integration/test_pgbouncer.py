# SPDX-License-Identifier: MIT
"""preon behind a real PgBouncer 1.18 (Debian's), in session and in transaction pooling mode, in front of the test
PostgreSQL.

- With the shipped settings PgBouncer refuses the startup packet's `options` (client_connection_check_interval
  travels there): preon must say in its log what to set (database.pooler), not only that it is not connected.
- database.pooler with client_check_ms > 0 cannot work: refused at start-up (exit 2), naming the key to change.
- Under load from 2 threads x 4 connections (8 PgBouncer clients) over a pool of 4 server connections, reads
  (several statements per request too) and writes: 0 answers other than 2xx, during the load and after it.
  In transaction mode this needs database.pooler: transaction (unnamed statements): with prepared statements,
  the 8 clients' statements meet on 4 server connections and fail with `prepared statement "..." already exists`.
  In session mode each client holds a server connection for its whole session: the pool must be at least
  preon's connection count (threads x connections_per_thread x replicas).

Long form (PREON_SCALE=long): ten times the requests."""
import json
import os
import subprocess
import time
import unittest

import http.client

from harness import BIN, SLOW, Clients, Preon, free_port, main, pg_url, record, require_env, scaled, wrk_mix
from pgbouncer import PgBouncer

POOL = 4
SETTINGS = {"server_threads": 2, "database_connections_per_thread": 4, "database_client_check_ms": 0}
PATHS = ["/fruits", "/fruits/1", "/queries?queries=3", "/db"]
JSON = {"Content-Type": "application/json"}


def upstream_port():
    return int(pg_url().rsplit(":", 1)[1].split("/")[0])


class Writers(Clients):
    """Clients creating, renaming and deleting fruits on keep-alive connections until stopped; every status kept."""

    def __init__(self, port, n=2):
        super().__init__(n)
        self.port, self.statuses = port, {}

    def count(self, key):
        with self.lock:
            self.statuses[key] = self.statuses.get(key, 0) + 1

    def call(self, conn, method, path, body=None):
        try:
            conn.request(method, path, body=json.dumps(body).encode() if body else None, headers=JSON if body else {})
            r = conn.getresponse()
            data = r.read()
            self.count("%s %d" % (method, r.status))
            return r.status, data
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            self.count("%s error %s" % (method, type(e).__name__))
            return None, b""

    def run(self, n):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10 * SLOW)
        i = 0
        while not self.stop.is_set():
            status, data = self.call(conn, "POST", "/fruits", {"name": "bouncer-%d-%d-%d" % (os.getpid(), n, i)})
            if status == 201:
                fid = json.loads(data)["id"]
                self.call(conn, "PUT", "/fruits/%d" % fid, {"name": "bouncer-%d-%d-%d-renamed" % (os.getpid(), n, i)})
                self.call(conn, "DELETE", "/fruits/%d" % fid)
            i += 1
        conn.close()


class PgBouncerTest(unittest.TestCase):
    bouncers = []

    @classmethod
    def setUpClass(cls):
        require_env()

    def bouncer(self, mode, pool_size=POOL):
        b = PgBouncer(upstream_port(), mode, pool_size, free_port()).start()
        self.addCleanup(b.stop)
        return b

    def test_refused_startup_options_say_what_to_set(self):
        b = self.bouncer("transaction")
        with Preon(db_url=b.url(), server_threads=1).start(probe="/hello") as p:
            deadline = time.monotonic() + 10 * SLOW
            while "unsupported startup parameter" not in p.output():
                self.assertLess(time.monotonic(), deadline, p.output())
                time.sleep(0.05)
            line = next(l for l in p.output().splitlines() if "unsupported startup parameter" in l)
            self.assertIn("warn", line)
            self.assertIn("set database.pooler: transaction", line)
            self.assertIn("database.client_check_ms: 0", line)
            self.assertEqual(p.request("GET", "/fruits")[0], 503)
            self.assertEqual(p.stop(), 0)

    def test_pooler_with_client_check_refused_at_start(self):
        env = dict(os.environ, PREON_DATABASE_POOLER="transaction", PREON_DATABASE_URL="postgresql://127.0.0.1:1/x")
        env.pop("PREON_DATABASE_CLIENT_CHECK_MS", None)
        r = subprocess.run([BIN], env=env, capture_output=True, text=True, timeout=20, cwd="/")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("environment PREON_DATABASE_POOLER: database.client_check_ms 1000 cannot work with "
                      "database.pooler: transaction", r.stderr)
        self.assertIn("set database.client_check_ms: 0", r.stderr)

    def load(self, mode, pooler, pool_size):
        b = self.bouncer(mode, pool_size)
        total = scaled(20000, 200000, 2000)
        with Preon(db_url=b.url(), database_pooler=pooler, **SETTINGS).start() as p:
            t0 = time.monotonic()
            with Writers(p.port) as writers:
                res = wrk_mix(p.port, total, PATHS, conns=32, bound_s=scaled(120, 900, 600), timeout_s=10 * SLOW)
            elapsed = time.monotonic() - t0
            clients = b.show("CLIENTS")
            servers = b.show("SERVERS")
            # after the load: every request of a second round answers 200 (a poisoned server connection would not)
            after = {}
            for i in range(200):
                s = p.request("GET", PATHS[i % len(PATHS)])[0]
                after[s] = after.get(s, 0) + 1
            record("pgbouncer-" + mode, pooler=pooler, pool_size=pool_size, preon="2 threads x 4 connections",
                   requests=res["responses"], statuses=res["statuses"], writes=writers.statuses, after=after,
                   pgbouncer_clients=len(clients), pgbouncer_servers=len(servers), seconds=round(elapsed, 1))
            out = "%s\n%s\n%s" % (res["output"], p.output()[-3000:], b.log())
            self.assertGreaterEqual(res["responses"] or 0, total, out)
            self.assertEqual(set(res["statuses"]), {200}, out)
            self.assertEqual(res["errors"], {"connect": 0, "read": 0, "write": 0, "timeout": 0}, out)
            self.assertEqual({k for k in writers.statuses if not k.split()[1].startswith("2")}, set(),
                             (writers.statuses, out))
            self.assertGreater(writers.statuses.get("DELETE 204", 0), 0, (writers.statuses, out))
            self.assertEqual(after, {200: 200}, out)
            self.assertNotIn("already exists", p.output())
            # the point of a pooler: more clients than server connections (8 preon connections; the admin console too)
            self.assertGreaterEqual(len([c for c in clients if c.get("database") == "preon"]), 8, clients)
            self.assertLessEqual(len([s for s in servers if s.get("database") == "preon"]), pool_size, servers)
            self.assertEqual(p.stop(), 0)

    def test_transaction_mode_under_load(self):
        self.load("transaction", "transaction", POOL)

    def test_session_mode_under_load(self):
        # session mode: one server connection per client for its whole session, so the pool covers preon's 8
        self.load("session", "session", 8)


if __name__ == "__main__":
    main()
