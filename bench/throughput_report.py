# SPDX-License-Identifier: MIT
"""bench/throughput.py's tests, issue 13's goals, and the report: the issue's table (medians, ratios, what limits
each row, goal met/missed), latency and errors per target, peak RSS."""
from measure import md_table


def _t(key, label, path, conns, depth=1, db=False):
    return {"key": key, "label": label, "path": path, "conns": conns, "depth": depth, "db": db}


TESTS = [
    _t("plaintext", "/plaintext (c50)", "/plaintext", 50),
    _t("pipelined", "/plaintext pipelined ×16 (c256)", "/plaintext", 256, depth=16),
    _t("json", "/json (c64)", "/json", 64),
    _t("db", "/db (c64)", "/db", 64, db=True),
    _t("fortunes", "/fortunes (c64)", "/fortunes", 64, db=True),
    _t("queries", "/queries?queries=20 (c64)", "/queries?queries=20", 64, db=True),
    _t("updates", "/updates?queries=20 (c64)", "/updates?queries=20", 64, db=True),
    _t("fruits", "/fruits (c100) vs go-gin", "/fruits", 100, db=True),
    _t("hello", "/hello (c50) vs go-gin", "/hello", 50),
]

# Issue 13's goals: (test, what preon is divided by, at least, how the goal reads).
GOALS = [
    ("plaintext", ("plaintext", "tfb-h2o"), 1.0, "≥ 1.0× TFB h2o"),
    ("pipelined", ("pipelined", "tfb-h2o"), 1.0, "≥ 1.0× TFB h2o"),
    ("json", ("json", "tfb-h2o"), 1.0, "≥ 1.0× TFB h2o"),
    ("db", ("db", "tfb-h2o"), 1.5, "≥ 1.5× TFB h2o"),
    ("db", ("db", "pgbench"), 0.25, "≥ 0.25× pgbench"),
    ("fortunes", ("fortunes", "tfb-h2o"), 1.5, "≥ 1.5× TFB h2o"),
    ("queries", ("queries", "tfb-h2o"), 1.5, "≥ 1.5× TFB h2o"),
    ("updates", ("updates", "tfb-h2o"), 1.5, "≥ 1.5× TFB h2o"),
    ("fruits", ("fruits", "go-gin"), 3.0, "≥ 3× gin"),
    ("fruits", ("hello", "preon"), 0.4, "≥ 0.4× preon's /hello"),
    ("hello", ("hello", "bare"), 0.9, "≥ 0.9× bare responder"),
]
NAMES = {"preon": "preon", "tfb-h2o": "TFB h2o", "go-gin": "go-gin", "bare": "bare epoll responder",
         "pgbench": "pgbench ceiling"}


def rate(v):
    """126.0k, 6.87k, 1.37M: three or four significant digits, as the issue writes them."""
    if v is None:
        return "–"
    if v >= 1e6:
        return "%.2fM" % (v / 1e6)
    if v >= 1e4:
        return "%.1fk" % (v / 1e3)
    if v >= 1e3:
        return "%.2fk" % (v / 1e3)
    return "%.0f" % v


def ms(v):
    return "–" if v is None else "%.2f" % v


