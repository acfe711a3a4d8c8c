# SPDX-License-Identifier: MIT
"""Reports: progress lines on stderr, the header every results.json starts with, Markdown tables, and the
results.json + report.md pair every script writes."""
import json
import os
import platform
import statistics
import sys
import time

from . import machine, tcp

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")  # bench/results/


def log(msg):
    print("[bench %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def save(results, report, out=None, prefix=""):
    """Prints the report and writes results.json and report.md to `out` (default bench/results/<prefix><time>/)."""
    print(report)
    out = out or os.path.join(RESULTS, prefix + time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(report)
    log("results in %s" % out)




def results_header(args=None, **fields):
    """The start of every results.json: when, on what, with which command and options."""
    head = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cpus": os.cpu_count(), "machine": platform.machine(),
            "kernel": platform.release(), "tcp_congestion_control": tcp.current(), "loadavg_start": list(os.getloadavg()),
            "command": " ".join(sys.argv)}
    head.update(machine.header())  # CPU model and runtime versions, since 2026-12-04
    if args is not None:
        head["args"] = dict(vars(args))
    head.update(fields)
    return head


class Spread(float):
    """The median of a figure's rounds that keeps their range: a float (the median) for arithmetic and formats,
    printed by fmt() as "median (min–max)"; ratio() of two says "within noise" where their ranges overlap."""

    def __new__(cls, values):
        vs = sorted(values)
        self = float.__new__(cls, statistics.median(vs))
        self.lo, self.hi, self.n = vs[0], vs[-1], len(vs)
        return self

    def overlaps(self, other):
        return self.lo <= other.hi and other.lo <= self.hi


def fmt(v, f="%.0f", missing="-"):
    """A figure for a table cell: `f` applied, or `missing` when there is none; a Spread of several rounds with
    its min–max."""
    if v is None:
        return missing
    if isinstance(v, Spread) and v.n > 1:
        return "%s (%s–%s)" % (f % v, f % v.lo, f % v.hi)
    return f % v


def ratio(a, b, f="%.2f×"):
    """a / b as a table cell, "-" when either is missing or b is 0; for two Spreads of several rounds, "within
    noise" where their ranges overlap (no verdict either way)."""
    if a is None or not b:
        return "-"
    noise = all(isinstance(x, Spread) and x.n > 1 for x in (a, b)) and a.overlaps(b)
    return f % (a / b) + (" (within noise)" if noise else "")


def round_ratios(a, b):
    """Two targets' per-round figures divided round by round (rounds where either has none left out): the runs of
    one round are minutes apart, rounds further, so these ratios carry less of the machine's drift than the
    ratio of the medians."""
    return [x / y for x, y in zip(a or [], b or []) if x and y]


def md_table(header, rows, align=None):
    """A Markdown table: `header` a list of column titles, `rows` lists of cells (str() applied; None → "-"),
    `align` an optional list of "l"/"r" per column."""
    def cell(v):
        return "-" if v is None else str(v).replace("|", "\\|").replace("\n", " ")
    sep = [{"l": ":---", "r": "---:"}.get(a, "---") for a in (align or [None] * len(header))]
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "|".join(sep) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def metric_table(names, rows, extra=()):
    """Metrics (rows) by target (columns), then each target's ratio to the first, then `extra` columns. A row is
    (label, [value per target], format, ratio wanted?[, [cell per extra column]]). A row with no figure at all
    (nothing measured, no extra cell) is left out: a metric that applies to none of the targets, such as an
    image's size for process targets."""
    header = ["metric"] + list(names) + ["%s / %s" % (names[0], n) for n in names[1:]] + list(extra)
    body = []
    for label, vals, f, want_ratio, *more in rows:
        if all(v is None for v in vals) and all(c in (None, "-") for c in (more[0] if more else [])):
            continue
        body.append([label] + [fmt(v, f) for v in vals] + [ratio(vals[0], v) if want_ratio else "-" for v in vals[1:]]
                    + list(more[0] if more else []))
    return md_table(header, body)
