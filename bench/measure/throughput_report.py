# SPDX-License-Identifier: MIT
"""bench/throughput.py's tests, its goals (preon's p99 and throughput against the other rows), and the report: the table (medians, ratios, what limits
each row, goal met/missed), latency and errors per target, peak RSS."""
from .preon_build import sentence as build_sentence
from .report import Spread, fmt, md_table, ratio, round_ratios
from .rounds import ORDERS


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

# The goals: (test, what preon is divided by, at least, how the goal reads). "tfb-best" is TechEmpower's h2o entry
# at its best -mN for that test; preon is the shipped, rule-keeping configuration.
GOALS = [
    ("plaintext", ("plaintext", "tfb-best"), 1.0, "≥ 1.0× TFB h2o"),
    ("pipelined", ("pipelined", "tfb-best"), 1.0, "≥ 1.0× TFB h2o"),
    ("json", ("json", "tfb-best"), 1.0, "≥ 1.0× TFB h2o"),
    ("db", ("db", "tfb-best"), 1.0, "≥ 1.0× TFB h2o"),
    ("db", ("db", "pgbench-one"), 0.6, "≥ 0.6× pgbench, 1 query per transaction"),
    ("fortunes", ("fortunes", "tfb-best"), 1.0, "≥ 1.0× TFB h2o"),
    ("queries", ("queries", "tfb-best"), 1.0, "≥ 1.0× TFB h2o"),
    ("updates", ("updates", "tfb-best"), 1.0, "≥ 1.0× TFB h2o"),
    ("fruits", ("fruits", "go-gin"), 3.0, "≥ 3× gin"),
    ("hello", ("hello", "bare"), 0.9, "≥ 0.9× bare responder"),
]
NAMES = {"preon": "preon", "preon-twin": "preon again (the same server twice)",
         "preon-stock": "preon, stock build", "preon-previous": "preon, previous build", "preon-c1": "preon, 1 connection per thread", "preon-c2": "preon, 2 connections per thread", "preon-c3": "preon, 3 connections per thread", "preon-c4": "preon, 4 connections per thread", "preon-batch": "preon, batch Syncs", "tfb-h2o": "TFB h2o -m1", "tfb-h2o-m2": "TFB h2o -m2", "tfb-h2o-m3": "TFB h2o -m3",
         "tfb-h2o-m4": "TFB h2o -m4", "go-gin": "go-gin", "bare": "bare epoll responder", "pgbench": "pgbench ceiling",
         "pgbench-one": "pgbench, 1 query per transaction"}
