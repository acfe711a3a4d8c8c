#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The overload, fault and hostile-client tests of tests/integration in their long form (PREON_SCALE=long):

  soak             10,000,000 requests, /hello and /fruits alternating, 256 connections; RSS per half
  connections      10,000 connections at once, 5 rounds per path; over server.max_connections; over the
                   open files limit
  hostile          slowloris, oversized heads, malformed HTTP, half-closed, 10k pipelined: 30 s each, with a
                   /hello probe (p99 < 50 ms)
  postgres-killed  PostgreSQL killed (-m immediate) and restarted 10 times under 16 clients
  sigterm          SIGTERM while wrk and counting clients load /fruits
  faults           dropped table (both Sync modes), user without rights, backends abandoned after timeouts
  injection        quotes, semicolons and $1 in every parameter
  secrets          the database password in logs, answers and --check-config (right, wrong, database down)
  tls              TLS (verify-full) under load: answers of many TLS records, byte-compared with a plain connection;
                   a TLS front writing full 16 KiB records
  failover         primary stopped and standby promoted under reads and writes, 3 times back and forth

against build/preon and a private PostgreSQL (loopback only, each run bounded). Every test appends what it
measured to results.jsonl; report.md is the table README's "Reliability" section shows.

  python3 bench/reliability.py [--quick] [--only soak,hostile] [--out DIR]
  python3 bench/reliability.py --render results.jsonl [more.jsonl ...]
