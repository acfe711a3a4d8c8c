# SPDX-License-Identifier: MIT
"""Checks a `bench/run.py --suite published` output folder: every table of every scenario is filled for every
target, or says why that target could not run; preon's figures are all there (its image's too, when Docker answers); the published column is in each
table; the charts are PNGs. Results are read through the record's loader (bench/measure/record.py: a figure
results.json lacks is a failure naming its key path). Usage: check_published.py DIR"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from measure import record  # noqa: E402

out = sys.argv[1]
rec = record.load(os.path.join(out, "results.json"))
report = open(os.path.join(out, "report.md")).read()
sc = rec.scenarios
problems = []
# g(*keys): the target's figure of the scenario, a RecordError when results.json lacks it
filled = {
    "build": lambda g: g("cold_s") > 0 and g("warm_s") > 0,
    "000": lambda g: g("rps") > 0 and g("p50") is not None and g("p50") <= g("p99"),
    "001": lambda g: g("rps") > 0 and g("start_s") > 0 and g("memory_kb") > 0
    and all(g("caps", c, "result") and (g("caps", c, "result") != "ok" or g("caps", c, "rps") > 0) for c in g("caps")),
    "004": lambda g: g("total") > 0 and g("ok") + g("ko") == g("total") and g("peak_rss_kb") > 0 and g("max_threads") >= 1
    and g("pg_cpu_pct") is not None and len(g("windows")) > 3,
}
titles = {"build": "### build time", "000": "### 000", "001": "### 001", "004": "### 004"}
for s, ok in filled.items():
    section = report.split(titles[s], 1)[1].split("\n### ", 1)[0] if titles[s] in report else ""
    if not section:
        problems.append("%s: no table in report.md" % s)
    elif "published (their hardware)" not in section:
        problems.append("%s: no published column" % s)
    for n in rec.targets:
        v = sc.get(s, {}).get(n)
        if not isinstance(v, dict):
            problems.append("%s/%s: nothing recorded" % (s, n))
        elif "error" in v:
            if n == "preon" or not v["error"].strip() or ("**%s: " % n) not in section:
                problems.append("%s/%s: failed without a reason in the report: %r" % (s, n, v["error"]))
        elif "skipped" in v:  # a target without a build command: the report says so
            if not v["skipped"]:
                problems.append("%s/%s: skipped without a reason" % (s, n))
        else:
            try:
                good = ok(lambda *keys: rec.cell(s, n, *keys))
            except record.RecordError as e:
                good = False
                v = dict(v, missing=str(e))
            except TypeError as e:  # a figure recorded as none where the check compares it
                good = False
                v = dict(v, none=str(e))
            if not good:
                problems.append("%s/%s: implausible figures %r" % (s, n, {k: x for k, x in v.items() if k != "windows"}))
# post 001's Docker table and post 002's matrix, on each target's image: preon's (the image test builds it) must
# fill every cell when Docker answers, a peer's image that is here must run; a target without an image says why
docker = subprocess.run(["docker", "info"], capture_output=True).returncode == 0 if shutil.which("docker") else False
# g(*keys): a figure of one cell (one row of caps) of the target's record
cells = {"limits": lambda g: g("rps") > 0 and g("warm", "rps") > 0 and g("mem_bytes") > 0,
         "matrix": lambda g: g("warm", "rps") > 0 and g("boot_ms") > 0 and g("failed") == 0}
for s, ok in cells.items():
    section = report.split("### %s\n" % s, 1)[1].split("\n### ", 1)[0] if "### %s\n" % s in report else ""
    if not section:
        problems.append("%s: no table in report.md" % s)
    for n in rec.targets:
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
        else:
            try:
                def fig(label):
                    return lambda *keys: rec.cell(s, n, label, *keys)
                # preon serves in every cell; a peer's image under the quick caps may fail to start, be OOM-killed
                # or thrash and serve nothing in a run (that is a result), but an image that started in every cell
                # and never served is broken
                served = [fig(c)("result") == "ok" and ok(fig(c)) for c in v]
                started = [fig(c)("result") == "ok" for c in v]
                good = all(fig(c)("result") for c in v) and (
                    all(served) if n == "preon" else any(served) or not all(started))
            except record.RecordError as e:
                good = False
                v = dict(v, missing=str(e))
            if not good:
                # a JVM may be OOM-killed under the quick caps (16 and 64 MiB); preon serves under every one
                problems.append("%s/%s: implausible cells %r" % (s, n, v))
rounds = rec.params.get("p_rounds", 1)  # recorded since rounds came, 2026-12-01
for s in ("000", "001"):  # every figure of these from p_rounds rounds, each round kept, and the report says so
    for n in rec.targets:
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
