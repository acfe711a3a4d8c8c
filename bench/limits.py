#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Finer container-limit tables than the published ones, to find preon's minimum: bench/run.py's limits scenario
(wrk -t10 -c50 on /hello under each cap; requests/s, memory as the cgroup charges it, peak RSS, OOM-killed or
exited) with no cap, each memory cap alone and each CPU quota alone. A process target runs in a cgroup of its own
(root, cgroup v1 or v2), an image target with docker run -m/--cpus. This script only spells the command.

  bench/limits.py                                  # 10 s per load
  bench/limits.py --memory 8,16,32 --cpus 0.5,1 --quick
  bench/limits.py --target "name=preon-image,image=preon:latest"
"""
import argparse
import sys

from measure import hand_over


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memory", default="2,3,4,8,16,32,64,128,256", help="MiB caps")
    ap.add_argument("--cpus", default="0.5,1,2", help="CPU quotas")
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="2 s per load")
    ap.add_argument("--target", action="append", default=[], help="as bench/run.py's (default: preon)")
    ap.add_argument("--dry-run", action="store_true", help="print bench/run.py's command instead of running it")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    caps = ["none"] + ["mem=%sm" % m for m in args.memory.split(",") if m] + \
        ["cpus=%s" % c for c in args.cpus.split(",") if c]
    argv = ["--scenario", "limits", "--limits", ";".join(caps),
            "--set", "limit_s=%d" % (2 if args.quick else args.duration)]
    for t in args.target or ["preon"]:
        argv += ["--target", t]
    return hand_over("run.py", argv, args.out, args.dry_run)


if __name__ == "__main__":
    sys.exit(main())
