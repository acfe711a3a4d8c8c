# SPDX-License-Identifier: MIT
"""Shared pieces of the integration tests: the real preon binary, a real PostgreSQL, real sockets.

Environment (set by tests/CMakeLists.txt and scripts/test.sh):
  PREON_BIN        the binary under test (release or ASan+UBSan build)
  PREON_REPO       the repository, for scripts/pg.sh and sql/
  PREON_TEST_PGDIR the shared PostgreSQL cluster started by scripts/test.sh
  PREON_SANITIZED  1 in the ASan+UBSan build (memory use is then the sanitizers', not preon's)
  PREON_DEPS       source or system: h2o and libpq built from Debian's sources with preon's patches, or Debian's
                   shared libraries as shipped (CMake's PREON_DEPS)
  PREON_HTTP2_BOUNDED 1 where the build's h2o bounds HTTP/2 rapid reset (preon's patches to its source), so that
                   server.http2: auto turns HTTP/2 on; 0 with Debian's binary libh2o-evloop
  PREON_WRAPPER    a command every preon runs under, e.g. valgrind and its options (the valgrind.* tests of
                   tests/CMakeLists.txt, label valgrind)
  PREON_SCALE      "long" for the long forms of the load and fault tests (bench/reliability.py)
  PREON_RECORD     a file the load and fault tests append their measured results to, one JSON object per line
"""
import http.client
import json
import os
import re
import resource
import shlex
import signal
import sys
import subprocess
import tempfile
import threading
import time
import unittest

