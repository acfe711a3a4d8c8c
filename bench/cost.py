#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The cost per request, in measures that the machine's noise cannot blur, in one command: for preon, its stock build on
Debian's shared libraries (--stock, if built) and TechEmpower's C h2o entry (TFB h2o, if built) on the same
PostgreSQL, per TechEmpower test type (/plaintext, /plaintext pipelined ×16,
/json, /db, /fortunes, /queries=20, /updates=20):

  - user-space instructions per request of the server (valgrind --tool=callgrind: two whole runs of N1 and N2
    requests after a warm-up, one server thread; the difference over N2 − N1), with the self cost by object
    (h2o, libpq, jansson, libc, libssl, preon) and the top functions by inclusive cost (bench/measure/callgrind.py);
  - PostgreSQL's user-space instructions per request on the database tests, the same way with the cluster under
    callgrind and the server native (bench/measure/pg_callgrind.py), beside the server's and added to them;
  - system calls per request by kind, the server's and its PostgreSQL backends' (strace -c -f);
  - where the server's CPU spends its time per request, with the roles pinned (perf record on the target's CPU
    while wrk runs: the server's code, the kernel on its behalf, PostgreSQL's code and kernel, the rest), and from
    it an estimate of what the server's own code could ever gain, as noisy as the totals (bench/measure/cpuprofile.py),
    and in the same runs the packets the server and PostgreSQL send per request (bench/measure/packets.py);
  - throughput with the roles pinned (bench/throughput.py --partition auto: wrk on one CPU, the server and its
    PostgreSQL on the other), preon as shipped and with 1 to 4 connections per thread, TFB h2o at -m1 to -m4;
    the ratio to TFB h2o at its best both of the medians and round by round (the same round's runs divided).

  bench/cost.py                                  # everything (~20 min on 2 cores)
  bench/cost.py --tfb-h2o /tmp/anchors/tfb-h2o   # TFB h2o's build (default $TFB_H2O_DIR, else that folder)
  bench/cost.py --quick --no-throughput          # a handful of requests: a smoke test
  bench/cost.py --no-profile --no-throughput     # counts only (no perf, no pinned runs)
  bench/cost.py --no-pg-count                    # without PostgreSQL's instruction count (~6 min less)
  bench/cost.py --stock none                     # without the stock build's column (--stock BINARY: another build)

The stock build (default build-stock/preon: cmake -S . -B build-stock -DPREON_DEPS=system) is measured as preon is,
in every part of the same run, with the config/preon.yaml of its own source tree; without a build its column says
why. TFB h2o is optional: without a build its column says why. preon is counted from its normal release build
(CMakeLists.txt: -O3, no -march); build TFB h2o at a baseline ISA (e.g. -march=x86-64-v3): TechEmpower's
-march=native build dies under valgrind on AVX-512 instructions. Results: report.md and results.json in --out
(default bench/results/cost-<time>/).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from measure import (HERE, REPO, build_preon, free_port, log, preon_env, private_postgres_dir, results_header, save)
from measure import callgrind, cost_report, cpuprofile, fixed_count, pg_callgrind, preon_build, syscalls, wrk
from measure.cpus import Partition
from measure.rounds import ORDERS
from measure.rounds import order as rounds_order
from measure.cost_report import TESTS, Count, CostResults, PgCount, ServerRun, Syscalls
from measure.services import Target
from measure.throughput_report import TESTS as THROUGHPUT_TESTS  # the connections per test type

PG_CONF = "synchronous_commit = off"  # as TechEmpower's, and as bench/throughput.py's
TFB_DEFAULT = os.environ.get("TFB_H2O_DIR") or "/tmp/anchors/tfb-h2o"
STOCK_DEFAULT = os.path.join(REPO, "build-stock", "preon")
PIPELINE_LUA = os.path.join(HERE, "wrk", "pipeline.lua")
# requests per counted run (N1, N2) and per strace run, by test: a request of /queries=20 costs 20 queries
FULL = {"n": {"plaintext": (2000, 10000), "pipelined": (2000, 10000), "json": (2000, 10000), "db": (1000, 5000),
              "fortunes": (1000, 5000), "queries": (200, 1000), "updates": (200, 1000)},
        "warmup": 500, "strace_n": 5000, "strace_n_db": 1000,
        # with PostgreSQL under callgrind (fewer: every query runs there ~50× slower)
        "pg_n": {"db": (500, 2500), "fortunes": (500, 2500), "queries": (100, 500), "updates": (100, 500)}}
QUICK = {"n": {k: (16, 48) for k in FULL["n"]}, "warmup": 16, "strace_n": 32, "strace_n_db": 16,
         "pg_n": {k: (16, 48) for k in FULL["pg_n"]}}


def preon_server(binary, pgport, port, valgrind=False):
    """preon as shipped (config/preon.yaml, the rest from the environment), one server thread. Under valgrind
    (valgrind=True), where preon runs tens of times slower than PostgreSQL answers, its queue-wait bound
    (database.max_queue_wait_ms, 1 s) is raised to 9 s, under request_timeout_ms: with the shipped bound a stall of
    valgrind's (translating code it meets for the first time) made a counted /updates=20 shed with 503 (CI,
    2026-12-02), and a shed request's instructions are not a served one's. It also caps batches by the service
    time valgrind inflates: raised, the batches are nearer those of a native run."""
    env = dict(preon_env(pgport, port, None), PREON_SERVER_THREADS="1")
    if valgrind:
        env["PREON_DATABASE_MAX_QUEUE_WAIT_MS"] = "9000"
        # once a quick run's counted /db of the stock build was answered 503 throughout, on a machine at load 9
        # (2026-12-05; not seen again in four runs): a connect that valgrind stretched past the 3 s bound would do
        # that, and the stock build's libpq5 connects slowest there (GSSAPI's Kerberos set-up first)
        env["PREON_DATABASE_CONNECT_TIMEOUT_MS"] = "60000"
    argv = [binary, "--config", preon_build.config_of(binary)]
    return argv, env, "release build (CMakeLists.txt: -O3, no -march), %s; config/preon.yaml of its source tree as " \
                      "shipped, server.threads 1 (under valgrind database.max_queue_wait_ms 9000, " \
                      "connect_timeout_ms 60000)" % preon_build.sentence(preon_build.describe(binary))


TFB_VARIANTS = {
    # TechEmpower's code as it is: PQsendPipelineSync queues each query's Sync and one flush writes the batch (libpq
    # 15 with that function backported, in lib/libpq-backport/, as the anchor's run.sh loads it)
    "backport": ("h2o-app", ("lib/libpq-backport", "lib")),
    # PQpipelineSync in its place, against Debian's libpq 15: one flush, one send(), per query
    "stocklibpq": ("h2o-app-stocklibpq", ("lib",)),
}


def tfb_server(tfb, variant, pgport, port, valgrind=False):
    """TFB h2o with TechEmpower's flags (-a20 -m1), one thread (-t1), on 127.0.0.1 (as the anchor's run.sh starts it,
    without its taskset: valgrind must exec the binary itself). It has no queue bound to raise under valgrind."""
    binary, libs = TFB_VARIANTS[variant]
    exe = os.path.join(tfb, "bin", binary)
    conninfo = "host=127.0.0.1 port=%d dbname=preon user=postgres sslmode=disable" % pgport
    argv = [exe, "-a20", "-m1", "-t1", "-b", "127.0.0.1", "-p", str(port), "-d", conninfo,
            "-f", os.path.join(tfb, "share", "h2o-app", "template")]
    env = dict(os.environ, LD_LIBRARY_PATH=":".join(os.path.join(tfb, d) for d in libs))
    return argv, env, "a build found in %s, the %s variant (its own flags: see the note beside this run)" % (tfb, variant)


def tfb_status(tfb, variant):
    for rel in (("bin", TFB_VARIANTS[variant][0]), ("share", "h2o-app", "template")):
        if not os.path.exists(os.path.join(tfb, *rel)):
            return "not built: no %s (optional; --tfb-h2o DIR or TFB_H2O_DIR)" % os.path.join(tfb, *rel)
    return "ok"


def measure_server(name, make, pgdir, pgport, p, tests, work):
    """Every test's instruction count and syscalls for one server; a failing test is recorded and the rest go on."""
    argv, env, build = make(pgport, 0)
    statics = preon_build.static_groups(argv[0]) if os.path.basename(argv[0]) == "preon" else {}
    run = ServerRun(status="ok", argv=argv, build=build, counts={}, syscalls={}, errors={})
    for key, label, path, depth in tests:
        n1, n2 = p["n"][key]
        try:
            files, statuses = [], {}
            for n in (n1, n2):
                port = free_port()
                argv, env, _ = make(pgport, port, True)
                out = os.path.join(work, "%s-%s-%d.callgrind" % (name, key, n))
                statuses = callgrind.run(argv, env, port, "/plaintext", path, n, p["warmup"], 8, depth, out,
                                         os.path.join(work, "%s.log" % name))["statuses"]
                files.append(out)
            pr = callgrind.per_request(files[0], files[1], n1, n2, argv[0], statics=statics)
            ir = [callgrind.totals(f) for f in files]
            run.counts[key] = Count(n1=n1, n2=n2, ir1=ir[0], ir2=ir[1], statuses=statuses, **pr)
            log("%-8s %-9s %8.0f instructions per request" % (name, key, pr["ir_per_request"]))
            run.syscalls[key] = strace_run(name, make, pgdir, pgport, p, key, path, depth, work)
            sc = run.syscalls[key]
            log("%-8s %-9s %6.2f syscalls per request, %6.2f in PostgreSQL (%d backends)" % (
                name, key, sc.per_request("server"), sc.per_request("postgres"), sc.backends))
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            run.errors[key] = str(e)
            log("%s %s failed: %s" % (name, key, e))
    return run


def strace_run(name, make, pgdir, pgport, p, key, path, depth, work):
    """The server started natively, warmed up, then strace over a fixed count of requests."""
    port = free_port()
    argv, env, _ = make(pgport, port)
    t = Target(name, argv, env, port, db_path="/plaintext", hello_path="/plaintext")
    t.start(timeout=60)
    try:
        fixed_count.run("127.0.0.1", port, path, p["warmup"], 8, depth)
        n = p["strace_n_db"] if key in ("queries", "updates") else p["strace_n"]
        got = syscalls.count(t.proc.pid, pgdir, port, path, n, 8, depth, os.path.join(work, "%s-%s" % (name, key)))
        return Syscalls(n=n, **got)
    finally:
        t.stop()


def measure_postgres(makes, servers, pgdir, pgport, p, tests, work):
    """PostgreSQL's instructions per request on the database tests, for each server that ran (pg_callgrind): the
    cluster under callgrind for the whole phase, the servers native, one at a time. A failure is recorded under
    "<test> postgres" and the rest go on."""
    db_tests = [t for t in tests if t[0] in p["pg_n"]]
    names = [n for n in makes if servers[n].status == "ok"]
    if not db_tests or not names:
        return
    with pg_callgrind.ValgrindPostgres(pgdir, os.path.join(work, "pg-callgrind"),
                                       os.path.join(work, "pg-valgrind.log")) as pg:
        for key, _, path, depth in db_tests:
            for name in names:
                n1, n2 = p["pg_n"][key]
                try:
                    a, b = (pg_callgrind.run(pg, lambda port: makes[name](pgport, port), path, n, p["warmup"], 8,
                                             depth, name) for n in (n1, n2))
                    c = servers[name].pg_counts[key] = PgCount(**pg_callgrind.per_request(a, b, n1, n2))
                    log("%-8s %-9s %8.0f PostgreSQL instructions per request (%d backends)" % (
                        name, key, c.ir_per_request, c.backends))
                except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                    servers[name].errors["%s postgres" % key] = str(e)
                    log("%s %s (PostgreSQL's count) failed: %s" % (name, key, e))


def preon_under_slow_postgres(binary, pgport, port):
    """preon as shipped, its time bounds raised for a cluster under callgrind, where a backend's start-up takes
    seconds and the first run of each of PostgreSQL's code paths as long (valgrind translates it): with the shipped
    bounds (preon_server's under valgrind) a quick /queries=20 shed 40 of 48 with 503 (2026-12-02). A shed request
    sends PostgreSQL nothing, so the bounds change which requests are counted, not what one costs there."""
    argv, env, _ = preon_server(binary, pgport, port)
    return argv, dict(env, PREON_DATABASE_CONNECT_TIMEOUT_MS="120000", PREON_SERVER_REQUEST_TIMEOUT_MS="300000",
                      PREON_DATABASE_MAX_QUEUE_WAIT_MS="240000", PREON_DATABASE_QUERY_TIMEOUT_MS="240000")


def tfb_under_slow_postgres(tfb, variant, pgport, port):
    """TFB h2o with its database timeout (-o, seconds; the connect's too) raised for a cluster under callgrind: at
    connect it prepares its statements, hundreds of them, seconds there."""
    argv, env, _ = tfb_server(tfb, variant, pgport, port)
    return argv + ["-o", "300"], env


def profile(args, tests, servers, binary):
    """Where the target CPU's time goes per request (bench/measure/cpuprofile.py), preon as shipped, its stock build
    (when measured) and TFB h2o at TechEmpower's flags, one server thread each, the roles pinned as for the
    throughput: per round, one wrk run per
    test and server (the servers' order as --order says), each after a 1 s warm-up; {"status": why} when it cannot run
    here."""
    why = cpuprofile.unavailable()
    part = Partition.parse(args.partition)
    if why or not part.enabled:
        return {"status": why or "needs a CPU partition (--partition)"}
    conns = {t["key"]: t["conns"] for t in THROUGHPUT_TESTS}
    makes = {"preon": lambda pg, port: preon_server(binary, pg, port)}
    if servers["preon-stock"].status == "ok":
        makes["preon-stock"] = lambda pg, port: preon_server(args.stock, pg, port)
    if servers["tfb-h2o"].status == "ok":
        makes["tfb-h2o"] = lambda pg, port: tfb_server(args.tfb_h2o_throughput or args.tfb_h2o, args.tfb_variant, pg,
                                                       port)
    rounds = 1 if args.quick else args.rounds
    res = {"status": "ok", "freq": cpuprofile.FREQ, "duration": args.profile_duration, "rounds": rounds,
           "order": args.order,
           "servers": {n: {} for n in makes}, "errors": {}}
    with part, private_postgres_dir(PG_CONF) as (pgdir, pgport), \
            tempfile.TemporaryDirectory(prefix="preon-prof-") as work:
        postmaster = part.place_postgres(pgdir)[0]
        res["partition"] = part.record()
        targets = {}
        try:
            for name, make in makes.items():  # all started at once: those not loaded wait in epoll_wait
                port = free_port()
                argv, env, _ = make(pgport, port)
                targets[name] = Target(name, part.wrap("target", argv), env, port, db_path="/plaintext",
                                       hello_path="/plaintext")
                targets[name].start(timeout=60)
            names = list(targets)
            for r in range(rounds):
                order = rounds_order(names, r, args.order)
                for key, _, path, depth in tests:
                    for name in order:
                        profile_one(args, res, targets[name], key, path, depth, conns[key], part, postmaster, work)
        finally:
            for t in targets.values():
                t.stop()
    return res


def profile_one(args, res, t, key, path, depth, conns, part, postmaster, work):
    """One profiled wrk run of one test against one server, appended to its rounds; a failure is recorded."""
    script, script_args = (PIPELINE_LUA, [str(depth)]) if depth > 1 else (None, [])

    def run(secs):
        return wrk(t.url + path, conns, secs, script=script, script_args=script_args)
    try:
        if not args.quick:
            run(1)
        got = cpuprofile.profile(part.target, t.proc.pid, postmaster, lambda: run(args.profile_duration), work)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        res["errors"]["%s %s" % (t.name, key)] = str(e)
        log("profile %s %s failed: %s" % (t.name, key, e))
        return
    res["servers"][t.name].setdefault(key, []).append(got)
    us = {k: v or 0 for k, v in got["us_per_request"].items()}
    log("%-8s %-9s %6.0f req/s, µs per request: server %.1f + %.1f kernel, PostgreSQL %.1f + %.1f kernel, other "
        "%.1f" % (t.name, key, got["rps"] or 0, us["server_user"], us["server_kernel"], us["postgres_user"],
                  us["postgres_kernel"], us["other"]))


def throughput(args, out, stock):
    """bench/throughput.py with the roles pinned (the stock build too when `stock`); returns its medians per round,
    or None when it failed."""
    tp_out = os.path.join(out, "throughput")
    targets = "preon,preon-twin,%spreon-c1,preon-c2,preon-c3,preon-c4,tfb-h2o,tfb-h2o-m2,tfb-h2o-m3,tfb-h2o-m4" % (
        "preon-stock," if stock else "")
    argv = [sys.executable, os.path.join(HERE, "throughput.py"), "--partition", args.partition, "--targets", targets,
            "--stock", args.stock if stock else "none",
            "--c1-duration", "0", "--duration", str(args.duration), "--rounds", str(args.rounds), "--order", args.order,
            "--out", tp_out,
            "--tfb-h2o", args.tfb_h2o_throughput or args.tfb_h2o]
    log("pinned throughput: %s" % " ".join(argv[1:]))
    if subprocess.run(argv, stdout=subprocess.DEVNULL).returncode != 0:
        return None
    with open(os.path.join(tp_out, "results.json")) as f:
        r = json.load(f)
    med = r["variants"]["plain"]["medians"]
    return {"out": os.path.relpath(tp_out, out), "partition": r["partition"], "duration": args.duration,
            "tfb_h2o": args.tfb_h2o_throughput or args.tfb_h2o,
            "rounds": args.rounds, "order": args.order, "status": r["status"], "shipped": r.get("preon_shipped"),
            "per_round": {k: {m: v["per_round"] for m, v in by.items()} for k, by in med.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tfb-h2o", default=TFB_DEFAULT, help="TFB h2o's build folder (default %(default)s)")
    ap.add_argument("--tfb-h2o-throughput", default=None,
                    help="another TFB h2o build for the pinned throughput only (e.g. TechEmpower's -march=native one, "
                         "which valgrind cannot run); default --tfb-h2o's")
    ap.add_argument("--tfb-variant", default="backport", choices=sorted(TFB_VARIANTS),
                    help="TFB h2o's binary: backport (TechEmpower's code, PQsendPipelineSync, one write per batch; the "
                         "default) or stocklibpq (PQpipelineSync, one write per query)")
    ap.add_argument("--stock", default=STOCK_DEFAULT, metavar="BINARY",
                    help="the stock build measured beside preon (default %(default)s: cmake -DPREON_DEPS=system -B "
                         "build-stock); none: no such column")
    ap.add_argument("--tests", default=",".join(t[0] for t in TESTS), help="subset of the test types")
    ap.add_argument("--quick", action="store_true", help="a handful of requests per run: a smoke test")
    ap.add_argument("--no-throughput", action="store_true", help="counts only")
    ap.add_argument("--no-profile", action="store_true", help="no CPU profile (perf) of the pinned servers")
    ap.add_argument("--no-pg-count", action="store_true",
                    help="no count of PostgreSQL's instructions (its cluster under callgrind) on the database tests")
    ap.add_argument("--profile-duration", type=int, default=None,
                    help="seconds per profiled wrk run (default 4; 1 with --quick)")
    ap.add_argument("--duration", type=int, default=4, help="seconds per pinned wrk run (default 4)")
    ap.add_argument("--rounds", type=int, default=3, help="pinned throughput rounds (default 3)")
    ap.add_argument("--order", default="alternating", choices=sorted(ORDERS),
                    help="how the servers take turns from round to round (default %(default)s; "
                         "rotated: the only order before 2026-12-03)")
    ap.add_argument("--partition", default="auto", help="the pinned run's CPU partition (default auto)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    wanted = args.tests.split(",")
    bad = set(wanted) - {t[0] for t in TESTS}
    if bad:
        ap.error("unknown tests: %s" % ",".join(sorted(bad)))
    tests = [t for t in TESTS if t[0] in wanted]
    p = QUICK if args.quick else FULL
    if args.profile_duration is None:
        args.profile_duration = 1 if args.quick else 4
    out = args.out or os.path.join(HERE, "results", "cost-" + time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)
    binary = build_preon()
    header = results_header(args)
    settings = {"postgres": PG_CONF, "conns": 8, "tfb_variant": args.tfb_variant, "warmup": p["warmup"], "strace_n": p["strace_n"],
                "strace_n_db": p["strace_n_db"], "n": p["n"],
                "pg_n": {} if args.no_pg_count else p["pg_n"]}
    servers = {}
    with private_postgres_dir(PG_CONF) as (pgdir, pgport), tempfile.TemporaryDirectory(prefix="preon-cost-") as work:
        os.chmod(work, 0o755)
        servers["preon"] = measure_server("preon", lambda pg, port, vg=False: preon_server(binary, pg, port, vg),
                                          pgdir, pgport, p, tests, work)
        if args.stock != "none" and os.access(args.stock, os.X_OK):
            servers["preon-stock"] = measure_server(
                "preon-stock", lambda pg, port, vg=False: preon_server(args.stock, pg, port, vg), pgdir, pgport, p,
                tests, work)
        else:
            servers["preon-stock"] = ServerRun(status="not built: no %s (cmake -S . -B build-stock -DPREON_DEPS=system"
                                               ", or --stock BINARY)" % args.stock if args.stock != "none"
                                               else "not run (--stock none)", argv=[], build="", counts={},
                                               syscalls={}, errors={})
        status = tfb_status(args.tfb_h2o, args.tfb_variant)
        if status == "ok":
            servers["tfb-h2o"] = measure_server(
                "tfb-h2o", lambda pg, port, vg=False: tfb_server(args.tfb_h2o, args.tfb_variant, pg, port, vg), pgdir,
                pgport, p, tests, work)
            note = os.path.join(args.tfb_h2o, "BUILD-NOTE")
            if os.path.isfile(note):
                with open(note) as f:
                    servers["tfb-h2o"].build = cost_report.build_summary(f.read())
        else:
            servers["tfb-h2o"] = ServerRun(status=status, argv=[], build="", counts={}, syscalls={}, errors={})
        if not args.no_pg_count:
            measure_postgres({"preon": lambda pg, port: preon_under_slow_postgres(binary, pg, port),
                              "preon-stock": lambda pg, port: preon_under_slow_postgres(args.stock, pg, port),
                              "tfb-h2o": lambda pg, port: tfb_under_slow_postgres(args.tfb_h2o, args.tfb_variant, pg,
                                                                                  port)},
                             servers, pgdir, pgport, p, tests, work)
    prof = {"status": "not run (--no-profile)"} if args.no_profile else profile(args, tests, servers, binary)
    tp = None if args.no_throughput else throughput(args, out, servers["preon-stock"].status == "ok")
    header["loadavg_end"] = list(os.getloadavg())
    res = CostResults(header=header, settings=settings, servers=servers, throughput=tp, cpu_profile=prof)
    save(res.to_json(), cost_report.render(res), out)


if __name__ == "__main__":
    main()
