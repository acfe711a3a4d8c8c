# SPDX-License-Identifier: MIT
"""The CPU partition of a measurement: the load generator (wrk, ab, the ramp004 driver), the target and
PostgreSQL each in a stated CPU set, the target optionally under a CPU quota. The sets are cgroup v1 cpusets where
/sys/fs/cgroup/cpuset is writable, cgroup v2 cpusets where the unified hierarchy has the controller, and
sched_setaffinity (taskset) otherwise; a quota needs a cgroup (v1 `cpu` or v2 `cpu.max`).

How each role gets its set: the measuring process itself joins the load set (every tool it runs afterwards, wrk,
ab, pgbench, the driver, inherits it); a target's command is wrapped so that it joins the target set before it
execs (its children and a JVM's threads inherit it); PostgreSQL's processes are moved into the postgres set after
the cluster starts (the backends it forks later inherit it), and again after every restart.

What each role's processes have spent is counted by its cgroup, whole (every thread and child, those that exited
too): usage_s("target"), usage_s("postgres") read cgroup v1's cpuacct (a group of its own per role, or the role's
own group where cpu and cpuacct share a hierarchy) or cgroup v2's cpu.stat; None under taskset.

  part = Partition.parse("auto")        # load on CPU 0, target and PostgreSQL on the others
  part = Partition.parse("load=0,target=1,postgres=1,quota=0.5")
  with part:                            # cgroups made, this process in the load set
      part.place_postgres(pgdir)
      target.argv = part.wrap("target", target.argv)
      ...  results["partition"] = part.record()
"""
import dataclasses
import os
import shutil
import subprocess
from typing import Optional

from .report import log

V1_CPUSET = "/sys/fs/cgroup/cpuset"
V1_CPU = "/sys/fs/cgroup/cpu"
V1_CPUACCT = "/sys/fs/cgroup/cpuacct"
V2 = "/sys/fs/cgroup"
ROLES = ("load", "target", "postgres")


def parse_cpus(text):
    """"0-2,5" → [0, 1, 2, 5]."""
    out = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return sorted(set(out))


def cpus_text(cpus):
    return ",".join(str(c) for c in cpus)


def online_cpus():
    """The CPUs this process may run on (the machine's, unless it is itself confined)."""
    return sorted(os.sched_getaffinity(0))


def mechanism():
    """How sets can be made here: "cgroup v1 cpuset", "cgroup v2 cpuset" or "taskset"."""
    if os.geteuid() == 0 and os.access(os.path.join(V1_CPUSET, "cpuset.cpus"), os.W_OK):
        return "cgroup v1 cpuset"
    if os.geteuid() == 0 and "cpuset" in _read(os.path.join(V2, "cgroup.controllers")).split():
        return "cgroup v2 cpuset"
    return "taskset"


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def _write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