TFB = ("tfb-h2o", "tfb-h2o-m2", "tfb-h2o-m3", "tfb-h2o-m4")
PREON = ("preon", "preon-c1", "preon-c2", "preon-c3", "preon-c4")
PREON_CPT = {"preon-c1": 1, "preon-c2": 2, "preon-c3": 3, "preon-c4": 4}  # "preon" is the default's choice (--check-config says it)
TFB_FLAG = {"tfb-h2o": "-m1", "tfb-h2o-m2": "-m2", "tfb-h2o-m3": "-m3", "tfb-h2o-m4": "-m4"}


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

    def med_of(self, test, name):
        """The medians of `name` on `test`; "tfb-best" is the TFB h2o setting with the highest median."""
        by = (self.med.get(test) if test in self.med else self.fallback.get(test, {})) or {}
        if name in ("tfb-best", "preon"):
            runs = [by[n] for n in (TFB if name == "tfb-best" else PREON) if by.get(n, {}).get("rps")]
            return max(runs, key=lambda m: m["rps"]) if runs else {}
        return by.get(name, {})

    def rps(self, test, name):
        return self.med_of(test, name).get("rps")

    def best_of(self, test, names):
        """Which of `names` won `test` (the highest median), or None."""
        by = (self.med.get(test) if test in self.med else self.fallback.get(test, {})) or {}
        runs = [(by[n]["rps"], n) for n in names if by.get(n, {}).get("rps")]
        return max(runs)[1] if runs else None

    def best_tfb(self, test):
        """Which -mN won `test`: "-m1", "-m2", "-m4", or None."""
        best = self.best_of(test, TFB)
        return TFB_FLAG[best] if best else None

    def verdict(self, test, other, least):
        """met / missed only when every round's ratio falls on the same side of `least`; else within noise."""
        rs = round_ratios(self.med_of(test, "preon").get("per_round"), self.med_of(*other).get("per_round"))
        if len(rs) < 2:
            return None
        return "met" if min(rs) >= least else "missed" if max(rs) < least else "within noise"

    def cell(self, test, name):
        """A figure, or why there is none (not built, not available, not run)."""
        v = self.rps(test, name)
        if v is not None:
            return rate(v)
        if name == "tfb-best":
            name = "tfb-h2o"
        return self.status.get(name, "not run") if self.status.get(name) != "ok" else "–"

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
                continue
            # 0.9996× is "0.9996×", not "1.00×"
            shown = "%.2f" % r if (round(r, 2) < least) == (r < least) else "%.4f" % r
            v = self.verdict(test, other, least) or ("met" if r >= least else "missed")
            out.append("%s: %s (%s×)" % (text, v, shown))
        return "; ".join(out)

    def limits(self, test):
        """The issue's "what limits it" column: the bare responder, pgbench, preon's own /hello."""
        parts = []
        if test in ("plaintext", "pipelined", "hello"):
            r = self.ratio(test, (test, "bare"))
            parts.append("bare epoll responder: %s%s" % (self.cell(test, "bare"),
                                                         " (preon at %.2f×)" % r if r else ""))
        if test == "db" and self.status.get("pgbench-one") == "ok":
            r, v = self.ratio(test, (test, "pgbench-one")), self.rps(test, "pgbench-one")
            parts.append("pgbench, 1 query per transaction: %s%s%s" % (
                self.cell(test, "pgbench-one"), " queries/s" if v else "", " (preon at %.2f×)" % r if r else ""))
        if test in ("db", "fruits"):
            r, v = self.ratio(test, (test, "pgbench")), self.rps(test, "pgbench")
            parts.append("pgbench, 16 per Sync: %s%s%s" % (self.cell(test, "pgbench"), " queries/s" if v else "",
                                                           " (preon at %.2f×)" % r if r else ""))
        if test == "fruits":
            r = self.ratio("fruits", ("hello", "preon"))
            parts.append("preon's /hello: %s%s" % (self.cell("hello", "preon"), " (%.2f×)" % r if r else ""))
        return "; ".join(parts)

    def main_rows(self, tests):
        """The table. With a preon-batch run, its column and the cost of the rule (rules ÷ batch) beside, never a
        ratio of it against TFB h2o."""
        batch = self.status.get("preon-batch") == "ok"
        rows = []
        for t in tests:
            k = t["key"]
            if k in ("fruits", "hello"):
                peer, r = "gin " + self.cell(k, "go-gin"), self.ratio(k, (k, "go-gin"))
                ratio = "%.2f× gin" % r if r else "–"
            else:
                flag = self.best_tfb(k)
                peer = self.cell(k, "tfb-best") + (" (%s)" % flag if flag and batch else "")
                r = self.ratio(k, (k, "tfb-best"))
                ratio = "%.2f×" % r if r else "–"
            mine = self.cell(k, "preon")
            best = self.best_of(k, PREON) if batch else None
            if best and best != "preon":
                mine += " (%d connections per thread)" % PREON_CPT[best]
            row = [t["label"], mine, peer, ratio]
            if batch:
                b = self.rps(k, "preon-batch")
                cost = self.rps(k, "preon") / b if b and self.rps(k, "preon") else None
                row += [rate(b) if b else "–", "%.2f×" % cost if cost else "–"]
            rows.append(row + [self.limits(k), self.goals(k)])
        head = ["test", "preon", "TFB h2o", "preon / TFB h2o"]
        if batch:
            head = ["test", "preon (TechEmpower's rules)", "TFB h2o (best -mN)", "preon / TFB h2o",
                    "preon, batch Syncs (beyond TechEmpower's rules)", "rules ÷ batch"]
        return md_table(head + ["what limits it", "goal"], rows).splitlines()

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


def twin_rows(results):
    """preon as shipped over itself run a second time in the same rounds (preon-twin), per test: the medians' ratio
    and the rounds' ratios, the noise a difference between two servers must exceed on this machine to be seen."""
    if results["status"].get("preon-twin") != "ok":
        return []
    med = results["variants"]["plain"]["medians"]
    rows = []
    for t in TESTS:
        a, b = med.get(t["key"], {}).get("preon"), med.get(t["key"], {}).get("preon-twin")
        if not a or not b or not a["rps"] or not b["rps"]:
            continue
        rs = round_ratios(a["per_round"], b["per_round"])
        rows.append([t["label"], rate(a["rps"]), rate(b["rps"]), "%.2f×" % (a["rps"] / b["rps"]),
                     "%.2f–%.2f" % (min(rs), max(rs)) if rs else "–"])
    return ["", "## The same server twice: the machine's noise", "",
            "preon as shipped and preon-twin are the same binary with the same settings, run in the same rounds. "
            "Their difference is the noise: a ratio between two servers inside these ranges says nothing.", ""] + \
        md_table(["test", "preon", "preon again", "medians' ratio", "rounds' ratios, min–max"], rows).splitlines()


BUILDS = {"preon-stock": "stock build", "preon-previous": "previous build"}


def paired(a, b):
    """Two members' per-round rates divided round by round (report.round_ratios): the ratios' median (min–max), or
    "-" without two rounds of both (bench/cost.py's report uses it too)."""
    rs = round_ratios(a, b)
    if len(rs) < 2:
        return "-"
    sp = Spread(rs)
    return "%.2f× (%.2f–%.2f)" % (sp, sp.lo, sp.hi)


