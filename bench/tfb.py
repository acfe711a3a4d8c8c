#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""TechEmpower's load shapes against preon: plaintext (16-deep pipelining), json, db, queries=20, fortunes,
updates=20, cached-queries=100, each at 64 and 256 connections, with wrk on 127.0.0.1.

Starts a private PostgreSQL (scripts/pg.sh) and preon, warms each test up, measures, and prints a table of
requests/s and p50/p99 latency; results.json and report.md go to bench/results/<time>/.

  bench/tfb.py                 # 10 s per run
  bench/tfb.py --sync batch    # preon with one Sync per loop pass
  bench/tfb.py --quick         # 2 s per run, a smoke test
"""
import argparse
import os
import time

from measure import save, HERE, Target, build_preon, free_port, log, preon_env, private_postgres, wrk

TESTS = [
    ("plaintext", "/plaintext", 16),
    ("json", "/json", 1),
    ("db", "/db", 1),
    ("queries=20", "/queries?queries=20", 1),
    ("fortunes", "/fortunes", 1),
    ("updates=20", "/updates?queries=20", 1),
    ("cached-queries=100", "/cached-queries?count=100", 1),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    ap.add_argument("--conns", default="64,256")
    ap.add_argument("--sync", default="request", help="preon's database.sync (request|batch)")
    ap.add_argument("--quick", action="store_true", help="2 s per run")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.quick:
        args.duration = 2
    conns = [int(c) for c in args.conns.split(",")]
    pipeline = os.path.join(HERE, "pipeline.lua")

    preon_bin = build_preon()
    results = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cpus": os.cpu_count(), "args": vars(args), "runs": {}}
    # TechEmpower's own PostgreSQL runs with synchronous_commit off; so does this one, for comparable updates.
    with private_postgres("synchronous_commit = off") as pgport:
        port = free_port()
        t = Target("preon", [preon_bin], preon_env(pgport, port, args.sync), port)
        t.start()
        try:
            total, done = len(TESTS) * len(conns), 0
            for name, path, depth in TESTS:
                script = (pipeline, [str(depth)]) if depth > 1 else (None, [])
                wrk(t.url + path, 16, 1, script=script[0], script_args=script[1])  # warm-up (caches, plans)
                for c in conns:
                    res = wrk(t.url + path, c, args.duration, script=script[0], script_args=script[1])
                    results["runs"]["%s c%d" % (name, c)] = res
                    done += 1
                    log("[%d/%d, ~%ds left] %s -c%d: %.0f req/s, p50 %s ms, p99 %s ms, errors %d" % (
                        done, total, (total - done) * (args.duration + 1), name, c, res["rps"], res["p50"], res["p99"],
                        res["non2xx"] + res["socket_errors"]))
        finally:
            t.stop()

    lines = ["Measured %s on %d CPUs: wrk -t2, %d s per run, database.sync=%s, wrk, preon and PostgreSQL "
             "(synchronous_commit off, as in TFB) on the same machine."
             % (results["date"], results["cpus"], args.duration, args.sync), "",
             "| test | " + " | ".join("-c%d req/s | p50 ms | p99 ms" % c for c in conns) + " | errors |",
             "|---|" + "---|---|---|" * len(conns) + "---|"]
    for name, _, _ in TESTS:
        cells, errors = [], 0
        for c in conns:
            r = results["runs"]["%s c%d" % (name, c)]
            cells += ["%.0f" % r["rps"], "%.2f" % r["p50"] if r["p50"] is not None else "-",
                      "%.2f" % r["p99"] if r["p99"] is not None else "-"]
            errors += r["non2xx"] + r["socket_errors"]
        lines.append("| %s | %s | %d |" % (name, " | ".join(cells), errors))
    report = "\n".join(lines) + "\n"
    save(results, report, args.out, "tfb-")


if __name__ == "__main__":
    main()
