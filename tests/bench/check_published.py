# SPDX-License-Identifier: MIT
"""Checks a `bench/run.py --suite published` output folder: every table of every scenario is filled for every
target, or says why that target could not run; preon's figures are all there (its image's too, when Docker answers); the published column is in each
table; the charts are PNGs. Usage: check_published.py DIR"""
import json
import os
import shutil
import subprocess
import sys

out = sys.argv[1]
r = json.load(open(os.path.join(out, "results.json")))
report = open(os.path.join(out, "report.md")).read()
sc = r["scenarios"]
problems = []
filled = {
    "build": lambda v: v.get("cold_s", 0) > 0 and v.get("warm_s", 0) > 0 or bool(v.get("skipped")),
    "000": lambda v: v["rps"] > 0 and v["p50"] is not None and v["p50"] <= v["p99"],
    "001": lambda v: v["rps"] > 0 and v["start_s"] > 0 and v["memory_kb"] > 0
    and all(c["result"] and (c["result"] != "ok" or c["rps"] > 0) for c in v["caps"].values()),
    "004": lambda v: v["total"] > 0 and v["ok"] + v["ko"] == v["total"] and v["peak_rss_kb"] > 0 and v["max_threads"] >= 1
    and v["pg_cpu_pct"] is not None and len(v["windows"]) > 3,
}
titles = {"build": "### build time", "000": "### 000", "001": "### 001", "004": "### 004"}
for s, ok in filled.items():
    section = report.split(titles[s], 1)[1].split("\n### ", 1)[0] if titles[s] in report else ""
    if not section:
        problems.append("%s: no table in report.md" % s)
    elif "published (their hardware)" not in section:
        problems.append("%s: no published column" % s)
    for n in r["targets"]:
        v = sc.get(s, {}).get(n)
        if not isinstance(v, dict):
            problems.append("%s/%s: nothing recorded" % (s, n))
        elif "error" in v:
            if n == "preon" or not v["error"].strip() or ("**%s: " % n) not in section:
                problems.append("%s/%s: failed without a reason in the report: %r" % (s, n, v["error"]))
        else:
            try:
                good = ok(v)
            except (KeyError, TypeError) as e:
                good = False
                v = dict(v, missing=str(e))
            if not good:
                problems.append("%s/%s: implausible figures %r" % (s, n, {k: x for k, x in v.items() if k != "windows"}))
# post 001's Docker table and post 002's matrix, on each target's image: preon's (the image test builds it) must
# fill every cell when Docker answers, a peer's image that is here must run; a target without an image says why
docker = subprocess.run(["docker", "info"], capture_output=True).returncode == 0 if shutil.which("docker") else False
cells = {"limits": lambda c: c["rps"] > 0 and c["warm"]["rps"] > 0 and c["mem_bytes"] > 0,
         "matrix": lambda c: c["warm"]["rps"] > 0 and c["boot_ms"] > 0 and c["failed"] == 0}
for s, ok in cells.items():
    section = report.split("### %s\n" % s, 1)[1].split("\n### ", 1)[0] if "### %s\n" % s in report else ""
    if not section:
        problems.append("%s: no table in report.md" % s)
    for n in r["targets"]:
        v = sc.get(s, {}).get(n)
        if not isinstance(v, dict) or not v:
            problems.append("%s/%s: nothing recorded" % (s, n))
        elif "error" in v:
            # only a target whose image is missing (quick mode does not build the peers') may fail here, saying why
            image = "preon:latest" if n == "preon" else "preon-peer-" + n
            present = docker and subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode == 0
            if present or ("**%s: " % n) not in section:
                problems.append("%s/%s: failed though its image %s is %s: %r" % (
                    s, n, image, "here" if present else "missing", v["error"]))
        elif not all(c.get("result") and (c["result"] != "ok" or ok(c)) for c in v.values()) or (
                n == "preon" and not all(c["result"] == "ok" for c in v.values())):
            # a JVM may be OOM-killed under the quick caps (16 and 64 MiB); preon serves under every one
            problems.append("%s/%s: implausible cells %r" % (s, n, v))
rounds = r["params"].get("p_rounds", 1)
for s in ("000", "001"):  # every figure of these from p_rounds rounds, each round kept, and the report says so
    for n in r["targets"]:
        v = sc.get(s, {}).get(n)
        if isinstance(v, dict) and "error" not in v and len(v.get("rounds") or []) != rounds:
            problems.append("%s/%s: %s rounds recorded, %d run" % (s, n, len(v.get("rounds") or []), rounds))
    if rounds > 1 and "median of %d rounds" % rounds not in report.split("### " + s, 1)[-1].split("\n### ", 1)[0]:
        problems.append("%s: the report does not say its figures are medians of %d rounds" % (s, rounds))
for png in ("ramp-p95.png", "ramp-ko.png", "001-rps.png"):
    p = os.path.join(out, png)
    if not os.path.exists(p) or open(p, "rb").read(8) != b"\x89PNG\r\n\x1a\n":
        problems.append("chart %s missing or not a PNG" % png)
for p in problems:
    print("FAIL:", p)
print("%d passed, %d failed" % (0 if problems else 1, 1 if problems else 0))
sys.exit(1 if problems else 0)