BIN = os.environ.get("PREON_BIN", "")
REPO = os.environ.get("PREON_REPO", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PGDIR = os.environ.get("PREON_TEST_PGDIR", "")
PG_SH = os.path.join(REPO, "scripts", "pg.sh")

WRAPPER = shlex.split(os.environ.get("PREON_WRAPPER", ""))
SANITIZED = os.environ.get("PREON_SANITIZED") == "1"
HTTP2_BOUNDED = os.environ.get("PREON_HTTP2_BOUNDED") == "1"
LONG = os.environ.get("PREON_SCALE") == "long"
# valgrind runs preon some 20-50 times slower: timing bounds stretch by this factor, loads shrink
SLOW = 20 if WRAPPER else 1

sys.path.insert(0, os.path.join(REPO, "bench"))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import measure  # noqa: E402 - bench/measure: wrk and its parser, the /proc readers; tests import it from here
from fixtures import supervise, templates  # noqa: E402,F401 - scripts/fixtures: the process supervisor, the templates
from fixtures.supervise import free_port  # noqa: E402,F401 - the tests' name for it

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer")


def require_env():
    if not BIN or not os.path.exists(BIN):
        raise SystemExit("PREON_BIN is not set to a built binary")
    if not PGDIR:
        raise SystemExit("PREON_TEST_PGDIR is not set: run the tests through scripts/test.sh")


def pg(cmd, pgdir=None, *args):
    return subprocess.run([PG_SH, cmd, pgdir or PGDIR, *args], check=True, capture_output=True, text=True).stdout


def pg_url(pgdir=None):
    return pg("url", pgdir).strip()


def psql(sql, pgdir=None):
    """Runs SQL on database preon; returns the unaligned, tuples-only output."""
    out = subprocess.run([PG_SH, "psql", pgdir or PGDIR, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


def private_db(name):
    """A database of its own on the shared cluster, with the fruits schema and rows, for DDL the others must not
    see. Returns its URL."""
    psql("DROP DATABASE IF EXISTS %s WITH (FORCE)" % name)
    psql("CREATE DATABASE %s" % name)
    for f in ("01-schema.sql", "02-seed.sql", "03-tfb.sql"):
        with open(os.path.join(REPO, "sql", f)) as sql:
            subprocess.run([PG_SH, "psql", os.environ["PREON_TEST_PGDIR"], "-d", name, "-v", "ON_ERROR_STOP=1"],
                           stdin=sql, check=True, capture_output=True)
    return pg_url().rsplit("/", 1)[0] + "/" + name


def db_psql(name, sql):
    out = subprocess.run([PG_SH, "psql", os.environ["PREON_TEST_PGDIR"], "-d", name, "-At", "-v", "ON_ERROR_STOP=1",
                          "-c", sql], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def hold_lock(seconds, pgdir=None):
    """Locks table fruits from another session for `seconds` (reads of it wait), once the lock is surely taken.
    Returns the psql process holding it."""
    p = subprocess.Popen([PG_SH, "psql", pgdir or PGDIR, "-c",
                          "BEGIN; LOCK TABLE fruits IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(%s); COMMIT;" % seconds],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 5
    while psql("SELECT count(*) FROM pg_locks WHERE relation = 'fruits'::regclass AND mode = 'AccessExclusiveLock'",
               pgdir) != "1":
        if time.monotonic() > deadline:
            raise AssertionError("the lock was never taken")
        time.sleep(0.02)
    return p


class Preon:
    """The binary under test, started on a free port of 127.0.0.1 with PREON_* overrides."""

    def __init__(self, db_url=None, args=(), wrapper=None, **settings):
        self.port = free_port()
        self.env = dict(os.environ)
        self.env.update({"PREON_SERVER_LISTEN": "127.0.0.1", "PREON_SERVER_PORT": str(self.port),
                         "PREON_SERVER_THREADS": "2", "PREON_LOG_LEVEL": "info",
                         "PREON_DATABASE_URL": db_url if db_url is not None else pg_url()})
        if WRAPPER:  # valgrind: a request's time is mostly valgrind's; deadlines a test does not set stretch, and the
            # queue-wait bound (a time too) is off unless the test sets it
            self.env.update(PREON_SERVER_REQUEST_TIMEOUT_MS="120000", PREON_DATABASE_QUERY_TIMEOUT_MS="120000",
                            PREON_DATABASE_MAX_QUEUE_WAIT_MS="0")
        self.env.update({("PREON_" + k).upper(): str(v) for k, v in settings.items()})
        self.args = list(args)
        self.wrapper = list(WRAPPER if wrapper is None else wrapper)  # e.g. valgrind and its options
        self.log = tempfile.NamedTemporaryFile(prefix="preon-", suffix=".log", delete=False)
        self.log.close()  # the supervisor appends to it by name
        self.proc = None

    def start(self, probe=None):
        """Start and wait until every GET of probes answers 200. By default the readiness check (every event-loop
        thread has a database connection) and /fruits (the database serves); probe="/hello" waits for the server
        only, probe="/health/ready" for the connections only (a user without rights)."""
        probes = [probe] if probe else [self.env.get("PREON_HEALTH_READY_PATH", "/health/ready"), "/fruits"]
        # Run from a folder without config/preon.yaml so that only the environment configures it.
        self.proc = supervise.spawn([*self.wrapper, BIN, *self.args], self.log.name, env=self.env,
                                    cwd=tempfile.gettempdir())

        def ready():
            try:
                return all(self.request("GET", path)[0] == 200 for path in probes)
            except OSError:
                return False
        try:
            supervise.wait_ready(ready, 90 if self.wrapper else 20, "preon", self.proc)
        except supervise.NotReady as e:
            # Not ready: end it here, since a failed setUpClass never reaches tearDownClass.
            supervise.stop(self.proc, timeout=0, sig=signal.SIGKILL)
            raise AssertionError("%s:\n%s" % (e, self.output()))
        return self

    def request(self, method, path, body=None, headers=None, timeout=10):
        """One request on a new connection: (status, headers dict with lower-case names, body bytes)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            conn.close()

    def json(self, method, path):
        status, headers, body = self.request(method, path)
        return status, headers, json.loads(body) if body else None

    def output(self):
        with open(self.log.name, "r", errors="replace") as f:
            return f.read()

    def kill(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Stops preon; returns its exit status. Fails on any sanitizer report in its output."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.wait(timeout)

    def wait(self, timeout=30):
        """Waits for preon to exit by itself; returns its exit status. Fails on any sanitizer report."""
        if self.proc is None:
            return None
        rc = supervise.exited(self.proc, timeout)
        if rc is None:
            supervise.stop(self.proc, timeout=0, sig=signal.SIGKILL)
            raise AssertionError("preon did not stop within %ds:\n%s" % (timeout, self.output()))
        out = self.output()
        for mark in SANITIZER_MARKS:
            if mark in out:
                raise AssertionError("sanitizer report in preon's output:\n" + out)
        # under valgrind: its error summary and leak report (also made the exit status 99); with -q, any line
        if re.search(r"ERROR SUMMARY: [1-9]", out) or re.search(r"definitely lost: [1-9]", out) or \
                ("-q" in self.wrapper and re.search(r"^==\d+== ", out, re.M)):
            raise AssertionError("valgrind report in preon's output:\n" + out[-20000:])
        self.proc = None
        return rc

    def cleanup(self):
        if self.proc is not None:
            supervise.stop(self.proc, timeout=0, sig=signal.SIGKILL)
        try:
            os.unlink(self.log.name)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        """`with Preon(...).start() as p:` kills preon if still running and removes its log, whatever happened."""
        self.cleanup()
        return False


class PreonTestCase(unittest.TestCase):
    """Starts one preon for the whole class (settings from `preon_settings`) and checks it stops cleanly."""
    preon_settings = {}

    @classmethod
    def setUpClass(cls):
        require_env()
        cls.preon = Preon(db_url=cls.db_url(), **cls.preon_settings).start()

    @classmethod
    def db_url(cls):
        """The database preon uses: the shared cluster unless a subclass has its own."""
        return pg_url()

    @classmethod
    def tearDownClass(cls):
        try:
            rc = cls.preon.stop()
            if rc != 0:
                raise AssertionError("preon exited with %s after SIGTERM:\n%s" % (rc, cls.preon.output()))
        finally:
            cls.preon.cleanup()


def raise_fd_limit(n):
    """Lets this process (and the preon it starts, which inherits it) open `n` files each."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, max(n, hard)))


def scaled(quick, long, wrapped):
    """A load size: `quick` in the test command, `long` for bench/reliability.py, `wrapped` under valgrind."""
    return wrapped if WRAPPER else long if LONG else quick


def record(test, **fields):
    """Appends a measured result to PREON_RECORD (bench/reliability.py renders them as docs/reliability.md's table)."""
    path = os.environ.get("PREON_RECORD")
    if path:
        fields.update(test=test, build="valgrind" if WRAPPER else "asan+ubsan" if SANITIZED else "release",
                      date=time.strftime("%Y-%m-%d"))
        with open(path, "a") as f:
            f.write(json.dumps(fields) + "\n")


def wrk_mix(port, total, paths, conns, threads=2, bound_s=600, timeout_s=10):
    """wrk sends `total` requests cycling over `paths` on `conns` connections (bench/wrk/mix.lua), then stops;
    `bound_s` only bounds it. Returns measure.parse_wrk's result, with answers by status."""
    with tempfile.NamedTemporaryFile(prefix="preon-mix-") as done:
        env = dict(os.environ, MIX_THREADS=str(threads), MIX_DONE=done.name)
        argv = ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % bound_s, "--timeout", "%ds" % timeout_s,
                "--latency", "-s", os.path.join(REPO, "bench", "wrk", "mix.lua"), "http://127.0.0.1:%d/" % port,
                "--", str(total), *paths]
        out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=bound_s + 60).stdout
    res = measure.parse_wrk(out)
    res["output"] = out
    return res


def end(proc, timeout=10):
    """Ends a process this test started, by its PID: SIGTERM, then SIGKILL after `timeout` s. Returns its status."""
    return supervise.stop(proc, timeout)


class Clients:
    """Threads running self.run(i) for i < n until stopped; `with Clients(...)` starts them and stops and joins them."""

    def __init__(self, n):
        self.lock, self.stop = threading.Lock(), threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(i,)) for i in range(n)]

    def run(self, i):
        raise NotImplementedError

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60 * SLOW)