@dataclasses.dataclass
class Partition:
    """CPU sets per role (lists of CPU numbers) and the target's quota in CPUs (None: none). `enabled` False is
    the unpartitioned run: every role shares every CPU, as before 2026-12-02."""
    load: list
    target: list
    postgres: list
    quota: Optional[float] = None
    enabled: bool = True
    how: str = ""
    dirs: dict = dataclasses.field(default_factory=dict)
    acct: dict = dataclasses.field(default_factory=dict)  # role → the cgroup whose CPU usage counts it

    @classmethod
    def parse(cls, spec):
        """"off", "auto" (load on the first CPU, target and PostgreSQL on the rest; a 1-CPU machine cannot be
        split: an error), or "load=LIST,target=LIST,postgres=LIST[,quota=CPUS]" (postgres defaults to the
        target's set). Fails loudly on a CPU the machine lacks or an unknown key."""
        cpus = online_cpus()
        if spec in (None, "", "off"):
            return cls(cpus, cpus, cpus, enabled=False, how="none")
        fields = {}
        if spec != "auto":
            key = None
            for item in spec.split(","):
                k, sep, value = item.partition("=")
                if not sep and key in ROLES and item.strip():  # "load=0,2": the 2 belongs to load's list
                    fields[key] += "," + item
                    continue
                if not sep or k not in ROLES + ("quota",):
                    raise ValueError("bad partition field %r (expected load=, target=, postgres=, quota=)" % item)
                key, fields[key] = k, value
        elif len(cpus) < 2:
            raise ValueError("partition auto needs 2 CPUs, this process has %d" % len(cpus))
        load = parse_cpus(fields.get("load", str(cpus[0])))
        target = parse_cpus(fields.get("target", cpus_text(cpus[1:])))
        postgres = parse_cpus(fields.get("postgres", cpus_text(target)))
        for role, s in (("load", load), ("target", target), ("postgres", postgres)):
            bad = [c for c in s if c not in cpus]
            if not s or bad:
                raise ValueError("partition: the %s set %s is empty or names CPUs not online (%s)" % (
                    role, cpus_text(s), cpus_text(cpus)))
        quota = float(fields["quota"]) if "quota" in fields else None
        how = mechanism()
        if quota is not None and how == "taskset":
            raise ValueError("partition: a CPU quota needs a cgroup (root, cgroup v1 cpu or v2 cpu.max)")
        return cls(load, target, postgres, quota, True, how)

    # -- the sets, made and removed ---------------------------------------------------------------------------

    def __enter__(self):
        if not self.enabled:
            return self
        self.saved_affinity = online_cpus()
        tag = "preon-bench-%d" % os.getpid()
        for role in ROLES:
            cpus = getattr(self, role)
            if self.how == "cgroup v1 cpuset":
                d = os.path.join(V1_CPUSET, "%s-%s" % (tag, role))
                os.makedirs(d, exist_ok=True)
                _write(os.path.join(d, "cpuset.mems"), _read(os.path.join(V1_CPUSET, "cpuset.mems")))
                _write(os.path.join(d, "cpuset.cpus"), cpus_text(cpus))
                self.dirs[role] = [d]
            elif self.how == "cgroup v2 cpuset":
                _write(os.path.join(V2, "cgroup.subtree_control"), "+cpuset +cpu")
                d = os.path.join(V2, "%s-%s" % (tag, role))
                os.makedirs(d, exist_ok=True)
                _write(os.path.join(d, "cpuset.cpus"), cpus_text(cpus))
                self.dirs[role] = [d]
            else:
                self.dirs[role] = []
        self.uncapped = list(self.dirs["target"])  # the target's CPUs without its quota (wrap(capped=False))
        if self.quota is not None:
            if self.how == "cgroup v1 cpuset":
                d = os.path.join(V1_CPU, "%s-target" % tag)
                os.makedirs(d, exist_ok=True)
                _write(os.path.join(d, "cpu.cfs_period_us"), 100000)
                _write(os.path.join(d, "cpu.cfs_quota_us"), int(self.quota * 100000))
                self.dirs["target"].append(d)
            else:
                _write(os.path.join(self.dirs["target"][0], "cpu.max"), "%d 100000" % int(self.quota * 100000))
                d = os.path.join(V2, "%s-target-uncapped" % tag)  # v2 keeps the quota in the set's own folder
                os.makedirs(d, exist_ok=True)
                _write(os.path.join(d, "cpuset.cpus"), cpus_text(self.target))
                self.dirs["target-uncapped"] = self.uncapped = [d]
        self._accounting(tag)
        self.join("load", os.getpid())
        log("CPU partition: %s" % self.describe())
        return self

    def __exit__(self, *exc):
        if not self.enabled:
            return False
        if self.how == "taskset":
            os.sched_setaffinity(0, self.saved_affinity)
            return False
        for role, dirs in self.dirs.items():
            for d in dirs:
                parent = os.path.dirname(d)
                # whatever is still inside (this process; a straggler) goes back to the parent, then the set goes
                for pid in _read(os.path.join(d, "cgroup.procs")).split():
                    try:
                        _write(os.path.join(parent, "cgroup.procs"), pid)
                    except OSError:
                        pass
                try:
                    os.rmdir(d)
                except OSError as e:
                    log("CPU partition: could not remove %s: %s" % (d, e))
        return False

    def _accounting(self, tag):
        """A cgroup that counts the CPU time of the target's and of PostgreSQL's processes (not the uncapped
        responder's): under v1 the role's group in the cpuacct hierarchy — its quota's group where cpu and cpuacct
        share one (a process is in one group per hierarchy), else a group of its own there; under v2 the role's set."""
        if self.how == "cgroup v2 cpuset":
            self.acct = {role: self.dirs[role][0] for role in ("target", "postgres")}
            return
        if self.how != "cgroup v1 cpuset" or not os.path.isfile(os.path.join(V1_CPUACCT, "cpuacct.usage")):
            return
        hierarchy = os.path.realpath(V1_CPUACCT)
        for role in ("target", "postgres"):
            same = [d for d in self.dirs[role] if os.path.realpath(os.path.dirname(d)) == hierarchy]
            if same:
                self.acct[role] = same[0]
                continue
            d = os.path.join(V1_CPUACCT, "%s-%s-acct" % (tag, role))
            os.makedirs(d, exist_ok=True)
            self.dirs[role].append(d)
            self.acct[role] = d

    def usage_s(self, role):
        """CPU seconds (user + system) the processes of `role` ("target", "postgres") have used since they joined
        its set, from its cgroup; None where nothing counts them (taskset, no cpuacct)."""
        d = self.acct.get(role)
        if d is None:
            return None
        if self.how == "cgroup v2 cpuset":
            for line in _read(os.path.join(d, "cpu.stat")).splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
            return None
        text = _read(os.path.join(d, "cpuacct.usage"))
        return int(text) / 1e9 if text.isdigit() else None

    def accounting(self):
        """How usage_s counts, in words (results.json and reports)."""
        if not self.acct:
            return None
        return "cgroup v2 cpu.stat" if self.how == "cgroup v2 cpuset" else "cgroup v1 cpuacct"

    # -- putting processes in their sets ------------------------------------------------------------------------

    def join(self, role, pid):
        """Moves process `pid` (all its threads) into `role`'s set."""
        if not self.enabled:
            return
        if self.dirs.get(role):
            for d in self.dirs[role]:
                _write(os.path.join(d, "cgroup.procs"), pid)
        else:
            for tid in os.listdir("/proc/%d/task" % pid):
                os.sched_setaffinity(int(tid), getattr(self, role))

    def wrap(self, role, argv, capped=True):
        """`argv` made to start inside `role`'s set: a shell that joins the cgroup(s) and execs argv (same PID, so
        that the caller's process group and signals still reach it), or taskset -c. capped=False: the target's CPUs
        without the target's quota (the driver's ceiling is measured against a responder that is not held back)."""
        if not self.enabled:
            return list(argv)
        dirs = self.uncapped if role == "target" and not capped else self.dirs.get(role)
        if not dirs:
            return ["taskset", "-c", cpus_text(getattr(self, role))] + list(argv)
        joins = " && ".join("echo $$ > %s/cgroup.procs" % d for d in dirs)
        return ["sh", "-c", joins + ' && exec "$@"', "sh"] + list(argv)

    def place_postgres(self, pgdir):
        """Moves the private cluster in `pgdir` (scripts/pg.sh) into the postgres set: the postmaster and every
        process it has forked. Call after every start or restart. Returns the PIDs moved."""
        if not self.enabled:
            return []
        head = _read(os.path.join(pgdir, "data", "postmaster.pid")).split("\n")
        if not head or not head[0].isdigit():
            raise RuntimeError("partition: no postmaster.pid in %s" % pgdir)
        pids = [int(head[0])] + _children(int(head[0]))
        for pid in pids:
            try:
                self.join("postgres", pid)
            except (OSError, ProcessLookupError):
                pass  # a short-lived child that exited meanwhile
        return pids

    # -- what the report and results.json say -------------------------------------------------------------------

    def describe(self):
        """One sentence for a report."""
        if not self.enabled:
            return "none: the load generator, the target and PostgreSQL share every CPU (%s)" % cpus_text(
                online_cpus_of_machine())
        q = ", the target capped at %g CPU" % self.quota if self.quota is not None else ""
        return "load generator on CPU %s, target on CPU %s, PostgreSQL on CPU %s%s (%s)" % (
            cpus_text(self.load), cpus_text(self.target), cpus_text(self.postgres), q, self.how)

    def record(self, detected=None):
        """The partition as results.json keeps it."""
        out = {"enabled": self.enabled, "mechanism": self.how, "load": cpus_text(self.load),
               "target": cpus_text(self.target), "postgres": cpus_text(self.postgres), "target_quota_cpus": self.quota,
               "machine_cpus": cpus_text(online_cpus_of_machine()), "sentence": self.describe()}
        if self.acct:
            out["cpu_accounting"] = self.accounting()
        if detected is not None:
            out["detected"] = detected
        return out

    def detect(self, which=("nproc", "java", "go"), wrap=None):
        """The CPU count each runtime detects inside the target's set (and quota): nproc (sched_getaffinity: what
        glibc, Go's runtime.NumCPU and preon see), the JVM's availableProcessors (-XshowSettings:system, or the
        container metrics it prints), Go's GOMAXPROCS (which from Go 1.25 also follows a cgroup quota). A runtime
        that is not installed is left out. `wrap` (argv → argv), when given, starts each command in place of
        self.wrap("target", …), as the caller starts its targets (bench/scaleup.py: a replica's set and own cap)."""
        self.detect_wrap = wrap or (lambda argv: self.wrap("target", argv))
        out = {}
        if "nproc" in which:
            out["nproc"] = _first_int(self._run(["nproc"]))
        if "java" in which and shutil.which("java"):
            text = self._run(["java", "-XshowSettings:system", "-version"])
            n = _after(text, "Effective CPU Count:")
            out["java"] = n if n is not None else _after(text, "Available Processors:")
            out["java_note"] = "JVM's effective CPU count (-XshowSettings:system)" if n is not None else \
                "JVM reports no container metrics: availableProcessors follows the affinity set"
        if "go" in which and shutil.which("go"):
            out["go"] = self._go_probe()
        return out

    def _run(self, argv, timeout=60):
        try:
            r = subprocess.run(self.detect_wrap(argv), capture_output=True, text=True, timeout=timeout)
            return r.stdout + r.stderr
        except (OSError, subprocess.TimeoutExpired):
            return ""

    def _go_probe(self):
        """runtime.NumCPU and GOMAXPROCS from a 5-line Go program built once into build/cpus-probe."""
        from .services import REPO
        d = os.path.join(REPO, "build", "cpus-probe")
        exe = os.path.join(d, "probe")
        if not os.access(exe, os.X_OK):
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "main.go"), "w") as f:
                f.write('package main\nimport ("fmt"; "runtime")\n'
                        'func main() { fmt.Println(runtime.NumCPU(), runtime.GOMAXPROCS(0)) }\n')
            r = subprocess.run(["go", "build", "-o", exe, "main.go"], cwd=d, capture_output=True, text=True,
                               env=dict(os.environ, GO111MODULE="off", GOFLAGS=""))
            if r.returncode != 0:
                return {"error": r.stderr.strip()[-200:]}
        text = self._run([exe]).split()
        if len(text) >= 2 and all(t.isdigit() for t in text[:2]):
            return {"NumCPU": int(text[0]), "GOMAXPROCS": int(text[1])}
        return {"error": " ".join(text)[:200]}


