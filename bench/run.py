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
and ratios; `--scenario rounds,startup,footprint --target preon --target go` runs it). Scenario parameters can be changed with --set KEY=VALUE. Caps apply through a
cgroup of its own to a process target, through docker run -m/--cpus to an image target. A target is preon (built
here, on a private PostgreSQL), a start command and a base URL, or an image (run with docker run --network host;
startup is then docker run → first 200 and the container's exec → first 200). A start command or an image gets
PGHOST/PGPORT/PGDATABASE/PGUSER of the same private PostgreSQL, an image also PREON_* and PORT. Targets take turns in each scenario (A B, then B A), on loopback only, every run bounded in time.
The published suite (--suite published, bench/scenarios/published.py) re-runs the five posts' tables in their own
layouts beside the posts' figures (bench/reference/): post 001's Docker table (limits) and post 002's matrix on each
target's container image (--images: preon's Dockerfile, bench/peers/images.sh; built when missing), build (cold and
warm), 000 and 001 (medians of 3 rounds, the order rotated), 003 (start → first request) and 004 (a ramp of users).
`--target go`, `quarkus`, `quarkus-native`, `spring-webflux` and `spring-mvc` are the peer services in bench/peers/
(run.sh, build.sh: the posts' own stacks at pinned versions); "preon,name=x,env='PREON_…=…'"
is preon under another name with other settings (e.g. two preon targets side by side).
ramp004 (only in --suite all; bench/scenarios/open004.py): post 004 with an open workload — users arrive at a ramping
rate, run a 14-request read/write journey on a ~150 MB table and leave, until each target breaks; exits 3 when the
driver fell behind or had less than twice the busiest target's requests/s as its own ceiling.
--partition puts the roles on CPUs of their own (bench/measure/cpus.py): the load generator (wrk, ab, the ramp004
driver) in one set, each process target and PostgreSQL in others, the target optionally under a CPU quota; on by
default when ramp004 runs (RAMP004_PARTITION: the load on the first CPU, the rest to the target and PostgreSQL, the
target capped at 0.5 CPU so that every stack breaks within the post's schedule), off otherwise (an image target's
container is not placed: docker starts it).
The partition, and the CPU count nproc, a JVM and Go detect in the target's set, are in every report and results.json.
Results: bench/results/<time>/ with results.json, report.md and PNG charts (gnuplot).
"""
import argparse
import os
import shlex
import signal
import subprocess
import sys
import time

import scenarios
from measure import record
from measure import (HERE, REPO, Target, build_preon, free_port, log, preon_env, private_postgres_dir, results_header,
                     save)
from measure.container import ImageTarget, docker_ready, parse_limits
from measure.cpus import Partition, report_sentence
from scenarios.open004 import driver_failures

SCENARIOS = scenarios.names()
SUITES = {suite: scenarios.names(suite) for suite in scenarios.suites()}
FULL, QUICK = scenarios.FULL, scenarios.QUICK
PEERS = os.environ.get("PREON_BENCH_PEERS") or os.path.join(HERE, "peers")  # another folder: tests' stand-ins
FIELDS = ("name", "start", "url", "db-path", "binary", "build", "clean", "cap", "artifact", "image", "preon", "env",
          "run-args")

# The peer services of bench/peers/: (what would be shipped, under build/: sized by the build and 001 scenarios;
# how each takes a {mib} MiB heap/memory cap). The JVMs' artifacts leave out the JRE: footprint's runtime closure
# and the image size count it.
PEER_TARGETS = {
    "go": ("go-peer", "GOMEMLIMIT={mib}MiB"),  # gin + pgx/v5, a static binary
    "quarkus": ("quarkus-app", "JAVA_OPTS=-Xmx{mib}m"),  # the fast-jar folder
    # a SubstrateVM executable from preon's native-image toolchain (quarkus-native/toolchain/), build/lib/ beside it;
    # its cold build (clean: rm -rf build) assembles the toolchain again too
    "quarkus-native": ("quarkus-peer-runner", "NATIVE_OPTS=-Xmx{mib}m"),
    "spring-webflux": ("spring-webflux-peer.jar", "JAVA_OPTS=-Xmx{mib}m"),
    "spring-mvc": ("spring-mvc-peer.jar", "JAVA_OPTS=-Xmx{mib}m"),
    # the posts' other rows: RESTEasy classic with JDBC (001), reactive routes (000), the uber-jar packaging and
    # Spring MVC on Undertow (004)
    "quarkus-classic": ("quarkus-app", "JAVA_OPTS=-Xmx{mib}m"),
    "quarkus-routes": ("quarkus-app", "JAVA_OPTS=-Xmx{mib}m"),
    "quarkus-uber": ("quarkus-peer-1.0-runner.jar", "JAVA_OPTS=-Xmx{mib}m"),
    "spring-mvc-undertow": ("spring-mvc-undertow-peer.jar", "JAVA_OPTS=-Xmx{mib}m"),
    "quarkus-classic-native": ("quarkus-peer-runner", "NATIVE_OPTS=-Xmx{mib}m"),  # as quarkus-native's
    # Spring Boot's native route (process-aot + native-maven-plugin) with the same toolchain
    "spring-webflux-native": ("spring-webflux-peer", "NATIVE_OPTS=-Xmx{mib}m"),
    "spring-mvc-native": ("spring-mvc-peer", "NATIVE_OPTS=-Xmx{mib}m"),
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
    run with docker run --network host) → dict. "preon" alone means preon itself, a name of PEER_TARGETS ("go",
    "quarkus", "quarkus-native", "spring-webflux", "spring-mvc", …) the peer service of bench/peers/. Optional: build='cmd' (timed by the build scenario), clean='cmd' (run
    before the cold build), artifact=PATH (file or folder whose size is reported), cap='…' (how the target takes a
    {mib} MiB heap cap: NAME=value is set in its environment, e.g. JAVA_OPTS=-Xmx{mib}m; anything else is put in
    place of {cap} in start=, or appended to it; without cap=, a cgroup memory cap as root), binary=PATH; an image
    also env='KEY=value …' (docker run -e) and run-args='…' (more docker run flags, e.g. --security-opt
    seccomp=unconfined)."""
    if spec == "preon":
        return preon_spec()
    if spec.startswith("preon,"):  # preon under another name, with settings or another build: preon,name=x,env=…,binary=…
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


def make_target(t, preon_bin, pgport, pgdir=None, build_first=True, partition=None):
    """The Target of spec `t` (kept as target.spec for the published scenarios), started inside `partition`'s target
    set when it is a process."""
    def argv_in(argv):  # a process target's command, in the partition's target set
        return partition.wrap("target", argv) if partition is not None else argv
    extra = dict(kv.split("=", 1) for kv in shlex.split(t.get("env", "")))  # env='KEY=value KEY2=value'
    if t.get("preon"):
        port = free_port()
        binary = t.get("binary") or preon_bin  # preon,name=preon-stock,binary=build-stock/preon: another build of it
        return Target(t["name"], argv_in([binary]), dict(preon_env(pgport, port), **extra), port, binary=binary, spec=t)
    if t.get("image"):
        port = free_port()
        pg = dict(PGHOST="127.0.0.1", PGPORT=str(pgport), PGDATABASE="preon", PGUSER="postgres")
        env = dict({k: v for k, v in preon_env(pgport, port).items() if k.startswith("PREON_")}, PORT=str(port), **pg,
                   **extra)  # env='JVM_MEMORY=none': an image's own setting overridden (docker run -e)
        return ImageTarget(t["name"], t["image"], env, port, db_path=t["db-path"], url=(t.get("url") or "").rstrip("/"),
                           spec=t, run_args=shlex.split(t.get("run-args", "")))  # run-args='--security-opt …'
    if t.get("peer"):
        return make_peer(t, pgport, pgdir, build_first, argv_in)
    env = dict(os.environ, PGHOST="127.0.0.1", PGPORT=str(pgport), PGDATABASE="preon", PGUSER="postgres", **extra)
    first = shlex.split(t["start"])[0]
    binary = t.get("binary") or (first if os.path.isfile(first) else None)
    start = t["start"].replace("{cap}", "")
    return Target(t["name"], argv_in(["sh", "-c", start]), env, db_path=t["db-path"], binary=binary,
                  url=t["url"].rstrip("/"), spec=t)


def make_peer(t, pgport, pgdir, build_first, argv_in=lambda argv: argv):
    """A peer of bench/peers/<name>/: run.sh on a free port against the same PostgreSQL (PORT, DATABASE_URL,
    POOL_SIZE, JAVA_OPTS from the environment); built first (untimed): its build.sh does nothing when the artifact is
    newer than every source, and rebuilds a stale one (which run.sh would otherwise start as it is). Without
    run.sh, a command that says so and fails, so that every table reports why. argv_in(argv): the command as it is
    started (make_target's: in the CPU partition's target set)."""
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
        if build_first and os.path.isfile(build_sh):
            log("building %s unless up to date (untimed): %s" % (t["name"], build_sh))
            subprocess.run(["nice", "-n", "10", "bash", build_sh], check=False)
    return Target(t["name"], argv_in(argv), env, port, db_path=t["db-path"], spec=t)


def setting(published, value):
    """--set KEY=VALUE's value in the type of the published one: a number, or a list of numbers written with commas
    ("32,128"; empty: none, e.g. caps_mib= for 001 without its capped rows)."""
    if isinstance(published, list):
        return [type(published[0] if published else 0)(v) for v in value.split(",") if v.strip()]
    return type(published)(value) if isinstance(published, (int, float)) else value


class Runner:
    """Runs the registered scenarios (scenarios/) on the targets: a scenario's fn(runner, i) calls each(), ensure()
    and record(), and reads p (the parameters), args, targets, results, pgdir (PostgreSQL's folder), partition (the
    CPU partition, or None), images (limits and matrix on each target's image) and image_target(spec, image) (the
    Target of a spec's container image)."""

    def __init__(self, args, targets, pgdir=None, partition=None, images=False, image_target=None):
        self.args, self.targets = args, targets
        self.pgdir, self.partition, self.images, self.image_target = pgdir, partition, images, image_target
        self.p = dict(QUICK if args.quick else FULL)
        for item in getattr(args, "set", None) or []:
            key, _, value = item.partition("=")
            self.p[key] = setting(FULL[key], value)
        if getattr(args, "limit_seconds", None):
            self.p["limit_s"] = args.limit_seconds
        self.results = results_header(args, quick=args.quick, params=self.p, targets=[t.name for t in targets],
                                      scenarios={})
        if partition is not None:
            self.results["partition"] = partition.record(
                partition.detect() if partition.enabled else partition.detect(("nproc",)))
        self.started = time.monotonic()

    def record(self, scenario, target, value):
        self.results["scenarios"].setdefault(scenario, {})[target.name] = value

    def ensure(self, t):
        if not t.alive():
            t.start()

    def each(self, scenario, index, fn, eta_s, start=True, rotate=None, label=""):
        """Runs fn(target) for every target (started first unless start=False), alternating the order by scenario,
        or with the order rotated by `rotate` places (rounds); a failure is recorded with the target's last log
        lines and the others go on."""
        if rotate is not None:
            k = rotate % len(self.targets)
            order = self.targets[k:] + self.targets[:k]
        else:
            order = self.targets if index % 2 == 0 else list(reversed(self.targets))
        for i, t in enumerate(order):
            log("%s%s: %s (%d/%d), ~%ds left in this pass, %ds so far" % (
                scenario, label, t.name, i + 1, len(order), eta_s * (len(order) - i), time.monotonic() - self.started))
            try:
                if start:
                    self.ensure(t)
                self.record(scenario, t, fn(t))
            except Exception as e:  # noqa: BLE001 - reported, and the other targets still run
                self.record(scenario, t, {"error": str(e), "log_tail": t.log_tail()})
                t.stop()

    def run(self, names):
        for i, s in enumerate(names):
            scenarios.REGISTRY[s].run(self, i)
        for t in self.targets:
            t.stop()
        return self.results


def render(results):
    """Markdown of a run's results (a measure.record.Run, or its JSON): the run's header, then each scenario's
    section in the order of the registry (scenarios/)."""
    rec = record.run_from(results)
    out = ["Measured %s on %d CPUs%s; targets: %s." % (rec.date, rec.cpus, " (quick mode)" if rec.quick else "",
                                                       ", ".join(rec.targets)), "", partition_line(rec)]
    if rec.cpu_model or rec.runtimes:  # recorded since 2026-12-04: a figure is only compared with its own run's
        out[2:2] = ["Machine: %s, kernel %s. Runtimes: %s." % (
            rec.cpu_model or "CPU model not recorded", rec.kernel or "?",
            "; ".join("%s %s" % (k, v) for k, v in sorted((rec.runtimes or {}).items()))), ""]
    for s in scenarios.REGISTRY.values():
        if s.name in rec.scenarios:
            out.extend(s.render(rec, s.name))
    return "\n".join(out) + "\n"


# ramp004's default partition: the driver on the first CPU, the target and PostgreSQL on the rest, the target
# capped at half a CPU. Uncapped, on the rest of this 2-CPU machine, preon served 15,500 req/s at 1,160 users/s on
# 2026-12-01 without breaking: past the post's 800 users/s. Capped, every stack breaks within the schedule, and the
# driver's ceiling stays several times the busiest target's rate (the CPU partition, bench/measure/cpus.py).
RAMP004_PARTITION = "quota=0.5"


def partition_line(rec):
    """The report's sentence on the CPU partition, with what each runtime detected in the target's set."""
    return report_sentence(rec.partition)


def charts(results, outdir):
    """PNG charts through gnuplot, each scenario module's (scenarios.plots). Returns the files written."""
    written = []

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

    for fn in scenarios.PLOTS:
        fn(results, plot)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", action="append", default=[],
                    help="preon, " + ", ".join(PEER_TARGETS) + ", or name=…,start='…',url=…[,db-path=…,build=…,clean=…,artifact=…,cap=…]")
    ap.add_argument("--suite", choices=sorted(SUITES), default="classic",
                    help="; ".join("%s: %s%s" % (k, "every scenario" if k == "all" else ", ".join(v),
                                                 " (the default)" if k == "classic" else "")
                                   for k, v in SUITES.items()))
    ap.add_argument("--scenario", default=None, help="comma-separated, from: " + ", ".join(SCENARIOS))
    ap.add_argument("--quick", action="store_true", help="every scenario in seconds")
    ap.add_argument("--limit-seconds", type=int, help="length of each limits load (default: the post's 60 s)")
    ap.add_argument("--limits", help='caps for limits and matrix instead of the published ones, e.g. "mem=32m,cpus=1;mem=64m"')
    ap.add_argument("--images", action="store_true",
                    help="limits and matrix on each target's container image (preon: docker build .; a peer: "
                         "bench/peers/images.sh NAME; built when missing, except in --quick mode); --suite published "
                         "implies it")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override one of the scenario parameters (e.g. rounds_n=5, rounds_s=10, rounds_conns=50,100, "
                         "limit_s=10): " + ", ".join(sorted(FULL)))
    ap.add_argument("--partition", default=None,
                    help="CPU sets for the roles: off, auto (the load generator on the first CPU, the target and "
                         "PostgreSQL on the rest) or [load=LIST,target=LIST,postgres=LIST,][quota=CPUS] (unnamed sets as "
                         "auto's); default %s when ramp004 runs, off otherwise (bench/measure/cpus.py)" % RAMP004_PARTITION)
    ap.add_argument("--out", default=None)
    ap.add_argument("--render", metavar="DIR", help="only rewrite DIR's report.md and charts from its results.json")
    args = ap.parse_args()
    if args.render:
        results = record.load(os.path.join(args.render, "results.json")).raw
        pngs = charts(results, args.render)
        save(results, render(results) + "".join("\n![%s](%s)\n" % (os.path.basename(p), os.path.basename(p))
                                                for p in pngs), args.render)
        return
    for item in args.set:
        if item.partition("=")[0] not in FULL or "=" not in item:
            ap.error("--set %s: expected KEY=VALUE with KEY one of %s" % (item, ", ".join(sorted(FULL))))
    specs = [parse_target(s) for s in (args.target or ["preon"])]
    names = [s for s in args.scenario.split(",") if s] if args.scenario else SUITES[args.suite]
    for s in names:
        if s not in SCENARIOS:
            ap.error("unknown scenario %r" % s)
    if args.limits:
        try:
            parse_limits(args.limits)
        except ValueError as e:
            ap.error(str(e))
    use_images = args.images or args.suite == "published"
    if ({"limits", "matrix"} & set(names)) and not use_images and any("image" not in t for t in specs) \
            and os.geteuid() != 0:
        ap.error("the limits and matrix scenarios need root for a process target (cgroups)")
    if any("image" in t for t in specs) and docker_ready():
        ap.error(docker_ready())
    try:
        partition = Partition.parse(args.partition or (RAMP004_PARTITION if "ramp004" in names else "off"))
    except ValueError as e:
        ap.error(str(e))
    preon_bin = build_preon()
    # SIGTERM (kill PID, a CI's timeout) unwinds like Ctrl-C: the targets, the private PostgreSQL and the CPU sets
    # are removed by the blocks below, not left running (a run ended this way left all three on 2026-12-02)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    with partition, private_postgres_dir("synchronous_commit = off") as (pgdir, pgport):
        partition.place_postgres(pgdir)
        targets = [make_target(t, preon_bin, pgport, pgdir, "build" not in names, partition) for t in specs]
        try:
            runner = Runner(args, targets, pgdir=pgdir, partition=partition, images=use_images,
                            image_target=lambda spec, image: make_target(
                                {"name": spec["name"], "image": image, "db-path": spec.get("db-path", "/fruits")},
                                preon_bin, pgport, partition=partition))
            results = runner.run(names)
        finally:
            for t in targets:
                t.stop()
    out = args.out or os.path.join(HERE, "results", time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)
    pngs = charts(results, out)
    report = render(results) + "".join("\n![%s](%s)\n" % (os.path.basename(p), os.path.basename(p)) for p in pngs)
    save(results, report, out)
    failed = driver_failures(results)
    for name, why in failed:
        log("RAMP004 RUN DOES NOT COUNT: %s: %s" % (name, why))
    if failed:
        raise SystemExit(3)


if __name__ == "__main__":
    main()
