#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""README's headline tables, generated from recorded results, so that each figure is written once: by the script
that measured it. A block in README.md between

  <!-- headline:KIND FOLDER -->
  <!-- /headline -->

is KIND's table of FOLDER/results.json (a folder under bench/published/): `published` is the published suite's
summary (bench/run.py --suite published: posts 000, 001, 004 and the build, with the posts' own figures from
bench/reference/ in a column of their own), `brief` a few of its rows cut to their headline figures, `fixed` the
database path at fixed loads (bench/run.py --scenario fixed: CPU per request, p99 and knees; README's),
`fixed-agreement FOLDER FIRST` two runs of it side by side (CPU per request in FIRST and FOLDER, knees),
`fixed-cores FOLDER FIRST` the same with the stacks on one CPU in FIRST and on two in FOLDER, `matrix` post
002's resource matrix turned (a row per image: each cap's warm rate and memory under load, or what stopped it; the
post's Quarkus JVM figures in a last row), `throughput`
the throughput table against TechEmpower's C entry (bench/throughput.py), and
`section FOLDER PREFIX` the section of FOLDER's report (rendered again by bench/run.py or bench/throughput.py)
whose heading starts with PREFIX, without its heading.

  python3 bench/headline.py            # rewrite the blocks of README.md and docs/*.md from their records
  python3 bench/headline.py --check    # exit 1 when a file says something its records do not (a ctest)
"""
import argparse
import glob
import os
import re
import sys

from measure import REPO, Spread, md_table, record, refdata, throughput_report
from measure.rounds import spread
from scenarios import published_docker
from measure.throughput_report import TESTS, Table

BLOCK = re.compile(r"(<!-- headline:([\w-]+) (\S+)(?: ([^\n>]*?))? -->\n)(.*?)(<!-- /headline -->)", re.S)
NOTES = {"jvm": " + JDK"}  # what a target's artifact does not include


def _k(v):
    return "%.1fk" % (v / 1000.0) if v >= 1000 else "%.0f" % v


def _rps(rec, *keys):
    """A requests/s figure: the median, and its rounds' min–max where it was measured in rounds."""
    v = spread(rec, *keys)
    return "{:,.0f}".format(v) + (" (%s–%s)" % (_k(v.lo), _k(v.hi)) if isinstance(v, Spread) and v.n > 1 else "")


def _mb(kb):
    return "%.1f" % (kb / 1024) if kb < 100 * 1024 else "%.0f" % (kb / 1024)


def _pub(refs, post, metric, system, condition=None, table=None, f="{:,.0f}"):
    """A published figure, formatted; the post's outcome (e.g. OOM) when it gives no figure."""
    rs = refdata.find(refs, post, metric, system, condition, table)
    if not rs:
        raise KeyError("bench/reference has no %s %s of %s (%s, %s)" % (post, metric, system, condition, table))
    return rs[0].get("outcome") or "N/A" if rs[0]["value"] is None else f.format(rs[0]["value"])


def _artifact(rec, n):
    """The artifact with its runtime closure (the build scenario's, measured one way for all), else the artifact."""
    closure = rec.opt("build", n, "closure_bytes") if n in rec.runs("build") else None  # since 2026-12-01
    if closure:
        return "%.1f" % (closure / 1e6)
    a = _fig(rec, "001", n, "artifact_bytes", optional=True)
    return ("%.2f" if a < 1e6 else "%.1f") % (a / 1e6) + NOTES.get(n, "")


def _ramp004_partition(folders):
    """The CPU partition of the ramp004 runs among `folders` (their reports' sentence), when they all had the same
    one; None when unpartitioned, mixed or before partitions were recorded."""
    seen = set()
    for folder in (folders or "").split():
        rec = record.load(os.path.join(REPO, folder, "results.json"))
        if "ramp004" in rec.scenarios:
            p = rec.partition or {}
            seen.add(p.get("sentence") if p.get("enabled") else None)
    return seen.pop() if len(seen) == 1 else None


def _ramp004_row(runs, names, refs, nat, partition=None):
    """Post 004's row from ramp004 runs (bench/run.py --scenario ramp004, target → run): open arrivals to each
    target's break; `partition`: the runs' CPU partition, in words, for the row's label."""

    def cell(n):
        r = runs.get(n)
        if r is None or record.failed(r) is not None or not record.need(r, "summary", where="ramp004 run of " + n):
            return "-"  # not among that run's targets, failed it, or the driver gave no summary
        s, sat = r["summary"], r.get("saturation")
        point = "%s @ %.0f/s" % ("{:,}".format(sat["users"]), sat["rate"]) if sat else "not reached"
        return "%s / %.1f / %s / %s%s" % (point, s["ko_pct"], "{:,.0f}".format(s["p95_ms"]), _mb(r["peak_rss_kb"]),
                                          " (driver fell behind)" if r.get("driver_exit") == 3 else "")
    return (["004: open arrivals, 14-request journey (5 writes) on a 154 MB table%s: saturation point (users @ "
             "arrivals/s) / KO %% / p95 ms / RAM MB" % (" (%s)" % partition if partition else "")]
            + [cell(n) for n in names]
            + ["Quarkus reactive native %s @ – / %s %% / %s / %s" % (
                _pub(refs, "004", "saturation_point", nat, table="chapter 6"),
                _pub(refs, "004", "ko", nat, table="chapter 6", f="{:g}"),
                _pub(refs, "004", "response_time_p95", nat, table="chapter 6"),
                _pub(refs, "004", "memory", nat, table="chapter 6", f="{:g}"))])


def _same_stack(n):
    """An image run's target NAME-image is NAME: the same stack."""
    return n[:-len("-image")] if n.endswith("-image") else n


def overlay(results, folders):
    """`results` with the scenarios of other recorded runs laid over it, target by target (a target NAME-image
    counts as NAME: an image run of the same stack); a target that only an overlaid run has is appended to the
    targets. Returns (those results, the ramp004 runs of the overlaid folders merged, target → run, or None)."""
    sc, ramp004 = dict(results["scenarios"]), None
    names = list(results["targets"])
    for folder in (folders or "").split():
        path = os.path.join(REPO, folder, "results.json")
        other = record.load(path)
        names += [n for n in map(_same_stack, other.targets) if n not in names]
        for s, runs in other.scenarios.items():
            theirs = {_same_stack(n): v for n, v in runs.items()}
            if s == "ramp004":
                ramp004 = dict(ramp004 or {}, **theirs)
            else:
                sc[s] = {**sc.get(s, {}), **theirs}
    return dict(results, targets=names, scenarios=sc), ramp004


def smallest_serving(runs, n):
    """Post 001's Docker table: the smallest -m (MiB) under which target n served /hello, and its warm req/s. A cap
    under which it started and then failed requests warm (it thrashed: under 1 req/s, with socket errors) does not
    count as serving."""
    cells = []
    for label, c in (runs.get(n) or {}).items():
        if not isinstance(c, dict) or c.get("result") != "ok" or not c.get("rps"):
            continue
        warm = c.get("warm") or c
        if not (warm["rps"] < 1 and warm.get("socket_errors")):
            mib = int(label.split("memory ", 1)[1].split(" ", 1)[0])
            cells.append((mib, warm["rps"]))
    if not cells:
        return "none of 8…256 MiB"
    mib, rps = min(cells)
    return "%d MiB; %s" % (mib, "{:,.0f}".format(rps))


def matrix_cell(runs, n, label):
    c = (runs.get(n) or {}).get(label)
    if not isinstance(c, dict):
        return "-"
    if c.get("result") != "ok":  # OOM-killed, exited (code), or failed to start with the reason (e.g. a buildpack's)
        result = c["result"] if len(c["result"]) <= 80 else c["result"][:79] + "…"
        return result + (" under ab" if c.get("warm") else " at start")
    return "%s; %.1f MiB" % ("{:,.0f}".format(c["warm"]["rps"]), c["load_mem_bytes"] / 1048576.0)


MATRIX_CAPS = [("memory 100 MiB, cpus 0.5", "100MB/0.5 CPU"), ("memory 200 MiB, cpus 1", "200MB/1 CPU"),
               ("memory 300 MiB, cpus 2", "300MB/2 CPU")]


def _matrix_stop(c):
    """A matrix cell whose image did not serve, in a few words: killed by the kernel under ab (at the memory docker
    stats saw last) or at start, exited at start with its code (a buildpack's memory calculator, or the JVM's own
    exit), not ready in time, or still under ab when the bench stopped waiting; any other reason as the record has
    it."""
    result = c["result"]
    if result == "OOM-killed":
        if c.get("warm") is None:
            return "OOM-killed at start"
        mem = c.get("load_mem_bytes")
        return "OOM-killed under ab" + (" at %.1f MiB" % (mem / 1048576.0) if mem else "")
    code = re.search(r"exited at start \(\{'exit_code': (\d+)", result)
    if code:
        return "exited at start (code %s)" % code.group(1)
    ready = re.search(r"did not become ready within (\d+)s", result)
    if ready:
        return "not ready in %s s" % ready.group(1)
    stuck = re.search(r"Command '\['ab'.*timed out after (\d+) seconds", result)
    if stuck:  # the image started and took ab's requests, but ab had not finished when the bench stopped waiting
        return "ab unfinished after %s s" % stuck.group(1)
    return result if len(result) <= 80 else result[:79] + "…"


def render_matrix(path, refs, _=None):
    """Post 002's matrix (bench/run.py --scenario matrix) turned: a row per image (NAME-image is NAME), a column per
    cap with ab's warm req/s and the container's memory under load (docker stats peak), or what stopped it (OOM-killed,
    exited, did not start: matrix_cell), a cell's failed requests when any; then start → first 200 on the database
    path at each cap; last, the post's own Quarkus JVM row (its hardware, MySQL)."""
    rec = record.load(path)
    runs = rec.runs("matrix")

    def cell(n, label):
        c = (runs.get(n) or {}).get(label)
        if not isinstance(c, dict):
            return "-"
        if c.get("result") != "ok":
            return _matrix_stop(c)
        failed = "{:,}".format(c["failed"]) if c.get("failed") else None
        if failed and not c["warm"]["rps"]:
            return "served none (%s failed); %.1f MiB" % (failed, c["load_mem_bytes"] / 1048576.0)
        return matrix_cell(runs, n, label) + ("; %s failed" % failed if failed else "")

    def boots(n):
        ms = [(runs.get(n) or {}).get(label, {}).get("boot_ms") for label, _ in MATRIX_CAPS]
        return " / ".join("-" if v is None else "{:,.0f}".format(v) for v in ms)

    post = published_docker.load()["matrix"]["rows"]
    jvm = [post[key]["quarkus-jvm"] for _, key in MATRIX_CAPS]
    rows = [[_same_stack(n)] + [cell(n, label) for label, _ in MATRIX_CAPS] + [boots(n)] for n in rec.targets]
    rows.append(["post 002's Quarkus JVM (their hardware, MySQL)"]
                + ["RAM under load %s MB%s" % (j["load_mb"], "; %s failed" % j["failed"] if "failed" in j else "")
                   for j in jvm]
                + [" / ".join("{:,.0f}".format(j["boot_s"] * 1000) for j in jvm)])
    return md_table(["stack"] + ["%s: warm req/s; RAM under load" % key.replace("MB/", " MB / ") for _, key in MATRIX_CAPS]
                    + ["start → first 200 on the DB path, ms (each cap)"], rows)


class _Dash(Exception):
    """The target has no figure in this cell, and the record says so: it failed the scenario (args: why, as the
    record says it: the cell shows it), or it was not among the run's targets (a column another folder added), or
    the figure was recorded as none (e.g. OOM-killed)."""


def _why(reason, width=60):
    """A failed target's cell: the first line of the record's reason, cut to `width` characters."""
    line = (str(reason).strip().splitlines() or ["?"])[0]
    return "failed: " + (line if len(line) <= width else line[:width - 1] + "…")


def _fig(rec, s, n, *keys, optional=False):
    """rec's scenarios[s][n][keys…]; _Dash as above; a RecordError when the key is missing, unless `optional`: a
    figure recorded only where it applies (an artifact that was there, an image's size), _Dash when it is absent."""
    if n not in rec.runs(s):
        raise _Dash()
    why = record.failed(rec.runs(s)[n])
    if why is not None:  # a target that could not build or run says why in its cell
        raise _Dash(why)
    v = (rec.opt if optional else rec.cell)(s, n, *keys)
    if v is None:
        raise _Dash()
    return v


def _rps_of(rec, s, n, *keys):
    _fig(rec, s, n, *keys)
    return _rps(rec.result(s, n), *keys)


def render_published(path, refs, more=None):
    """The published suite's summary of the run at `path`; `more`: folders of other recorded runs whose scenarios
    are laid over the suite's, target by target (e.g. 000 and 001 in rounds, limits and matrix on the images, a
    target of its own in a column of its own), and ramp004 runs', whose open workload gives post 004's row instead
    of the suite's closed ramp."""
    names, rows = published_rows(path, refs, more)
    return md_table(["post, metric"] + names + ["published (their hardware)"], rows)


# README's short form of the same table: a few of its rows, each cell cut to its headline figure, no published
# column (the posts' figures are their hardware's: docs/benchmarks.md has them beside).
BRIEF = [
    ("000: ", "GET /hello, 50 connections, req/s (rounds min–max)", lambda c: c.split("; p99")[0]),
    ("001: peak RSS", "peak memory under load, MB", lambda c: c.split(" / ")[0]),
    ("003: docker", "container start to a first DB answer, ms", lambda c: c.split(" / ")[0]),
    ("003: exec", "start to a first DB answer, ms", lambda c: c.split(" / ")[0]),
    ("004: ", "DB journey at 0.5 CPU: users when it broke", lambda c: c.split(" @ ")[0]),
]


def render_brief(path, refs, more=None):
    """A few rows of render_published's table, each cell its headline figure (BRIEF), turned: a row per target, a
    column per measure (a dozen stacks read down a page, not across it)."""
    names, rows = published_rows(path, refs, more)
    labels, columns = [], []
    for prefix, label, cut in BRIEF:
        row = next((r for r in rows if r[0].startswith(prefix)), None)
        if row is not None:
            labels.append(label)
            columns.append([c if c == "-" else cut(c) for c in row[1:1 + len(names)]])
    return md_table(["stack"] + labels, [[n] + [col[i] for col in columns] for i, n in enumerate(names)])


def published_rows(path, refs, more=None):
    """render_published's target names and rows (each row: its label, a cell per target, the published figure)."""
    results, ramp004 = overlay(record.load_json(path), more)
    rec = record.run_from(results, record.where_of(path) + (" with %s laid over" % more if more else ""))
    names, sc = rec.targets, rec.scenarios

    def each(fn):
        cells = []
        for n in names:
            try:
                cells.append(fn(n))
            except _Dash as e:  # the target failed this scenario (its report has the whole reason) or has no figure
                cells.append(_why(e.args[0]) if e.args else "-")
        return cells

    def caps_how(n):
        how = rec.cell("001", n, "caps", "32", "how")
        return "%s: %s" % (n, how.replace("cgroup memory.max 32 MiB", "cgroup"))

    def peak_start_artifact(n):
        start = _fig(rec, "001", n, "start_s")
        return "%s / %s / %s" % (_mb(_fig(rec, "001", n, "memory_kb")), ("%.3f" if start < 1 else "%.2f") % start,
                                 _artifact(rec, n))

    q = "Quarkus RESTEasy Reactive"
    nat = "Quarkus Reactive + R2DBC, native executable"  # as chapter 6 labels it
    closure = any(rec.opt("build", n, "closure_bytes") for n in rec.runs("build"))  # recorded since 2026-12-01
    rows = [
        ["000: wrk -c50 -d%ss /hello, warm, req/s; p99" % rec.need("params", "p000_s")] + each(
            lambda n: "%s; p99 %.3g ms" % (_rps_of(rec, "000", n, "rps"), _fig(rec, "000", n, "p99"))) + [
            "Quarkus JVM %s (%s ms), native %s (%s ms)" % (
                _pub(refs, "000", "requests_per_s", "Quarkus JVM"), _pub(refs, "000", "latency_p99", "Quarkus JVM", f="{:.3g}"),
                _pub(refs, "000", "requests_per_s", "Quarkus native"),
                _pub(refs, "000", "latency_p99", "Quarkus native", f="{:.3g}"))],
        ["001: wrk -t10 -c50 -d%ss /hello, req/s" % rec.need("params", "p001_s")] + each(
            lambda n: _rps_of(rec, "001", n, "rps")) + [
            "%s JVM %s, native %s" % (q, _pub(refs, "001", "requests_per_s", q + " JVM"),
                                      _pub(refs, "001", "requests_per_s", q + " native"))],
        ["001: peak RSS, MB / start, s / artifact%s, MB" % (
            " + runtime closure (shared libraries a slim Debian lacks; for a jar, the JRE)" if closure else
            " alone (no runtime: a binary without the shared libraries it loads, a jar without its JRE, a native "
            "executable without its lib/; with them, as the 2026-12-01 row counts: preon 17.5, quarkus 219)")]
        + each(peak_start_artifact) + [
            "Quarkus reactive native %s / %s / %s" % (
                _pub(refs, "001", "memory", q + " native", f="{:g}"), _pub(refs, "001", "startup_time", q + " native", f="{:g}"),
                _pub(refs, "001", "artifact_size", q + " native", f="{:g}"))],
        _ramp004_row(ramp004, names, refs, nat, _ramp004_partition(more)) if ramp004 else
        ["004: ramp to %s users on the DB path: KO %% / p95 ms / RAM MB" % "{:,}".format(rec.need("params", "ramp_users"))]
        + each(lambda n: "%g / %.1f / %s" % (_fig(rec, "004", n, "ko_pct"), _fig(rec, "004", n, "p95_ms"),
                                             _mb(_fig(rec, "004", n, "peak_rss_kb"))))
        + ["Quarkus reactive native %s %% / %s / %s" % (
            _pub(refs, "004", "ko", nat, table="chapter 6", f="{:g}"),
            _pub(refs, "004", "response_time_p95", nat, table="chapter 6"),
            _pub(refs, "004", "memory", nat, table="chapter 6", f="{:g}"))],
    ]
    if 32 in rec.params.get("caps_mib", [32]):  # a run without 001's capped rows (caps_mib=) has none
        rows.insert(2, ["001: … under a 32 MiB cap (%s)" % "; ".join(
            caps_how(n) for n in names if n in rec.runs("001") and rec.result("001", n) is not None)] + each(
            lambda n: _rps_of(rec, "001", n, "caps", "32", "rps")) + [
            "Spring MVC JVM: %s; Quarkus reactive native %s" % (
                _pub(refs, "001", "requests_per_s", "Spring MVC JVM", "-Xmx32m"),
                _pub(refs, "001", "requests_per_s", q + " native", "-Xmx32m"))])
    if "limits" in sc:
        ref = published_docker.load()["limits"]["rows"]
        pub = {}
        for mib in sorted(ref, key=int):
            for svc, v in ref[mib].items():
                if isinstance(v.get("rps"), (int, float)):
                    pub.setdefault(svc, (int(mib), v["rps"]))
        rows.insert(len(rows) - 1, ["001, Docker (1 CPU): smallest -m of 8…256 MiB that serves /hello; warm req/s there"]
                    + each(lambda n: smallest_serving(rec.runs("limits"), n)) + [
                        # the post's images were native builds (80.5 MB: its 49 MB executable and a base), not JVMs
                        "native images: " + "; ".join("%s %d MiB (%s)" % (svc, mib, "{:,.0f}".format(rps))
                                                      for svc, (mib, rps) in pub.items())])
    if "matrix" in sc:
        label, key = MATRIX_CAPS[0]
        rows.insert(len(rows) - 1, ["002, a 100 MB / 0.5 CPU container: ab -n 10000 -c 100 on the DB path, warm req/s; "
                                    "RAM under load"] + each(lambda n: matrix_cell(rec.runs("matrix"), n, label)) + [
                        "Quarkus JVM: boot {boot_s} s, RAM under load (MB) {load_mb}, {failed} failed".format(
                            **published_docker.load()["matrix"]["rows"][key]["quarkus-jvm"])])
    if "003" in sc:
        image = any("image_bytes" in (v or {}) for v in rec.runs("003").values())  # a run of the targets' images
        rows.insert(len(rows) - 1, [("003: docker run → first 200 on the DB path, ms / a repeat request, ms / image, MB"
                                     if image else "003: exec → first 200 on the DB path, ms / a repeat request, ms")]
                    + each(lambda n: "%s / %.1f" % ("{:,.0f}".format(_fig(rec, "003", n, "first_db_ms")),
                                                    _fig(rec, "003", n, "repeat_db_ms"))
                           + (" / %.1f" % (_fig(rec, "003", n, "image_bytes", optional=True) / 1e6) if image else "")) + [
            "Quarkus JVM pod start %s–%s s, first request %s s; native < %s s, %s ms" % (
                _pub(refs, "003", "pod_startup_time", "Quarkus JVM", "Kubernetes pod with 512 MB RAM", f="{:g}"),
                refdata.find(refs, "003", "pod_startup_time", "Quarkus JVM", "Kubernetes pod with 512 MB RAM")[-1]["value"],
                _pub(refs, "003", "first_request_time", "Quarkus JVM", "Kubernetes pod with 512 MB RAM", f="{:g}"),
                _pub(refs, "003", "pod_startup_time", "Quarkus native", "Kubernetes pod with 512 MB RAM", f="{:g}"),
                _pub(refs, "003", "first_request_time", "Quarkus native", "Kubernetes pod with 512 MB RAM", f="{:g}"))])
    rows += [
        ["build, cold (s)"] + each(lambda n: "%.1f" % _fig(rec, "build", n, "cold_s")) + [
            "Quarkus native %s–%s" % (_pub(refs, "001", "build_time", q + " native", f="{:g}"),
                                      _pub(refs, "004", "build_time", nat, table="chapter 6", f="{:g}"))],
    ]
    # a run of some of the suite's scenarios (--scenario 000,001,003): no row for a post it did not measure
    unmeasured = ([] if "004" in sc or ramp004 else ["004: "]) + ([] if "build" in sc else ["build, "])
    return names, [r for r in rows if not any(r[0].startswith(u) for u in unmeasured)]


def render_throughput(path, refs, _=None):
    return "\n".join(Table(record.load_throughput(path).raw, "plain").main_rows(TESTS)) + "\n"


def render_section(path, refs, prefix):
    import run  # noqa: E402 - only here: it brings the whole of bench/run.py
    lines = (throughput_report.render(record.load_throughput(path).raw) if record.kind(path) == "throughput"
             else run.render(record.load(path))).splitlines()
    for i, line in enumerate(lines):
        if line.startswith("#") and line.lstrip("#").strip().startswith(prefix):
            body = []
            for rest in lines[i + 1:]:
                if rest.startswith("#"):
                    break
                body.append(rest)
            return "\n".join(body).strip("\n") + "\n"
    raise KeyError("the report has no section whose heading starts with %r" % prefix)


def render_fixed(path, refs, _=None):
    """The database path at fixed loads (bench/run.py --scenario fixed): CPU per request and p99 at the common rate
    on the read and the write, each ladder's knee, peak RSS; a row per stack."""
    from scenarios import fixed  # noqa: PLC0415 - the renderer of that scenario
    return fixed.headline_table(record.load(path))


def render_fixed_agreement(path, refs, first):
    """Two runs of the fixed scenario: CPU per request at the common rate in the first (`first`, a folder) and in
    this one, their ratio, and the knees of both."""
    from scenarios import fixed  # noqa: PLC0415 - the renderer of that scenario
    return fixed.agreement_table(record.load(os.path.join(REPO, first, "results.json")), record.load(path))


def render_fixed_cores(path, refs, first):
    """The same targets of the fixed scenario on one CPU (`first`, a folder) and on two (this one): CPU per request
    at the common rate in both, and their ratio."""
    from scenarios import fixed  # noqa: PLC0415 - the renderer of that scenario
    return fixed.agreement_table(record.load(os.path.join(REPO, first, "results.json")), record.load(path),
                                 what="the stack on one CPU → on two")


KINDS = {"published": render_published, "brief": render_brief, "throughput": render_throughput,
         "section": render_section, "fixed": render_fixed, "fixed-agreement": render_fixed_agreement,
         "fixed-cores": render_fixed_cores, "matrix": render_matrix}


def generate(text, refs):
    """`text` with every headline block rendered again from its folder's results.json."""
    def block(m):
        path = os.path.join(REPO, m.group(3), "results.json")
        return m.group(1) + KINDS[m.group(2)](path, refs, m.group(4)) + m.group(6)
    return BLOCK.sub(block, text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 on a difference")
    ap.add_argument("--file", action="append", help="a file to process (default: README.md and docs/*.md)")
    args = ap.parse_args()
    files = args.file or [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
    refs, total, differ = refdata.load(), 0, []
    for path in files:
        with open(path) as f:
            text = f.read()
        n = len(BLOCK.findall(text))
        if not n:
            continue
        total += n
        new = generate(text, refs)
        if new == text:
            continue
        if not args.check:
            with open(path, "w") as f:
                f.write(new)
            print("%s: headline tables written" % path)
            continue
        differ.append(path)
        for a, b in zip(text.splitlines(), new.splitlines()):
            if a != b:
                print("%s says:   %s\nrecords give: %s" % (os.path.relpath(path, REPO), a, b), file=sys.stderr)
    if not total:
        print("no headline blocks in %s" % ", ".join(files), file=sys.stderr)
        return 1
    if differ:
        print("%s: the tables differ from their records; python3 bench/headline.py rewrites them" % ", ".join(differ),
              file=sys.stderr)
        return 1
    print("%d headline tables match their records" % total)
    return 0

if __name__ == "__main__":
    sys.exit(main())
