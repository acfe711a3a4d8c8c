# SPDX-License-Identifier: MIT
"""Container targets for bench/run.py: an image run with `docker run --network host` (reached on 127.0.0.1 only),
its limits given as Docker flags, its memory read as `docker stats` reads it (the cgroup's charge), beside the RSS
of its main process. Also the same charge for a process target in a cgroup of its own (measure.Cgroup), and
--limits specs ("mem=32m,cpus=1;mem=64m")."""
import datetime
import json
import os
import re
import subprocess
import threading
import time

from .services import get

_UNITS = {"b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3}


def parse_limits(spec):
    """"mem=32m,cpus=1;mem=64m;none" → [{"mem_mib": 32, "cpus": 1.0}, {"mem_mib": 64, "cpus": None},
    {"mem_mib": None, "cpus": None}]."""
    rows = []
    for part in [p for p in spec.split(";") if p.strip()]:
        row = {"mem_mib": None, "cpus": None}
        for item in part.split(","):
            key, _, value = item.strip().partition("=")
            if key == "mem":
                m = re.fullmatch(r"(\d+)([mg]?)", value.strip().lower())
                if not m:
                    raise ValueError("bad mem=%r (expected e.g. 32m or 1g)" % value)
                row["mem_mib"] = int(m.group(1)) * (1024 if m.group(2) == "g" else 1)
            elif key == "cpus":
                row["cpus"] = float(value)
            elif key == "none" and not value:
                pass  # no cap: the baseline row
            else:
                raise ValueError("bad limit field %r (expected mem= or cpus=)" % item)
        rows.append(row)
    return rows


def limit_label(row):
    parts = (["memory %d MiB" % row["mem_mib"]] if row.get("mem_mib") else []) + \
            (["cpus %g" % row["cpus"]] if row.get("cpus") else [])
    return ", ".join(parts) or "no limit"


def parse_size(text):
    """"2.086MiB" → bytes."""
    m = re.match(r"\s*([\d.]+)\s*([kKmMgG]i?[bB]|[bB])", text)
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()]) if m else None


def docker(*args, check=True, timeout=120):
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=check, timeout=timeout)


def docker_ready():
    """None when a Docker daemon answers, else why not."""
    try:
        r = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        return "docker is not installed (scripts/deps.sh test installs docker.io)"
    return None if r.returncode == 0 else "no Docker daemon answers (start dockerd): " + r.stderr.strip()[-200:]


class ImageTarget:
    """A service image: `docker run -d --network host` with PREON_* and PG* variables pointing at the private
    PostgreSQL and PREON_SERVER_PORT/PORT at a free port of 127.0.0.1 (or at url=, if the image has its own)."""

    def __init__(self, name, image, env, port, db_path="/fruits", url=None, mem_mib=None, cpus=None, spec=None,
                 run_args=()):
        self.name, self.image, self.env, self.port, self.db_path = name, image, env, port, db_path
        self.run_args = list(run_args)  # more docker run flags, e.g. --security-opt seccomp=unconfined
        self.spec = spec  # bench/run.py's target spec it was made from, or None
        self.url = url or "http://127.0.0.1:%d" % port
        self.mem_mib, self.cpus = mem_mib, cpus
        self.binary, self.cid, self.proc = None, None, None
        self.exit = None  # after stop(): {"exit_code", "oom_killed"}
        self.exec_first_200 = None  # the container's process start (State.StartedAt) → first 200 on /hello, s
        self._log = ""

    def limited(self, mem_mib=None, cpus=None):
        return ImageTarget(self.name, self.image, self.env, self.port, self.db_path, self.url, mem_mib, cpus, self.spec,
                           self.run_args)

    def flags(self):
        out = ["--network", "host"]
        if self.mem_mib:
            out += ["-m", "%dm" % self.mem_mib, "--memory-swap", "%dm" % self.mem_mib]
        if self.cpus:
            out += ["--cpus", "%g" % self.cpus]
        for k, v in sorted(self.env.items()):
            out += ["-e", "%s=%s" % (k, v)]
        return out + self.run_args

    def start(self, timeout=60):
        """`docker run` → first 200 on /hello and on the DB path, in seconds (as measure.Target.start)."""
        self.exit = None
        t0 = time.monotonic()
        self.cid = docker("run", "-d", *self.flags(), self.image).stdout.strip()
        first_hello = first_db = None
        deadline = t0 + timeout
        while time.monotonic() < deadline and (first_hello is None or first_db is None):
            if first_hello is None and get(self.url + "/hello", 0.5) == 200:
                first_hello = time.monotonic() - t0
                wall = datetime.datetime.now(datetime.timezone.utc)
            if first_hello is not None and get(self.url + self.db_path, 0.5) == 200:
                first_db = time.monotonic() - t0
            if first_db is None and not self.alive():
                self.stop()
                raise RuntimeError("%s exited at start (%s)" % (self.name, self.exit))
        if first_db is None:
            self.stop()
            raise RuntimeError("%s did not become ready within %ds" % (self.name, timeout))
        started = self.inspect()["State"]["StartedAt"]
        started = datetime.datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", started).replace("Z", "+00:00"))
        self.exec_first_200 = (wall - started).total_seconds()
        return first_hello, first_db

    def inspect(self):
        return json.loads(docker("inspect", self.cid).stdout)[0]

    def alive(self):
        return self.cid is not None and self.inspect()["State"]["Running"]

    def pid(self):
        return self.inspect()["State"]["Pid"]

    def mem_bytes(self):
        """What `docker stats` shows as MEM USAGE (the cgroup's charge without inactive page cache)."""
        out = docker("stats", "--no-stream", "--format", "{{.MemUsage}}", self.cid, check=False).stdout
        return parse_size(out.split("/")[0]) if out.strip() else None

    def image_bytes(self):
        return int(docker("image", "inspect", "-f", "{{.Size}}", self.image).stdout)

    def log_tail(self, lines=20):
        return self._log or (docker("logs", "--tail", str(lines), self.cid, check=False).stderr if self.cid else "")

    def stop(self):
        if self.cid is None:
            return
        docker("stop", "-t", "15", self.cid, check=False, timeout=60)
        state = self.inspect()["State"]
        self.exit = {"exit_code": state["ExitCode"], "oom_killed": state["OOMKilled"]}
        r = subprocess.run(["docker", "logs", "--tail", "20", self.cid], capture_output=True, text=True)
        self._log = r.stdout + r.stderr
        docker("rm", "-f", self.cid, check=False)
        self.cid = None


def cgroup_mem_bytes(cg):
    """A process target's cgroup charge, computed as `docker stats` does (usage minus inactive file pages)."""
    for d in cg.dirs:
        for usage_f, stat_key in (("memory.usage_in_bytes", "total_inactive_file"), ("memory.current", "inactive_file")):
            try:
                with open(os.path.join(d, usage_f)) as f:
                    usage = int(f.read())
                with open(os.path.join(d, "memory.stat")) as f:
                    stat = dict(line.split() for line in f)
            except OSError:
                continue
            return usage - int(stat.get(stat_key, 0))
    return None


class PeakSampler:
    """Samples fn() every `interval` seconds in a thread while a load runs; .peak is the largest sample."""

    def __init__(self, fn, interval=0.5):
        self.fn, self.interval, self.peak = fn, interval, None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.done.is_set():
            try:
                v = self.fn()
            except Exception:  # noqa: BLE001 - the service may be gone (OOM): the samples so far stand
                v = None
            if v is not None and (self.peak is None or v > self.peak):
                self.peak = v
            self.done.wait(self.interval)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
