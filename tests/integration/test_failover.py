# SPDX-License-Identifier: MIT
"""Failover: a primary and a synchronous streaming standby on this machine (pg_basebackup -R), and database.url
naming both with target_session_attrs=read-write. Under reads and writes, the primary is stopped (-m immediate)
and the standby promoted: preon must find the new primary by itself, answer every request meanwhile with
200/201 or 502/503/504 (no hang, no other status), and every write it answered 201 must be on the new primary
(synchronous replication: an acknowledged commit is on the standby). The time from promotion to the moment
after which every answer is 2xx again is recorded (goal: 2 s); the test bounds it only as a hang guard.

Long form (PREON_SCALE=long): three failovers back and forth, the old primary rebuilt as the new one's standby
after each."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import http.client

from harness import PG_SH, SLOW, Clients, Preon, free_port, main, measure, pg, psql, record, require_env, scaled

PGBIN = subprocess.run(["sh", "-c", "ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1"], capture_output=True,
                       text=True).stdout.strip()
# What a user should set for fast failover (docs/operations.md, "Failover"): retry often and briefly, give up on a
# silent address soon, and notice a primary that stopped answering without closing its connections.
FAILOVER_SETTINGS = {"database_reconnect_min_ms": 50, "database_reconnect_max_ms": 250,
                     "database_connect_timeout_ms": 1000, "database_query_timeout_ms": 2000,
                     "server_request_timeout_ms": 3000}
RECOVER_BOUND_S = 30  # a hang guard, not a speed claim: the measured figure is recorded
JSON = {"Content-Type": "application/json"}


def as_pg(*argv):
    """Runs a PostgreSQL tool as the postgres user (PostgreSQL refuses root), from / (our folders may be closed)."""
    cmd = list(argv) if os.getuid() != 0 else ["runuser", "-u", "postgres", "--", *argv]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, cwd="/").stdout


TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "0A": "LISTEN"}


def tcp_sockets(pid):
    """{state: count} of the sockets process `pid` holds (from /proc): CLOSE_WAIT, or unconnected, is a socket
    the other side (or libpq) is done with, still watched."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    out = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in list(f)[1:]:
                cols = line.split()
                if cols[9] in inodes:
                    name = TCP_STATES.get(cols[3], cols[3])
                    out[name] = out.get(name, 0) + 1
                    inodes.discard(cols[9])
    if inodes:  # a socket whose connect failed (refused) is in no table: closed, and always "readable"
        out["unconnected"] = len(inodes)
    return out


class Node:
    """One cluster folder in scripts/pg.sh's layout (data/, sock/, port), on a port of its own."""

    def __init__(self, folder, port):
        self.dir, self.port = folder, port

    def sql(self, text):
        return psql(text, self.dir)

    def make_standby_of(self, primary):
        """Wipes this node and makes it a streaming standby of `primary` (pg_basebackup -R), then starts it."""
        pg("stop", self.dir, "immediate")
        shutil.rmtree(os.path.join(self.dir, "data"), ignore_errors=True)
        os.makedirs(os.path.join(self.dir, "sock"), exist_ok=True)  # data/ is pg_basebackup's to create (mode 0700)
        if os.getuid() == 0:
            subprocess.run(["chown", "-R", "postgres:postgres", self.dir], check=True)
        as_pg(os.path.join(PGBIN, "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
              "-D", os.path.join(self.dir, "data"), "-R", "-X", "stream", "-c", "fast")
        # the copied postgresql.conf names the primary's port and socket folder: later lines win
        with open(os.path.join(self.dir, "data", "postgresql.conf"), "a") as f:
            f.write("port = %d\nunix_socket_directories = '%s/sock'\n" % (self.port, self.dir))
        with open(os.path.join(self.dir, "port"), "w") as f:
            f.write("%d\n" % self.port)
        pg("start", self.dir)
        # Commits on the primary wait for this standby from now on. Set after the copy, so that this node, once
        # promoted, does not wait for a standby it does not have.
        primary.sql("ALTER SYSTEM SET synchronous_standby_names = '*'")  # not in a transaction: a call of its own
        primary.sql("SELECT pg_reload_conf()")
        deadline = time.monotonic() + 30 * SLOW
        while primary.sql("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'") != "1":
            if time.monotonic() > deadline:
                raise AssertionError("the standby on port %d never became synchronous" % self.port)
            time.sleep(0.05)

    def promote(self):
        as_pg(os.path.join(PGBIN, "pg_ctl"), "-D", os.path.join(self.dir, "data"), "-w", "-t", "60", "promote")
        # a primary now: no standby yet, so commits must not wait for one
        self.sql("ALTER SYSTEM RESET synchronous_standby_names")
        self.sql("SELECT pg_reload_conf()")


class Load(Clients):
    """Readers (GET /fruits, /fruits/1) and writers (POST /fruits, paced) on keep-alive connections until stopped.
    Every request's (time sent, time answered, kind, status or error, name, id) is logged."""

    def __init__(self, port, readers=4, writers=2):
        self.port, self.log, self.readers = port, [], readers
        super().__init__(readers + writers)

    def run(self, i):
        if i < self.readers:
            self.reader(i)
        else:
            self.writer(i - self.readers)

    def one(self, conn, method, path, body=None):
        t = time.monotonic()
        try:
            conn.request(method, path, body=body, headers=JSON if body else {})
            r = conn.getresponse()
            data = r.read()
            return t, r.status, data
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            return t, "error " + repr(e), b""

    def reader(self, n):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10 * SLOW)
        i = 0
        while not self.stop.is_set():
            t, status, _ = self.one(conn, "GET", "/fruits" if (n + i) % 4 == 0 else "/fruits/1")
            with self.lock:
                self.log.append((t, time.monotonic(), "read", status, None, None))
            i += 1
        conn.close()

    def writer(self, n):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10 * SLOW)
        i = 0
        while not self.stop.is_set():
            name = "failover-%d-%d-%d" % (os.getpid(), n, i)
            t, status, data = self.one(conn, "POST", "/fruits", json.dumps({"name": name}).encode())
            fid = json.loads(data)["id"] if status == 201 else None
            with self.lock:
                self.log.append((t, time.monotonic(), "write", status, name, fid))
            i += 1
            time.sleep(0.01)
        conn.close()


class FailoverTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_env()
        cls.nodes = []
        for name in ("a", "b"):
            d = tempfile.mkdtemp(prefix="preon-failover-%s-" % name)
            os.chmod(d, 0o755)
            cls.nodes.append(Node(d, free_port()))
        a, b = cls.nodes
        try:
            subprocess.run([PG_SH, "init", a.dir, str(a.port)], check=True,
                           env=dict(os.environ, PREON_PG_EXTRA_CONF="fsync = off"))
            b.make_standby_of(a)
        except BaseException:
            cls.tearDownClass()  # a failed setUpClass never reaches it: no server is left running
            raise

    @classmethod
    def tearDownClass(cls):
        for n in cls.nodes:
            pg("stop", n.dir, "immediate")
            shutil.rmtree(n.dir, ignore_errors=True)

    def url(self):
        a, b = self.nodes
        return "host=127.0.0.1,127.0.0.1 port=%d,%d dbname=preon user=postgres target_session_attrs=read-write" % (
            a.port, b.port)

    def test_failover_under_load(self):
        rounds = scaled(1, 3, 1)
        with Preon(db_url=self.url(), **FAILOVER_SETTINGS).start() as p:
            primary, standby = self.nodes
            results, start = [], time.monotonic()
            for r in range(rounds):
                if r:  # the old primary comes back as the new one's standby
                    standby.make_standby_of(primary)
                    self.wait_all_2xx(p)
                results.append(self.one_failover(p, primary, standby))
                primary, standby = standby, primary
            figures = {k: [x[k] for x in results] for k in ("recovery_after_promote_s", "after_promoted_s", "down_s",
                                                               "promote_s", "idle_cpu", "sockets")}
            record("failover", rounds=rounds, clients="4 readers + 2 writers", **figures,
                   statuses=self.merge([x["statuses"] for x in results]), false_201=[len(x["lost"]) for x in results],
                   writes_201=sum(x["writes_201"] for x in results), writes_failed=sum(x["writes_failed"] for x in results),
                   seconds=round(time.monotonic() - start, 1))
            self.assertIsNone(p.proc.poll(), "preon died")
            brief = [{k: v for k, v in x.items() if k != "log_tail"} for x in results]
            for x in results:
                self.assertEqual(x["lost"], [], "answered 201 but not on the new primary:\n" + x["log_tail"])
                self.assertLess(x["idle_cpu"], 0.25, "preon spins while idle after a failover (CPU s/s): %s" % brief)
                # one socket per database connection, each connected: none left over from an address tried before
                left = {k: v for k, v in x["sockets"].items() if k not in ("LISTEN", "ESTABLISHED")}
                self.assertEqual(left, {}, brief)
            self.assertEqual(p.stop(timeout=60 * SLOW), 0)

    @staticmethod
    def merge(dicts):
        out = {}
        for d in dicts:
            for k, v in d.items():
                out[k] = out.get(k, 0) + v
        return out

    def wait_all_2xx(self, p):
        deadline, streak = time.monotonic() + RECOVER_BOUND_S * SLOW, 0
        while streak < 20:
            self.assertLess(time.monotonic(), deadline, "not serving before the failover:\n" + p.output()[-3000:])
            streak = streak + 1 if p.request("GET", "/fruits/1")[0] == 200 else 0

    def one_failover(self, p, primary, standby):
        with Load(p.port) as load:
            time.sleep(1.5 * SLOW)
            t_kill = time.monotonic()
            pg("stop", primary.dir, "immediate")
            time.sleep(0.2)  # the primary is gone before the standby takes over, as an orchestrator would see it
            t_promote = time.monotonic()
            standby.promote()
            t_promoted = time.monotonic()
            # load goes on until answers have been 2xx for 3 s, or the hang guard's bound has passed
            while time.monotonic() < t_promote + RECOVER_BOUND_S * SLOW:
                time.sleep(0.25)
                with load.lock:
                    bad = [t for t, _, _, s, _, _ in load.log if s not in (200, 201)]
                if time.monotonic() - max(bad + [t_promote]) > 3 * SLOW:
                    break
        log = load.log
        self.assertFalse(any(t.is_alive() for t in load.threads), "a client never got its answer")
        statuses = {}
        for _, _, kind, s, _, _ in log:
            statuses["%s %s" % (kind, s)] = statuses.get("%s %s" % (kind, s), 0) + 1
        allowed = {"read": (200, 502, 503, 504), "write": (201, 502, 503, 504)}
        unexpected = {k: v for k, v in statuses.items() if not any(k == "%s %s" % (kind, s)
                                                                    for kind in allowed for s in allowed[kind])}
        self.assertEqual(unexpected, {}, (statuses, p.output()[-3000:]))
        bad = [t for t, _, _, s, _, _ in log if s not in (200, 201)]
        self.assertNotEqual(bad, [], "the outage was not seen: did the primary stop?")
        self.assertGreater(len([t for t, _, _, s, _, _ in log if t > max(bad)]), 0,
                           "never back to 2xx after the promotion:\n" + p.output()[-3000:])
        recovery = max(0.0, max(bad) - t_promote)
        self.assertLess(recovery, RECOVER_BOUND_S * SLOW, "still failing %.1f s after the promotion" % recovery)
        # the new primary took writes: the failover was reached, not only survived
        self.assertGreater(sum(1 for t, _, kind, s, _, _ in log if kind == "write" and s == 201 and t > t_promoted), 0)
        # Every 201 must be on the new primary (the failed writes are 5xx, checked above): a false 2xx is a write
        # answered before its commit was acknowledged. Asserted, like the two checks below, once the figures are
        # recorded.
        stored = {(n, int(i)) for i, n in (l.split("|") for l in standby.sql(
            "SELECT id, name FROM fruits WHERE name LIKE 'failover-%'").split("\n") if l)}
        lost = [(name, fid, "sent %+.3f s, answered %+.3f s from the stop" % (t - t_kill, done - t_kill))
                for t, done, kind, s, name, fid in log if kind == "write" and s == 201 and (name, fid) not in stored]
        # Idle again, preon must not spin nor hold sockets of addresses tried before: watching a dead socket under a
        # number libpq reused for the next host (before the socket was known by its identity) showed as 0.3-1.5 CPU s/s here, for good.
        idle_cpu = measure.cpu_share(p.proc.pid, 2.0)
        writes = [s for _, _, kind, s, _, _ in log if kind == "write"]
        return {"lost": lost, "log_tail": p.output()[-3000:], "idle_cpu": idle_cpu, "sockets": tcp_sockets(p.proc.pid),
                "recovery_after_promote_s": round(recovery, 2), "after_promoted_s": round(max(0.0, max(bad) - t_promoted), 2),
                "down_s": round(max(bad) - t_kill, 2), "promote_s": round(t_promoted - t_promote, 2), "statuses": statuses,
                "writes_201": writes.count(201), "writes_failed": len(writes) - writes.count(201)}

if __name__ == "__main__":
    main()