"""
import argparse
import json
import os
import subprocess
import sys
import time

from measure import REPO, build_preon, log, private_postgres_dir

SUITES = {  # name: (module, unittest selectors)
    "soak": ("overload", ["SoakTest"]),
    "connections": ("overload", ["ConnectionsTest"]),
    "hostile": ("hostile", []),
    "postgres-killed": ("outage", ["OutageTest.test_killed_under_load"]),
    "sigterm": ("observability", ["DrainUnderLoadTest"]),
    "faults": ("faults", []),
    "injection": ("injection", []),
    "secrets": ("secrets", []),
    "tls": ("tls", ["TlsTest.test_large_answers_under_load", "TlsTest.test_full_size_records"]),
    "failover": ("failover", []),
}


def fmt_statuses(d):
    return ", ".join("%s: %s" % (k, "{:,}".format(v)) for k, v in sorted(d.items())) or "none"


def describe(r):
    """One table row for a record: (test, load, duration, result)."""
    t, secs = r["test"], "%.1f s" % r["seconds"] if "seconds" in r else "–"
    if t == "soak":
        return ("mixed soak", "{:,} requests /hello + /fruits, {} connections".format(r["requests"], r["conns"]), secs,
                "%s; socket errors %d; 503s counted as backpressure %d; RSS max %d → %d KiB (1st → 2nd half)" % (
                    fmt_statuses(r["statuses"]), r["socket_errors"], r["backpressure_503"],
                    r["rss_first_half_max_kib"], r["rss_second_half_max_kib"]))
    if t == "10k-connections":
        return ("connections at once", "{:,} connections, then one GET {} each".format(r["conns"], r["path"]), secs,
                fmt_statuses(r["outcomes"]))
    if t == "max-connections":
        return ("over max_connections", "{:,} connections, max_connections {:,}".format(r["conns"], r["max_connections"]),
                secs, "%s; refusals counted %d" % (fmt_statuses(r["outcomes"]), r["counted_refused"]))
    if t == "out-of-descriptors":
        return ("over the open files limit", "{:,} connections held, nofile {:,}".format(r["conns"], r["nofile"]), secs,
                "%s; refusals counted %d; CPU while full %.2f s/s" % (fmt_statuses(r["outcomes"]), r["counted_refused"],
                                                                     r["cpu_while_full_s"]))
    if t == "postgres-killed":
        return ("PostgreSQL killed", "%d × kill -m immediate + restart, %d clients" % (r["rounds"], r["clients"]), secs,
                "%s; back to 100%% 200 after %s s" % (fmt_statuses(r["statuses"]), " / ".join(map(str, r["recovery_s"]))))
    if t.startswith("hostile-"):
        what = {k: v for k, v in r.items() if k not in ("test", "build", "date", "seconds", "probe_requests", "load",
                                                          "probe_p99_ms", "probe_failures", "statuses", "requests")}
        parts = ["{:,} requests".format(r["requests"])] if "requests" in r else []
        parts += [fmt_statuses(r["statuses"])] if "statuses" in r else []
        parts += ["%s %s" % (k.replace("_", " "), "{:,}".format(v) if isinstance(v, int) else v) for k, v in what.items()]
        return (t[len("hostile-"):], r.get("load", ""), secs, "%s; /hello probe p99 %.2f ms over %d requests, %d failed" % (
            ", ".join(parts), r["probe_p99_ms"], r["probe_requests"], r["probe_failures"]))
    if t == "sigterm-under-load":
        e, c = r["wrk_errors"], r["clients"]
        return ("SIGTERM under load", "wrk 16 connections + 8 counting clients on /fruits, SIGTERM after 1.5 s", secs,
                "wrk: %s, read errors %d, timeouts %d (refused reconnects %d); clients: %d answered 200, %d lost, %d "
                "not 200, %d refused after the drain; exit %d" % (
                    fmt_statuses(r["wrk_statuses"]), e["read"], e["timeout"], e["connect"] + e["write"], c["ok"],
                    c["lost"], c["bad"], c["refused"], r["exit_status"]))
    if t == "dropped-table":
        return ("dropped table", "table fortune dropped; 8 clients × 5 requests on one pipeline (sync=%s)" % r["sync"],
                secs, "; ".join("%s %s" % (p, fmt_statuses(s)) for p, s in r["answers"].items()))
    if t == "user-without-rights":
        return ("user without rights", "preon connects as a role with no grants", secs,
                "; ".join("%s %s" % (p, s) for p, s in r["answers"].items()) + "; /hello, /json 200")
    if t == "abandoned-queries":
        return ("abandoned queries", "a lock on fruits held ~4 s, /fruits asked every 0.25 s, query timeout 300 ms, one "
                "thread", secs, "preon's backends waiting on the lock, per sample: with client_check_ms 1000: %s (max %d)%s" % (
                    " ".join(map(str, r["checked"])), max(r["checked"]),
                    "; with 0: %s (max %d)" % (" ".join(map(str, r["unchecked"])), max(r["unchecked"]))
                    if r.get("unchecked") else ""))
    if t == "password-never-shown":
        return ("password never shown", "%d secrets (password right / wrong / database down, URI and key=value, "
                "sslpassword) at log level debug with the access log" % r["secrets"], secs,
                "{:,} texts ({:,} bytes: logs, answers, --check-config, errors) searched; shown {}".format(
                    r["texts_checked"], r["bytes_checked"], r["shown"]))
    if t == "tls-load":
        wrk = "; wrk 32 connections: {:,} answers ({}); req/s over TLS {} vs plain {}, in turns".format(
            r["wrk_requests"], fmt_statuses(r["wrk_statuses"]), " / ".join(map(str, r["wrk_rps_tls"])),
            " / ".join(map(str, r["wrk_rps_plain"]))) if r["wrk_requests"] else ""
        return ("TLS under load", "sslmode=verify-full; %d clients × `/fruits` (~100 KiB), `/queries?queries=500`, `/fortunes` "
                "(~60 KiB), `/db`; then wrk" % r["clients"], secs,
                "{:,} answers ({:.1f} MB), every one 200 and equal to a plain connection's; no stall{}".format(
                    r["requests"], r["bytes"] / 1e6, wrk))
    if t == "tls-16k-records":
        return ("TLS, full-size records", "a TLS front writing 16 KiB records; `/fruits`, `/fortunes`, "
                "`/queries?queries=500` one at a time", secs, fmt_statuses(r["statuses"]))
    if t == "failover":
        return ("failover", "%d × (primary stopped `-m immediate`, standby promoted), %s, sync replication" % (
            r["rounds"], r["clients"]), secs,
                "%s; %d writes answered 201, of which not on the new primary: %s; back to 100 %% 2xx %s s after the promotion began, "
                "%s s after `pg_ctl promote` returned (it took %s s); idle CPU after: %s s/s; sockets left: %s" % (
                    fmt_statuses(r["statuses"]), r["writes_201"], " / ".join(map(str, r.get("false_201", []))),
                    " / ".join(map(str, r["recovery_after_promote_s"])),
                    " / ".join(map(str, r.get("after_promoted_s", []))), " / ".join(map(str, r["promote_s"])),
                    " / ".join(map(str, r["idle_cpu"])),
                    " / ".join(", ".join("%s %d" % kv for kv in sorted(x.items()) if kv[0] != "LISTEN") for x in r.get("sockets", []))))
    return (t, "", secs, json.dumps({k: v for k, v in r.items() if k not in ("test", "build", "date")}))


def render(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            rows += [json.loads(line) for line in f if line.strip()]
    out = ["| test | build | load | duration | result | date |", "|---|---|---|---|---|---|"]
    for r in rows:
        name, load, secs, result = describe(r)
        out.append("| %s | %s | %s | %s | %s | %s |" % (name, r.get("build", ""), load, secs, result, r.get("date", "")))
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the test command's sizes instead of the long form")
    ap.add_argument("--only", default=",".join(SUITES), help="comma-separated: " + ", ".join(SUITES))
    ap.add_argument("--out", default=None)
    ap.add_argument("--render", nargs="+", metavar="JSONL", help="only print the table of recorded results")
    args = ap.parse_args()
    if args.render:
        sys.stdout.write(render(args.render))
        return 0
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