class Table:
    """Medians of one variant; rows that the variant did not run are looked up in `fallback` (the plain run)."""

    def __init__(self, results, variant):
        self.status = results["status"]
        self.med = results["variants"][variant]["medians"]
        self.fallback = results["variants"]["plain"]["medians"]

    def rps(self, test, name):
        by = self.med.get(test) if test in self.med else self.fallback.get(test, {})
        return (by or {}).get(name, {}).get("rps")

    def cell(self, test, name):
        """A figure, or why there is none (not built, not available, not run)."""
        v = self.rps(test, name)
        if v is not None:
            return rate(v)
        return self.status.get(name) if self.status.get(name) != "ok" else "–"

    def ratio(self, test, other):
        a, b = self.rps(test, "preon"), self.rps(*other)
        return a / b if a and b else None

    def goals(self, test):
        out = []
        for key, other, least, text in GOALS:
            if key != test:
                continue
            r = self.ratio(test, other)
            if r is None:
                out.append("%s: –" % text)
            elif r >= least:
                out.append("%s: met" % text)
            else:  # 0.9996× is "missed (0.9996×)", not "missed (1.00×)"
                out.append("%s: missed (%s×)" % (text, "%.2f" % r if round(r, 2) < least else "%.4f" % r))
        return "; ".join(out)

    def limits(self, test):
        """The issue's "what limits it" column: the bare responder, pgbench, preon's own /hello."""
        parts = []
        if test in ("plaintext", "pipelined", "hello"):
            r = self.ratio(test, (test, "bare"))
            parts.append("bare epoll responder: %s%s" % (self.cell(test, "bare"),
                                                         " (preon at %.2f×)" % r if r else ""))
        if test in ("db", "fruits"):
            r, v = self.ratio(test, (test, "pgbench")), self.rps(test, "pgbench")
            parts.append("pgbench, 16 per Sync: %s%s%s" % (self.cell(test, "pgbench"), " queries/s" if v else "",
                                                           " (preon at %.2f×)" % r if r else ""))
        if test == "fruits":
            r = self.ratio("fruits", ("hello", "preon"))
            parts.append("preon's /hello: %s%s" % (self.cell("hello", "preon"), " (%.2f×)" % r if r else ""))
        return "; ".join(parts)

    def main_rows(self, tests):
        rows = []
        for t in tests:
            k = t["key"]
            if k in ("fruits", "hello"):
                peer, r = "gin " + self.cell(k, "go-gin"), self.ratio(k, (k, "go-gin"))
                ratio = "%.2f× gin" % r if r else "–"
            else:
                peer, r = self.cell(k, "tfb-h2o"), self.ratio(k, (k, "tfb-h2o"))
                ratio = "%.2f×" % r if r else "–"
            rows.append([t["label"], self.cell(k, "preon"), peer, ratio, self.limits(k), self.goals(k)])
        return md_table(["test", "preon", "TFB h2o", "preon / TFB h2o", "what limits it", "goal"], rows).splitlines()

    def latency_rows(self, tests):
        rows = []
        for t in tests:
            for name in NAMES:
                m = self.med.get(t["key"], {}).get(name)
                if m:
                    rows.append([t["label"], NAMES[name], rate(m["rps"]), " ".join(rate(x) for x in m["per_round"]),
                                 ms(m["p99"]), ms(m["c1_p50"]), ms(m["c1_p99"]), m["errors"]])
        return md_table(["test", "target", "req/s (median)", "per round", "p99 ms (test's conns)", "c1 p50 ms",
                         "c1 p99 ms", "errors"], rows).splitlines()


def render(results):
    a = results["args"]
    status = ", ".join("%s: %s" % (NAMES[n], s) for n, s in results["status"].items())
    lines = ["# Throughput: preon beside TechEmpower's h2o entry and the machine's limits", "",
             "Measured %s on %d CPUs (load average %.1f at the start, %.1f at the end). `%s`" % (
                 results["date"], results["cpus"], results["loadavg_start"][0], results["loadavg_end"][0],
                 results["command"]), "",
             "preon at %s (database.sync: %s); wrk -t2, %d s per run (c1 runs %d s), %d round(s) with the order of "
             "the targets rotated, medians of answers that were not errors per second; one private PostgreSQL 15 on "
             "127.0.0.1 (%s). Targets: %s." % (
                 results.get("preon_commit") or "?", a.get("sync") or "as configured", a["duration"],
                 a["c1_duration"], a["rounds"], results["postgres"], status), ""]
    plain = Table(results, "plain")
    lines += plain.main_rows(TESTS)
    if "pgss" in results["variants"]:
        pgss = Table(results, "pgss")
        db_tests = [t for t in TESTS if t["db"]]
        lines += ["", "## Database rows with pg_stat_statements loaded (%s statements tracked)" %
                  results["variants"]["pgss"].get("pgss_statements"), ""]
        lines += pgss.main_rows(db_tests)
        lines += ["", "preon with pg_stat_statements / without: " + ", ".join(
            "%s %.2f×" % (t["key"], pgss.rps(t["key"], "preon") / plain.rps(t["key"], "preon"))
            for t in db_tests if pgss.rps(t["key"], "preon") and plain.rps(t["key"], "preon"))]
    lines += ["", "## Latency and errors per target", "", "p99 under each test's own load (its connections as in "
              "the table; c64 for /json and the TFB database tests) and at one connection (c1; none for the pipelined "
              "test); errors = non-2xx answers and socket errors (pgbench: failed transactions), summed over rounds.",
              ""]
    lines += plain.latency_rows(TESTS)
    if "pgss" in results["variants"]:
        lines += ["", "With pg_stat_statements:", ""] + pgss.latency_rows([t for t in TESTS if t["db"]])
    lines += ["", "## Peak RSS (VmHWM, MiB, over the whole run)", ""] + md_table(
        ["variant"] + [NAMES[n] for n in NAMES if n != "pgbench"],
        [[variant] + ["–" if c is None else "%.1f" % (c / 1024) for c in (v["peak_rss_kb"].get(n) for n in NAMES
                                                                          if n != "pgbench")]
         for variant, v in results["variants"].items()]).splitlines()
    return "\n".join(lines) + "\n"
