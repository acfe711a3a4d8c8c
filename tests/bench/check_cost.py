# SPDX-License-Identifier: MIT
"""Checks a bench/cost.py output folder run with `--quick --no-throughput`, a stock build (--stock) and no TFB h2o
build: results.json reads back through the loader (bench/measure/cost_report.py), preon and its stock build each have
an instruction count and syscall counts for every test type and a count of its PostgreSQL's instructions on the
database tests (the stock build's where that count did not fail), every counted request was answered 200, the groups
by object add up to the total, the stock build ran its own binary with the stock libraries (Debian's libh2o-evloop
in its instructions) and report.md's tables have its column and its ratio to preon, TFB h2o's column says why it is
absent; where perf can sample this machine's CPUs and it has two, preon's CPU profile has
every test type, with time in its code and in the kernel (and in PostgreSQL on the database tests) and, where perf
can count the net:net_dev_xmit tracepoint, the packets preon (and PostgreSQL on the database tests) sent, else the
report says why not; report.md has every table. Asserts no speed. Usage: check_cost.py DIR"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from measure import cpuprofile, packets  # noqa: E402
from measure.cost_report import LABEL, TESTS, load  # noqa: E402

out = sys.argv[1]
res = load(os.path.join(out, "results.json"))
report = open(os.path.join(out, "report.md")).read()
problems = []


def check_server(name, run, pg_required):
    """One server's column: every test counted and traced, every counted answer 200; its PostgreSQL's count on the
    database tests (a failed count is tolerated where not `pg_required`: the record then says why)."""
    if run.status != "ok" or [k for k in run.errors if not (not pg_required and k.endswith(" postgres"))]:
        problems.append("%s: status %r, errors %r" % (name, run.status, run.errors))
    for key, _, _, _ in TESTS:
        c, s = run.counts.get(key), run.syscalls.get(key)
        if c is None or s is None:
            problems.append("%s %s: no instruction count or no syscall count" % (name, key))
            continue
        if not c.ir_per_request > 0 or c.ir2 <= c.ir1:
            problems.append("%s %s: instructions per request %r (runs %d, %d)" % (name, key, c.ir_per_request, c.ir1,
                                                                                   c.ir2))
        if set(c.statuses) != {"200"} or sum(c.statuses.values()) != c.n2:
            problems.append("%s %s: the counted requests' answers %r, expected %d × 200" % (name, key, c.statuses,
                                                                                             c.n2))
        if abs(sum(c.by_group.values()) - c.ir_per_request) > 0.05 * c.ir_per_request + 50:
            problems.append("%s %s: groups sum to %.0f, the total is %.0f" % (name, key, sum(c.by_group.values()),
                                                                              c.ir_per_request))
        if "preon" not in c.by_group or not c.top_inclusive:
            problems.append("%s %s: no preon group or no top functions" % (name, key))
        if s.per_request("server") <= 0 or set(s.statuses) != {"200"}:
            problems.append("%s %s: syscalls %r, answers %r" % (name, key, s.server, s.statuses))
        if key in ("db", "fortunes", "queries", "updates") and (s.backends < 1 or s.per_request("postgres") <= 0):
            problems.append("%s %s: no PostgreSQL backend traced" % (name, key))
        pg = run.pg_counts.get(key)
        if key in ("db", "fortunes", "queries", "updates") and (pg_required or "%s postgres" % key not in run.errors) \
                and (pg is None or not pg.ir_per_request > 0 or pg.backends < 1 or set(pg.statuses) != {"200"}):
            problems.append("%s %s: no count of PostgreSQL's instructions, or not every answer 200: %r" % (name, key,
                                                                                                         pg))


preon, stock = res.servers["preon"], res.servers.get("preon-stock")
check_server("preon", preon, True)
if stock is None:
    problems.append("results.json: no preon-stock column")
else:
    check_server("preon-stock", stock, False)
    # the stock build is another binary, on Debian's shared h2o: its top functions run in libh2o-evloop.so, the
    # source build's in its own static copy, which the groups still name h2o (bench/measure/preon_build.py)
    def in_shared_h2o(run):
        return any("libh2o-evloop.so" in t["function"] for c in run.counts.values() for t in c.top_inclusive)
    if stock.status == "ok" and (stock.argv[:1] == preon.argv[:1] or not in_shared_h2o(stock)):
        problems.append("preon-stock: not the stock build (argv %r)" % stock.argv[:1])
    if in_shared_h2o(preon) or not all("h2o" in c.by_group for c in preon.counts.values()):
        problems.append("preon: not the source build, or its static h2o not told from its own code: %r" % (
            {k: c.by_group for k, c in preon.counts.items()}))
for key, _, _, _ in TESTS:
    if "| %s |" % LABEL[key] not in report:
        problems.append("report.md: no row for %s" % LABEL[key])
for title, head in (("## User-space instructions per request", "| preon | preon, stock build | TFB h2o | "
                     "preon / TFB h2o | preon / stock build |"),
                    ("## System calls per request", "| test | preon | preon, stock build | TFB h2o | preon / TFB h2o "
                     "| preon / stock build |")):
    part = report.split(title)[-1].split("\n## ")[0]
    if head not in part:
        problems.append("report.md: %r has no stock build column (%r)" % (title, head))
tfb = res.servers["tfb-h2o"]
if not tfb.status.startswith("not built") or "Not measured: not built" not in report:
    problems.append("TFB h2o: status %r; report.md must say why it is absent" % tfb.status)
for title in ("## User-space instructions per request", "## PostgreSQL's instructions per request",
              "## System calls per request", "## Where the instructions go"):
    if title not in report:
        problems.append("report.md lacks %r" % title)
prof = res.cpu_profile or {}
title = "## Where the server's CPU goes, per request (perf, roles pinned)"
if title not in report:
    problems.append("report.md lacks %r" % title)
if cpuprofile.unavailable() is None and len(os.sched_getaffinity(0)) >= 2:
    if prof.get("status") != "ok" or prof.get("errors"):
        problems.append("CPU profile: status %r, errors %r" % (prof.get("status"), prof.get("errors")))
    counts_packets = packets.unavailable() is None
    if counts_packets and "Packets sent per request" not in report.split(title)[1]:
        problems.append("report.md: no table of packets sent per request")
    for key, _, _, _ in TESTS:
        runs = prof.get("servers", {}).get("preon", {}).get(key) or [None]
        for g in runs:
            us = g["us_per_request"] if g else {}
            if not g or not g["requests"] > 0 or not us["server_user"] > 0 or not us["server_kernel"] > 0:
                problems.append("%s: no CPU profile for preon, or no time in its code or the kernel: %r" % (key, g))
            elif key in ("db", "fortunes", "queries", "updates") and not us["postgres_user"] > 0:
                problems.append("%s: the CPU profile has no time in PostgreSQL: %r" % (key, us))
            sent = (g or {}).get("packets_per_request") or {}
            if counts_packets and not (sent.get("server") or 0) > 0:
                problems.append("%s: no packets counted from preon: %r" % (key, sent))
            elif counts_packets and key in ("db", "fortunes", "queries", "updates") and not (
                    sent.get("postgres") or 0) > 0:
                problems.append("%s: no packets counted from PostgreSQL: %r" % (key, sent))
        if ("| %s | " % LABEL[key]) not in report.split(title)[1]:
            problems.append("report.md: no CPU profile row for %s" % LABEL[key])
elif not prof.get("status") or prof.get("status") == "ok" or "Not measured: " not in report.split(title)[-1]:
    problems.append("CPU profile: perf cannot sample here, yet the record says %r" % prof.get("status"))
if problems:
    print("\n".join(problems))
    sys.exit(1)
print("cost report ok: %s" % ", ".join("%s %.0f Ir" % (k, c.ir_per_request) for k, c in preon.counts.items()))
