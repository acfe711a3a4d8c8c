# SPDX-License-Identifier: MIT
"""The named faults a history is recorded under, on loopback only. Each takes a Target (the PostgreSQL folder of
scripts/pg.sh, the preon replicas, the TCP proxy between them) and returns once the fault is healed."""
import os
import signal
import socket
import subprocess
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PG_SH = os.path.join(REPO, "scripts", "pg.sh")


def pg(cmd, pgdir, *args):
    return subprocess.run([PG_SH, cmd, pgdir, *args], check=True, capture_output=True, text=True).stdout


def psql(pgdir, sql, within=30):
    """Runs SQL on database preon (retrying while PostgreSQL is not yet up again)."""
    deadline = time.monotonic() + within
    while True:
        p = subprocess.run([PG_SH, "psql", pgdir, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql], capture_output=True,
                           text=True)
        if p.returncode == 0:
            return p.stdout.strip()
        if time.monotonic() > deadline:
            raise AssertionError("psql failed: %s" % p.stderr)
        time.sleep(0.2)


def backends(pgdir):
    """The PIDs of the server processes serving database preon, other than ours."""
    out = psql(pgdir, "SELECT pid FROM pg_stat_activity WHERE datname = 'preon' AND backend_type = 'client backend' "
                      "AND pid <> pg_backend_pid()")
    return [int(x) for x in out.split()]


def postmaster(pgdir):
    with open(os.path.join(pgdir, "data", "postmaster.pid")) as f:
        return int(f.readline())


def start_pg(pgdir, within=60):
    """Starts PostgreSQL, retrying while the old one's processes are still going away."""
    deadline = time.monotonic() + within
    while True:
        try:
            forget_zombie(pgdir)
            pg("start", pgdir)
            return
        except subprocess.CalledProcessError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def forget_zombie(pgdir):
    """A postmaster killed with SIGKILL is its orphan's reaper's to collect; where PID 1 does not reap (some
    sandboxes), it stays a zombie, which pg_ctl takes for a running server: its lock file then goes."""
    try:
        pid = postmaster(pgdir)
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError):
        return
    if state == "Z":
        os.unlink(os.path.join(pgdir, "data", "postmaster.pid"))


