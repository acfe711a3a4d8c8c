#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The published Quarkus / Go / Spring experiments, re-run against preon or any HTTP service, with tables and
charts. One command:

  bench/run.py                                   # every scenario, published durations, against preon
  bench/run.py --quick                           # every scenario in seconds (CI, development)
  bench/run.py --scenario hello,db --target preon \\
      --target "name=quarkus-native,start='./app-runner',url=http://127.0.0.1:8081,db-path=/fruits"
      (binary=PATH names the file whose size and libraries the footprint reports, when start is a script)
  bench/run.py --scenario limits,matrix --target preon --target "name=preon-image,image=preon:latest" \
      --limits "mem=32m,cpus=1;mem=64m"        (optional: other caps than the published ones)

Scenarios: hello (wrk -t10 -c50 -d60s /hello), hello-latency (wrk -c50 -d20s --latency), db (ab -n 10000 -c 100
on the DB path, cold then warm), startup (exec → first 200 on /hello and on the DB path, median of several
starts), footprint (binary, runtime closure, image size, idle and peak RSS, threads, CPU seconds per 10k
requests), limits (post 001's Docker table: 1 CPU and -m 8/16/32/64/128/256 MiB, the post's wrk -t10 -c50 on
/hello, memory as docker stats shows it, exited or OOM-killed), matrix (post 002: 100 MB/0.5 CPU, 200 MB/1 CPU,
300 MB/2 CPU, each with boot time, idle CPU % and RAM, ab -n 10000 -c 100 on the DB path cold and warm, RAM under
load, failed requests), c10k (10,000 concurrent keep-alive connections on the DB path), rounds (not in the classic
suite: wrk on /hello and the DB path at 50 and 100 connections, 3 rounds of 10 s with the order alternated, medians
and ratios; bench/compare.py runs it). Scenario parameters can be changed with --set KEY=VALUE. Caps apply through a
cgroup of its own to a process target, through docker run -m/--cpus to an image target. A target is preon (built
here, on a private PostgreSQL), a start command and a base URL, or an image (run with docker run --network host;
startup is then docker run → first 200 and the container's exec → first 200). A start command or an image gets
PGHOST/PGPORT/PGDATABASE/PGUSER of the same private PostgreSQL, an image also PREON_* and PORT. Targets take turns in each scenario (A B, then B A), on loopback only, every run bounded in time.
The published suite (--suite published, bench/scenarios/published.py) re-runs the five posts' tables in their own
layouts beside the posts' figures (bench/reference/): build (cold and warm), 000, 001 and 004 (a ramp of users).
`--target go`, `quarkus`, `quarkus-native`, `spring-webflux` and `spring-mvc` are the peer services in bench/peers/
(run.sh, build.sh: the posts' own stacks at pinned versions); "preon,name=x,env='PREON_…=…'"
is preon under another name with other settings (e.g. two preon targets side by side).
ramp004 (only in --suite all; bench/scenarios/open004.py): post 004 with an open workload — users arrive at a ramping
rate, run a 14-request read/write journey on a ~150 MB table and leave, until each target breaks; exits 3 when the
driver fell behind.
Results: bench/results/<time>/ with results.json, report.md and PNG charts (gnuplot).
"""
import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import time

from measure import (HERE, REPO, Cgroup, Target, ab, build_preon, cpu_s, free_port, log, metric_table, preon_env,
                     private_postgres_dir, results_header, rss_kb, runtime_closure, save, threads, wrk)
from measure import main_pid as process_main_pid
from measure.container import ImageTarget, PeakSampler, cgroup_mem_bytes, docker_ready, limit_label, parse_limits
from scenarios import open004, published, published_docker

CLASSIC = ["hello", "hello-latency", "db", "startup", "footprint", "limits", "matrix", "c10k"]
SCENARIOS = CLASSIC + ["rounds"] + published.SCENARIOS + open004.SCENARIOS
SUITES = {"classic": CLASSIC, "published": published.SCENARIOS, "all": SCENARIOS}
PEERS = os.environ.get("PREON_BENCH_PEERS") or os.path.join(HERE, "peers")  # another folder: tests' stand-ins
FIELDS = ("name", "start", "url", "db-path", "binary", "build", "clean", "cap", "artifact", "image", "preon", "env")
FULL = {"hello_s": 60, "latency_s": 20, "ab_n": 10000, "starts": 5, "limit_s": 60, "c10k_conns": 10000, "c10k_s": 30,
        "limits": "mem=8m,cpus=1;mem=16m,cpus=1;mem=32m,cpus=1;mem=64m,cpus=1;mem=128m,cpus=1;mem=256m,cpus=1",
        "matrix": "mem=100m,cpus=0.5;mem=200m,cpus=1;mem=300m,cpus=2", "idle_s": 10,
        "rounds_n": 3, "rounds_s": 10, "rounds_conns": "50,100"}
QUICK = {"hello_s": 2, "latency_s": 2, "ab_n": 2000, "starts": 2, "limit_s": 2, "c10k_conns": 1000, "c10k_s": 3,
         "limits": "mem=16m,cpus=1;mem=64m,cpus=1", "matrix": "mem=100m,cpus=0.5;mem=200m,cpus=1", "idle_s": 1,
         "rounds_n": 1, "rounds_s": 2, "rounds_conns": "50,100"}
FULL.update(published.FULL)
QUICK.update(published.QUICK)
FULL.update(open004.FULL)
QUICK.update(open004.QUICK)

# The peer services of bench/peers/: (what would be shipped, under build/: sized by the build and 001 scenarios;
# how each takes a {mib} MiB heap/memory cap). The JVMs' artifacts leave out the JRE: footprint's runtime closure
# and the image size count it.
PEER_TARGETS = {
    "go": ("go-peer", "GOMEMLIMIT={mib}MiB"),  # gin + pgx/v5, a static binary
    "quarkus": ("quarkus-app", "JAVA_OPTS=-Xmx{mib}m"),  # the fast-jar folder
    "quarkus-native": ("quarkus-peer-runner", "NATIVE_OPTS=-Xmx{mib}m"),  # a GraalVM native executable, if built
    "spring-webflux": ("spring-webflux-peer.jar", "JAVA_OPTS=-Xmx{mib}m"),
    "spring-mvc": ("spring-mvc-peer.jar", "JAVA_OPTS=-Xmx{mib}m"),
}


def peer_spec(name):
    """The peer service bench/peers/<name>/ (run.sh, build.sh → build/) as a target spec."""
    d = os.path.join(PEERS, name)
    artifact, cap = PEER_TARGETS[name]
    return {"name": name, "peer": name, "db-path": "/fruits", "build": "bash %s" % shlex.quote(os.path.join(d, "build.sh")),
            "clean": "rm -rf %s" % shlex.quote(os.path.join(d, "build")),
            "artifact": os.path.join(d, "build", artifact), "cap": cap}


def preon_spec():
    cold = os.path.join(REPO, "build-cold")
    return {"name": "preon", "preon": True, "db-path": "/fruits", "artifact": os.path.join(REPO, "build", "preon"),
            "build": "cmake -S %s -B %s -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build %s -j2 >/dev/null"
                     % (shlex.quote(REPO), shlex.quote(cold), shlex.quote(cold)),
            "clean": "rm -rf %s" % shlex.quote(cold)}


def parse_target(spec):
    """"name=x,start='cmd args',url=http://…,db-path=/fruits", or "name=x,image=repo:tag[,url=…]" (a container,
    run with docker run --network host) → dict. "preon" alone means preon itself, "go", "quarkus",
    "quarkus-native", "spring-webflux" and "spring-mvc" the peer services of bench/peers/. Optional: build='cmd' (timed by the build scenario), clean='cmd' (run
    before the cold build), artifact=PATH (file or folder whose size is reported), cap='…' (how the target takes a
    {mib} MiB heap cap: NAME=value is set in its environment, e.g. JAVA_OPTS=-Xmx{mib}m; anything else is put in
    place of {cap} in start=, or appended to it; without cap=, a cgroup memory cap as root), binary=PATH."""
    if spec == "preon":
        return preon_spec()
    if spec.startswith("preon,"):  # preon under another name and/or with settings: preon,name=x,env='PREON_…=…'
        out = dict(preon_spec(), **parse_target("name=preon,start=-,url=-," + spec[len("preon,"):]))
        for key in ("start", "url"):
            del out[key]
        return out
    if spec in PEER_TARGETS:
        return peer_spec(spec)
    lexer = shlex.shlex(spec, posix=True)
    lexer.whitespace = ","
    lexer.whitespace_split = True
    out = {"db-path": "/fruits"}
    for item in lexer:
        key, sep, value = item.partition("=")
        if not sep or key not in FIELDS:
            raise ValueError("bad target field %r (expected %s)" % (item, ", ".join(f + "=" for f in FIELDS)))
        out[key] = value
    for key in ("name", "image") if "image" in out else ("name", "start", "url"):
        if not out.get(key):
            raise ValueError("target %r lacks %s=" % (spec, key))
    return out


def make_target(t, preon_bin, pgport, pgdir=None, build_first=True):
    """The Target of spec `t`; its spec is kept as target.spec for the published scenarios."""
    extra = dict(kv.split("=", 1) for kv in shlex.split(t.get("env", "")))  # env='KEY=value KEY2=value'
    if t.get("preon"):
        port = free_port()
        target = Target(t["name"], [preon_bin], dict(preon_env(pgport, port), **extra), port, binary=preon_bin)
    elif t.get("image"):
        port = free_port()
        pg = dict(PGHOST="127.0.0.1", PGPORT=str(pgport), PGDATABASE="preon", PGUSER="postgres")
        env = dict({k: v for k, v in preon_env(pgport, port).items() if k.startswith("PREON_")}, PORT=str(port), **pg)
        target = ImageTarget(t["name"], t["image"], env, port, db_path=t["db-path"], url=(t.get("url") or "").rstrip("/"))
    elif t.get("peer"):
        target = make_peer(t, pgport, pgdir, build_first)
    else:
        env = dict(os.environ, PGHOST="127.0.0.1", PGPORT=str(pgport), PGDATABASE="preon", PGUSER="postgres", **extra)
        first = shlex.split(t["start"])[0]
        binary = t.get("binary") or (first if os.path.isfile(first) else None)
        start = t["start"].replace("{cap}", "")
        target = Target(t["name"], ["sh", "-c", start], env, db_path=t["db-path"], binary=binary, url=t["url"].rstrip("/"))
    target.spec = t
    return target


def make_peer(t, pgport, pgdir, build_first):
    """A peer of bench/peers/<name>/: run.sh on a free port against the same PostgreSQL (PORT, DATABASE_URL,
    POOL_SIZE, JAVA_OPTS from the environment); built first (untimed) when its build folder is missing. Without
    run.sh, a command that says so and fails, so that every table reports why."""
    d = os.path.join(PEERS, t["peer"])
    run_sh = os.path.join(d, "run.sh")
    port = free_port()
    url = subprocess.run([os.path.join(REPO, "scripts", "pg.sh"), "url", pgdir], capture_output=True, text=True,
                         check=True).stdout.strip() if pgdir else "postgresql://postgres@127.0.0.1:%d/preon" % pgport
    env = dict(os.environ, PORT=str(port), DATABASE_URL=url, POOL_SIZE=os.environ.get("POOL_SIZE", "8"),
               JAVA_OPTS=os.environ.get("JAVA_OPTS", ""))
    if not os.path.isfile(run_sh):
        why = "%s not found: this checkout has no %s peer service" % (os.path.relpath(run_sh, REPO), t["peer"])
        argv = ["sh", "-c", "echo %s >&2; exit 127" % shlex.quote(why)]
        t["missing"] = why
    else:
        argv = ["bash", run_sh]
        build_sh = os.path.join(d, "build.sh")
        if build_first and not os.path.exists(t["artifact"]) and os.path.isfile(build_sh):
            log("building %s (untimed): %s" % (t["name"], build_sh))
            subprocess.run(["nice", "-n", "10", "bash", build_sh], check=False)
    return Target(t["name"], argv, env, port, db_path=t["db-path"])


def main_pid(t):
    """The service's own process: a container's first process, or the start command's (measure.main_pid)."""
    return t.pid() if isinstance(t, ImageTarget) else process_main_pid(t)


class Runner:
    def __init__(self, args, targets):
        self.args, self.targets = args, targets
        self.p = dict(QUICK if args.quick else FULL)
        for item in getattr(args, "set", None) or []:
            key, _, value = item.partition("=")
            self.p[key] = type(FULL[key])(value) if isinstance(FULL[key], (int, float)) else value
        if getattr(args, "limit_seconds", None):
            self.p["limit_s"] = args.limit_seconds
        self.results = results_header(args, quick=args.quick, params=self.p, targets=[t.name for t in targets],
                                      scenarios={})
        self.started = time.monotonic()

    def record(self, scenario, target, value):
        self.results["scenarios"].setdefault(scenario, {})[target.name] = value

    def ensure(self, t):
        if not t.alive():
            t.start()

    def each(self, scenario, index, fn, eta_s, start=True):
        """Runs fn(target) for every target (started first unless start=False), alternating the order by scenario;
        a failure is recorded with the target's last log lines and the others go on."""
        order = self.targets if index % 2 == 0 else list(reversed(self.targets))
        for i, t in enumerate(order):
            log("%s: %s (%d/%d), ~%ds left in this scenario, %ds so far" % (
                scenario, t.name, i + 1, len(order), eta_s * (len(order) - i), time.monotonic() - self.started))
            try:
                if start:
                    self.ensure(t)
                self.record(scenario, t, fn(t))
            except Exception as e:  # noqa: BLE001 - reported, and the other targets still run
                self.record(scenario, t, {"error": str(e), "log_tail": t.log_tail()})
                t.stop()

    def run(self, scenarios):
        for i, s in enumerate(scenarios):
            fn = published.FUNCS.get(s) or open004.FUNCS.get(s)
            fn(self, i) if fn else getattr(self, "s_" + s.replace("-", "_"))(i)
        for t in self.targets:
            t.stop()
        return self.results

    def s_hello(self, i):
        self.each("hello", i, lambda t: wrk(t.url + "/hello", 50, self.p["hello_s"], threads=10), self.p["hello_s"])

    def s_hello_latency(self, i):
        self.each("hello-latency", i, lambda t: wrk(t.url + "/hello", 50, self.p["latency_s"], threads=2),
                  self.p["latency_s"])

    def s_db(self, i):
        def run(t):
            t.stop()  # cold: a fresh start, as the published Go-vs-Quarkus runs did
            t.start()
            return {"cold": ab(t.url + t.db_path, self.p["ab_n"], 100), "warm": ab(t.url + t.db_path, self.p["ab_n"], 100)}
        self.each("db", i, run, 20)

    def s_startup(self, i):
        def run(t):
            times, execs = [], []
            for _ in range(self.p["starts"]):
                t.stop()
                times.append(t.start())
                execs.append(getattr(t, "exec_first_200", None))
            out = {"hello_ms": statistics.median(x[0] for x in times) * 1000,
                   "db_ms": statistics.median(x[1] for x in times) * 1000}
            if None not in execs:  # a container: hello_ms is docker run → first 200, this the process's own start
                out["exec_hello_ms"] = statistics.median(execs) * 1000
            return out
        self.each("startup", i, run, 2 * self.p["starts"])

    def s_footprint(self, i):
        def run(t):
            t.stop()
            t.start()
            time.sleep(1)
            pid = main_pid(t)
            out = {"idle_rss_kb": rss_kb(pid), "threads": threads(pid)}
            if t.binary:
                out["binary_bytes"] = os.path.getsize(t.binary)
                out["closure_bytes"] = runtime_closure(t.binary)
            if isinstance(t, ImageTarget):
                out["image_bytes"] = t.image_bytes()
                out["idle_mem_bytes"] = t.mem_bytes()
            c0 = cpu_s(pid)
            h = wrk(t.url + "/hello", 50, self.p["latency_s"])
            out["peak_rss_hello_kb"] = rss_kb(pid, "VmHWM")
            d = wrk(t.url + t.db_path, 50, self.p["latency_s"])
            out["peak_rss_db_kb"] = rss_kb(pid, "VmHWM")
            if isinstance(t, ImageTarget):
                out["mem_after_load_bytes"] = t.mem_bytes()
            n = h["requests"] + d["requests"]
            out["cpu_s_per_10k"] = (cpu_s(pid) - c0) / n * 10000 if n else None
            return out
        self.each("footprint", i, run, 2 * self.p["latency_s"] + 3)

    def caps(self, scenario):
        return parse_limits(self.args.limits or self.p[scenario])

    def under_limits(self, t, row, fn):
        """Starts t under one row of caps (docker run flags for an image, a cgroup of its own for a process), runs
        fn(limited, mem, start_times) and returns its dict with "result": ok, OOM-killed, exited (code) or failed
        to start. mem() is the charge as docker stats shows it."""
        cg = None
        if isinstance(t, ImageTarget):
            limited = t.limited(row["mem_mib"], row["cpus"])
            mem = limited.mem_bytes
        else:
            cg = Cgroup("preon-bench-%d-%s" % (os.getpid(), limit_label(row).replace(" ", "").replace(",", "-")
                                               .replace(".", "_")), row["mem_mib"], row["cpus"])
            limited = Target(t.name, cg.wrap(t.argv), t.env, db_path=t.db_path, url=t.url)
            mem = lambda: cgroup_mem_bytes(cg)  # noqa: E731
        out, alive = {"result": "ok"}, None
        try:
            times = limited.start()
        except RuntimeError as e:
            out["result"] = "failed to start: %s" % e
        else:
            try:
                out.update(fn(limited, mem, times))
                alive = limited.alive()
            except Exception as e:  # noqa: BLE001 - the row says what happened
                out["result"] = "failed: %s" % e
        if cg is None:
            limited.stop()  # records the exit code and Docker's OOMKilled
            ex = limited.exit or {}
            if ex.get("oom_killed"):
                out["result"] = "OOM-killed"
            elif alive is False:
                out["result"] = "exited (%s)" % ex.get("exit_code")
        else:
            code = limited.proc.poll() if limited.proc else None
            limited.stop()
            cg.remove()
            if alive is False:
                out["result"] = "OOM-killed" if code == -9 else "exited (%s)" % code
        return out

    def s_limits(self, i):
        def run(t):
            t.stop()
            rows = {}
            for row in self.caps("limits"):
                def load(limited, mem, _times):
                    pid = main_pid(limited)
                    with PeakSampler(mem) as peak:
                        r = wrk(limited.url + "/hello", 50, self.p["limit_s"], threads=10)
                    return {"rps": r["rps"], "non2xx": r["non2xx"], "socket_errors": r["socket_errors"],
                            "rss_kb": rss_kb(pid, "VmHWM"), "mem_bytes": peak.peak}
                rows[limit_label(row)] = self.under_limits(t, row, load)
            return rows
        self.each("limits", i, run, len(self.caps("limits")) * (self.p["limit_s"] + 3))

    def s_matrix(self, i):
        def run(t):
            t.stop()
            rows = {}
            for row in self.caps("matrix"):
                def measure(limited, mem, times):
                    pid = main_pid(limited)
                    c0 = cpu_s(pid)
                    time.sleep(self.p["idle_s"])
                    out = {"boot_ms": times[1] * 1000, "idle_cpu_pct": (cpu_s(pid) - c0) / self.p["idle_s"] * 100,
                           "idle_mem_bytes": mem(), "idle_rss_kb": rss_kb(pid)}
                    with PeakSampler(mem) as peak:
                        out["cold"] = ab(limited.url + limited.db_path, self.p["ab_n"], 100)
                        out["warm"] = ab(limited.url + limited.db_path, self.p["ab_n"], 100)
                    out["load_mem_bytes"] = peak.peak
                    out["peak_rss_kb"] = rss_kb(pid, "VmHWM")
                    out["failed"] = sum(out[p]["failed"] + out[p]["non2xx"] + self.p["ab_n"] - out[p]["complete"]
                                        for p in ("cold", "warm"))
                    return out
                rows[limit_label(row)] = self.under_limits(t, row, measure)
            return rows
        self.each("matrix", i, run, len(self.caps("matrix")) * (self.p["idle_s"] + 20))

    def s_rounds(self, i):
        """Side by side: wrk on /hello and on the DB path at each connection count, rounds_n rounds with the order
        of the targets alternated, so that a noisy machine hurts every target alike; medians per target."""
        conns = [int(c) for c in str(self.p["rounds_conns"]).split(",") if c]
        secs, runs, failed = self.p["rounds_s"], {t.name: {} for t in self.targets}, set()
        total, done = self.p["rounds_n"] * len(conns) * 2 * len(self.targets), 0
        for rnd in range(self.p["rounds_n"]):
            order = self.targets if (i + rnd) % 2 == 0 else list(reversed(self.targets))
            for c in conns:
                for path in ("/hello", "db"):
                    for t in order:
                        done += 1
                        if t.name in failed:
                            continue
                        try:
                            self.ensure(t)
                            pid = main_pid(t)
                            c0 = cpu_s(pid)
                            r = wrk(t.url + (t.db_path if path == "db" else path), c, secs)
                            r["cpu_s"] = cpu_s(pid) - c0
                        except Exception as e:  # noqa: BLE001 - reported, and the other targets still run
                            self.record("rounds", t, {"error": str(e), "log_tail": t.log_tail()})
                            failed.add(t.name)
                            t.stop()
                            continue
                        runs[t.name].setdefault("%s c%d" % (path, c), []).append(r)
                        log("rounds [%d/%d, ~%ds left] %s %s -c%d: %.0f req/s, p99 %s ms" % (
                            done, total, (total - done) * secs, t.name, path, c, r["rps"], r["p99"]))
        for t in self.targets:
            if t.name not in failed:
                self.record("rounds", t, {key: rounds_medians(rs) for key, rs in runs[t.name].items()})

    def s_c10k(self, i):
        n = self.p["c10k_conns"]
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = min(hard, n + 4096) if hard != resource.RLIM_INFINITY else n + 4096
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))  # wrk's, and restarted targets'

        def run(t):
            t.stop()  # restarted to inherit the raised descriptor limit
            t.start()
            return wrk(t.url + t.db_path, n, self.p["c10k_s"], threads=2, script=os.path.join(HERE, "wrk", "percentiles.lua"))
        self.each("c10k", i, run, self.p["c10k_s"] + 2)