def builds_rows(results):
    """preon beside its other builds run in the same rounds (preon-stock, preon-previous), every test: each one's
    median (min–max) over the rounds, preon / it of the medians ("within noise" where the rounds' ranges overlap)
    and round by round. Nothing for a run without them."""
    others = [n for n in BUILDS if results["status"].get(n) == "ok"]
    if not others:
        return []
    med = results["variants"]["plain"]["medians"]
    builds = results.get("builds", {})
    out = ["", "## preon beside its other builds", "",
           "The same tests in the same rounds. preon: %s. %s. Each build runs with the config/preon.yaml of its own "
           "source tree. req/s median (min–max) over the rounds; preon / the other build: of the medians, \"within "
           "noise\" where the rounds' ranges overlap, then round by round (each round's runs divided), median "
           "(min–max)." % (sentence(builds.get("preon")), "; ".join(
               "%s: %s" % (BUILDS[n], sentence(builds.get(n))) for n in others)), ""]
    rows = []
    for t in TESTS:
        by = med.get(t["key"], {})
        mine = Spread(by["preon"]["per_round"]) if by.get("preon", {}).get("per_round") else None
        row = [t["label"], fmt(mine)]
        for n in others:
            sp = Spread(by[n]["per_round"]) if by.get(n, {}).get("per_round") else None
            row += [fmt(sp), ratio(mine, sp),
                    paired(by.get("preon", {}).get("per_round"), by.get(n, {}).get("per_round"))]
        rows.append(row)
    head = ["test", "preon"]
    for n in others:
        head += [BUILDS[n], "preon / %s" % BUILDS[n], "round by round"]
    return out + md_table(head, rows, ["l"] + ["r"] * (len(head) - 1)).splitlines()


def sentence(d):
    """A build's record (bench/measure/preon_build.py) as a sentence; "?" where the run did not record it."""
    return build_sentence(d) if d else "?"


def render(results):
    a = results["args"]
    status = ", ".join("%s: %s" % (NAMES.get(n, n), s) for n, s in results["status"].items())
    lines = ["# Throughput: preon beside TechEmpower's h2o entry and the machine's limits", "",
             "Measured %s on %d CPUs (load average %.1f at the start, %.1f at the end). `%s`" % (
                 results["date"], results["cpus"], results["loadavg_start"][0], results["loadavg_end"][0],
                 results["command"]), "",
             "preon at %s (database.sync: %s); wrk -t2, %d s per run (c1 runs %d s), %d round(s) with %s, "
             "medians of answers that were not errors per second; one private PostgreSQL 15 on "
             "127.0.0.1 (%s). Targets: %s." % (
                 results.get("preon_commit") or "?", a.get("sync") or "as configured", a["duration"],
                 a["c1_duration"], a["rounds"], ORDERS[a.get("order", "rotated")], results["postgres"], status), "",
             "CPU partition: %s." % (results.get("partition") or {}).get(
                 "sentence", "none recorded (a run from before 2026-12-02: every role on every CPU)") +
             (" TCP congestion control: %s (bench/measure/tcp.py)." % results["tcp_congestion_control"]
              if results.get("tcp_congestion_control") else ""), ""]
    shipped = results.get("preon_shipped")
    if shipped and shipped.get("status") == "ok":
        lines += ["preon as shipped chose %d database connections per thread here (--check-config: %s). The tables' "
                  "preon is the best of preon as shipped and its set connections per thread; the latency table keeps "
                  "each run apart." % (shipped["connections_per_thread"], shipped["why"]), ""]
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
    lines += twin_rows(results)
    lines += builds_rows(results)
    lines += ["", "## Latency and errors per target", "", "p99 under each test's own load (its connections as in "
              "the table; c64 for /json and the TFB database tests) and at one connection (c1; none for the pipelined "
              "test); errors = non-2xx answers and socket errors (pgbench: failed transactions), summed over rounds.",
              ""]
    lines += plain.latency_rows(TESTS)
    if "pgss" in results["variants"]:
        lines += ["", "With pg_stat_statements:", ""] + pgss.latency_rows([t for t in TESTS if t["db"]])
    # the members this run knew (a record from before preon-c1 keeps its columns)
    names = [n for n in NAMES if not n.startswith("pgbench") and n in results["status"]]
    lines += ["", "## Peak RSS (VmHWM, MiB, over the whole run)", ""] + md_table(
        ["variant"] + [NAMES[n] for n in names],
        [[variant] + ["–" if c is None else "%.1f" % (c / 1024) for c in (v["peak_rss_kb"].get(n) for n in names)]
         for variant, v in results["variants"].items()]).splitlines()
    return "\n".join(lines) + "\n"
