# SPDX-License-Identifier: MIT
"""Histories under faults, checked for linearizability (tests/histories/: the recorder, the nemeses, the Porcupine
checker in Go).

8 clients read, rename, create and delete fruits on a small key space of a private PostgreSQL while named faults
hit PostgreSQL and preon: 4 send each operation on a connection of its own, 4 pipeline 2-6 operations at a time on a
keep-alive connection (reads and writes in flight together, now and then a close with answers pending). Every
operation's invocation, completion and answer is recorded, and the checker must find the history linearizable
against a map id -> name | absent, with a 503 checked as "nothing was done" and a 502, 504, timeout, reset or
abandoned answer as "unknown". The quick form (the test command): PostgreSQL kill -9 + restart, a backend
terminated, SIGHUP, SIGTERM + restart, in one history (~40 s), against PREON_BIN as it is configured by the
environment (PREON_HISTORIES_FORM names that form in the records: "shipped", or the ctest variant's, such as
stock: the build on Debian's h2o and libpq as shipped). The long form (PREON_SCALE=long, tests/integration/long.py --only histories): every nemesis, one
history each, several rounds. The history, the report and, on a violation, Porcupine's visualization stay in
PREON_HISTORIES_DIR (a temporary folder if unset).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from harness import LONG, REPO, SLOW, Preon, end, free_port, main, pg, pg_url, record, require_env, supervise, templates

sys.path.insert(0, os.path.join(REPO, "tests", "histories"))
import nemesis  # noqa: E402
import recorder  # noqa: E402

SETTINGS = {"database_query_timeout_ms": 2000 * SLOW, "database_reconnect_max_ms": 500}
CLIENTS, PIPELINED = 8, 4  # of the clients, how many pipeline on keep-alive connections
FORM = os.environ.get("PREON_HISTORIES_FORM", "shipped")


def checker():
    """Builds the checker (Go) into the output folder; returns its path."""
    out = os.path.join(outdir(), "checker")
    subprocess.run([os.path.join(REPO, "tests", "histories", "build.sh"), out], check=True)
    return out


def outdir():
    d = os.environ.get("PREON_HISTORIES_DIR") or os.path.join(tempfile.gettempdir(), "preon-histories-%d" % os.getpid())
    os.makedirs(d, exist_ok=True)
    return d


class Replica:
    """One preon on a fixed port, restarted in place by a nemesis."""

    def __init__(self, db_url, **settings):
        self.db_url, self.port, self.p, self.settings = db_url, free_port(), None, dict(SETTINGS, **settings)

    def start(self):
        self.p = Preon(db_url=self.db_url, server_port=self.port, **self.settings)
        self.p.port = self.port
        self.p.start()

    def kill(self, sig):
        self.p.kill(sig)

    def restart(self, sig):
        rc = self.p.stop(sig, timeout=30 * SLOW)
        if sig == signal.SIGTERM and rc != 0:
            raise AssertionError("preon exited with %s after SIGTERM:\n%s" % (rc, self.p.output()))
        self.p.cleanup()
        self.start()

    def stop(self):
        if self.p is not None:
            try:
                rc = self.p.stop()
                if rc != 0:
                    raise AssertionError("preon exited with %s after SIGTERM:\n%s" % (rc, self.p.output()))
            finally:
                self.p.cleanup()


class Target:
    """What the clients talk to, and what lies between it and PostgreSQL: one preon, or preon behind the test's TCP
    proxy to PostgreSQL ("proxy"), two replicas behind HAProxy ("haproxy"), preon through PgBouncer in transaction
    mode ("pgbouncer")."""

    def __init__(self, pgdir, kind=None):
        self.pgdir, self.kind, self.proxy, self.haproxy, self.bouncer = pgdir, kind, None, None, None
        with open(os.path.join(pgdir, "port")) as f:
            pg_port = int(f.read())
        url, settings, n = pg_url(pgdir), {}, 1
        if kind == "proxy":
            self.proxy = nemesis.Proxy(pg_port)
            url = url.replace(":%d/" % pg_port, ":%d/" % self.proxy.port)
        elif kind == "pgbouncer":
            from pgbouncer import PgBouncer
            self.bouncer = PgBouncer(pg_port, "transaction", 4, free_port()).start()
            url, settings = self.bouncer.url(), {"database_pooler": "transaction", "database_client_check_ms": 0}
        elif kind == "haproxy":
            n, settings = 2, {"server_drain_delay_ms": 1500}
        self.preons = [Replica(url, **settings) for _ in range(n)]
        for r in self.preons:
            r.start()
        self.port = self.preons[0].port
        if kind == "haproxy":
            self.start_haproxy()

    def start_haproxy(self):
        self.hadir = tempfile.mkdtemp(prefix="preon-histories-haproxy-")
        self.port = free_port()
        cfg = os.path.join(self.hadir, "haproxy.cfg")
        lines = templates.haproxy_head(os.path.join(self.hadir, "stats.sock"), "http", "30s", "30s")
        lines += templates.haproxy_frontend("preon", self.port, "replicas")
        lines += templates.haproxy_backend("replicas", "/health/ready", [("r%d" % i, r.port) for i, r in
                                                                         enumerate(self.preons)], 3, "500ms", 1,
                                           timeout_server="30s")
        with open(cfg, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.haproxy = supervise.spawn(["haproxy", "-db", "-f", cfg], os.path.join(self.hadir, "haproxy.log"))
        supervise.wait_ready(lambda: supervise.tcp_open(self.port), 10, "haproxy", self.haproxy)
        time.sleep(1.0)  # its first checks

    def pgbouncer_admin(self, command):
        subprocess.run([os.path.join(templates.pg_bin(), "psql"), "-X", "-h", "127.0.0.1", "-p", str(self.bouncer.port),
                        "-U", "postgres", "-d", "pgbouncer", "-c", command], check=True, capture_output=True, cwd="/")

    def close(self):
        try:
            for r in self.preons:
                r.stop()
        finally:
            if self.haproxy is not None:
                end(self.haproxy)
                shutil.rmtree(self.hadir, ignore_errors=True)
            if self.proxy is not None:
                self.proxy.close()
            if self.bouncer is not None:
                self.bouncer.stop()


class CheckerBitesTest(unittest.TestCase):
    """The checker rejects the planted violations of tests/histories/planted/ and accepts the clean history."""

    def test_planted(self):
        exe, planted = checker(), os.path.join(REPO, "tests", "histories", "planted")
        for name, want in (("clean", 0), ("visible-503", 1), ("visible-503-post", 1), ("stale-read", 1),
                           ("pipelined-overlap", 0), ("pipelined-stale", 1)):
            report = os.path.join(outdir(), "planted-%s.txt" % name)
            rc, text = recorder.check(exe, os.path.join(planted, name + ".jsonl"), report)
            self.assertEqual(rc, want, text)
            if want:
                self.assertIn("NOT linearizable", text)
                self.assertTrue(os.path.getsize(report[:-4] + ".html") > 1000, "no visualization beside " + report)
            if name.startswith("visible-503"):
                self.assertIn("answered 503 (nothing done), yet its name", text)
            if name == "pipelined-stale":  # a read in a later write: after the acknowledged PUT, not beside it
                self.assertIn("cannot follow: #4 get id 1 -> \"a\"  [client 4, pipelined #0", text)


class HistoriesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_env()
        cls.exe = checker()
        cls.pgdir = tempfile.mkdtemp(prefix="preon-histories-pg-")
        os.chmod(cls.pgdir, 0o755)
        subprocess.run([os.path.join(REPO, "scripts", "pg.sh"), "init", cls.pgdir, str(free_port())], check=True,
                       env=dict(os.environ, PREON_PG_EXTRA_CONF="fsync = off"))

    @classmethod
    def tearDownClass(cls):
        pg("stop", cls.pgdir, "immediate")
        shutil.rmtree(cls.pgdir, ignore_errors=True)

    def history(self, name, nemeses, rounds=1, gap=2.0):
        """Records one history under `nemeses` (each `rounds` times, `gap` s of load between), checks it."""
        t = Target(self.pgdir, nemesis.NEEDS.get(nemeses[0]))
        rec = recorder.Recorder(t.port, clients=CLIENTS, keys=8, timeout=10.0 * SLOW, pipelined=PIPELINED)
        started = time.monotonic()
        try:
            rec.start()
            for _ in range(rounds):
                for n in nemeses:
                    time.sleep(gap)
                    start = rec.now()
                    nemesis.NEMESES[n](t)
                    rec.nemesis(n, start, rec.now())
            time.sleep(gap)
            rec.finish(within=60 * SLOW)
        finally:
            rec.stop.set()
            try:
                t.close()
            finally:
                nemesis.start_pg(self.pgdir)  # whatever a failure left it in
        path = os.path.join(outdir(), "%s-%s.jsonl" % (FORM, name))
        recs = rec.write(path)
        rc, text = recorder.check(self.exe, path, path[:-6] + ".txt")
        c = recorder.counts(recs)
        record("histories", nemesis=name, form=FORM, rounds=rounds, seconds=round(time.monotonic() - started, 1),
               verdict=text.splitlines()[1] if rc in (0, 1) and len(text.splitlines()) > 1 else "checker failed", **c)
        sys.stderr.write(text)
        sys.stderr.write("form %s: %s\n" % (FORM, json.dumps(c)))
        self.assertEqual(rc, 0, "%s\n(history in %s)" % (text, path))
        self.assertGreater(c["definite"], 100, text)
        # the pipelined clients were at work: writes of several operations, some closed with answers pending
        self.assertGreater(c["pipelined"], 100, c)
        self.assertGreater(c["abandoned"], 0, c)
        return c

    if not LONG:
        def test_quick(self):
            """The test command's form: one history under the four nemeses of one PostgreSQL and one preon."""
            self.history("quick", nemesis.QUICK)
    else:
        def test_each(self):
            """The long form: each nemesis (PREON_HISTORIES_NEMESES, comma-separated; default all) in a history of
            its own, PREON_HISTORIES_ROUNDS rounds (default 10, about a minute)."""
            # the Patroni leader's kill needs deploy/stack's cluster: PatroniHistoriesTest's
            names = os.environ.get("PREON_HISTORIES_NEMESES") or ",".join(n for n in nemesis.NEMESES
                                                                           if n != "patroni-leader-kill")
            for n in names.split(","):
                with self.subTest(nemesis=n):
                    self.history(n, [n], rounds=int(os.environ.get("PREON_HISTORIES_ROUNDS", "10")), gap=3.0)


