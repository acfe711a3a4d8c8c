#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The overload, fault and hostile-client tests of this folder in their long form (PREON_SCALE=long):

  soak             10,000,000 requests, /hello and /fruits alternating, 256 connections; RSS per half
  connections      10,000 connections at once, 5 rounds per path; over server.max_connections; over the
                   open files limit
  hostile          slowloris, oversized heads, malformed HTTP, half-closed, 10k pipelined: 30 s each, with a
                   /hello probe (p99 < 50 ms)
  postgres-killed  PostgreSQL killed (-m immediate) and restarted 10 times under 16 clients
  sigterm          SIGTERM while wrk and counting clients load /fruits
  shedding         a slow table: 7 bursts of 1,000 x /queries?queries=20 at once, then wrk -c1000 for 25 s on it
  faults           dropped table (both Sync modes), user without rights, backends abandoned after timeouts
  injection        quotes, semicolons and $1 in every parameter
  secrets          the database password in logs, answers and --check-config (right, wrong, database down)
  tls              TLS (verify-full) under load: answers of many TLS records, byte-compared with a plain connection;
                   a TLS front writing full 16 KiB records
  failover         primary stopped and standby promoted under reads and writes, 3 times back and forth
  pgbouncer        PgBouncer 1.18 in session and transaction mode, 2 threads x 4 connections, 200,000 requests
  histories        every nemesis of tests/histories/nemesis.py in a history of its own, 10 rounds, checked for
                   linearizability (tests/histories/checker)
  stack            deploy/stack/ (Patroni x 3, HAProxy, PgBouncer, preon x 2): a standby stopped, 3 rolling restarts,
                   a replica added under a 30 s spike, the Patroni leader killed twice

against build/preon and a private PostgreSQL (loopback only, each run bounded). Every test appends what it
measured to results.jsonl; report.md is the table of docs/reliability.md.

  /usr/bin/python3 tests/integration/long.py [--quick] [--only soak,hostile] [--out DIR]

The table is bench/reliability.py's (it only reads the records; nothing in bench/ runs the tests).
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench"))
from measure import REPO, build_preon, log, private_postgres_dir  # noqa: E402
from reliability import render  # noqa: E402

SUITES = {  # name: (module, unittest selectors)
    "soak": ("overload", ["SoakTest"]),
    "connections": ("overload", ["ConnectionsTest"]),
    "hostile": ("hostile", []),
    "postgres-killed": ("outage", ["OutageTest.test_killed_under_load"]),
    "sigterm": ("observability", ["DrainUnderLoadTest"]),
    "shedding": ("shedding", []),
    "faults": ("faults", []),
    "injection": ("injection", []),
    "secrets": ("secrets", []),
    "tls": ("tls", ["TlsTest.test_large_answers_under_load", "TlsTest.test_full_size_records"]),
    "failover": ("failover", []),
    "pgbouncer": ("pgbouncer", []),
    "stack": ("stack", []),
    "histories": ("histories", ["HistoriesTest"]),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the test command's sizes instead of the long form")
    ap.add_argument("--only", default=",".join(SUITES), help="comma-separated: " + ", ".join(SUITES))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    # absolute: the tests run from tests/integration
    out = os.path.abspath(args.out or os.path.join(REPO, "bench", "results", "reliability-" + time.strftime("%Y%m%d-%H%M%S")))
    os.makedirs(out, exist_ok=True)
    results = os.path.join(out, "results.jsonl")
    binary = build_preon()
    failed = []
    with private_postgres_dir("fsync = off") as (pgdir, _):
        env = dict(os.environ, PREON_BIN=binary, PREON_REPO=REPO, PREON_TEST_PGDIR=pgdir, PREON_RECORD=results,
                   PREON_SCALE="quick" if args.quick else "long")
        for name in args.only.split(","):
            module, selectors = SUITES[name]
            log("%s (%s)" % (name, "quick" if args.quick else "long"))
            start = time.monotonic()
            # Debian's python3: the tests use its python3-prometheus-client
            rc = subprocess.run(["/usr/bin/python3", os.path.join(REPO, "tests", "integration", "test_%s.py" % module),
                                 *selectors], env=env, cwd=os.path.join(REPO, "tests", "integration")).returncode
            log("%s: %s in %.0f s" % (name, "passed" if rc == 0 else "FAILED", time.monotonic() - start))
            if rc != 0:
                failed.append(name)
    report = render([results]) if os.path.exists(results) else "(nothing recorded)\n"
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("# preon reliability (%s form), %s\n\n%s\nFailed: %s\n" % (
            "quick" if args.quick else "long", time.strftime("%Y-%m-%d"), report, ", ".join(failed) or "none"))
    sys.stdout.write(report)
    log("results in %s; failed: %s" % (out, ", ".join(failed) or "none"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
