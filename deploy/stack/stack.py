#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""preon past one process, on loopback, from Debian 12 packages: etcd, a Patroni cluster of three PostgreSQL 15
nodes (one leader, two streaming replicas, synchronous_mode), HAProxy in front of PostgreSQL as Patroni's
documentation does it (read-write port checked against Patroni's REST /primary, read-only port against /replica),
PgBouncer (transaction mode) in front of HAProxy, and N preon replicas behind an HAProxy HTTP frontend that
checks /health/ready. Every process is started by this program, its PID kept in STATE/pids/, and stopped by it.
The engines' configuration files come from scripts/fixtures/templates.py, preon's settings as a file of its own
per replica (STATE/preonI.yaml, read with --config); the processes are started and stopped with
scripts/fixtures/supervise.py. deploy/stack/stack.sh runs this file."""
import argparse
import glob
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "scripts"))
from fixtures import supervise, templates  # noqa: E402

EPILOG = """Environment:
  PREON_STACK_DIR      the state folder (default /tmp/preon-stack)
  PREON_STACK_BASE     the first of the ports (default 27100, below the kernel's ephemeral ports; the stack uses
                       BASE .. BASE+60)
  PREON_BIN            the preon binary (default build/preon, built if missing)
  PREON_STACK_THREADS  event loops per preon replica (server.threads, default 1)
  PREON_STACK_DRAIN_MS server.drain_delay_ms of the replicas it starts (default 1500)
  PREON_STACK_FSYNC    PostgreSQL's fsync (default on)

As root, PostgreSQL, Patroni and PgBouncer run as the `postgres` user (both refuse root); etcd, HAProxy and preon
as the caller."""

MAX_PREON = 8
NODES = (1, 2, 3)
STATE = os.environ.get("PREON_STACK_DIR", "/tmp/preon-stack")
BASE = int(os.environ.get("PREON_STACK_BASE", "27100"))
ETCD, ETCD_PEER = BASE + 0, BASE + 1
RW, RO, STATS = BASE + 30, BASE + 31, BASE + 32
BOUNCER = BASE + 40
HTTP, HTTP_NORETRY = BASE + 50, BASE + 49


def pg_port(i):  # node 1..3
    return BASE + 10 + i


def rest_port(i):  # Patroni REST API of node 1..3
    return BASE + 20 + i


def preon_port(i):  # replica 1..8
    return BASE + 50 + i


def log(msg):
    sys.stderr.write("%s stack: %s\n" % (time.strftime("%H:%M:%S", time.gmtime()), msg))
    sys.stderr.flush()


class Failed(Exception):
    """Ends the command with its message and exit status 1."""


def path(*parts):
    return os.path.join(STATE, *parts)


# --- processes, each known by the PID and start time recorded when it was started ---------------------------------


def start(name, argv, user=None):
    """Starts argv in the background, output to STATE/log/NAME.log, "PID START-TIME" to STATE/pids/NAME; as `user`
    when we are root. Returns the Popen (it outlives this program)."""
    proc = supervise.spawn(argv, path("log", name + ".log"), user=user)
    with open(path("pids", name), "w") as f:
        f.write("%d %s\n" % (proc.pid, supervise.start_time(proc.pid)))
    return proc


def pid_of(name):
    """Its PID if the process we started as NAME is still running (same PID and start time), else None."""
    try:
        with open(path("pids", name)) as f:
            pid, st = f.read().split()
    except (OSError, ValueError):
        return None
    return int(pid) if str(supervise.start_time(int(pid))) == st else None


def stop(name, timeout):
    """SIGTERM, wait up to `timeout` s, then SIGKILL; by PID only."""
    pid = pid_of(name)
    if pid is not None and supervise.stop_pid(pid, lambda: pid_of(name) is not None, timeout):
        log("%s (pid %d) still running after %d s: SIGKILL" % (name, pid, timeout))
    if os.path.exists(path("pids", name)):
        os.unlink(path("pids", name))


def wait_for(timeout, what, ready, proc=None):
    try:
        supervise.wait_ready(ready, timeout, what, proc=proc, interval=0.2)
    except supervise.NotReady as e:
        raise Failed("%s (logs in %s)" % (e, path("log")))


def pg_isready(port, db=None):
    argv = [os.path.join(templates.pg_bin(), "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port)] + (["-d", db] if db else [])
    return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


# --- the pieces ---------------------------------------------------------------------------------------------------


def write_configs():
    for i in NODES:
        os.makedirs(path("pg%d" % i), exist_ok=True)
        with open(path("pg%d" % i, "patroni.yml"), "w") as f:
            f.write(templates.patroni_yaml("pg%d" % i, path("pg%d" % i), pg_port(i), rest_port(i), ETCD, templates.pg_bin(),
                                           os.environ.get("PREON_STACK_FSYNC", "on")))
    with open(path("haproxy.cfg"), "w") as f:
        f.write(templates.haproxy_stack(path("haproxy.sock"), RW, RO, STATS,
                                        [("pg%d" % i, pg_port(i), rest_port(i)) for i in NODES], HTTP, HTTP_NORETRY,
                                        [("preon%d" % i, preon_port(i)) for i in range(1, MAX_PREON + 1)]))
    templates.write_pgbouncer(path("pgbouncer"), BOUNCER, RW, "transaction", 20, 1000, failover=True)


def preon_bin():
    binary = os.environ.get("PREON_BIN") or os.path.join(REPO, "build", "preon")
    if not os.access(binary, os.X_OK):
        log("building " + binary)
        subprocess.run(["cmake", "-S", REPO, "-B", os.path.join(REPO, "build"), "-DCMAKE_BUILD_TYPE=Release"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", os.path.join(REPO, "build"), "-j2", "--target", "preon"], check=True,
                       stdout=subprocess.DEVNULL)
    return binary


def preon_settings(i):
    """Replica i's settings: one thread, the database through PgBouncer (transaction mode), reads through
    HAProxy's read-only port, the failover timers, server.drain_delay_ms (PREON_STACK_DRAIN_MS)."""
    return templates.preon_settings({
        "server": {"listen": "127.0.0.1", "port": preon_port(i), "threads": int(os.environ.get("PREON_STACK_THREADS", "1")),
                   "drain_delay_ms": int(os.environ.get("PREON_STACK_DRAIN_MS", "1500")), "request_timeout_ms": 3000},
        "database": {"url": "postgresql://postgres@127.0.0.1:%d/preon" % BOUNCER, "pooler": "transaction",
                     "read_url": "postgresql://postgres@127.0.0.1:%d/preon" % RO, "client_check_ms": 0,
                     "connections_per_thread": 2, "reconnect_max_ms": 250, "connect_timeout_ms": 1000,
                     "query_timeout_ms": 2000}})


def preon_start(i):
    if not 1 <= i <= MAX_PREON:
        raise Failed("replica %d: 1 .. %d" % (i, MAX_PREON))
    name = "preon%d" % i
    if pid_of(name) is not None:
        raise Failed(name + " is already running")
    settings = path(name + ".yaml")
    with open(settings, "w") as f:
        f.write(preon_settings(i))
    proc = start(name, [preon_bin(), "--config", settings])
    wait_for(30, name + " ready", lambda: supervise.http_ok("http://127.0.0.1:%d/health/ready" % preon_port(i)), proc)


def rest_ok(i, role):
    return supervise.http_ok("http://127.0.0.1:%d/%s" % (rest_port(i), role))


def patroni_start(i):
    start("patroni%d" % i, ["patroni", path("pg%d" % i, "patroni.yml")], user="postgres")


def load_schema():
    q = [os.path.join(templates.pg_bin(), "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(RW),
         "-U", "postgres"]
    have = subprocess.run(q + ["-d", "postgres", "-Atc", "SELECT 1 FROM pg_database WHERE datname = 'preon'"],
                          check=True, capture_output=True, text=True).stdout.strip()
    if have != "1":
        subprocess.run(q + ["-d", "postgres", "-c", "CREATE DATABASE preon"], check=True, stdout=subprocess.DEVNULL)
    for f in sorted(glob.glob(os.path.join(REPO, "sql", "*.sql"))):
        with open(f) as sql:
            subprocess.run(q + ["-d", "preon"], stdin=sql, check=True, stdout=subprocess.DEVNULL)


def need():
    missing = [c for c in ("etcd", "patroni", "haproxy", "pgbouncer") if not shutil.which(c)]
    if not os.access(os.path.join(templates.pg_bin(), "postgres"), os.X_OK):
        missing.append("postgresql")
    if missing:
        log("missing: %s; installing (scripts/deps.sh stack)" % " ".join(missing))
        subprocess.run([os.path.join(REPO, "scripts", "deps.sh"), "stack"], check=True)


def urls():
    patroni = " ".join("http://127.0.0.1:%d" % rest_port(i) for i in NODES)
    return "\n".join([
        "PREON_STACK_HTTP=http://127.0.0.1:%d" % HTTP,
        "PREON_STACK_HTTP_NORETRY=http://127.0.0.1:%d" % HTTP_NORETRY,
        "PREON_STACK_RW=postgresql://postgres@127.0.0.1:%d/preon" % RW,
        "PREON_STACK_RO=postgresql://postgres@127.0.0.1:%d/preon" % RO,
        "PREON_STACK_PGBOUNCER=postgresql://postgres@127.0.0.1:%d/preon" % BOUNCER,
        "PREON_STACK_HAPROXY_STATS=http://127.0.0.1:%d/" % STATS,
        "PREON_STACK_ETCD=http://127.0.0.1:%d" % ETCD,
        'PREON_STACK_PATRONI="%s"' % patroni,
        "PREON_STACK_DIR=%s" % STATE]) + "\n"


def up(n):
    t0 = time.monotonic()
    if not 1 <= n <= MAX_PREON:
        raise Failed("N: 1 .. %d" % MAX_PREON)
    need()
    if os.path.isdir(path("pids")) and os.listdir(path("pids")):
        raise Failed("%s holds a running stack: stack.sh down first" % STATE)
    os.makedirs(path("pids"), exist_ok=True)
    os.makedirs(path("log"), exist_ok=True)
    os.chmod(STATE, 0o755)
    write_configs()
    if os.getuid() == 0:
        subprocess.run(["chown", "-R", "postgres:postgres"] + [path(d) for d in ("pg1", "pg2", "pg3", "pgbouncer", "log")],
                       check=True)
    preon_bin()

    log("etcd on 127.0.0.1:%d" % ETCD)
    peer = "http://127.0.0.1:%d" % ETCD_PEER
    proc = start("etcd", ["etcd", "--name", "stack", "--data-dir", path("etcd"),
                          "--listen-client-urls", "http://127.0.0.1:%d" % ETCD,
                          "--advertise-client-urls", "http://127.0.0.1:%d" % ETCD, "--listen-peer-urls", peer,
                          "--initial-advertise-peer-urls", peer, "--initial-cluster", "stack=" + peer,
                          "--log-level", "warn"])
    wait_for(30, "etcd", lambda: supervise.http_ok("http://127.0.0.1:%d/health" % ETCD), proc)

    log("Patroni: 3 PostgreSQL nodes on %d-%d, REST on %d-%d" % (pg_port(1), pg_port(3), rest_port(1), rest_port(3)))
    for i in NODES:
        patroni_start(i)
    wait_for(120, "a Patroni leader", lambda: any(rest_ok(i, "primary") for i in NODES))
    wait_for(180, "two streaming replicas", lambda: sum(rest_ok(i, "replica") for i in NODES) == 2)
    wait_for(60, "a synchronous standby", lambda: any(rest_ok(i, "sync") for i in NODES))

    log("HAProxy: PostgreSQL rw %d, ro %d; preon %d; stats %d" % (RW, RO, HTTP, STATS))
    proc = start("haproxy", ["haproxy", "-db", "-f", path("haproxy.cfg")])
    wait_for(30, "HAProxy's read-write port", lambda: pg_isready(RW), proc)
    load_schema()

    log("PgBouncer (transaction mode) on %d" % BOUNCER)
    proc = start("pgbouncer", ["pgbouncer", path("pgbouncer", "pgbouncer.ini")], user="postgres")
    wait_for(30, "PgBouncer", lambda: pg_isready(BOUNCER, "preon"), proc)

    for i in range(1, n + 1):
        log("preon%d on %d" % (i, preon_port(i)))
        preon_start(i)
    wait_for(30, "/fruits through HAProxy", lambda: supervise.http_ok("http://127.0.0.1:%d/fruits" % HTTP))
    log("up in %d s" % (time.monotonic() - t0))
    sys.stdout.write(urls())


def down():
    if not os.path.isdir(STATE):
        log("nothing at " + STATE)
        return
    for i in range(1, MAX_PREON + 1):
        stop("preon%d" % i, 30)
    stop("pgbouncer", 10)
    stop("haproxy", 10)
    for i in reversed(NODES):
        stop("patroni%d" % i, 60)
    stop("etcd", 10)
    # a postmaster whose Patroni was killed (a fault test) is ours too: it holds STATE/pgI/data/postmaster.pid
    for i in NODES:
        data = path("pg%d" % i, "data")
        try:
            with open(os.path.join(data, "postmaster.pid")) as f:
                pid = int(f.readline())
            ours = os.readlink("/proc/%d/cwd" % pid) == data
        except (OSError, ValueError):
            continue
        if ours:
            log("postmaster of pg%d (pid %d) outlived its Patroni: SIGQUIT" % (i, pid))
            try:
                os.kill(pid, signal.SIGQUIT)
            except ProcessLookupError:
                pass
    shutil.rmtree(STATE, ignore_errors=True)
    log("down")


def status():
    names = sorted(os.listdir(path("pids"))) if os.path.isdir(path("pids")) else []
    for name in names:
        pid = pid_of(name)
        print("%-10s %s" % (name, "pid %d" % pid if pid else "not running"))
    sys.stdout.flush()
    if any(pid_of("patroni%d" % i) for i in NODES):
        subprocess.run(["patronictl", "-c", path("pg1", "patroni.yml"), "list"], stderr=subprocess.DEVNULL)
    if pid_of("haproxy"):
        print("HAProxy (proxy, server, status):")
        _, body = supervise.http_get("http://127.0.0.1:%d/;csv" % STATS)
        for row in body.decode(errors="replace").splitlines():
            f = row.split(",")
            if len(f) > 17 and not row.startswith(("#", "stats", "preon_live", "preon_noretry")) and \
                    f[1] not in ("FRONTEND", "BACKEND"):
                print(",".join((f[0], f[1], f[17])))


def node(text):
    i = int(text)
    if i not in NODES:
        raise argparse.ArgumentTypeError("node: 1 .. 3")
    return i


def parser():
    ap = argparse.ArgumentParser(prog="deploy/stack/stack.sh", description=__doc__.split("\n\n")[0], epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("up", help="start everything (N preon replicas, default 2) and print the URLs")
    p.add_argument("n", metavar="N", type=int, nargs="?", default=2)
    sub.add_parser("down", help="stop everything it started (by PID) and remove STATE")
    sub.add_parser("status", help="every process, alive or not; the Patroni cluster; HAProxy's servers")
    sub.add_parser("urls", help="print the URLs (also as shell variables: eval \"$(stack.sh urls)\")")
    p = sub.add_parser("preon-start", help="start preon replica I (1..8; HAProxy already knows all 8 slots)")
    p.add_argument("i", metavar="I", type=int)
    p = sub.add_parser("preon-stop", help="SIGTERM preon replica I and wait until it has exited")
    p.add_argument("i", metavar="I", type=int)
    p = sub.add_parser("patroni-start", help="start Patroni node I (1..3) again (it rejoins, rewound if need be)")
    p.add_argument("i", metavar="I", type=node)
    p = sub.add_parser("patroni-stop", help="stop Patroni node I (SIGTERM: PostgreSQL shuts down fast)")
    p.add_argument("i", metavar="I", type=node)
    return ap


def main(argv):
    ap = parser()
    args = ap.parse_args(argv)
    commands = {"up": lambda: up(args.n), "down": down, "status": status, "urls": lambda: sys.stdout.write(urls()),
                "preon-start": lambda: preon_start(args.i), "preon-stop": lambda: stop("preon%d" % args.i, 30),
                "patroni-start": lambda: patroni_start(args.i), "patroni-stop": lambda: stop("patroni%d" % args.i, 60)}
    if args.command not in commands:
        ap.print_help(sys.stderr)
        return 2
    try:
        commands[args.command]()
    except (Failed, subprocess.CalledProcessError) as e:
        log(str(e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
