#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A ramp of virtual users against a server on 127.0.0.1 (post 004's layout), from the command line: the driver is
bench/measure/ramp.py, whose description --help prints.

  bench/ramp.py --port 8080 --path /fruits --users 10000 --ramp 120 --hold 30 --think 2
"""
import argparse
import json
import sys

from measure import ramp


def main():
    ap = argparse.ArgumentParser(description=ramp.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True, help="the server, on 127.0.0.1")
    ap.add_argument("--path", action="append", default=[], help="scenario path (repeatable; default /hello)")
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--ramp", type=float, default=30.0, help="seconds over which the users arrive")
    ap.add_argument("--hold", type=float, default=0.0, help="seconds all users keep going after the last arrived")
    ap.add_argument("--think", type=float, default=1.0, help="mean think time between a user's requests (s)")
    ap.add_argument("--timeout", type=float, default=10.0, help="a request without an answer by then is KO (s)")
    ap.add_argument("--procs", type=int, default=None, help="worker processes (default: CPUs, at most 4)")
    ap.add_argument("--window", type=float, default=None, help="seconds per window for p95/KO over time")
    ap.add_argument("--ko-break", type=float, default=1.0, help="KO %% in a window that counts as broken")
    ap.add_argument("--p95-factor", type=float, default=10.0)
    ap.add_argument("--p95-margin", type=float, default=50.0, help="ms")
    ap.add_argument("--sustain", type=int, default=3, help="consecutive broken windows for the saturation point")
    ap.add_argument("--loop", choices=("auto", "uvloop", "asyncio"), default="auto",
                    help="event loop of the workers (auto: uvloop when python3-uvloop is installed)")
    ap.add_argument("--lag-bound", type=float, default=50.0,
                    help="driver lag p95 (ms) that marks a window driver-bound")
    ap.add_argument("--json", help="write every figure (with per-window series) to this file")
    a = ap.parse_args()
    r = ramp.run_ramp(a.port, a.path or ["/hello"], a.users, a.ramp, a.hold, a.think, a.timeout, a.procs, a.window,
                      a.ko_break, a.p95_factor, a.p95_margin, a.sustain, lag_bound=a.lag_bound, loop=a.loop)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1)
    s, d = r["saturation"], r["driver_limit"]
    print("users %d  total %d  OK %d  KO %.2f%%  req/s %.1f  p95 %.1f ms  saturation %s" % (
        a.users, r["total"], r["ok"], r["ko_pct"] or 0, r["rps"] or 0, r["p95_ms"] or 0,
        "%d users (%s)" % (s["users"], s["reason"]) if s else "none"))
    if d:
        print("the driver was the bottleneck from %d users on (event-loop lag > %g ms)" % (d["users"], a.lag_bound))
    print("driver: %d procs (%s), CPU %s %%, loop lag p95 %.1f ms%s" % (
        r["driver"]["procs"], r["driver"]["loop"], ", ".join("%.0f" % c for c in r["driver"]["cpu_pct_per_proc"]),
        r["driver"]["loop_lag_p95_ms"] or 0, " (driver-bound)" if r["driver"]["bound"] else ""))


if __name__ == "__main__":
    sys.exit(main())