def parallel(fn, n):
    """Runs fn(0) .. fn(n-1) on n threads at once; returns the exceptions they raised, as strings."""
    errors = []

    def run(i):
        try:
            fn(i)
        except Exception as e:  # noqa: BLE001 - handed back to the test, which asserts there are none
            errors.append(repr(e))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def scrape(p, path="/metrics"):
    """The samples of preon `p`'s metrics, through the real Prometheus parser: {(name, labels): value}."""
    status, headers, body = p.request("GET", path)
    assert status == 200, status
    assert headers["content-type"].startswith("text/plain; version=0.0.4"), headers["content-type"]
    samples = {}
    from prometheus_client.parser import text_string_to_metric_families  # Debian: python3-prometheus-client
    for family in text_string_to_metric_families(body.decode()):  # the real Prometheus parser
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples, name, **labels):
    """One sample of a scrape (0 when absent)."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def read_until_close(s):
    """Everything a socket receives until the peer closes it."""
    buf = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return buf
        buf += chunk


def read_response(f):
    """Reads one HTTP/1.1 answer (Content-Length framed) from a buffered file: (status, headers, body)."""
    line = f.readline()
    if not line:
        raise ConnectionError("connection closed before an answer")
    status = int(line.split()[1])
    headers = {}
    while True:
        line = f.readline().rstrip(b"\r\n")
        if not line:
            break
        k, _, v = line.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    body = f.read(int(headers.get("content-length", "0")))
    return status, headers, body


def main():
    unittest.main(verbosity=2)
