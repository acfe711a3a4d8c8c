# SPDX-License-Identifier: MIT
"""Checks a bench/throughput.py output folder run with `--targets preon,preon-stock,pgbench --variant pgss` and the
stock build (--stock, cmake -DPREON_DEPS=system): the issue's table with a figure for preon in every row and the
absent targets named as such, the stock build beside preon on every test (its own binary, recorded as PREON_DEPS=system,
a figure and a ratio in every row of its table), the pg_stat_statements variant really
loaded, plausible medians in results.json, read through the record's loader (bench/measure/record.py: a figure
results.json lacks is a failure naming its key path). Usage: check_throughput.py DIR"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from measure import record  # noqa: E402
from measure.throughput_report import TESTS  # noqa: E402

out = sys.argv[1]
rec = record.load_throughput(os.path.join(out, "results.json"))
report = open(os.path.join(out, "report.md")).read()
problems = []
expected = {"preon": "ok", "preon-twin": "not run", "preon-stock": "ok", "preon-previous": "not run", "preon-c1": "not run", "preon-c2": "not run", "preon-c3": "not run", "preon-c4": "not run", "preon-batch": "not run", "tfb-h2o": "not run",
            "tfb-h2o-m2": "not run", "tfb-h2o-m3": "not run", "tfb-h2o-m4": "not run", "go-gin": "not run", "bare": "not run", "pgbench": "ok", "pgbench-one": "not run"}
if rec.status != expected:
    problems.append("targets' status %r, expected %r" % (rec.status, expected))

if os.path.exists("/proc/sys/net/ipv4/tcp_congestion_control"):
    cc = open("/proc/sys/net/ipv4/tcp_congestion_control").read().strip()
    if rec.tcp_congestion_control != cc or "TCP congestion control: %s" % cc not in report:
        problems.append("the TCP congestion control (%s) not in results.json (%r) or report.md" % (cc, rec.tcp_congestion_control))

header = "| test | preon | TFB h2o | preon / TFB h2o | what limits it | goal |"
if report.count(header) != 2:
    problems.append("report.md: expected the table and its pg_stat_statements variant, found %d" % report.count(header))
rate = r"\d[\d.]*[kM]?"
for t in TESTS:
    label = re.escape(t["label"])
    peer = "gin not run" if t["key"] in ("fruits", "hello") else "not run"
    if not re.search(r"^\| %s \| %s \| %s \| – \|" % (label, rate, peer), report, re.M):
        problems.append("report.md: no row %r with preon's figure and %r" % (t["label"], peer))
if not re.search(r"^\| /db \(c64\) \|.*pgbench, 16 per Sync: %s queries/s \(preon at [\d.]+×\)" % rate, report, re.M):
    problems.append("report.md: /db row without the pgbench ceiling")

builds_title = "## preon beside its other builds"
if builds_title not in report:
    problems.append("report.md lacks %r" % builds_title)
else:
    part = report.split(builds_title)[1].split("\n## ")[0]
    if "| test | preon | stock build | preon / stock build | round by round |" not in part:
        problems.append("report.md: the builds' table has no stock build column")
    for t in TESTS:
        if not re.search(r"^\| %s \| %s \| %s \| [\d.]+×( \(within noise\))? \| (-|[\d.]+× \(.*\)) \|$" % (
                re.escape(t["label"]), r"\d+", r"\d+"), part, re.M):
            problems.append("report.md: the builds' table has no row %r with preon's and the stock build's figures"
                            % t["label"])


def checked(fn):
    """fn()'s problems; the record's own when a figure it needs is missing."""
    try:
        fn()
    except record.RecordError as e:
        problems.append(str(e))


def check_variant(variant, tests):
    for t in tests:
        m = rec.need("variants", variant, "medians", t["key"], "preon")
        # wrk times a pipelined batch only once it is complete: a 1 s run may time too few for percentiles
        if not m or not m["rps"] > 0 or (t["depth"] == 1 and not (m["p99"] or 0) > 0):
            problems.append("%s %s: implausible figures for preon %r" % (variant, t["key"], m))
        elif t["depth"] == 1 and not 0 < rec.need("variants", variant, "medians", t["key"], "preon", "c1_p50") \
                <= rec.need("variants", variant, "medians", t["key"], "preon", "c1_p99"):
            problems.append("%s %s: implausible c1 latency %r" % (variant, t["key"], m))
        m = rec.need("variants", variant, "medians", t["key"], "preon-stock")
        if not m or not m["rps"] > 0 or m["errors"]:
            problems.append("%s %s: implausible figures for preon-stock %r" % (variant, t["key"], m))
    for key in ("db", "fruits"):
        p = rec.need("variants", variant, "medians", key, "pgbench")
        if not p or not p["rps"] > 0 or p["errors"]:
            problems.append("%s %s: no pgbench ceiling %r" % (variant, key, p))
    if not rec.need("variants", variant, "peak_rss_kb", "preon") > 1000:
        problems.append("%s: no peak RSS for preon" % variant)


for variant, tests in (("plain", TESTS), ("pgss", [t for t in TESTS if t["db"]])):
    checked(lambda: check_variant(variant, tests))
checked(lambda: None if (rec.need("variants", "pgss", "pgss_statements") or 0) > 0 else problems.append(
    "pg_stat_statements was not loaded in the pgss variant"))

# the stock build is another binary than preon's, built with PREON_DEPS=system
checked(lambda: None if rec.need("builds", "preon-stock", "deps") == "system" and rec.need(
    "builds", "preon-stock", "binary") != rec.need("builds", "preon", "binary") else problems.append(
        "builds: %r" % rec.need("builds")))

# what preon as shipped chose, as --check-config said it inside the target's set
checked(lambda: None if rec.need("preon_shipped", "status") == "ok" and
        rec.need("preon_shipped", "connections_per_thread") >= 1 and
        rec.need("preon_shipped", "why").startswith("auto: ") else problems.append(
            "preon_shipped: %r" % rec.need("preon_shipped")))

for p in problems:
    print("FAIL:", p)
print("check_throughput: %d problem(s)" % len(problems))
sys.exit(1 if problems else 0)