class Stack:
    """deploy/stack (etcd, Patroni x 3, HAProxy, PgBouncer, one replica of its own, unused here): this test's preon
    connects to HAProxy's read-write port with no read_url, so that every read is the primary's."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="preon-histories-stack-")
        self.base = int(os.environ.get("PREON_STACK_BASE", "27500"))
        self.env = dict(os.environ, PREON_STACK_DIR=self.dir, PREON_STACK_BASE=str(self.base), PREON_STACK_FSYNC="off")
        self.run("up", "1")
        self.sync, self.notes = True, []
        self.url = "postgresql://postgres@127.0.0.1:%d/preon" % (self.base + 30)

    def run(self, *args):
        return subprocess.run([os.path.join(REPO, "deploy", "stack", "stack.sh"), *args], env=self.env, check=True,
                              capture_output=True, text=True, timeout=400).stdout

    def role(self, i):
        rest = self.base + 20 + i
        for r in ("primary", "sync", "replica"):
            if nemesis.rest_status(rest, "/" + r) == 200:
                return r
        return None

    def leader(self):
        return next((i for i in (1, 2, 3) if self.role(i) == "primary"), None)

    def healthy(self):
        roles = sorted(filter(None, (self.role(i) for i in (1, 2, 3))))
        return roles == (["primary", "replica", "sync"] if self.sync else ["primary", "replica", "replica"])

    def synchronous(self, on):
        self.sync = on
        rest = self.base + 20 + (self.leader() or 1)
        nemesis.rest_status(rest, "/config", "PATCH", json.dumps({"synchronous_mode": on}))
        nemesis.wait("synchronous_mode %s" % on, self.healthy, 60)

    def down(self):
        self.run("down")
        shutil.rmtree(self.dir, ignore_errors=True)


@unittest.skipUnless(LONG and shutil.which("patroni"), "the long form, with deploy/stack's engines")
class PatroniHistoriesTest(unittest.TestCase):
    """The Patroni leader killed under the history, with synchronous_mode on (an acknowledged write survives the
    failover: linearizable expected) and off (asynchronous replication may lose acknowledged writes: PostgreSQL's
    promise, not preon's; the checker is to show it)."""

    @classmethod
    def setUpClass(cls):
        require_env()
        cls.exe = checker()
        cls.stack = Stack()

    @classmethod
    def tearDownClass(cls):
        cls.stack.down()

    def run_mode(self, on):
        self.stack.synchronous(on)
        name = "patroni-leader-kill-sync-%s" % ("on" if on else "off")
        t = Target.__new__(Target)
        t.pgdir, t.kind, t.proxy, t.haproxy, t.bouncer, t.stack = None, "stack", None, None, None, self.stack
        t.preons = [Replica(self.stack.url)]
        t.preons[0].start()
        t.port = t.preons[0].port
        rec = recorder.Recorder(t.port, clients=8, keys=8, timeout=10.0)
        started = time.monotonic()
        try:
            rec.start()
            for _ in range(int(os.environ.get("PREON_HISTORIES_ROUNDS", "3")) if on else 1):
                time.sleep(3.0)
                start = rec.now()
                nemesis.patroni_leader_kill(t)
                rec.nemesis("patroni-leader-kill", start, rec.now())
            time.sleep(3.0)
            rec.finish(within=60)
        finally:
            rec.stop.set()
            shutil.copy(t.preons[0].p.log.name, os.path.join(outdir(), name + ".preon.log"))
            t.close()
        path = os.path.join(outdir(), name + ".jsonl")
        recs = rec.write(path)
        rc, text = recorder.check(self.exe, path, path[:-6] + ".txt")
        c = recorder.counts(recs)
        record("histories", nemesis=name, rounds=int(os.environ.get("PREON_HISTORIES_ROUNDS", "3")) if on else 1,
               seconds=round(time.monotonic() - started, 1),
               verdict=text.splitlines()[1] if rc in (0, 1) and len(text.splitlines()) > 1 else "checker failed", **c)
        sys.stderr.write(text)
        return rc, text

    def test_a_sync_on(self):
        rc, text = self.run_mode(True)
        # recorded either way: even with synchronous_mode a commit is visible on the primary before the standby has
        # confirmed it, so a reader can see a write the failover then loses (docs/reliability.md); a checker error
        # (rc 2) fails
        self.assertIn(rc, (0, 1), text)

    def test_b_sync_off(self):
        rc, text = self.run_mode(False)
        sys.stderr.write("".join(n + "\n" for n in self.stack.notes))
        self.assertIn(rc, (0, 1), text)  # a loss is PostgreSQL's asynchronous replication, recorded, not preon's


if __name__ == "__main__":
    main()
