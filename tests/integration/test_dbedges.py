# SPDX-License-Identifier: MIT
"""The database layer at the edges real deployments hit, against real PostgreSQL servers: pools at shutdown, a
new libpq socket under an old number, a COMMIT that fails at the Sync, a blackholed first host, the server's own
words (FATAL reasons, notices) in preon's log, a broken connection counted as such, and /updates' deadline.
Each of the first four failed before its fix; the scenario is in the test's docstring."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from harness import (PG_SH, REPO, SLOW, WRAPPER, Preon, db_psql, free_port, main, measure, pg, pg_url, private_db, psql,
                     read_response, require_env, scrape, value)


# Time spans of the scenarios: under valgrind preon is slower, but these are mostly PostgreSQL's lock waits.
F = 3 if WRAPPER else 1


def send_all(port, requests):
    """Opens one connection per request, writes every request before reading any answer (so that they meet in
    preon's pipeline), and returns [(status, body)] in the same order."""
    socks = [socket.create_connection(("127.0.0.1", port), timeout=30 * SLOW) for _ in requests]
    try:
        for s, raw in zip(socks, requests):
            s.sendall(raw)
        out = []
        for s in socks:
            status, _, body = read_response(s.makefile("rb"))
            out.append((status, body))
        return out
    finally:
        for s in socks:
            s.close()


def get(path):
    return ("GET %s HTTP/1.1\r\nHost: t\r\n\r\n" % path).encode()


def post_json(path, obj):
    body = json.dumps(obj).encode()
    return (("POST %s HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
             % (path, len(body))).encode() + body)


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("not within %.1fs: %s" % (timeout, what))


def backends(appname="preon"):
    out = psql("SELECT pid FROM pg_stat_activity WHERE application_name = '%s' AND backend_type = 'client backend'"
               % appname)
    return [int(x) for x in out.split()] if out else []


class DbEdgesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_env()

    def test_shutdown_pools_outlive_the_threads(self):
        """Defect 1. Two threads, sixteen keep-alive connections, a lock on world holds one /db and so one thread's
        drain; after SIGTERM the other thread finishes its drain while /health/ready and /metrics keep coming on the
        other connections (they read every thread's pool). Before the fix that thread freed its pool: SIGSEGV in
        preon_db_pool_stats. Now every request gets an answer and preon exits 0."""
        with Preon(server_threads=2, server_shutdown_timeout_ms=60000 * F,
                   database_query_timeout_ms=60000 * F).start() as p:
            holder = None
            conns = []
            try:
                for _ in range(16):  # the kernel spreads them over both threads' listeners (SO_REUSEPORT)
                    s = socket.create_connection(("127.0.0.1", p.port), timeout=60 * SLOW)
                    s.sendall(get("/hello"))
                    f = s.makefile("rb")
                    self.assertEqual(read_response(f)[0], 200)
                    conns.append((s, f))
                # The lock is held until the test releases it (bounded by pg_sleep), not for a fixed time: on a slow
                # machine a timed lock could end before the requests below arrive, and then no thread is left to answer.
                holder = subprocess.Popen([PG_SH, "psql", os.environ["PREON_TEST_PGDIR"], "-c",
                                           "BEGIN; LOCK TABLE world IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(120); "
                                           "COMMIT;"],
                                          env=dict(os.environ, PGAPPNAME="preon-lock-holder"),
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                wait_for(lambda: psql("SELECT count(*) FROM pg_locks WHERE relation = 'world'::regclass AND "
                                      "mode = 'AccessExclusiveLock' AND granted") == "1", 30 * F, "lock on world")
                held = conns[0]  # its thread ("B") drains until the lock goes; the other ("A") finishes at once
                held[0].sendall(get("/db"))
                wait_for(lambda: psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'preon' AND "
                                      "wait_event_type = 'Lock'") == "1", 30 * F, "/db waiting for the lock")
                p.kill(signal.SIGTERM)
                # Requests on the other connections, spread over A's drain and end: those on B's connections are read
                # and answered (and read A's pool); those on A's, once A has ended, are never read (EOF at exit).
                for i, (s, f) in enumerate(conns[1:]):
                    time.sleep(0.1 * F)
                    try:
                        s.sendall(get("/health/ready" if i % 2 == 0 else "/metrics"))
                    except OSError:
                        pass
                time.sleep(0.5 * F)
                psql("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'preon-lock-holder'")
                status, _, body = read_response(held[1])
                self.assertIn(status, (200, 503), body)
                answers = []
                for s, f in conns[1:]:
                    try:
                        answers.append(read_response(f)[0])
                    except (ConnectionError, OSError):
                        pass  # an ended thread's connection: the request was never read
                self.assertEqual(p.wait(timeout=60 * SLOW), 0, p.output()[-3000:])
                self.assertTrue(set(answers) <= {200, 503}, answers)
                self.assertGreater(len(answers), 0, "no connection landed on the draining thread (1 in 2^15)")
            finally:
                for s, f in conns:
                    s.close()
                if holder is not None:
                    if holder.poll() is None:
                        psql("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = "
                             "'preon-lock-holder'")
                    holder.wait(timeout=60)

    def read_only_cluster(self):
        """A second real PostgreSQL whose sessions are read-only: libpq's target_session_attrs=read-write rejects
        it and moves on, closing its socket and opening the next one (same descriptor number)."""
        d = tempfile.mkdtemp(prefix="preon-ro-pg.")
        os.chmod(d, 0o755)
        port = free_port()
        env = dict(os.environ, PREON_PG_EXTRA_CONF="fsync = off")
        self.addCleanup(shutil.rmtree, d, True)
        self.addCleanup(pg, "stop", d, "immediate")
        subprocess.run([PG_SH, "init", d, str(port)], env=env, check=True, capture_output=True)
        psql("ALTER SYSTEM SET default_transaction_read_only = on", d)
        psql("SELECT pg_reload_conf()", d)
        return port

    def test_new_socket_under_an_old_number(self):
        """Defect 2. host=127.0.0.1,127.0.0.1 port=A,B target_session_attrs=read-write, A read-only: libpq drops
        A's socket and connects to B under the same descriptor number. Before the fix preon kept watching its dup()
        of A's dead socket: never ready, a core spinning, A's connection in CLOSE-WAIT. Now it is ready on B, idle."""
        ro_port = self.read_only_cluster()
        good_port = int(pg_url().rsplit(":", 1)[1].split("/")[0])
        url = ("host=127.0.0.1,127.0.0.1 port=%d,%d dbname=preon user=postgres target_session_attrs=read-write "
               "sslmode=disable" % (ro_port, good_port))
        with Preon(db_url=url, server_threads=1, database_connections_per_thread=2) as p:
            p.start()
            self.assertEqual(p.request("GET", "/fruits")[0], 200)
            if not WRAPPER:  # idle means idle: no spinning on a dead socket (valgrind's own CPU use blurs this)
                before = measure.cpu_s(p.proc.pid)
                time.sleep(1.0)
                self.assertLess(measure.cpu_s(p.proc.pid) - before, 0.3, "preon busy while idle")
            self.assertEqual(p.stop(), 0)

    def test_commit_failure_at_the_sync(self):
        """Defect 3. A deferred unique constraint fails at the implicit COMMIT, after the INSERT's own result looked
        fine. Before the fix POST /fruits answered 201 with a row that does not exist and the 20 GETs beside it on
        the same pipeline got 502/503 (the connection was reset as out of step). Now: 409, the GETs 200."""
        url = private_db("preon_edges_commit")
        db_psql("preon_edges_commit", "ALTER TABLE fruits ADD CONSTRAINT fruits_name_key UNIQUE (name) "
                                      "DEFERRABLE INITIALLY DEFERRED")
        for sync in ("request", "batch"):
            settings = {"database_sync": sync}  # the default is batch: request must be asked for
            with Preon(db_url=url, server_threads=1, database_connections_per_thread=1, **settings).start() as p:
                reqs = [get("/fruits/1")] * 10 + [post_json("/fruits", {"name": "Kiwi"})] + [get("/fruits/1")] * 10
                out = send_all(p.port, reqs)
                status, body = out[10]
                self.assertEqual(status, 409, body)
                self.assertIn("conflicts with a database constraint", json.loads(body)["error"])
                for i, (status, body) in enumerate(out):
                    if i != 10:
                        self.assertEqual(status, 200, (sync, i, body))
                        self.assertEqual(json.loads(body), {"id": 1, "name": "Kiwi"})
                self.assertEqual(db_psql("preon_edges_commit", "SELECT count(*) FROM fruits WHERE name = 'Kiwi'"), "1")
                samples = scrape(p)
                self.assertGreaterEqual(value(samples, "preon_db_queries_total", statement="fruit_insert",
                                              outcome="conflict"), 1)
                self.assertNotIn("out of step", p.output())  # nothing was reset: the connection served all of it
                self.assertEqual(p.stop(), 0)

    def test_blackholed_first_host_is_passed(self):
        """Defect 4. The first host's accept queue is full (connects hang), the real server is second. libpq
        ignores connect_timeout under PQconnectPoll, and preon's own timeout threw the attempt away and began at the
        first host again: 503 for ever, while psql with the same hosts connects. Now the next attempt starts at the
        next host."""
        hole = socket.socket()
        hole.bind(("127.0.0.1", 0))
        hole.listen(0)
        fillers = []
        for _ in range(4):  # fill the backlog: further SYNs are dropped and connects hang
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(hole.getsockname())
            fillers.append(s)
        time.sleep(0.2)
        good_port = int(pg_url().rsplit(":", 1)[1].split("/")[0])
        url = "host=127.0.0.1,127.0.0.1 port=%d,%d dbname=preon user=postgres sslmode=disable" % (
            hole.getsockname()[1], good_port)
        try:
            with Preon(db_url=url, server_threads=1, database_connections_per_thread=2,
                       database_connect_timeout_ms=500 * F) as p:
                p.start()  # waits for readiness: every thread has a connection, through the second host
                self.assertEqual(p.request("GET", "/fruits")[0], 200)
                self.assertIn("timed out", p.output())  # it did meet the hole first
                self.assertEqual(p.stop(), 0)
        finally:
            for s in fillers:
                s.close()
            hole.close()

    def test_server_fatal_reason_and_connection_lost(self):
        """A FATAL sent to an idle connection (pg_terminate_backend) is logged with the server's reason, not only
        "server closed the connection"; a query that was running when its connection broke is counted as
        connection_lost (it was counted as a database error), and answered 502."""
        with Preon(server_threads=1, database_connections_per_thread=1).start() as p:
            wait_for(lambda: len(backends()) >= 1, 10 * SLOW, "preon's backend")
            for pid in backends():
                psql("SELECT pg_terminate_backend(%d)" % pid)
            wait_for(lambda: "terminating connection due to administrator command" in p.output(), 10 * SLOW,
                     "the server's reason in the log:\n" + p.output())
            wait_for(lambda: p.request("GET", "/fruits")[0] == 200, 10 * SLOW, "reconnected")

            before = scrape(p)
            holder = subprocess.Popen([PG_SH, "psql", os.environ["PREON_TEST_PGDIR"], "-c",
                                       "BEGIN; LOCK TABLE fruits IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(%d); COMMIT;"
                                       % (3 * F)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_for(lambda: psql("SELECT count(*) FROM pg_locks WHERE relation = 'fruits'::regclass AND "
                                  "mode = 'AccessExclusiveLock'") == "1", 10, "lock on fruits")
            result = []
            t = threading.Thread(target=lambda: result.append(p.request("GET", "/fruits", timeout=30 * SLOW)))
            t.start()
            wait_for(lambda: psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'preon' AND "
                                  "wait_event_type = 'Lock'") == "1", 10 * SLOW, "the query waiting on the lock")
            for pid in backends():
                psql("SELECT pg_terminate_backend(%d)" % pid)
            t.join()
            holder.wait(timeout=30 * SLOW)
            self.assertEqual(result[0][0], 502, result[0])
            after = scrape(p)
            lost = lambda s: value(s, "preon_db_queries_total", statement="fruits_page", outcome="connection_lost")
            error = lambda s: value(s, "preon_db_queries_total", statement="fruits_page", outcome="error")
            self.assertEqual(lost(after) - lost(before), 1)
            self.assertEqual(error(after), error(before))
            self.assertEqual(p.stop(), 0)

    def test_server_notice_goes_through_the_log(self):
        """A WARNING raised by the server (here by a trigger) reaches preon's log in its format, instead of
        libpq's raw "WARNING:  ..." line on stderr."""
        url = private_db("preon_edges_notice")
        db_psql("preon_edges_notice", "CREATE FUNCTION warn() RETURNS trigger LANGUAGE plpgsql AS "
                                      "$$ BEGIN RAISE WARNING 'preon-test-warning %', NEW.name; RETURN NEW; END $$; "
                                      "CREATE TRIGGER warn BEFORE INSERT ON fruits FOR EACH ROW EXECUTE FUNCTION warn()")
        with Preon(db_url=url, server_threads=1).start() as p:
            status, _, body = p.request("POST", "/fruits", body=json.dumps({"name": "Lime"}),
                                        headers={"Content-Type": "application/json"})
            self.assertEqual(status, 201, body)
            wait_for(lambda: "preon-test-warning Lime" in p.output(), 5 * SLOW, "the warning in the log")
            lines = [line for line in p.output().splitlines() if "preon-test-warning" in line]
            self.assertEqual(len(lines), 1, lines)
            self.assertFalse(lines[0].startswith("WARNING:"), lines)
            self.assertIn("server WARNING: preon-test-warning Lime", lines[0])
            self.assertEqual(p.stop(), 0)

    def test_updates_keep_the_request_deadline(self):
        """/updates reads, then writes in a second step: that step keeps the request's deadline
        (server.request_timeout_ms from the start), it got a fresh one before (up to twice the timeout)."""
        timeout_ms = 1500 * F
        with Preon(server_threads=1, server_request_timeout_ms=timeout_ms,
                   database_query_timeout_ms=20000 * SLOW).start() as p:
            # X blocks everything on world for 0.9 of the timeout; Y, queued behind X, then takes SHARE (reads pass,
            # the update waits) for as long again: the read ends at 0.9, the write would end at 1.8 timeouts.
            step = 0.9 * timeout_ms / 1000
            x = subprocess.Popen([PG_SH, "psql", os.environ["PREON_TEST_PGDIR"], "-c",
                                  "BEGIN; LOCK TABLE world IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(%.2f); COMMIT;" % step],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_for(lambda: psql("SELECT count(*) FROM pg_locks WHERE relation = 'world'::regclass AND "
                                  "mode = 'AccessExclusiveLock' AND granted") == "1", 10, "X's lock")
            y = subprocess.Popen([PG_SH, "psql", os.environ["PREON_TEST_PGDIR"], "-c",
                                  "BEGIN; LOCK TABLE world IN SHARE MODE; SELECT pg_sleep(%.2f); COMMIT;" % step],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_for(lambda: psql("SELECT count(*) FROM pg_locks WHERE relation = 'world'::regclass AND "
                                  "mode = 'ShareLock' AND NOT granted") == "1", 10, "Y waiting")
            start = time.monotonic()
            status, _, body = p.request("GET", "/updates?queries=3", timeout=30 * SLOW)
            elapsed = time.monotonic() - start
            x.wait(timeout=30 * SLOW)
            y.wait(timeout=30 * SLOW)
            self.assertEqual(status, 504, body)
            # answered at the request's deadline, not at a second step's own (1.9 timeouts after the start)
            self.assertLess(elapsed, 1.5 * timeout_ms / 1000, elapsed)
            self.assertEqual(p.stop(), 0)


if __name__ == "__main__":
    main()
