#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Side-by-side throughput, latency and footprint of preon and the peer services of bench/peers/, on one
PostgreSQL.

Starts a private PostgreSQL (scripts/pg.sh, temp folder), preon (build/preon) and, if asked, a peer service
(bench/peers/<name>/run.sh, built first by its build.sh when its build/ folder is missing), then runs wrk against each in turn,
alternating the order every round (A B, B A, ...) so that a noisy machine hurts both alike, and prints the
medians as a Markdown table with ratios against the first target. All traffic goes to 127.0.0.1; every run
is bounded by --duration.

  bench/compare.py                      # preon alone, 3 rounds of 10 s
  bench/compare.py --peer go            # preon vs the Go gin service (--peer jvm: the JVM one)
  bench/compare.py --quick              # 1 round of 2 s, for a smoke test
"""
import argparse
import os
import statistics
import subprocess
import time

from measure import (HERE, REPO, Target, build_preon, cpu_s, dir_bytes, free_port, log, preon_env, private_postgres_dir, rss_kb,
                     save, stripped_size, threads, wrk)

PEERS = os.environ.get("PREON_BENCH_PEERS") or os.path.join(HERE, "peers")
ALIASES = {"go-gin": "go"}


def make_targets(args, preon_bin, pgport, pgdir):
    port = free_port()
    env = preon_env(pgport, port, args.sync)
    if args.observability:
        env.update(PREON_METRICS_ENABLED="false", PREON_LOG_ACCESS="false")
    targets = [Target("preon", [preon_bin], env, port, binary=preon_bin)]
    if args.observability:
        port = free_port()
        env = dict(preon_env(pgport, port, args.sync), PREON_METRICS_ENABLED="true", PREON_LOG_ACCESS="true",
                   PREON_LOG_LEVEL="info")
        targets.append(Target("preon+metrics+access-log", [preon_bin], env, port, binary=preon_bin))
    url = subprocess.run([os.path.join(REPO, "scripts", "pg.sh"), "url", pgdir], capture_output=True, text=True,
                         check=True).stdout.strip()
    for name in args.peer:
        d = os.path.join(PEERS, name)
        port = free_port()
        penv = dict(os.environ, PORT=str(port), DATABASE_URL=url, POOL_SIZE=os.environ.get("POOL_SIZE", "8"),
                    JAVA_OPTS=os.environ.get("JAVA_OPTS", ""), GIN_MODE="release")
        if not os.path.isdir(os.path.join(d, "build")):
            log("building %s: %s/build.sh" % (name, d))
            subprocess.run(["nice", "-n", "10", "bash", os.path.join(d, "build.sh")], check=True)
        # run.sh execs the service: its process is the one measured; its size is that of its build/ folder
        targets.append(Target(name, ["bash", os.path.join(d, "run.sh")], penv, port, binary=os.path.join(d, "build")))
    return targets


def measure(args, targets, conns):
    results = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cpus": os.cpu_count(), "args": vars(args), "targets": {}}
    for t in targets:
        r = results["targets"].setdefault(t.name, {"runs": {}})
        starts = []
        for i in range(args.starts):
            starts.append(t.start())
            if i != args.starts - 1:
                t.stop()
        r["start_hello_ms"] = statistics.median(s[0] for s in starts) * 1000
        r["start_db_ms"] = statistics.median(s[1] for s in starts) * 1000
        time.sleep(1)
        r["idle_rss_kb"] = rss_kb(t.proc.pid)
        r["threads"] = threads(t.proc.pid)
        r["binary_bytes"] = dir_bytes(t.binary)
        r["stripped_bytes"] = stripped_size(t.binary)
        log("%s: start %.1f ms (/hello), %.1f ms (db); idle RSS %d kB" % (t.name, r["start_hello_ms"], r["start_db_ms"],
                                                                       r["idle_rss_kb"]))
    total = args.rounds * len(conns) * 2 * len(targets)
    done = 0
    for rnd in range(args.rounds):
        order = targets if rnd % 2 == 0 else list(reversed(targets))
        for c in conns:
            for path in ("/hello", "/fruits"):
                for t in order:
                    cpu0 = cpu_s(t.proc.pid)
                    res = wrk(t.url + (path if path == "/hello" else t.db_path), c, args.duration)
                    res["cpu_s"] = cpu_s(t.proc.pid) - cpu0
                    results["targets"][t.name]["runs"].setdefault("%s c%d" % (path, c), []).append(res)
                    done += 1
                    log("[%d/%d, ~%ds left] %s %s -c%d: %.0f req/s, p99 %s ms" % (
                        done, total, (total - done) * args.duration, t.name, path, c, res["rps"], res["p99"]))
    for t in targets:
        results["targets"][t.name]["peak_rss_kb"] = rss_kb(t.proc.pid, "VmHWM")
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", action="append", default=[], help="peer service of bench/peers/ to compare with (go, jvm)")
    ap.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conns", default="50,100", help="wrk connection counts")
    ap.add_argument("--starts", type=int, default=5, help="starts measured for start-up time")
    ap.add_argument("--sync", default="batch", help="preon's database.sync for this run (batch, the default, or request)")
    ap.add_argument("--quick", action="store_true", help="1 round of 2 s, 2 starts")
    ap.add_argument("--observability", action="store_true",
                    help="compare preon with metrics and access logs off (first) and on (second) instead of with peers")
    ap.add_argument("--out", default=None, help="folder for results.json and report.md")
    args = ap.parse_args()
    if args.quick:
        args.duration, args.rounds, args.starts = 2, 1, 2
    conns = [int(c) for c in args.conns.split(",")]

    args.peer = [ALIASES.get(p, p) for p in args.peer]
    for p in args.peer:
        if not os.path.isfile(os.path.join(PEERS, p, "run.sh")):
            ap.error("%s not found: this checkout has no %s peer service" % (os.path.join(PEERS, p, "run.sh"), p))
    preon_bin = build_preon()
    with private_postgres_dir() as (pgdir, pgport):
        targets = make_targets(args, preon_bin, pgport, pgdir)
        try:
            results = measure(args, targets, conns)
        finally:
            for t in targets:
                t.stop()

    report = render(results, targets, conns)
    save(results, report, args.out, "")


def render(results, targets, conns):
    names = [t.name for t in targets]
    base = names[0]
    rows = []

    def med(name, key, field):
        vals = [r[field] for r in results["targets"][name]["runs"][key] if r[field] is not None]
        return statistics.median(vals) if vals else None

    def row(label, values, fmt, ratio=True):
        cells = [fmt % v if v is not None else "-" for v in values]
        if len(values) > 1 and ratio:
            for v in values[1:]:
                cells.append("%.2f×" % (values[0] / v) if v else "-")
        rows.append("| %s | %s |" % (label, " | ".join(cells)))

    hdr = "| metric | " + " | ".join(names) + "".join(" | %s / %s" % (base, n) for n in names[1:]) + " |"
    lines = ["Measured %s on %d CPUs (wrk -t2, %d s runs, median of %d rounds, order alternated), database.sync=%s." % (
        results["date"], results["cpus"], results["args"]["duration"], results["args"]["rounds"], results["args"]["sync"]),
        "", hdr, "|" + "---|" * (1 + len(names) * (2 if len(names) > 1 else 1) - (1 if len(names) > 1 else 0))]
    for c in conns:
        for path in ("/hello", "/fruits"):
            key = "%s c%d" % (path, c)
            row("%s -c%d requests/s" % (path, c), [med(n, key, "rps") for n in names], "%.0f")
            for p in ("p50", "p99"):
                row("%s -c%d %s latency (ms)" % (path, c, p), [med(n, key, p) for n in names], "%.2f")
            row("%s -c%d non-2xx + socket errors" % (path, c),
                [sum(r["non2xx"] + r["socket_errors"] for r in results["targets"][n]["runs"][key]) for n in names], "%d",
                ratio=False)
    for c in conns:
        key = "/fruits c%d" % c
        row("/fruits -c%d CPU seconds per 10k requests" % c,
            [statistics.median(r["cpu_s"] / (r["rps"] * results["args"]["duration"]) * 10000
                               for r in results["targets"][n]["runs"][key]) for n in names], "%.3f")
    t = results["targets"]
    row("exec → first 200 on /hello (ms)", [t[n]["start_hello_ms"] for n in names], "%.1f")
    row("exec → first 200 on /fruits (ms)", [t[n]["start_db_ms"] for n in names], "%.1f")
    row("idle RSS (kB)", [t[n]["idle_rss_kb"] for n in names], "%d")
    row("peak RSS after the loads (kB)", [t[n]["peak_rss_kb"] for n in names], "%d")
    row("threads", [t[n]["threads"] for n in names], "%d", ratio=False)
    row("binary or build folder (bytes)", [t[n]["binary_bytes"] for n in names], "%d")
    row("binary, stripped (bytes)", [t[n]["stripped_bytes"] for n in names], "%d")
    return "\n".join(lines + rows) + "\n"


if __name__ == "__main__":
    main()
