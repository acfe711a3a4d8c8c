# SPDX-License-Identifier: MIT
"""Shared pieces of the bench scripts: a private PostgreSQL, services under test, wrk runs and their parsing.
All traffic goes to 127.0.0.1; every run is bounded in time."""
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PG_SH = os.path.join(REPO, "scripts", "pg.sh")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log(msg):
    print("[bench %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def get(url, timeout=2):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except Exception:  # noqa: BLE001 - any failure means "not yet"
        return None


def build_preon():
    """Installs what bench needs and builds the release binary; returns its path."""
    subprocess.run([os.path.join(REPO, "scripts", "deps.sh"), "bench"], check=True)
    subprocess.run(["cmake", "-S", REPO, "-B", os.path.join(REPO, "build"), "-DCMAKE_BUILD_TYPE=Release"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", os.path.join(REPO, "build"), "-j2"], check=True, stdout=subprocess.DEVNULL)
    return os.path.join(REPO, "build", "preon")


@contextlib.contextmanager
def private_postgres(extra_conf=""):
    """A PostgreSQL cluster in a temp folder with sql/ loaded (`extra_conf` appended to postgresql.conf); yields
    its port, removes it afterwards."""
    pgdir = tempfile.mkdtemp(prefix="preon-bench-pg-")
    os.chmod(pgdir, 0o755)
    port = free_port()
    log("PostgreSQL in %s on port %d" % (pgdir, port))
    subprocess.run([PG_SH, "init", pgdir, str(port)], check=True, env=dict(os.environ, PREON_PG_EXTRA_CONF=extra_conf))
    try:
        yield port
    finally:
        subprocess.run([PG_SH, "stop", pgdir], check=False)
        shutil.rmtree(pgdir, ignore_errors=True)


def preon_env(pgport, port, sync="request"):
    return dict(os.environ, PREON_SERVER_LISTEN="127.0.0.1", PREON_SERVER_PORT=str(port), PREON_LOG_LEVEL="warn",
                PREON_DATABASE_SYNC=sync, PREON_DATABASE_URL="postgresql://postgres@127.0.0.1:%d/preon" % pgport)


class Target:
    """A service under test: a command, its environment and the port it serves on."""

    def __init__(self, name, argv, env, port, db_path="/fruits", binary=None):
        self.name, self.argv, self.env, self.port, self.db_path, self.binary = name, argv, env, port, db_path, binary
        self.proc = None

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self):
        """Starts the service; returns (seconds to first 200 on /hello, seconds to first 200 on the DB path)."""
        t0 = time.monotonic()
        self.proc = subprocess.Popen(self.argv, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        first_hello = first_db = None
        deadline = t0 + 60
        while time.monotonic() < deadline and (first_hello is None or first_db is None):
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %d at start" % (self.name, self.proc.returncode))
            if first_hello is None and get(self.url + "/hello", 0.5) == 200:
                first_hello = time.monotonic() - t0
            if first_hello is not None and get(self.url + self.db_path, 0.5) == 200:
                first_db = time.monotonic() - t0
        if first_db is None:
            raise RuntimeError("%s did not become ready" % self.name)
        return first_hello, first_db

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


_PCT = {k: re.compile(r"^\s+%s%%\s+([\d.]+)(us|ms|s)\s*$" % k[1:], re.M) for k in ("p50", "p75", "p90", "p99")}
_SCALE_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def wrk(url, conns, duration, threads=2, script=None, script_args=()):
    """One wrk run; returns requests/s, latency percentiles (ms), non-2xx and socket error counts."""
    argv = ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % duration, "--latency"]
    if script:
        argv += ["-s", script]
    argv.append(url)
    if script_args:
        argv += ["--", *script_args]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 60).stdout
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    res = {"rps": float(m.group(1)) if m else 0.0}
    for k, rx in _PCT.items():
        m = rx.search(out)
        res[k] = float(m.group(1)) * _SCALE_MS[m.group(2)] if m else None
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    res["non2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    res["socket_errors"] = sum(int(x) for x in m.groups()) if m else 0
    return res


def save(results, report, out=None, prefix=""):
    """Prints the report and writes results.json and report.md to `out` (default bench/results/<prefix><time>/)."""
    print(report)
    out = out or os.path.join(HERE, "results", prefix + time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(report)
    log("results in %s" % out)