def report_sentence(part, where="in the target's set"):
    """A report's sentence on the CPU partition (`part`: results.json's "partition", or None for a run from before
    2026-12-02), with what each runtime detected `where` the commands ran."""
    if not part:
        return "CPU partition: none recorded (a run from before 2026-12-02: every role on every CPU)."
    det = part.get("detected") or {}
    seen = []
    if det.get("nproc") is not None:
        seen.append("nproc %s" % det["nproc"])
    if det.get("java") is not None:
        seen.append("a JVM %s" % det["java"])
    if isinstance(det.get("go"), dict) and "NumCPU" in det["go"]:
        seen.append("Go NumCPU %s, GOMAXPROCS %s" % (det["go"]["NumCPU"], det["go"]["GOMAXPROCS"]))
    return "CPU partition: %s%s%s." % (part["sentence"], "; %s " % where if seen else "", ", ".join(seen))


def online_cpus_of_machine():
    """Every online CPU of the machine (not only this process's set)."""
    return parse_cpus(_read("/sys/devices/system/cpu/online")) or online_cpus()


def _children(pid):
    """Every descendant of `pid`, from /proc/PID/task/*/children."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for t in tasks:
            for c in _read("/proc/%d/task/%s/children" % (p, t)).split():
                out.append(int(c))
                todo.append(int(c))
    return out


def _first_int(text):
    for w in text.split():
        if w.isdigit():
            return int(w)
    return None


def _after(text, label):
    i = text.find(label)
    return _first_int(text[i + len(label):]) if i >= 0 else None
