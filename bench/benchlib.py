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
def private_postgres_dir(extra_conf=""):
    """A PostgreSQL cluster in a temp folder with sql/ loaded (`extra_conf` appended to postgresql.conf); yields
    (its folder, for scripts/pg.sh, and its port), removes it afterwards."""
    pgdir = tempfile.mkdtemp(prefix="preon-bench-pg-")
    os.chmod(pgdir, 0o755)
    port = free_port()
    log("PostgreSQL in %s on port %d" % (pgdir, port))
    subprocess.run([PG_SH, "init", pgdir, str(port)], check=True, env=dict(os.environ, PREON_PG_EXTRA_CONF=extra_conf))
    try:
        yield pgdir, port
    finally:
        subprocess.run([PG_SH, "stop", pgdir], check=False)
        shutil.rmtree(pgdir, ignore_errors=True)


@contextlib.contextmanager
def private_postgres(extra_conf=""):
    """As private_postgres_dir, yielding the port only."""
    with private_postgres_dir(extra_conf) as (_, port):
        yield port


def preon_env(pgport, port, sync="batch"):
    """preon's environment for a bench run; sync=None leaves database.sync at its configured default."""
    env = dict(os.environ, PREON_SERVER_LISTEN="127.0.0.1", PREON_SERVER_PORT=str(port), PREON_LOG_LEVEL="warn",
               PREON_DATABASE_URL="postgresql://postgres@127.0.0.1:%d/preon" % pgport)
    if sync:
        env["PREON_DATABASE_SYNC"] = sync
    return env


class Target:
    """A service under test: a command, its environment and its base URL. Its output goes to a log file, so that
    a failure can be reported with its last lines."""

    def __init__(self, name, argv, env, port=None, db_path="/fruits", binary=None, url=None, hello_path="/hello"):
        self.name, self.argv, self.env, self.db_path, self.binary = name, argv, env, db_path, binary
        self.hello_path = hello_path
        self.base_url = url or "http://127.0.0.1:%d" % port
        self.proc = None
        self.log_path = tempfile.mktemp(prefix="bench-%s-" % name.replace("/", "_"), suffix=".log")

    @property
    def url(self):
        return self.base_url

    def log_tail(self, lines=20):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def start(self, timeout=60):
        """Starts the service; returns (seconds to first 200 on /hello (hello_path), seconds to first 200 on the DB
        path)."""
        t0 = time.monotonic()
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen(self.argv, env=self.env, stdout=logf, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        first_hello = first_db = None
        deadline = t0 + timeout
        while time.monotonic() < deadline and (first_hello is None or first_db is None):
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %d at start" % (self.name, self.proc.returncode))
            if first_hello is None and get(self.url + self.hello_path, 0.5) == 200:
                first_hello = time.monotonic() - t0
            if first_hello is not None and get(self.url + self.db_path, 0.5) == 200:
                first_db = time.monotonic() - t0
        if first_db is None:
            self.stop()
            raise RuntimeError("%s did not become ready within %ds" % (self.name, timeout))
        return first_hello, first_db

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            # the whole session: a start command run through a shell takes its children along
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None


_PCT = {k: re.compile(r"^\s+%s%%\s+([\d.]+)(us|ms|s)\s*$" % k[1:], re.M) for k in ("p50", "p75", "p90", "p99")}
_SCALE_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def parse_wrk(out):
    """wrk's output → requests/s, latency percentiles (ms, with --latency; p95 from bench/percentiles.lua),
    non-2xx and socket error counts."""
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    res = {"rps": float(m.group(1)) if m else 0.0}
    for k, rx in _PCT.items():
        m = rx.search(out)
        res[k] = float(m.group(1)) * _SCALE_MS[m.group(2)] if m else None
    m = re.search(r"^p95_us=(\d+)", out, re.M)
    res["p95"] = int(m.group(1)) / 1000.0 if m else None
    m = re.search(r"(\d+) requests in ([\d.]+)(ms|s|m)\b", out)
    res["requests"] = int(m.group(1)) if m else 0
    secs = float(m.group(2)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(3)] if m else 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    non2xx = int(m.group(1)) if m else 0
    # answers that were not errors, per second: with backpressure (503) requests/s alone flatters a server
    res["ok_rps"] = (res["requests"] - non2xx) / secs if secs else 0.0
    res["non2xx"] = non2xx
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    res["errors"] = dict(zip(("connect", "read", "write", "timeout"), (int(x) for x in m.groups()) if m else (0,) * 4))
    res["socket_errors"] = sum(res["errors"].values())
    # from bench/mix.lua: answers by status
    res["statuses"] = {int(k): int(v) for k, v in re.findall(r"^status_(\d+)=(\d+)", out, re.M)}
    m = re.search(r"^responses=(\d+)", out, re.M)
    res["responses"] = int(m.group(1)) if m else None
    return res


def wrk(url, conns, duration, threads=2, script=None, script_args=()):
    """One wrk run (bounded by `duration`); see parse_wrk."""
    argv = ["wrk", "-t%d" % min(threads, conns), "-c%d" % conns, "-d%ds" % duration, "--latency"]
    if script:
        argv += ["-s", script]
    argv.append(url)
    if script_args:
        argv += ["--", *script_args]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 60).stdout
    return parse_wrk(out)


