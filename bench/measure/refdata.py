# SPDX-License-Identifier: MIT
"""The five published posts' figures as data (bench/reference/NNN.json, one file per post), for the reports'
"published (their hardware)" column. A file holds the post's defaults (hardware, tool, command) and its records;
load() gives every record with every field filled. Other files in bench/reference/ (e.g. a Docker experiments
file) are not records of this schema and are left alone.

  python3 bench/measure/refdata.py            # validates the data and prints a count per post
"""
import json
import os
import re
import sys

DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "reference")
POSTS = ("000", "001", "002", "003", "004")
FIELDS = ("post", "system", "metric", "value", "unit", "tool", "command", "hardware", "note")
OPTIONAL = ("condition", "table", "outcome", "experimental")
_FILE = re.compile(r"^(\d{3})\.json$")


def load(directory=DIR):
    """Every record of every NNN.json in `directory`, each a dict with FIELDS (note "" when none) and whichever of
    OPTIONAL it has."""
    out = []
    for name in sorted(os.listdir(directory)):
        m = _FILE.match(name)
        if not m:
            continue
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            doc = json.load(f)
        for i, r in enumerate(doc.get("records", [])):
            rec = {"post": doc.get("post"), "tool": doc.get("tool"), "command": doc.get("command"),
                   "hardware": doc.get("hardware"), "note": "", "source": doc.get("source"), "file": name, "index": i}
            rec.update(r)
            out.append(rec)
    return out


def validate(records):
    """Problems with the data, as sentences (empty when it is sound)."""
    problems = []
    for r in records:
        where = "%s record %d" % (r.get("file"), r.get("index"))
        for k in FIELDS:
            if k not in r or (k != "value" and not isinstance(r[k], str)):
                problems.append("%s: %s missing or not a string" % (where, k))
        for k in ("post", "system", "metric", "unit", "tool", "command", "hardware"):
            if isinstance(r.get(k), str) and not r[k].strip():
                problems.append("%s: %s empty" % (where, k))
        v = r.get("value")
        if v is None:
            if not (r.get("note") or r.get("outcome")):
                problems.append("%s: no value and no note or outcome saying why" % where)
        elif isinstance(v, bool) or not isinstance(v, (int, float)):
            problems.append("%s: value %r is not a number" % (where, v))
        if r.get("post") not in POSTS:
            problems.append("%s: unknown post %r" % (where, r.get("post")))
        elif r.get("file") != r["post"] + ".json":
            problems.append("%s: post %s in the wrong file" % (where, r["post"]))
        extra = set(r) - set(FIELDS) - set(OPTIONAL) - {"source", "file", "index"}
        if extra:
            problems.append("%s: unknown fields %s" % (where, sorted(extra)))
    for p in POSTS:
        if not any(r.get("post") == p for r in records):
            problems.append("post %s has no records" % p)
    return problems


def find(records, post, metric, system=None, condition=None, table=None):
    """Records of `post` with `metric`, and with `system` / `condition` / `table` when given (condition None means
    records without a condition)."""
    return [r for r in records if r["post"] == post and r["metric"] == metric
            and (system is None or r["system"] == system) and r.get("condition") == condition
            and (table is None or r.get("table") == table)]


def value(records, post, metric, system, condition=None, table=None):
    """One published figure as printed text with its unit ("OOM" etc. when the post gives an outcome), or "-"."""
    rs = find(records, post, metric, system, condition, table)
    if not rs:
        return "-"
    r = rs[0]
    if r["value"] is None:
        return r.get("outcome") or "N/A"
    return "%s %s" % (num(r["value"]), r["unit"])


def num(v):
    """A figure as the post printed it: integers without a fraction, others with theirs."""
    return "%d" % v if float(v).is_integer() else repr(float(v))


def systems(records, post, table=None):
    """The post's systems in the order of first appearance."""
    seen = []
    for r in records:
        if r["post"] == post and (table is None or r.get("table") == table) and r["system"] not in seen:
            seen.append(r["system"])
    return seen


def main():
    records = load()
    problems = validate(records)
    for p in problems:
        print("FAIL:", p)
    for p in POSTS:
        print("%s: %d records" % (p, sum(1 for r in records if r["post"] == p)))
    print("notes on contradictions:", sum(1 for r in records if "contradiction" in r["note"] or "SWAP" in r["note"]))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
