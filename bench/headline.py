#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""README's headline tables, generated from recorded results, so that each figure is written once: by the script
that measured it. A block in README.md between

  <!-- headline:KIND FOLDER -->
  <!-- /headline -->

is KIND's table of FOLDER/results.json (a folder under bench/published/): `published` is the published suite's
summary (bench/run.py --suite published: posts 000, 001, 004 and the build, with the posts' own figures from
bench/reference/ in a column of their own), `throughput` issue 13's table (bench/throughput.py), and
`section FOLDER PREFIX` the section of FOLDER's report (rendered again by bench/run.py or bench/throughput.py)
whose heading starts with PREFIX, without its heading.

  python3 bench/headline.py            # rewrite the blocks of README.md and docs/*.md from their records
  python3 bench/headline.py --check    # exit 1 when a file says something its records do not (a ctest)
"""
import argparse
import glob
import json
import os
import re
import sys

from measure import REPO, md_table, refdata, throughput_report
from measure.throughput_report import TESTS, Table

BLOCK = re.compile(r"(<!-- headline:(\w+) (\S+)(?: ([^\n>]*?))? -->\n)(.*?)(<!-- /headline -->)", re.S)
NOTES = {"jvm": " + JDK"}  # what a target's artifact does not include


def _mb(kb):
    return "%.1f" % (kb / 1024) if kb < 100 * 1024 else "%.0f" % (kb / 1024)


def _pub(refs, post, metric, system, condition=None, table=None, f="{:,.0f}"):
    """A published figure, formatted; the post's outcome (e.g. OOM) when it gives no figure."""
    rs = refdata.find(refs, post, metric, system, condition, table)
    if not rs:
        raise KeyError("bench/reference has no %s %s of %s (%s, %s)" % (post, metric, system, condition, table))
    return rs[0].get("outcome") or "N/A" if rs[0]["value"] is None else f.format(rs[0]["value"])


def render_published(results, refs, _=None):
    names, sc = results["targets"], results["scenarios"]

    def each(fn):
        cells = []
        for n in names:
            try:
                cells.append(fn(n))
            except (KeyError, TypeError):  # the target failed this scenario: its report says why
                cells.append("-")
        return cells

    q = "Quarkus RESTEasy Reactive"
    nat = "Quarkus Reactive + R2DBC, native executable"  # as chapter 6 labels it
    rows = [
        ["000: wrk -c50 -d20s /hello, req/s (p99)"] + each(
            lambda n: "{:,.0f} ({:.3g} ms)".format(sc["000"][n]["rps"], sc["000"][n]["p99"])) + [
            "Quarkus JVM %s (%s ms), native %s (%s ms)" % (
                _pub(refs, "000", "requests_per_s", "Quarkus JVM"), _pub(refs, "000", "latency_p99", "Quarkus JVM", f="{:.3g}"),
                _pub(refs, "000", "requests_per_s", "Quarkus native"),
                _pub(refs, "000", "latency_p99", "Quarkus native", f="{:.3g}"))],
        ["001: wrk -t10 -c50 -d60s /hello, req/s"] + each(lambda n: "{:,.0f}".format(sc["001"][n]["rps"])) + [
            "%s JVM %s, native %s" % (q, _pub(refs, "001", "requests_per_s", q + " JVM"),
                                      _pub(refs, "001", "requests_per_s", q + " native"))],
        ["001: … under a 32 MiB cap (%s)" % "; ".join(
            "%s: %s" % (n, sc["001"][n]["caps"]["32"]["how"].replace("cgroup memory.max 32 MiB", "cgroup"))
            for n in names if "caps" in sc["001"].get(n, {}))] + each(
            lambda n: "{:,.0f}".format(sc["001"][n]["caps"]["32"]["rps"])) + [
            "Spring MVC JVM: %s; Quarkus reactive native %s" % (
                _pub(refs, "001", "requests_per_s", "Spring MVC JVM", "-Xmx32m"),
                _pub(refs, "001", "requests_per_s", q + " native", "-Xmx32m"))],
        ["001: peak RSS, MB / start, s / artifact, MB"] + each(lambda n: "%s / %s / %s%s" % (
            _mb(sc["001"][n]["memory_kb"]), ("%.3f" if sc["001"][n]["start_s"] < 1 else "%.2f") % sc["001"][n]["start_s"],
            ("%.2f" if sc["001"][n]["artifact_bytes"] < 1e6 else "%.1f") % (sc["001"][n]["artifact_bytes"] / 1e6),
            NOTES.get(n, ""))) + [
            "Quarkus reactive native %s / %s / %s" % (
                _pub(refs, "001", "memory", q + " native", f="{:g}"), _pub(refs, "001", "startup_time", q + " native", f="{:g}"),
                _pub(refs, "001", "artifact_size", q + " native", f="{:g}"))],
        ["004: ramp to %s users on the DB path: KO %% / p95 ms / RAM MB" % "{:,}".format(results["params"]["ramp_users"])]
        + each(lambda n: "%g / %.1f / %s" % (sc["004"][n]["ko_pct"], sc["004"][n]["p95_ms"], _mb(sc["004"][n]["peak_rss_kb"])))
        + ["Quarkus reactive native %s %% / %s / %s" % (
            _pub(refs, "004", "ko", nat, table="chapter 6", f="{:g}"),
            _pub(refs, "004", "response_time_p95", nat, table="chapter 6"),
            _pub(refs, "004", "memory", nat, table="chapter 6", f="{:g}"))],
        ["build, cold (s)"] + each(lambda n: "%.1f" % sc["build"][n]["cold_s"]) + [
            "Quarkus native %s–%s" % (_pub(refs, "001", "build_time", q + " native", f="{:g}"),
                                      _pub(refs, "004", "build_time", nat, table="chapter 6", f="{:g}"))],
    ]
    return md_table(["post, metric"] + names + ["published (their hardware)"], rows)


def render_throughput(results, refs, _=None):
    return "\n".join(Table(results, "plain").main_rows(TESTS)) + "\n"


def render_section(results, refs, prefix):
    import run  # noqa: E402 - only here: it brings the whole of bench/run.py
    lines = (throughput_report.render(results) if "variants" in results else run.render(results)).splitlines()
    for i, line in enumerate(lines):
        if line.startswith("#") and line.lstrip("#").strip().startswith(prefix):
            body = []
            for rest in lines[i + 1:]:
                if rest.startswith("#"):
                    break
                body.append(rest)
            return "\n".join(body).strip("\n") + "\n"
    raise KeyError("the report has no section whose heading starts with %r" % prefix)


KINDS = {"published": render_published, "throughput": render_throughput, "section": render_section}


def generate(text, refs):
    """`text` with every headline block rendered again from its folder's results.json."""
    def block(m):
        with open(os.path.join(REPO, m.group(3), "results.json")) as f:
            results = json.load(f)
        return m.group(1) + KINDS[m.group(2)](results, refs, m.group(4)) + m.group(6)
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
