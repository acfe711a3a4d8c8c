# SPDX-License-Identifier: MIT
"""Where the server's CPUs spend their time under load. `perf record` samples every CPU of the target's
set on a clock (cpu-clock, FREQ per second: these machines have no hardware counters), kernel included, while wrk
runs from the load set. Each sample goes to whose it is: the server's code (user space), the kernel while the
server runs (its system calls and the loopback TCP work they carry, the client's receive side included), PostgreSQL's
code, the kernel while PostgreSQL runs, anyone else, or idle. The samples become CPU microseconds per answered
request, so that two servers can be compared part by part, and it shows what share of the CPU a server's own code
could ever give back."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from . import packets
from .proc import tree

FREQ = 999
KERNEL_START = 0xFFFF800000000000  # x86-64: addresses at or above it are the kernel's
PARTS = ("server_user", "server_kernel", "postgres_user", "postgres_kernel", "other", "idle")


def unavailable():
    """None when perf can sample CPUs here, else why it cannot (a sentence for the report)."""
    if not shutil.which("perf"):
        return "perf is not installed (Debian: linux-perf)"
    with tempfile.TemporaryDirectory() as d:
        try:
            r = subprocess.run(["perf", "record", "-q", "-F", "99", "-a", "-o", os.path.join(d, "probe"), "--",
                                "true"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            return "perf record failed: %s" % e
        if r.returncode != 0:
            lines = r.stderr.strip().splitlines()
            return "perf record failed: %s" % (lines[-1] if lines else "exit status %d" % r.returncode)
    return None


def classify(script_out, server, postgres):
    """`perf script -F pid,ip` lines → samples per part."""
    counts = dict.fromkeys(PARTS, 0)
    for line in script_out.splitlines():
        fields = line.split()
        if len(fields) < 2 or not fields[0].isdigit():
            continue
        pid = int(fields[0])
        try:
            kernel = int(fields[1], 16) >= KERNEL_START
        except ValueError:
            continue
        if pid == 0:
            counts["idle"] += 1
        elif pid in server:
            counts["server_kernel" if kernel else "server_user"] += 1
        elif pid in postgres:
            counts["postgres_kernel" if kernel else "postgres_user"] += 1
        else:
            counts["other"] += 1
    return counts


def cpu_ticks(cpus):
    """(steal, total) clock ticks of `cpus` so far, from /proc/stat."""
    steal = total = 0
    with open("/proc/stat") as f:
        for line in f:
            name, *fields = line.split()
            if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
                values = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
                steal += values[7]
                total += sum(values)
    return steal, total


def profile(cpus, server_pid, postmaster_pid, load, workdir):
    """Samples `cpus` while load() runs (its result must carry "requests", the answers it counted); returns
    {"requests", "rps", "seconds", "busy", "stolen", "samples": {part: n}, "us_per_request": {part: µs},
    "packets_per_request": {"server", "postgres": packets each sent, or None where perf could not count}}; busy is
    the share of the CPUs' time sampled over the load's seconds (a CPU that idles is not sampled: about 1.0 means the
    set was the bottleneck), stolen the share of their time the hypervisor gave to other guests (/proc/stat's steal:
    the guest's clock runs on meanwhile, so a stolen moment counts as the sample's owner's time). The sampling starts
    half a second before the load and stops after it: what ran on the set then counts too (as other, mostly), not
    against the servers' parts."""
    data = os.path.join(workdir, "perf-%d.data" % time.monotonic_ns())
    perf = subprocess.Popen(["perf", "record", "-q", "-F", str(FREQ), "-C", ",".join(map(str, cpus)), "-o", data],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        sent = {"server": packets.Count(tree(server_pid), workdir), "postgres": packets.Count(tree(postmaster_pid),
                                                                                              workdir)}
        try:
            t0, ticks0 = time.monotonic(), cpu_ticks(cpus)
            res = load()
            seconds, ticks1 = time.monotonic() - t0, cpu_ticks(cpus)
        finally:
            sent = {who: c.stop() for who, c in sent.items()}
        server, postgres = set(tree(server_pid)), set(tree(postmaster_pid))  # wrappers and what they exec; backends
    finally:
        perf.send_signal(signal.SIGINT)
        _, err = perf.communicate(timeout=120)
    if perf.returncode not in (0, -signal.SIGINT):
        raise RuntimeError("perf record: exit status %d: %s" % (perf.returncode, err.strip()[-300:]))
    out = subprocess.run(["perf", "script", "-i", data, "-F", "pid,ip", "-G"], capture_output=True, text=True,
                         timeout=300)
    os.unlink(data)
    if out.returncode != 0:
        raise RuntimeError("perf script: %s" % out.stderr.strip()[-300:])
    samples = classify(out.stdout, server, postgres)
    n = res.get("requests") or 0
    per = {k: (v * 1e6 / FREQ / n if n else None) for k, v in samples.items()}
    busy = sum(v for k, v in samples.items() if k != "idle") / FREQ / seconds / len(cpus)
    elapsed = ticks1[1] - ticks0[1]
    stolen = (ticks1[0] - ticks0[0]) / elapsed if elapsed > 0 else 0.0
    return {"requests": n, "rps": res.get("ok_rps"), "seconds": seconds, "busy": busy, "stolen": stolen,
            "samples": samples, "us_per_request": per,
            "packets_per_request": {who: (c / n if n and c is not None else None) for who, c in sent.items()}}
