# SPDX-License-Identifier: MIT
"""Checks a bench/run.py output folder: report, raw figures and charts exist and hold plausible, non-zero
figures for every scenario. Usage: check_run.py DIR [SCENARIO ...] [--expect-error NAME]"""
import json
import os
import sys

out = sys.argv[1]
args = sys.argv[2:]
expect_error = args[args.index("--expect-error") + 1] if "--expect-error" in args else None
scenarios = [a for a in args if not a.startswith("--") and a != expect_error]
results = json.load(open(os.path.join(out, "results.json")))
report = open(os.path.join(out, "report.md")).read()
problems = []
sc = results["scenarios"]
for s in scenarios:
    v = sc.get(s, {}).get("preon")
    if not isinstance(v, dict) or "error" in v:
        problems.append("%s: no result for preon: %r" % (s, v))
        continue
    checks = {
        "hello": lambda v: v["rps"] > 1000 and v["requests"] > 0,
        "hello-latency": lambda v: v["rps"] > 1000 and 0 < v["p50"] <= v["p99"],
        "db": lambda v: v["cold"]["rps"] > 100 and v["warm"]["rps"] > 100 and v["warm"]["failed"] == 0,
        "startup": lambda v: 0 < v["hello_ms"] <= v["db_ms"] < 10000,
        "footprint": lambda v: v["binary_bytes"] > 10000 and v["closure_bytes"] > v["binary_bytes"] and v["idle_rss_kb"] > 1000
        and v["peak_rss_db_kb"] >= v["idle_rss_kb"] and v["threads"] >= 2 and v["cpu_s_per_10k"] > 0,
        "limits": lambda v: all(r["result"] == "ok" and r["rps"] > 100 and r["rss_kb"] > 1000 and r["mem_bytes"] > 100000
                                and r["non2xx"] == 0 for r in v.values()),
        "matrix": lambda v: all(r["result"] == "ok" and 0 < r["boot_ms"] < 10000 and r["idle_cpu_pct"] >= 0
                                and 0 < r["idle_mem_bytes"] <= r["load_mem_bytes"] and r["warm"]["rps"] > 100
                                and r["failed"] == 0 for r in v.values()),
        "c10k": lambda v: v["rps"] > 100 and v["p95"] is not None and v["p95"] > 0,
    }
    if not checks[s](v):
        problems.append("%s: implausible figures %r" % (s, v))
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
