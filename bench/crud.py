#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The CRUD scenario: wrk with bench/wrk/crud.lua mixing GET /fruits/{id}, POST /fruits, GET /fruits and DELETE
/fruits/{id} against preon on a private PostgreSQL, at 50 and 100 connections; prints requests/s and latency.

  bench/crud.py [--duration 10] [--sync request|batch] [--quick]
"""
import argparse
import os

from measure import (HERE, Target, build_preon, fmt, free_port, log, md_table, preon_env, private_postgres, results_header,
                     save, wrk)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--conns", default="50,100")
    ap.add_argument("--sync", default="batch")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.quick:
        args.duration = 2
    preon_bin = build_preon()
    results = results_header(args, runs={})
    with private_postgres() as pgport:
        port = free_port()
        t = Target("preon", [preon_bin], preon_env(pgport, port, args.sync), port)
        t.start()
        try:
            for c in [int(x) for x in args.conns.split(",")]:
                res = wrk(t.url, c, args.duration, script=os.path.join(HERE, "wrk", "crud.lua"))
                results["runs"]["crud c%d" % c] = res
                log("crud -c%d: %.0f req/s, p50 %s ms, p99 %s ms, non-2xx %d" % (c, res["rps"], res["p50"], res["p99"],
                                                                              res["non2xx"]))
        finally:
            t.stop()
    report = "Measured %s on %d CPUs: wrk -t2 -s bench/wrk/crud.lua, %d s per run, database.sync=%s (PostgreSQL defaults: " \
        "synchronous_commit on).\n\n" % (results["date"], results["cpus"], args.duration, args.sync) + md_table(
            ["scenario", "requests/s", "p50 ms", "p90 ms", "p99 ms", "non-2xx", "socket errors"],
            [[k, fmt(r["rps"]), fmt(r["p50"], "%.2f"), fmt(r["p90"], "%.2f"), fmt(r["p99"], "%.2f"), r["non2xx"],
              r["socket_errors"]] for k, r in results["runs"].items()])
    save(results, report, args.out, "crud-")


if __name__ == "__main__":
    main()
