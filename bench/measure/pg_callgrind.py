# SPDX-License-Identifier: MIT
"""PostgreSQL's user-space instructions per request: the private cluster restarted with its postmaster
under valgrind's callgrind (--trace-children: every backend it forks is counted, each into its own file, written
when the backend exits), then a server started natively, warmed up, a fixed count of requests (measure.fixed_count),
the server stopped; the instructions of the backends it was connected to, summed. Two such runs of N1 and N2
requests, and (Ir₂ − Ir₁) / (N2 − N1) is what PostgreSQL executes for one request, with each backend's start-up, the
server's statements prepared at connect and the warm-up cancelled out. It asks that both runs had as many backends
(a server that opened one more connection in one run would add a start-up to it). Like the server's count, it repeats
for the same PostgreSQL build and the same bytes on the wire, whatever the machine's load."""
import os
import shutil
import signal
import subprocess
import time

from . import fixed_count, syscalls
from .services import PG_SH, Target, supervise

PGBIN_GLOB = "/usr/lib/postgresql"


def pgbin():
    """PostgreSQL's bin folder as scripts/pg.sh picks it: $PGBIN, else the newest installed."""
    if os.environ.get("PGBIN"):
        return os.environ["PGBIN"]
    versions = sorted((d for d in os.listdir(PGBIN_GLOB) if d.isdigit()), key=int)
    return os.path.join(PGBIN_GLOB, versions[-1], "bin")


def finished_totals(path):
    """The totals of a callgrind file once it is whole (its totals line written to the end), else None."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(("totals:", "summary:")) and line.endswith("\n"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class ValgrindPostgres:
    """The cluster in `pgdir` (scripts/pg.sh) stopped and started again under callgrind for the `with` block; its
    per-process callgrind files go to `out_dir` (made writable for the postgres user). On exit it is stopped
    (SIGINT: a fast shutdown) and started again natively."""

    def __init__(self, pgdir, out_dir, log_file, timeout=300):
        self.pgdir, self.out_dir, self.log_file, self.timeout = pgdir, out_dir, log_file, timeout
        self.proc = None

    def __enter__(self):
        os.makedirs(self.out_dir, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.out_dir, "postgres", "postgres")
        subprocess.run([PG_SH, "stop", self.pgdir], check=True)
        argv = ["valgrind", "--tool=callgrind", "--trace-children=yes", "--dump-instr=no", "--collect-jumps=no",
                "--callgrind-out-file=%s" % os.path.join(self.out_dir, "pg.%p.callgrind"),
                os.path.join(pgbin(), "postgres"), "-D", os.path.join(self.pgdir, "data")]
        self.proc = supervise.spawn(argv, self.log_file, cwd="/", user="postgres" if os.geteuid() == 0 else None,
                                    session=True)
        try:
            supervise.wait_ready(self._ready, self.timeout, "PostgreSQL under valgrind (log %s)" % self.log_file,
                                 self.proc, interval=1)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _ready(self):
        r = subprocess.run([PG_SH, "psql", self.pgdir, "-Atc", "SELECT 1"], capture_output=True, text=True)
        return r.returncode == 0 and r.stdout.strip() == "1"

    def __exit__(self, *exc):
        try:
            os.kill(self.proc.pid, signal.SIGINT)  # the postmaster: a fast shutdown
            self.proc.wait(timeout=self.timeout)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            supervise.stop(self.proc, timeout=30, group=True)
        subprocess.run([PG_SH, "start", self.pgdir], check=False)

    def file_of(self, pid):
        return os.path.join(self.out_dir, "pg.%d.callgrind" % pid)

    def totals(self, pids, timeout=120):
        """The summed instructions of the backends `pids`, once each has exited and written its file."""
        deadline, total = time.monotonic() + timeout, 0
        for pid in pids:
            while (ir := finished_totals(self.file_of(pid))) is None:
                if time.monotonic() > deadline:
                    raise RuntimeError("backend %d wrote no callgrind totals within %d s" % (pid, timeout))
                time.sleep(0.2)
            total += ir
        return total


def run(pg, make, path, n, warmup, conns, depth, name):
    """One run against the cluster under callgrind: the server (make(port) → argv, env) started natively,
    `warmup` requests, its backends noted, `n` requests, the server stopped. Returns {"ir", "backends", "statuses"}."""
    port = supervise.free_port()
    argv, env = make(port)
    t = Target(name, argv, env, port, db_path="/plaintext", hello_path="/plaintext")
    t.start(timeout=120)
    try:
        fixed_count.run("127.0.0.1", port, path, warmup, conns, depth, 900)
        pids = syscalls.backends(pg.pgdir)
        got = fixed_count.run("127.0.0.1", port, path, n, conns, depth, 900)
    finally:
        t.stop()
    if not pids:
        raise RuntimeError("%s had no PostgreSQL backend after its warm-up" % name)
    return {"ir": pg.totals(pids), "backends": len(pids), "statuses": got["statuses"]}


def per_request(small, large, n1, n2):
    """Two runs (run()'s results for n1 < n2 requests) → {"ir_per_request", …}; an error when their backends'
    counts differ (the start-ups would not cancel)."""
    if small["backends"] != large["backends"]:
        raise RuntimeError("the runs of %d and %d requests had %d and %d backends" % (
            n1, n2, small["backends"], large["backends"]))
    return {"n1": n1, "n2": n2, "ir1": small["ir"], "ir2": large["ir"], "backends": large["backends"],
            "ir_per_request": (large["ir"] - small["ir"]) / float(n2 - n1), "statuses": large["statuses"]}