class Proxy:
    """A TCP proxy of the test's own between preon and PostgreSQL: pass, cut (every connection reset, new ones
    closed at once) or delay (each chunk held `delay` s)."""

    def __init__(self, upstream_port, port=0):
        self.upstream = ("127.0.0.1", upstream_port)
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.mode, self.delay = "pass", 0.0
        self.lock, self.conns, self.closed = threading.Lock(), set(), False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            if self.mode == "cut":
                reset(c)
                continue
            try:
                u = socket.create_connection(self.upstream, timeout=5)
                u.settimeout(None)
            except OSError:
                reset(c)
                continue
            with self.lock:
                self.conns.update((c, u))
            threading.Thread(target=self.pump, args=(c, u), daemon=True).start()
            threading.Thread(target=self.pump, args=(u, c), daemon=True).start()

    def pump(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if self.delay:
                    time.sleep(self.delay)
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            reset(s)
            with self.lock:
                self.conns.discard(s)

    def cut(self):
        self.mode = "cut"
        with self.lock:
            conns, self.conns = list(self.conns), set()
        for s in conns:
            reset(s)

    def heal(self):
        self.mode, self.delay = "pass", 0.0

    def close(self):
        self.closed = True
        self.cut()
        self.sock.close()


def reset(s):
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()
    except OSError:
        pass


# The nemeses: name -> function(target). `target` has .pgdir, .preons (a list of objects with kill(sig),
# restart(), and proc), .proxy (or None).

def postgres_kill9(t):
    os.kill(postmaster(t.pgdir), signal.SIGKILL)
    time.sleep(1.0)
    start_pg(t.pgdir)


def postgres_fast_restart(t):
    pg("stop", t.pgdir, "fast")
    time.sleep(0.5)
    start_pg(t.pgdir)


def backend_terminate(t):
    psql(t.pgdir, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = 'preon' "
                  "AND backend_type = 'client backend' AND pid <> pg_backend_pid()")


def backend_kill9(t):
    """One backend killed with SIGKILL: the postmaster then resets every connection (crash recovery)."""
    pids = backends(t.pgdir)
    if pids:
        os.kill(pids[0], signal.SIGKILL)
    time.sleep(2.0)


def backends_stop(t, seconds=3.0):
    pids = backends(t.pgdir)
    for p in pids:
        os.kill(p, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        for p in pids:
            os.kill(p, signal.SIGCONT)


def preon_sighup(t):
    for p in t.preons:
        p.kill(signal.SIGHUP)
    time.sleep(0.5)


def preon_sigterm(t):
    t.preons[0].restart(signal.SIGTERM)


def preon_sigkill(t):
    t.preons[0].restart(signal.SIGKILL)


def network_cut(t, seconds=3.0):
    t.proxy.cut()
    time.sleep(seconds)
    t.proxy.heal()


def network_delay(t, seconds=4.0, delay=1.2):
    """Each chunk either way held 1.2 s: a round trip past the query timeout (2 s here), so 504s, writes among them
    that commit after their answer."""
    t.proxy.delay = delay
    time.sleep(seconds)
    t.proxy.heal()


def haproxy_replica_restart(t):
    """One of two replicas behind HAProxy drained (SIGTERM, server.drain_delay_ms) and started again."""
    t.preons[0].restart(signal.SIGTERM)


def pgbouncer_reconnect(t):
    t.pgbouncer_admin("RECONNECT preon")
    time.sleep(1.0)


def pgbouncer_kill(t, seconds=2.0):
    """KILL: every client and server connection of the database dropped, new ones wait until RESUME."""
    t.pgbouncer_admin("KILL preon")
    time.sleep(seconds)
    t.pgbouncer_admin("RESUME preon")


NEMESES = {
    "postgres-kill-9": postgres_kill9,
    "postgres-fast-restart": postgres_fast_restart,
    "backend-terminate": backend_terminate,
    "backend-kill-9": backend_kill9,
    "backends-sigstop": backends_stop,
    "preon-sighup": preon_sighup,
    "preon-sigterm": preon_sigterm,
    "preon-sigkill": preon_sigkill,
    "network-cut": network_cut,
    "network-delay": network_delay,
    "haproxy-replica-restart": haproxy_replica_restart,
    "pgbouncer-reconnect": pgbouncer_reconnect,
    "pgbouncer-kill": pgbouncer_kill,
}
# what each needs between the clients and PostgreSQL besides one preon: the TCP proxy, HAProxy and two replicas, PgBouncer
NEEDS = {"network-cut": "proxy", "network-delay": "proxy", "haproxy-replica-restart": "haproxy",
         "pgbouncer-reconnect": "pgbouncer", "pgbouncer-kill": "pgbouncer"}
QUICK = ["postgres-kill-9", "backend-terminate", "preon-sighup", "preon-sigterm"]


# --- the Patroni cluster of deploy/stack (long form only) ---------------------------------------------------------

def rest_status(port, path, method="GET", body=None):
    import http.client
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=3)
    try:
        c.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
        r = c.getresponse()
        r.read()
        return r.status
    except OSError:
        return None
    finally:
        c.close()


def wait(what, cond, bound=120):
    deadline = time.monotonic() + bound
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.25)


def patroni_leader_kill(t):
    """The Patroni leader's node killed (SIGKILL to Patroni and its postmaster), a new leader awaited, the old node
    started again (it rejoins as a replica, rewound if need be)."""
    s = t.stack
    node = s.leader()
    with open(os.path.join(s.dir, "pids", "patroni%d" % node)) as f:
        patroni_pid = int(f.read().split()[0])
    with open(os.path.join(s.dir, "pg%d" % node, "data", "postmaster.pid")) as f:
        pm = int(f.readline())
    os.kill(patroni_pid, signal.SIGKILL)
    os.kill(pm, signal.SIGKILL)
    wait("a new leader", lambda: s.leader() not in (None, node))
    forget_zombie(os.path.join(s.dir, "pg%d" % node))  # else Patroni takes the zombie for a running PostgreSQL
    s.run("patroni-start", str(node))
    try:
        wait("the old leader back as a replica", s.healthy, 120)
    except AssertionError:
        if s.sync:
            raise
        # asynchronous: the old leader may hold WAL the new one never had, and need more than a rewind; the
        # history goes on with two nodes
        s.notes.append("the killed leader (node %d) did not rejoin within 120 s" % node)


NEMESES["patroni-leader-kill"] = patroni_leader_kill
