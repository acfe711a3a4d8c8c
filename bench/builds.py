#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Two builds of preon side by side: the same tests, the same private PostgreSQL, alternating (A B, then B A),
medians over the rounds; requests/s, mean and p99 latency at 64 connections and at 1. For "did this change make it
faster or slower": the goal the batching was held to, "p99 at c64 no worse than before, c1 no slower".

  bench/builds.py --before /tmp/old/build/preon --after build/preon [--rounds 3] [--duration 4] [--quick]

Each build runs with its own defaults and from a folder without config/preon.yaml (an older build may not know
today's keys). Results: report.md and results.json in --out (default bench/results/builds-<time>/).
"""
import argparse
import os
import statistics
import tempfile

from measure import Target, free_port, log, md_table, preon_env, private_postgres, ratio, results_header, save, wrk
from measure import record

TESTS = ["/db", "/fruits", "/json", "/queries?queries=20", "/fortunes", "/updates?queries=20"]


def measure(binary, pgport, path, conns, duration):
    port = free_port()
    env = preon_env(pgport, port, sync=None)
    env["PREON_SERVER_THREADS"] = "2"
    with tempfile.TemporaryDirectory() as cwd:
        t = Target("preon", ["sh", "-c", 'cd "$0" && exec "$1"', cwd, binary], env, port)
        t.start()
        try:
            wrk(t.url + path, min(conns, 16), 1)  # warm-up
            return wrk(t.url + path, conns, duration)
        finally:
            t.stop()


def render(results):
    """Markdown of a run's results (a measure.record.Builds, or its JSON): a row per test and connection count,
    medians over the rounds."""
    rec = record.builds_from(results)
    rows = []
    for row in rec.rows:
        med = {k: {m: statistics.median(getattr(r, m) for r in getattr(row, k)) for m in ("rps", "mean", "p99")}
               for k in ("before", "after")}
        rows.append([row.path, row.conns, "%.0f → %.0f (%s)" % (med["before"]["rps"], med["after"]["rps"],
                                                              ratio(med["after"]["rps"], med["before"]["rps"])),
                     "%.3f → %.3f" % (med["before"]["mean"], med["after"]["mean"]),
                     "%.2f → %.2f" % (med["before"]["p99"], med["after"]["p99"]),
                     sum(r.non2xx for r in row.before + row.after)])
    return "Measured %s: %d rounds of %d s, alternating; medians. before = `%s`, after = `%s`.\n\n" % (
        rec.date, rec.rounds, rec.duration, rec.before, rec.after) + md_table(
        ["test", "connections", "req/s before → after", "mean latency (ms; connections ÷ req/s) before → after",
         "p99 (ms) before → after", "non-2xx"], rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="the older preon binary")
    ap.add_argument("--after", required=True, help="the newer preon binary")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--quick", action="store_true", help="one round of 1 s on two tests: a smoke test")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    args.before, args.after = os.path.abspath(args.before), os.path.abspath(args.after)  # they run from a temp folder
    tests, rounds, duration = (TESTS[:2], 1, 1) if args.quick else (TESTS, args.rounds, args.duration)
    results = results_header(args, rounds=rounds, duration=duration, before=args.before, after=args.after, rows=[])
    with private_postgres("synchronous_commit = off") as pgport:
        for path in tests:
            for conns in (64, 1):
                row = {"path": path, "conns": conns, "before": [], "after": []}
                for r in range(rounds):
                    for which in (("before", "after") if r % 2 == 0 else ("after", "before")):
                        res = measure(getattr(args, which), pgport, path, conns, duration)
                        mean = 1000.0 * conns / res["rps"] if res["rps"] else 0.0  # closed loop: Little's law
                        row[which].append({"rps": res["rps"], "mean": mean, "p99": res["p99"] or 0.0, "non2xx": res["non2xx"]})
                        log("%s %s c%d: %.0f req/s, p99 %s ms" % (which, path, conns, res["rps"], res["p99"]))
                results["rows"].append(row)
    save(results, render(results), args.out, prefix="builds-")


if __name__ == "__main__":
    main()
