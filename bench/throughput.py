#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The throughput table in one command: preon beside TechEmpower's C h2o entry (if built), the Go gin
peer (bench/peers/go, if present), a bare epoll responder (bench/limit/epoll_hello.c, built here) and what
PostgreSQL itself answers with 16 pipelined queries per Sync (pgbench, bench/limit/*_pipe16.sql).

Tests: /plaintext (c50), /plaintext pipelined x16 (c256), /json, /db, /fortunes, /queries?queries=20,
/updates?queries=20 (c64 each), /fruits (c100), /hello (c50); wrk -t2, every test also at c1 for latency.
Each round runs every test against every target that serves it, the order of the targets changing from round to
round (--order: by default rotated every two rounds and run backwards every other round); the report gives medians
over the rounds, ratios, the issue's goals (met/missed), p99 and c1 latency, and peak RSS. One private PostgreSQL 15
on 127.0.0.1 (scripts/pg.sh, synchronous_commit off as in TFB), without pg_stat_statements; `--variant pgss` repeats
the database rows with it loaded (the cluster restarted).

  bench/throughput.py                              # 5 s per run, 3 rounds
  bench/throughput.py --variant pgss               # plus the database rows with pg_stat_statements
  bench/throughput.py --tfb-h2o /tmp/anchors/tfb-h2o --go-gin bench/peers/go/run.sh
  bench/throughput.py --quick --targets preon,pgbench   # seconds, a smoke test
  bench/throughput.py --partition auto             # wrk on CPU 0, the servers and PostgreSQL on the others
  bench/throughput.py --targets preon,preon-stock,preon-previous --previous /tmp/old/build/preon
                                                   # preon beside its stock build (build-stock/, --stock) and an
                                                   # older commit's build, each with its own tree's config
Results: report.md and results.json in --out (default bench/results/throughput-<time>/).
"""
import argparse
import os
import re
import statistics
import subprocess

from measure import (HERE, PG_SH, REPO, Target, build_preon, free_port, log, pgbench, preon_env, private_postgres_dir,
                     results_header, save, wrk)
from measure import main_pid, rss_kb
from measure import preon_build, tcp
from measure.cpus import Partition
from measure.rounds import ORDERS
from measure.rounds import order as rounds_order
from measure.throughput_report import TESTS, ms, render

PIPELINE_LUA = os.path.join(HERE, "wrk", "pipeline.lua")
# TechEmpower's PostgreSQL runs with synchronous_commit off; so does this one, so that /updates compare.
PG_CONF = "synchronous_commit = off"
PGSS_CONF = "shared_preload_libraries = 'pg_stat_statements'"
TFB_DEFAULT = "/tmp/anchors/tfb-h2o"
STOCK_DEFAULT = os.path.join(REPO, "build-stock", "preon")  # cmake -S . -B build-stock -DPREON_DEPS=system
# preon-twin is preon as shipped a second time, in the same rounds: what the two differ by is the machine's noise.
# preon as shipped keeps TechEmpower's rule (a Sync after every query), as do preon-c1 to preon-c4 (one, two, three
# and four connections per thread instead of the default's choice: the report compares with preon's best of them); preon-batch shares Syncs among requests' reads, "beyond TechEmpower's rules", in a column of its own. TFB h2o runs at -m1 (TechEmpower's flag, tuned for 28
# cores), -m2, -m3 and -m4 database connections per thread: the report compares with its best per test.
# preon-stock and preon-previous are other builds of preon as shipped (--stock, --previous: the stock build on Debian's
# shared libraries, an older commit's build), each with the configuration of its own source tree; the report sets
# them beside preon, every test.
MEMBERS = ["preon", "preon-twin", "preon-stock", "preon-previous", "preon-c1", "preon-c2", "preon-c3", "preon-c4",
           "preon-batch", "tfb-h2o", "tfb-h2o-m2", "tfb-h2o-m3", "tfb-h2o-m4", "go-gin", "bare", "pgbench", "pgbench-one"]
TFB_SETTINGS = {"tfb-h2o": [], "tfb-h2o-m2": ["-m2"], "tfb-h2o-m3": ["-m3"], "tfb-h2o-m4": ["-m4"]}
DB_TESTS = ["db", "fortunes", "queries", "updates"]


class Http:
    """A service under test (measure.Target) and the tests it serves."""

    def __init__(self, name, serves, make_target):
        self.name, self.serves, self.make_target, self.target = name, serves, make_target, None
        self.status = "ok"
        self.partition = Partition.parse("off")

    def start(self, pgport):
        self.target = self.make_target(pgport, free_port())
        self.target.argv = self.partition.wrap("target", self.target.argv)
        self.target.start(timeout=300)  # the Go peer builds itself on its first start

    def stop(self):
        if self.target:
            self.target.stop()

    def peak_rss_kb(self):
        return rss_kb(main_pid(self.target), "VmHWM") if self.target and self.target.alive() else None

    def measure(self, test, conns, duration):
        script, args = (PIPELINE_LUA, [str(test["depth"])]) if test["depth"] > 1 else (None, [])
        res = wrk(self.target.url + test["path"], conns, duration, script=script, script_args=args)
        # wrk times a pipelined batch once, when all of it is answered; with few batches timed (a short run) it
        # prints percentiles of 0.00us beside a non-zero average: no figure rather than a wrong one
        for k in ("p50", "p75", "p90", "p99"):
            if res.get(k) == 0:
                res[k] = None
        return res


class Pgbench:
    """PostgreSQL's own ceiling: the test's statement, 16 per Sync in pipeline mode; queries/s = tps x 16."""
    name, serves, status = "pgbench", ("db", "fruits"), "ok"
    SCRIPTS = {"db": "world_pipe16.sql", "fruits": "fruits_pipe16.sql"}
    PER_TX, CLIENTS = 16, 2

    def start(self, pgport):
        self.pgport = pgport

    def stop(self):
        pass

    def peak_rss_kb(self):
        return None

    def measure(self, test, conns, duration):
        res = pgbench(self.pgport, os.path.join(HERE, "limit", self.SCRIPTS[test["key"]]), duration, self.CLIENTS)
        return dict(res, ok_rps=res["tps"] * self.PER_TX, rps=res["tps"] * self.PER_TX)


class PgbenchOne(Pgbench):
    """PostgreSQL's own rate with one World lookup per transaction (16 clients): what a /db that keeps TechEmpower's
    Sync after every query can at most reach."""
    name, serves = "pgbench-one", ("db",)
    SCRIPTS = {"db": "world_one.sql"}
    PER_TX, CLIENTS = 1, 16


def build_bare(build_dir):
    """Compiles the bare epoll responder into build_dir; returns its path, or None if cc failed."""
    os.makedirs(build_dir, exist_ok=True)
    out = os.path.join(build_dir, "epoll_hello")
    r = subprocess.run(["cc", "-O2", "-pthread", "-o", out, os.path.join(HERE, "limit", "epoll_hello.c")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        log("epoll_hello did not build: %s" % r.stderr.strip())
        return None
    return out


def make_members(args, partition):
    """Every member of the table, with its status: ok, or why it is absent from this run. Each runs inside
    `partition`'s target set."""
    wanted = set(args.targets.split(","))
    preon_bin = build_preon() if "preon" in wanted else None
    tfb = args.tfb_h2o or TFB_DEFAULT
    gin = args.go_gin or os.path.join(REPO, "bench", "peers", "go", "run.sh")
    bare = build_bare(os.path.join(REPO, "build")) if "bare" in wanted else None

    def preon_as(name, **extra):  # as scripts/run.sh runs it: config/preon.yaml, the rest from the environment
        def make(pg, port):
            env = dict(preon_env(pg, port, args.sync), **extra)
            return Target(name, [preon_bin, "--config", os.path.join(REPO, "config", "preon.yaml")], env, port)
        return make

    def preon_build_as(name, binary):  # another build, with its own source tree's config/preon.yaml
        def make(pg, port):
            return Target(name, [binary, "--config", preon_build.config_of(binary)], preon_env(pg, port, args.sync),
                          port)
        return make

    def tfb_h2o(name):  # the anchor's run.sh: TechEmpower's flags, on 127.0.0.1, with -mN where asked
        def make(pg, port):
            env = dict(os.environ, PGHOST="127.0.0.1", PGPORT=str(pg), PGDATABASE="preon", PGUSER="postgres")
            return Target(name, [os.path.join(tfb, "run.sh"), str(port)] + TFB_SETTINGS[name] + tfb_threads(partition),
                          dict(env, **tfb_taskset(partition)), port, db_path="/db", hello_path="/plaintext")
        return make

    def go_gin(pg, port):
        env = dict(os.environ, PORT=str(port), LISTEN="127.0.0.1",
                   DATABASE_URL="postgresql://postgres@127.0.0.1:%d/preon" % pg)
        return Target("go-gin", [gin], env, port)

    def bare_responder(pg, port):
        return Target("bare", [bare, str(port), "2"], dict(os.environ), port, db_path="/hello")

    tfb_tests = ["plaintext", "pipelined", "json"] + DB_TESTS
    members = [Http("preon", [t["key"] for t in TESTS], preon_as("preon")),
               Http("preon-twin", [t["key"] for t in TESTS], preon_as("preon-twin")),
               Http("preon-stock", [t["key"] for t in TESTS], preon_build_as("preon-stock", args.stock)),
               Http("preon-previous", [t["key"] for t in TESTS], preon_build_as("preon-previous", args.previous)),
               Http("preon-c1", DB_TESTS, preon_as("preon-c1", PREON_DATABASE_CONNECTIONS_PER_THREAD="1")),
               Http("preon-c2", DB_TESTS, preon_as("preon-c2", PREON_DATABASE_CONNECTIONS_PER_THREAD="2")),
               Http("preon-c3", DB_TESTS, preon_as("preon-c3", PREON_DATABASE_CONNECTIONS_PER_THREAD="3")),
               Http("preon-c4", DB_TESTS, preon_as("preon-c4", PREON_DATABASE_CONNECTIONS_PER_THREAD="4")),
               Http("preon-batch", DB_TESTS + ["fruits"],
                    preon_as("preon-batch", PREON_DATABASE_STRICT_SYNC="batch", PREON_DATABASE_SYNC="batch")),
               Http("tfb-h2o", tfb_tests, tfb_h2o("tfb-h2o")),
               Http("tfb-h2o-m2", DB_TESTS, tfb_h2o("tfb-h2o-m2")),
               Http("tfb-h2o-m3", DB_TESTS, tfb_h2o("tfb-h2o-m3")),
               Http("tfb-h2o-m4", DB_TESTS, tfb_h2o("tfb-h2o-m4")),
               Http("go-gin", ["fruits", "hello"], go_gin),
               Http("bare", ["plaintext", "pipelined", "hello"], bare_responder),
               Pgbench(), PgbenchOne()]
    tfb_built = os.access(os.path.join(tfb, "bin", "h2o-app"), os.X_OK) and os.path.isfile(os.path.join(tfb, "run.sh"))
    absent = {"tfb-h2o": None if tfb_built else "not built", "tfb-h2o-m2": None if tfb_built else "not built",
              "tfb-h2o-m3": None if tfb_built else "not built", "tfb-h2o-m4": None if tfb_built else "not built",
              "go-gin": None if os.path.isfile(gin) else "not available",
              "preon-stock": None if os.access(args.stock, os.X_OK) else "not built (%s)" % args.stock,
              "preon-previous": None if args.previous and os.access(args.previous, os.X_OK) else
              "not built (%s)" % (args.previous or "no --previous"),
              "bare": None if bare or "bare" not in wanted else "not built"}
    for m in members:
        m.status = "not run" if m.name not in wanted else absent.get(m.name) or "ok"
        m.partition = partition
    return members


def shipped_choice(member, pgport):
    """What preon as shipped chose inside the target's set (--check-config): its connections per thread and why, so
    that a report can name the preon-cN run with the same settings."""
    t = member.make_target(pgport, free_port())
    argv = member.partition.wrap("target", t.argv + ["--check-config"])
    r = subprocess.run(argv, env=t.env, capture_output=True, text=True, timeout=60)
    m = re.search(r"^# database\.connections_per_thread: (\d+) \((.*)\)$", r.stdout, re.M)
    if r.returncode != 0 or not m:
        return {"status": "--check-config (exit %d): %s" % (r.returncode, (r.stderr or r.stdout).strip()[-200:])}
    return {"status": "ok", "connections_per_thread": int(m.group(1)), "why": m.group(2)}


def tfb_threads(partition):
    """TFB h2o's -t inside a partition: one thread per CPU of the target's set (run.sh's -t2 would pin a thread to
    a CPU outside it, which h2o-app's pthread_setaffinity turns into an abort)."""
    return ["-t%d" % len(partition.target)] if partition.enabled else []


def tfb_taskset(partition):
    """run.sh's own `taskset -c 0` (TechEmpower's CMD) is left out inside a partition: the set is the target's."""
    return {"TFB_TASKSET": ""} if partition.enabled else {}


def enable_pgss(pgdir):
    """Loads pg_stat_statements into the private cluster: a restart, then the extension created and checked."""
    with open(os.path.join(pgdir, "data", "postgresql.conf"), "a") as f:
        f.write("\n%s\n" % PGSS_CONF)
    subprocess.run([PG_SH, "stop", pgdir], check=True)
    subprocess.run([PG_SH, "start", pgdir], check=True)
    subprocess.run([PG_SH, "psql", pgdir, "-c", "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"], check=True,
                   stdout=subprocess.DEVNULL)


def pgss_rows(pgdir):
    """Statements pg_stat_statements has seen: the proof that it was loaded and tracking."""
    r = subprocess.run([PG_SH, "psql", pgdir, "-Atc", "SELECT count(*) FROM pg_stat_statements"],
                       capture_output=True, text=True)
    return int(r.stdout.strip()) if r.returncode == 0 and r.stdout.strip().isdigit() else None


def run_variant(args, members, tests, pgport):
    """Every round of `tests` against the running members; returns the per-round results and peak RSS."""
    active = [m for m in members if m.status == "ok"]
    rounds = []
    if not args.quick:
        for t in tests:  # warm-up: caches, plans, the World cache of TFB's entry
            for m in active:
                if t["key"] in m.serves and not m.name.startswith("pgbench"):
                    m.measure(t, 16, 1)
    for r in range(args.rounds):
        order = rounds_order(active, r, args.order)
        log("round %d/%d, order: %s" % (r + 1, args.rounds, " ".join(m.name for m in order)))
        got = {}
        for t in tests:
            for m in order:
                if t["key"] not in m.serves:
                    continue
                res = {"load": m.measure(t, t["conns"], args.duration)}
                if not m.name.startswith("pgbench") and t["depth"] == 1 and args.c1_duration > 0:
                    res["c1"] = m.measure(t, 1, args.c1_duration)
                got.setdefault(t["key"], {})[m.name] = res
                errs = res["load"].get("non2xx", 0) + res["load"].get("socket_errors", 0) + res["load"].get("failed", 0)
                log("%-9s %-8s %10.0f/s  p99 %s ms  c1 p50 %s ms  errors %d" % (
                    t["key"], m.name, res["load"]["ok_rps"], ms(res["load"].get("p99")),
                    ms(res.get("c1", {}).get("p50")), errs))
        rounds.append(got)
    return {"rounds": rounds, "medians": medians(rounds), "peak_rss_kb": {m.name: m.peak_rss_kb() for m in active}}


def medians(rounds):
    """Per test and member: the median over rounds of req/s, p99 under load, c1 p50/p99; errors summed."""
    out = {}
    for got in rounds:
        for key, by in got.items():
            for name, res in by.items():
                out.setdefault(key, {}).setdefault(name, []).append(res)
    med = {}
    for key, by in out.items():
        for name, runs in by.items():
            def m(get):
                vals = [v for v in (get(x) for x in runs) if v is not None]
                return statistics.median(vals) if vals else None
            med.setdefault(key, {})[name] = {
                "rps": m(lambda x: x["load"]["ok_rps"]), "per_round": [x["load"]["ok_rps"] for x in runs],
                "p99": m(lambda x: x["load"].get("p99")), "c1_p50": m(lambda x: x.get("c1", {}).get("p50")),
                "c1_p99": m(lambda x: x.get("c1", {}).get("p99")),
                "errors": sum(x["load"].get("non2xx", 0) + x["load"].get("socket_errors", 0) +
                              x["load"].get("failed", 0) for x in runs)}
    return med


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=5, help="seconds per loaded run (default 5)")
    ap.add_argument("--c1-duration", type=int, default=2, help="seconds per one-connection run (default 2)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--order", default="alternating", choices=sorted(ORDERS),
                    help="how the targets take turns from round to round (default %(default)s; "
                         "rotated: the only order before 2026-12-03)")
    ap.add_argument("--targets", default=",".join(MEMBERS), help="subset of " + ",".join(MEMBERS))
    ap.add_argument("--tfb-h2o", help="TechEmpower h2o build (default %s if built)" % TFB_DEFAULT)
    ap.add_argument("--stock", default=STOCK_DEFAULT, metavar="BINARY",
                    help="preon-stock's binary (default %(default)s: cmake -DPREON_DEPS=system -B build-stock)")
    ap.add_argument("--previous", default=None, metavar="BINARY",
                    help="preon-previous's binary: an older commit's build (e.g. /tmp/preon-old/build/preon)")
    ap.add_argument("--go-gin", help="the Go peer's run.sh (default bench/peers/go/run.sh if present)")
    ap.add_argument("--variant", choices=["plain", "pgss"], action="append", default=None,
                    help="pgss: also the database rows with pg_stat_statements loaded (repeatable; plain is always run)")
    ap.add_argument("--sync", default=None, help="preon's database.sync (default: config/preon.yaml's)")
    ap.add_argument("--quick", action="store_true", help="1 s per run, 1 round, no warm-up: a smoke test")
    ap.add_argument("--partition", default="off",
                    help="CPU sets: off (the default), auto (wrk on the first CPU, the servers and PostgreSQL on the "
                         "rest) or load=LIST,target=LIST,postgres=LIST[,quota=CPUS] (bench/measure/cpus.py)")
    ap.add_argument("--congestion-control", default=None, metavar="NAME",
                    help="the machine's TCP congestion control for this run (e.g. cubic, bbr), restored after; "
                         "default: as it is (recorded either way; bench/measure/tcp.py says why it matters)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    args.stock = os.path.abspath(args.stock)
    args.previous = args.previous and os.path.abspath(args.previous)
    try:
        partition = Partition.parse(args.partition)
    except ValueError as e:
        ap.error(str(e))
    if args.quick:
        args.duration, args.c1_duration, args.rounds = 1, 1, 1
    bad = set(args.targets.split(",")) - set(MEMBERS)
    if bad:
        ap.error("unknown targets: %s" % ",".join(sorted(bad)))
    variants = ["plain"] + (["pgss"] if "pgss" in (args.variant or []) else [])

    members = make_members(args, partition)  # builds outside the partition: on every CPU
    cc = tcp.CongestionControl(args.congestion_control)
    try:
        cc.__enter__()
    except RuntimeError as e:
        ap.error(str(e))
    with cc, partition:
        results = run_all(args, members, variants, partition)
    save(results, render(results), args.out, "throughput-")


def run_all(args, members, variants, partition):
    """Every variant's rounds, with PostgreSQL in the partition's postgres set; returns the results record."""
    commit = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    results = results_header(args, preon_commit=commit or None, postgres=PG_CONF,
                             status={m.name: m.status for m in members}, variants={})
    log("targets: %s" % ", ".join("%s (%s)" % (m.name, m.status) for m in members))
    results["partition"] = partition.record(partition.detect(("nproc",)))
    results["builds"] = {m.name: preon_build.describe(b) for m, b in (
        (m, {"preon": os.path.join(REPO, "build", "preon"), "preon-stock": args.stock,
             "preon-previous": args.previous}.get(m.name)) for m in members)
        if b and m.status == "ok"}
    with private_postgres_dir(PG_CONF) as (pgdir, pgport):
        partition.place_postgres(pgdir)
        for variant in variants:
            if variant == "pgss":
                enable_pgss(pgdir)
                partition.place_postgres(pgdir)
            tests = [t for t in TESTS if variant == "plain" or t["db"]]
            started = []
            try:
                for m in members:
                    if m.status == "ok":
                        try:
                            m.start(pgport)
                            started.append(m)
                        except RuntimeError as e:
                            m.status = "failed to start"
                            log("%s: %s\n%s" % (m.name, e, m.target.log_tail() if m.target else ""))
                results["status"] = {m.name: m.status for m in members}
                shipped = [m for m in started if m.name == "preon"]
                if shipped and "preon_shipped" not in results:
                    results["preon_shipped"] = shipped_choice(shipped[0], pgport)
                    log("preon as shipped: %s" % results["preon_shipped"])
                results["variants"][variant] = run_variant(args, members, tests, pgport)
                if variant == "pgss":
                    results["variants"][variant]["pgss_statements"] = pgss_rows(pgdir)
            finally:
                for m in started:
                    m.stop()
    results["loadavg_end"] = os.getloadavg()
    return results


if __name__ == "__main__":
    main()
