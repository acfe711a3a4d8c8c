# SPDX-License-Identifier: MIT
"""System calls per request by kind, from `strace -c -f`: strace attaches to every thread of the server,
and separately to every PostgreSQL backend it is connected to (pg_stat_activity), for exactly a fixed count of
requests (measure.fixed_count), then detaches and writes its summary. strace slows what it traces, not what is
counted: the calls a request makes are the same."""
import os
import re
import signal
import subprocess
import time

from . import fixed_count
from .services import PG_SH

_ROW = re.compile(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:(\d+)\s+)?([a-z_0-9]+)\s*$")


def parse_summary(text):
    """strace -c's table → {syscall: calls} (the total row left out)."""
    out = {}
    for line in text.splitlines():
        m = _ROW.match(line)
        if m and m.group(3) != "total":
            out[m.group(3)] = out.get(m.group(3), 0) + int(m.group(1))
    return out


def tids(pid):
    """Every thread of process `pid`."""
    return sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))


def backends(pgdir):
    """The PIDs of the client backends of the private cluster in `pgdir` (scripts/pg.sh), psql's own left out."""
    r = subprocess.run([PG_SH, "psql", pgdir, "-Atc", "SELECT pid FROM pg_stat_activity WHERE backend_type = "
                        "'client backend' AND pid <> pg_backend_pid()"], capture_output=True, text=True, check=True)
    return [int(x) for x in r.stdout.split()]


def interrupt(proc, timeout=30):
    """Stops a tracer (strace, perf stat) the way that makes it write its summary: SIGINT, then a kill if it has not
    ended within `timeout` seconds."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


class Trace:
    """strace -c -f attached to `pids` (every thread given); stop() detaches and returns {syscall: calls}."""

    def __init__(self, pids, out_file):
        self.out_file = out_file
        argv = ["strace", "-c", "-f", "-o", out_file]
        for p in pids:
            argv += ["-p", str(p)]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5 + 0.05 * len(pids))  # attached before the first counted request

    def stop(self):
        interrupt(self.proc)
        with open(self.out_file) as f:
            return parse_summary(f.read())


def count(server_pid, pgdir, port, path, n, conns, depth, out_prefix):
    """Syscalls of `n` requests: {"server": {syscall: calls}, "postgres": {...}, "backends": how many were traced,
    "statuses": answers by status}. The caller has warmed the server up (its database connections open)."""
    server = Trace(tids(server_pid), out_prefix + "-server.strace")
    pids = backends(pgdir) if pgdir else []
    pg = Trace(pids, out_prefix + "-postgres.strace") if pids else None
    try:
        got = fixed_count.run("127.0.0.1", port, path, n, conns, depth)
    finally:
        s = server.stop()
        p = pg.stop() if pg else {}
    return {"server": s, "postgres": p, "backends": len(pids), "statuses": got["statuses"]}