def parse_ab(out):
    """ApacheBench's output → requests/s, mean and max latency (ms), completed and failed requests."""
    def num(rx, conv=float):
        m = re.search(rx, out, re.M)
        return conv(m.group(1)) if m else None
    return {"rps": num(r"^Requests per second:\s+([\d.]+)") or 0.0,
            "mean_ms": num(r"^Time per request:\s+([\d.]+) \[ms\] \(mean\)$"),
            "max_ms": num(r"^\s*100%\s+(\d+) \(longest request\)", int),
            "complete": num(r"^Complete requests:\s+(\d+)", int) or 0,
            "failed": num(r"^Failed requests:\s+(\d+)", int) or 0,
            "non2xx": num(r"^Non-2xx responses:\s+(\d+)", int) or 0}


def ab(url, n, c, timeout=300):
    """One ApacheBench run: `n` requests, `c` at a time (keep-alive off, as the published posts ran it)."""
    out = subprocess.run(["ab", "-q", "-n", str(n), "-c", str(c), "-s", "30", url], capture_output=True, text=True,
                         timeout=timeout).stdout
    return parse_ab(out)


def parse_pgbench(out):
    """pgbench's output → transactions/s (without connection time), transactions processed and failed."""
    def num(rx, conv=float):
        m = re.search(rx, out, re.M)
        return conv(m.group(1)) if m else None
    return {"tps": num(r"^tps = ([\d.]+) \(without initial connection time\)") or 0.0,
            "transactions": num(r"^number of transactions actually processed: (\d+)", int) or 0,
            "failed": num(r"^number of failed transactions: (\d+)", int) or 0}


def pgbench(pgport, script, duration, clients=2, dbname="preon"):
    """One pgbench run of `script` (prepared statements, `clients` connections and threads) against the private
    PostgreSQL on 127.0.0.1:`pgport`; see parse_pgbench."""
    argv = ["pgbench", "-n", "-M", "prepared", "-c%d" % clients, "-j%d" % clients, "-T%d" % duration, "-f", script,
            "-h", "127.0.0.1", "-p", str(pgport), "-U", "postgres", dbname]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 60).stdout
    return parse_pgbench(out)


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


V1 = os.path.isdir("/sys/fs/cgroup/memory") and os.path.isdir("/sys/fs/cgroup/cpu")


class Cgroup:
    """A cgroup of its own for one run; removed afterwards."""

    def __init__(self, name, memory_mib=None, cpus=None):
        self.dirs = []
        if V1:
            if memory_mib is not None:
                d = "/sys/fs/cgroup/memory/" + name
                os.makedirs(d, exist_ok=True)
                self.write(d, "memory.limit_in_bytes", memory_mib << 20)
                self.dirs.append(d)
            if cpus is not None:
                d = "/sys/fs/cgroup/cpu/" + name
                os.makedirs(d, exist_ok=True)
                self.write(d, "cpu.cfs_period_us", 100000)
                self.write(d, "cpu.cfs_quota_us", int(cpus * 100000))
                self.dirs.append(d)
        else:
            d = "/sys/fs/cgroup/" + name
            os.makedirs(d, exist_ok=True)
            if memory_mib is not None:
                self.write(d, "memory.max", memory_mib << 20)
                self.write(d, "memory.swap.max", 0)
            if cpus is not None:
                self.write(d, "cpu.max", "%d 100000" % int(cpus * 100000))
            self.dirs.append(d)

    @staticmethod
    def write(d, f, v):
        with open(os.path.join(d, f), "w") as fp:
            fp.write(str(v))

    def wrap(self, argv):
        """A command that joins the cgroup(s) before exec'ing argv, so that every page is charged there."""
        if not self.dirs:
            return list(argv)
        joins = " && ".join("echo $$ > %s/cgroup.procs" % d for d in self.dirs)
        return ["sh", "-c", joins + ' && exec "$@"', "sh", *argv]

    def peak_bytes(self):
        for d in self.dirs:
            for f in ("memory.max_usage_in_bytes", "memory.peak"):
                try:
                    with open(os.path.join(d, f)) as fp:
                        return int(fp.read())
                except OSError:
                    pass
        return None

    def remove(self):
        for d in self.dirs:
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.1)


def rss_kb(pid, field="VmRSS"):
    """A kB figure of /proc/PID/status (VmRSS, VmHWM, Threads …), or None when the process is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def main_pid(t):
    """The service's own process: the start command's shell may have exec'd it, or started it as its child."""
    pid = t.proc.pid
    try:
        children = open("/proc/%d/task/%d/children" % (pid, pid)).read().split()
        return int(children[0]) if children else pid
    except OSError:
        return pid


def cpu_s(pid):
    """User + system CPU seconds of a process (all its threads)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def dir_bytes(path):
    """A file's size, or the total size of the files under a folder (a build folder, say)."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files
               if not os.path.islink(os.path.join(root, f)))
