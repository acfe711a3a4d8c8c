#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Side-by-side throughput, latency and footprint of preon and the peer services of bench/peers/, on one
PostgreSQL: bench/run.py's scenarios rounds (wrk on /hello and /fruits at 50 and 100 connections, rounds with the
order of the targets alternated, medians and ratios against the first target), startup and footprint. This
script only spells the command; everything is measured and reported by bench/run.py.

  bench/compare.py                      # preon alone, 3 rounds of 10 s
  bench/compare.py --peer go            # preon vs the Go gin service (--peer quarkus, spring-webflux, …: the others)
  bench/compare.py --observability      # preon with metrics and access logs off (first) and on (second)
  bench/compare.py --quick              # 1 round of 2 s, for a smoke test
"""
import argparse
import os
import sys

from measure import HERE, hand_over

PEERS = os.environ.get("PREON_BENCH_PEERS") or os.path.join(HERE, "peers")
ALIASES = {"go-gin": "go"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", action="append", default=[], help="peer service of bench/peers/ to compare with (go, quarkus, spring-webflux, spring-mvc)")
    ap.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conns", default="50,100", help="wrk connection counts")
    ap.add_argument("--starts", type=int, default=5, help="starts measured for start-up time")
    ap.add_argument("--sync", default="batch", help="preon's database.sync for this run (batch, the default, or request)")
    ap.add_argument("--quick", action="store_true", help="1 round of 2 s, 2 starts")
    ap.add_argument("--observability", action="store_true",
                    help="compare preon with metrics and access logs off (first) and on (second) instead of with peers")
    ap.add_argument("--dry-run", action="store_true", help="print bench/run.py's command instead of running it")
    ap.add_argument("--out", default=None, help="folder for results.json and report.md")
    args = ap.parse_args()
    if args.quick:
        args.duration, args.rounds, args.starts = 2, 1, 2
    peers = [ALIASES.get(p, p) for p in args.peer]
    for p in peers:
        if not os.path.isfile(os.path.join(PEERS, p, "run.sh")):
            ap.error("%s not found: this checkout has no %s peer service" % (os.path.join(PEERS, p, "run.sh"), p))
    sync = "PREON_DATABASE_SYNC=%s" % args.sync
    if args.observability:
        targets = ["preon,name=preon-quiet,env='%s PREON_METRICS_ENABLED=false PREON_LOG_ACCESS=false'" % sync,
                   "preon,env='%s'" % sync]
    else:
        targets = ["preon,env='%s'" % sync] + peers
    argv = ["--scenario", "rounds,startup,footprint",
            "--set", "rounds_n=%d" % args.rounds, "--set", "rounds_s=%d" % args.duration,
            "--set", "rounds_conns=%s" % args.conns, "--set", "starts=%d" % args.starts,
            "--set", "latency_s=%d" % args.duration]
    for t in targets:
        argv += ["--target", t]
    return hand_over("run.py", argv, args.out, args.dry_run)


if __name__ == "__main__":
    sys.exit(main())
