# SPDX-License-Identifier: MIT
"""Packets sent per request: how many of a process's writes became packets. PostgreSQL's backend flushes
its output at every Sync, but a flush is a packet only when TCP sends it at once; when the congestion window is full
the next flushes join the bytes still waiting (2026-12-03: under BBR, 19 packets per /queries=20
request toward preon's four connections, 10 toward TFB h2o's four, each packet's receive work run inside the
sender's system call). `perf stat` counts the kernel's net:net_dev_xmit tracepoint (one per packet a device sends;
on loopback, every segment) for the threads of a set of processes, attached for the length of a block."""
import os
import shutil
import subprocess
import tempfile

from .syscalls import interrupt

EVENT = "net:net_dev_xmit"


def unavailable():
    """None when perf can count the tracepoint here, else why it cannot (a sentence for the report)."""
    if not shutil.which("perf"):
        return "perf is not installed (Debian: linux-perf)"
    try:
        r = subprocess.run(["perf", "stat", "-x,", "-e", EVENT, "--", "true"], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return "perf stat failed: %s" % e
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines()
        return "perf stat -e %s failed: %s" % (EVENT, lines[-1] if lines else "exit status %d" % r.returncode)
    return None


def parse(text):
    """`perf stat -x,` output → the event's count, or None when perf could not count it."""
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2] == EVENT:
            return int(fields[0]) if fields[0].isdigit() else None
    return None


class Count:
    """Packets sent by the threads of `pids` from start to stop() (perf stat -p, which counts the threads a process
    has when it attaches: the caller starts it after the servers' connections are open)."""

    def __init__(self, pids, workdir):
        fd, self.out_file = tempfile.mkstemp(prefix="packets-", suffix=".csv", dir=workdir)
        os.close(fd)
        self.proc = subprocess.Popen(["perf", "stat", "-x,", "-e", EVENT, "-p", ",".join(map(str, pids)), "-o",
                                      self.out_file], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def stop(self):
        """The count, or None when perf could not count (it says why on stderr, which is dropped)."""
        interrupt(self.proc)
        try:
            with open(self.out_file) as f:
                return parse(f.read())
        finally:
            os.unlink(self.out_file)