def rounds_medians(runs):
    """The medians of a series of wrk runs, and their errors summed."""
    def med(key):
        vals = [r[key] for r in runs if r.get(key) is not None]
        return statistics.median(vals) if vals else None
    cpu = [r["cpu_s"] / r["requests"] * 10000 for r in runs if r.get("requests")]
    return {"rps": med("rps"), "ok_rps": med("ok_rps"), "p50": med("p50"), "p99": med("p99"), "runs": len(runs),
            "errors": sum(r["non2xx"] + r["socket_errors"] for r in runs),
            "cpu_s_per_10k": statistics.median(cpu) if cpu else None}


def mib(v):
    return None if v is None else v / 1048576


def add(a, b):
    return None if a is None or b is None else a + b


def render(results):
    """Markdown: one table per scenario, rows = metrics, columns = targets, plus ratios to the first target."""
    names = results["targets"]
    sc = results["scenarios"]
    out = ["Measured %s on %d CPUs%s; targets: %s." % (results["date"], results["cpus"],
                                                       " (quick mode)" if results["quick"] else "", ", ".join(names))]

    def table(title, rows, intro=None):
        """rows: (label, [value per target], format, ratio?)"""
        out.extend(["", "### " + title, ""] + ([intro, ""] if intro else []) + [metric_table(names, rows).rstrip("\n")])

    def get(scenario, name, *keys):
        v = sc.get(scenario, {}).get(name, {})
        for k in keys:
            v = v.get(k) if isinstance(v, dict) else None
        return v

    for s in SCENARIOS:
        if s not in sc:
            continue
        if s in published.FUNCS:
            out.extend(published.render(results, s))
            continue
        if s in open004.FUNCS:
            out.extend(open004.render(results))
            continue
        errors = [(n, sc[s][n]["error"], sc[s][n].get("log_tail", "")) for n in names
                  if isinstance(sc[s].get(n), dict) and "error" in sc[s][n]]
        if s in ("hello", "hello-latency", "c10k"):
            rows = [("requests/s", [get(s, n, "rps") for n in names], "%.0f", True),
                    ("2xx answers/s", [get(s, n, "ok_rps") for n in names], "%.0f", True)]
            for p in (("p50", "p75", "p90", "p99") if s == "hello-latency" else ("p95",) if s == "c10k" else ()):
                rows.append(("%s latency (ms)" % p, [get(s, n, p) for n in names], "%.2f", True))
            rows.append(("non-2xx answers (503 = backpressure)", [get(s, n, "non2xx") for n in names], "%d", False))
            rows.append(("socket errors", [get(s, n, "socket_errors") for n in names], "%d", False))
            table(s, rows)
        elif s == "db":
            rows = []
            for phase in ("cold", "warm"):
                rows += [("%s requests/s" % phase, [get(s, n, phase, "rps") for n in names], "%.0f", True),
                         ("%s mean latency (ms)" % phase, [get(s, n, phase, "mean_ms") for n in names], "%.2f", True),
                         ("%s max latency (ms)" % phase, [get(s, n, phase, "max_ms") for n in names], "%d", True),
                         ("%s failed requests" % phase, [get(s, n, phase, "failed") for n in names], "%d", False)]
            table("db (ab)", rows)
        elif s == "rounds":
            keys = []
            for n in names:
                keys += [k for k in (sc[s].get(n) or {}) if k not in keys and k not in ("error", "log_tail")]
            rows = []
            for key in keys:
                path, c = key.split(" c")
                what = "%s -c%s" % ("DB path" if path == "db" else path, c)
                rows += [("%s requests/s" % what, [get(s, n, key, "rps") for n in names], "%.0f", True),
                         ("%s p50 latency (ms)" % what, [get(s, n, key, "p50") for n in names], "%.2f", True),
                         ("%s p99 latency (ms)" % what, [get(s, n, key, "p99") for n in names], "%.2f", True),
                         ("%s non-2xx + socket errors" % what, [get(s, n, key, "errors") for n in names], "%d", False),
                         ("%s CPU seconds per 10k requests" % what, [get(s, n, key, "cpu_s_per_10k") for n in names],
                          "%.3f", True)]
            p = results.get("params", {})
            table("rounds", rows, "wrk -t2, %s s per run, median of %s rounds, the order of the targets alternated." % (
                p.get("rounds_s"), p.get("rounds_n")))
        elif s == "startup":
            table("startup", [("exec (docker run) → first 200 on /hello (ms)", [get(s, n, "hello_ms") for n in names], "%.1f", True),
                              ("exec (docker run) → first 200 on the DB path (ms)", [get(s, n, "db_ms") for n in names], "%.1f", True),
                              ("container: process exec → first 200 on /hello (ms)", [get(s, n, "exec_hello_ms") for n in names], "%.1f", True)])
        elif s == "footprint":
            table("footprint", [(label, [get(s, n, k) for n in names], f, True) for label, k, f in (
                ("binary (bytes)", "binary_bytes", "%d"), ("runtime closure (bytes)", "closure_bytes", "%d"),
                ("image (bytes)", "image_bytes", "%d"), ("docker stats memory, idle (bytes)", "idle_mem_bytes", "%d"),
                ("docker stats memory, after the loads (bytes)", "mem_after_load_bytes", "%d"),
                ("idle RSS (kB)", "idle_rss_kb", "%d"), ("peak RSS, hello load (kB)", "peak_rss_hello_kb", "%d"),
                ("peak RSS, db load (kB)", "peak_rss_db_kb", "%d"), ("threads", "threads", "%d"),
                ("CPU seconds per 10k requests", "cpu_s_per_10k", "%.3f"))])
        elif s in ("limits", "matrix"):
            labels = []
            for n in names:
                for label in (sc[s].get(n) or {}):
                    if label not in labels and label not in ("error", "log_tail"):
                        labels.append(label)
            rows = []
            for label in labels:
                if s == "limits":
                    rows += [("%s: /hello requests/s" % label, [get(s, n, label, "rps") for n in names], "%.0f", True),
                             ("%s: memory, docker stats (MiB)" % label, [mib(get(s, n, label, "mem_bytes")) for n in names], "%.2f", True),
                             ("%s: peak RSS (kB)" % label, [get(s, n, label, "rss_kb") for n in names], "%d", True),
                             ("%s: non-2xx + socket errors" % label, [add(get(s, n, label, "non2xx"), get(s, n, label, "socket_errors")) for n in names], "%d", False)]
                else:
                    rows += [("%s: boot, start → first 200 on the DB path (ms)" % label, [get(s, n, label, "boot_ms") for n in names], "%.1f", True),
                             ("%s: idle CPU %%" % label, [get(s, n, label, "idle_cpu_pct") for n in names], "%.2f", False),
                             ("%s: idle RAM, docker stats (MiB)" % label, [mib(get(s, n, label, "idle_mem_bytes")) for n in names], "%.2f", True),
                             ("%s: RAM under load, docker stats peak (MiB)" % label, [mib(get(s, n, label, "load_mem_bytes")) for n in names], "%.2f", True),
                             ("%s: peak RSS (kB)" % label, [get(s, n, label, "peak_rss_kb") for n in names], "%d", True),
                             ("%s: ab cold requests/s" % label, [get(s, n, label, "cold", "rps") for n in names], "%.0f", True),
                             ("%s: ab warm requests/s" % label, [get(s, n, label, "warm", "rps") for n in names], "%.0f", True),
                             ("%s: ab warm mean latency (ms)" % label, [get(s, n, label, "warm", "mean_ms") for n in names], "%.2f", True),
                             ("%s: failed requests (cold + warm)" % label, [get(s, n, label, "failed") for n in names], "%d", False)]
            table(s, rows)
            for n in names:
                for label in labels:
                    r = get(s, n, label, "result")
                    out.append("- %s, %s: %s" % (n, label, r or "not run"))
            out.extend(["", published_docker.render(s)])
        for n, e, tail in errors:
            out.append("- **%s: %s**" % (n, e))
            if tail.strip():
                out.append("\n  last log lines:\n\n" + "".join("      " + l + "\n" for l in tail.strip().split("\n")[-10:]))
    return "\n".join(out) + "\n"


