# SPDX-License-Identifier: MIT
"""Checks a bench/run.py output folder: report, raw figures and charts exist and hold plausible, non-zero
figures for every scenario, read through the record's loader (bench/measure/record.py: a figure results.json
lacks is a failure naming its key path). Usage: check_run.py DIR [SCENARIO ...] [--expect-error NAME]"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from measure import record  # noqa: E402

out = sys.argv[1]
args = sys.argv[2:]
expect_error = args[args.index("--expect-error") + 1] if "--expect-error" in args else None
scenarios = [a for a in args if not a.startswith("--") and a != expect_error]
rec = record.load(os.path.join(out, "results.json"))
report = open(os.path.join(out, "report.md")).read()
problems = []
sc = rec.scenarios
# g(*keys): preon's figure of the scenario, a RecordError when results.json lacks it; v: its record
checks = {
    "hello": lambda g, v: g("rps") > 1000 and g("requests") > 0,
    "hello-latency": lambda g, v: g("rps") > 1000 and 0 < g("p50") <= g("p99"),
    "db": lambda g, v: g("cold", "rps") > 100 and g("warm", "rps") > 100 and g("warm", "failed") == 0,
    "startup": lambda g, v: 0 < g("hello_ms") <= g("db_ms") < 10000,
    "footprint": lambda g, v: g("binary_bytes") > 10000 and g("closure_bytes") > g("binary_bytes") and g("idle_rss_kb") > 1000
    and g("peak_rss_db_kb") >= g("idle_rss_kb") and g("threads") >= 2 and g("cpu_s_per_10k") > 0,
    "limits": lambda g, v: all(g(c, "result") == "ok" and g(c, "rps") > 100 and g(c, "rss_kb") > 1000
                               and g(c, "mem_bytes") > 100000 and g(c, "non2xx") == 0 for c in v),
    "matrix": lambda g, v: all(g(c, "result") == "ok" and 0 < g(c, "boot_ms") < 10000 and g(c, "idle_cpu_pct") >= 0
                               and 0 < g(c, "idle_mem_bytes") <= g(c, "load_mem_bytes") and g(c, "warm", "rps") > 100
                               and g(c, "failed") == 0 for c in v),
    "c10k": lambda g, v: g("rps") > 100 and g("p95") is not None and g("p95") > 0,
}
for s in scenarios:
    try:
        v = rec.result(s, "preon")
        if v is None:
            problems.append("%s: no result for preon: %r" % (s, rec.runs(s).get("preon")))
            continue
        if not checks[s](lambda *keys: rec.cell(s, "preon", *keys), v):
            problems.append("%s: implausible figures %r" % (s, v))
    except record.RecordError as e:
        problems.append(str(e))
    if "### " + (s if s != "db" else "db (ab)") not in report:
        problems.append("%s: no table in report.md" % s)
for png in (["requests.png", "latency.png"] if "hello-latency" in scenarios else []) + (["limits.png"] if "limits" in scenarios else []):
    p = os.path.join(out, png)
    if not os.path.exists(p) or os.path.getsize(p) < 1000 or open(p, "rb").read(8) != b"\x89PNG\r\n\x1a\n":
        problems.append("chart %s missing or not a PNG" % png)
if expect_error:
    errs = [v for s in sc.values() for n, v in s.items() if n == expect_error and isinstance(v, dict) and "error" in v]
    if not errs or "**%s:" % expect_error not in report:
        problems.append("target %s should be reported as failed" % expect_error)
    elif not any("boom" in e.get("log_tail", "") for e in errs) or "      boom" not in report:
        problems.append("the failed target's last log lines are missing")
for p in problems:
    print("FAIL:", p)
print("%d passed, %d failed" % (0 if problems else 1, 1 if problems else 0))
sys.exit(1 if problems else 0)
