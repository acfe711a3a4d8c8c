#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""TechEmpower's load shapes (plaintext pipelined ×16, json, db, queries=20, fortunes, updates=20, fruits) against
preon alone: bench/throughput.py with preon as its only target (for preon beside TechEmpower's own h2o entry, the
Go peer, a bare epoll responder and pgbench's ceiling, run bench/throughput.py itself). This script only spells
the command.

  bench/tfb.py                 # 5 s per run, 3 rounds
  bench/tfb.py --sync request  # preon with one Sync per request
  bench/tfb.py --quick         # 1 s per run, a smoke test
"""
import argparse
import sys

from measure import hand_over


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=int, default=5, help="seconds per wrk run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sync", default=None, help="preon's database.sync (request|batch; default: config/preon.yaml's)")
    ap.add_argument("--quick", action="store_true", help="1 s per run, 1 round")
    ap.add_argument("--dry-run", action="store_true", help="print bench/throughput.py's command instead of running it")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    argv = ["--targets", "preon"]
    argv += ["--quick"] if args.quick else ["--duration", str(args.duration), "--rounds", str(args.rounds)]
    if args.sync:
        argv += ["--sync", args.sync]
    return hand_over("throughput.py", argv, args.out, args.dry_run)


if __name__ == "__main__":
    sys.exit(main())