def charts(results, outdir):
    """PNG charts through gnuplot: requests/s per target per scenario, hello latency percentiles, RSS and
    requests/s under each memory limit. Returns the files written."""
    names, sc, written = results["targets"], results["scenarios"], []

    def plot(name, data, script):
        dat = os.path.join(outdir, name + ".dat")
        with open(dat, "w") as f:
            f.write(data)
        png = os.path.join(outdir, name + ".png")
        gp = ('set terminal pngcairo size 900,500 font ",10"; set output "%s"; set style data histograms; '
              'set style histogram clustered gap 1; set style fill solid 0.8 border -1; set key outside; '
              'set grid ytics; set yrange [0:*]; ' % png) + script % {"dat": dat}
        if subprocess.run(["gnuplot", "-e", gp], capture_output=True).returncode == 0 and os.path.exists(png):
            written.append(png)

    cols = " ".join('"%s"' % n for n in names)
    rows = []
    for s, key in (("hello", ("rps",)), ("hello-latency", ("rps",)), ("db", ("warm", "rps")), ("c10k", ("rps",))):
        if s in sc:
            vals = []
            for n in names:
                v = sc[s].get(n, {})
                for k in key:
                    v = v.get(k) if isinstance(v, dict) else None
                vals.append(v or 0)
            rows.append('"%s" %s' % (s, " ".join("%.1f" % v for v in vals)))
    if rows:
        plot("requests", "scenario %s\n%s\n" % (cols, "\n".join(rows)),
             'set title "requests/s"; set ylabel "requests/s"; plot for [i=2:%d] "%%(dat)s" using i:xtic(1) title columnhead'
             % (len(names) + 1))
    if "hello-latency" in sc:
        rows = ['"%s" %s' % (p, " ".join("%.3f" % ((sc["hello-latency"].get(n) or {}).get(p) or 0) for n in names))
                for p in ("p50", "p75", "p90", "p99")]
        plot("latency", "percentile %s\n%s\n" % (cols, "\n".join(rows)),
             'set title "/hello latency (wrk -c50)"; set ylabel "ms"; '
             'plot for [i=2:%d] "%%(dat)s" using i:xtic(1) title columnhead' % (len(names) + 1))
    if "limits" in sc:
        labels = [l for l in next((v for v in sc["limits"].values() if isinstance(v, dict)), {}) if l.startswith("memory")]
        if labels:
            rows = ['"%s" %s %s' % (l.replace("memory ", ""),
                                    " ".join("%.0f" % (((sc["limits"].get(n) or {}).get(l) or {}).get("rss_kb") or 0) for n in names),
                                    " ".join("%.0f" % (((sc["limits"].get(n) or {}).get(l) or {}).get("rps") or 0) for n in names))
                    for l in labels]
            rss_cols = " ".join('"%s RSS kB"' % n for n in names)
            rps_cols = " ".join('"%s req/s"' % n for n in names)
            plot("limits", "limit %s %s\n%s\n" % (rss_cols, rps_cols, "\n".join(rows)),
                 'set title "under memory limits: peak RSS (kB) and /hello requests/s"; set logscale y; set yrange [1:*]; '
                 'plot for [i=2:%d] "%%(dat)s" using i:xtic(1) title columnhead' % (2 * len(names) + 1))
    published.charts(results, plot)
    open004.charts(results, plot)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", action="append", default=[],
                    help="preon, go, quarkus, quarkus-native, spring-webflux, spring-mvc, or name=…,start='…',url=…[,db-path=…,build=…,clean=…,artifact=…,cap=…]")
    ap.add_argument("--suite", choices=sorted(SUITES), default="classic",
                    help="classic: the first 7 scenarios (the default); published: build, 000, 001, 004; all")
    ap.add_argument("--scenario", default=None, help="comma-separated, from: " + ", ".join(SCENARIOS))
    ap.add_argument("--quick", action="store_true", help="every scenario in seconds")
    ap.add_argument("--limit-seconds", type=int, help="length of each limits load (default: the post's 60 s)")
    ap.add_argument("--limits", help='caps for limits and matrix instead of the published ones, e.g. "mem=32m,cpus=1;mem=64m"')
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override one of the scenario parameters (e.g. rounds_n=5, rounds_s=10, rounds_conns=50,100, "
                         "limit_s=10): " + ", ".join(sorted(FULL)))
    ap.add_argument("--out", default=None)
    ap.add_argument("--render", metavar="DIR", help="only rewrite DIR's report.md and charts from its results.json")
    args = ap.parse_args()
    if args.render:
        with open(os.path.join(args.render, "results.json")) as f:
            results = json.load(f)
        pngs = charts(results, args.render)
        save(results, render(results) + "".join("\n![%s](%s)\n" % (os.path.basename(p), os.path.basename(p))
                                                for p in pngs), args.render)
        return
    for item in args.set:
        if item.partition("=")[0] not in FULL or "=" not in item:
            ap.error("--set %s: expected KEY=VALUE with KEY one of %s" % (item, ", ".join(sorted(FULL))))
    specs = [parse_target(s) for s in (args.target or ["preon"])]
    scenarios = [s for s in args.scenario.split(",") if s] if args.scenario else SUITES[args.suite]
    for s in scenarios:
        if s not in SCENARIOS:
            ap.error("unknown scenario %r" % s)
    if args.limits:
        try:
            parse_limits(args.limits)
        except ValueError as e:
            ap.error(str(e))
    if ({"limits", "matrix"} & set(scenarios)) and any("image" not in t for t in specs) and os.geteuid() != 0:
        ap.error("the limits and matrix scenarios need root for a process target (cgroups)")
    if any("image" in t for t in specs) and docker_ready():
        ap.error(docker_ready())
    preon_bin = build_preon()
    with private_postgres_dir("synchronous_commit = off") as (pgdir, pgport):
        targets = [make_target(t, preon_bin, pgport, pgdir, "build" not in scenarios) for t in specs]
        try:
            runner = Runner(args, targets)
            runner.pgdir = pgdir
            results = runner.run(scenarios)
        finally:
            for t in targets:
                t.stop()
    out = args.out or os.path.join(HERE, "results", time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)
    pngs = charts(results, out)
    report = render(results) + "".join("\n![%s](%s)\n" % (os.path.basename(p), os.path.basename(p)) for p in pngs)
    save(results, report, out)
    failed = open004.driver_failures(results)
    for name, why in failed:
        log("RAMP004 RUN FAILED: the driver fell behind on %s: %s" % (name, why))
    if failed:
        raise SystemExit(3)


if __name__ == "__main__":
    main()
