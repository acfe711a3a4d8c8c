# SPDX-License-Identifier: MIT
"""bench/cost.py's record and report: the typed results (dataclasses) that one loader reads back and that fails
loudly on a missing field, and the Markdown rendered from them alone."""
import dataclasses
import statistics
from typing import Optional

from . import record
from .report import Spread, fmt, md_table, ratio
from .rounds import ORDERS
from .throughput_report import TFB_FLAG, paired

# the profile's sentence says "servers" where throughput.py's says "targets"
PROFILE_ORDERS = {k: v.replace("the order of the targets", "the servers' order") for k, v in ORDERS.items()}

TESTS = [("plaintext", "/plaintext", "/plaintext", 1), ("pipelined", "/plaintext pipelined ×16", "/plaintext", 16),
         ("json", "/json", "/json", 1), ("db", "/db", "/db", 1), ("fortunes", "/fortunes", "/fortunes", 1),
         ("queries", "/queries=20", "/queries?queries=20", 1), ("updates", "/updates=20", "/updates?queries=20", 1)]
LABEL = {k: label for k, label, _, _ in TESTS}
SERVERS = ("preon", "preon-stock", "tfb-h2o")
NAMES = {"preon": "preon", "preon-stock": "preon, stock build", "tfb-h2o": "TFB h2o"}
STOCK = "preon-stock"  # a column of runs that measured it (from 2026-12-05), and its ratio to preon beside TFB h2o's


def shown(res):
    """The servers with a column: preon and TFB h2o always (a record's absent one says why), the stock build in the
    runs that knew it."""
    return [n for n in SERVERS if n != STOCK or n in res.servers]


def stock_ratio(res, test, get):
    """preon / its stock build for a column beside "preon / TFB h2o", [] in runs without the stock build."""
    return [_ratio(res, test, get, STOCK)] if STOCK in res.servers else []


def stock_head(res, what="preon / stock build"):
    return [what] if STOCK in res.servers else []


@dataclasses.dataclass
class Count:
    """One test's instruction count: two whole runs of n1 and n2 requests and their difference per request."""
    n1: int
    n2: int
    ir1: int
    ir2: int
    ir_per_request: float
    time_driven: float  # of it, in threads that poll on a timer (preon's log writer): grows with the run's length
    statuses: dict
    by_group: dict
    top_inclusive: list
    top_self: list


@dataclasses.dataclass
class Syscalls:
    """One test's system calls over n requests: the server's and its PostgreSQL backends', by kind."""
    n: int
    server: dict
    postgres: dict
    backends: int
    statuses: dict

    def per_request(self, side):
        return sum(getattr(self, side).values()) / float(self.n)


@dataclasses.dataclass
class PgCount:
    """One test's PostgreSQL instructions (bench/measure/pg_callgrind.py): the server's backends summed over two runs
    of n1 and n2 requests, with the cluster under callgrind, and their difference per request."""
    n1: int
    n2: int
    ir1: int
    ir2: int
    backends: int
    ir_per_request: float
    statuses: dict


@dataclasses.dataclass
class ServerRun:
    status: str  # "ok", or why it did not run
    argv: list
    build: str
    counts: dict  # test → Count
    syscalls: dict  # test → Syscalls
    errors: dict  # test (or "test postgres") → what failed
    pg_counts: dict = dataclasses.field(default_factory=dict)  # test → PgCount; absent from records made before it
    # existed (2026-12-02 22:10 UTC)


@dataclasses.dataclass
class CostResults:
    header: dict
    settings: dict
    servers: dict  # name → ServerRun
    throughput: Optional[dict]  # throughput.py's medians with the partition, or None when not run
    cpu_profile: Optional[dict] = None  # bench/measure/cpuprofile.py's parts per server and test; None in records
    # made before it existed (2026-12-02 15:00 UTC), {"status": why} where it could not run

    def to_json(self):
        return dataclasses.asdict(self)


def load(path):
    """results.json → CostResults; a missing field is a measure.record.RecordError naming the file and the key path
    (servers.preon.counts.db.ir1 missing), never a silent None."""
    where, d = record.where_of(path), record.load_json(path)

    def need(obj, *keys, prefix=()):
        return record.need(obj, *keys, where=where, prefix=prefix)
    servers = {}
    for name, s in need(d, "servers").items():
        at = ("servers", name)
        servers[name] = ServerRun(status=need(s, "status", prefix=at), argv=need(s, "argv", prefix=at),
                                  build=need(s, "build", prefix=at), errors=need(s, "errors", prefix=at),
                                  counts={t: record.of(Count, c, where, at + ("counts", t))
                                          for t, c in need(s, "counts", prefix=at).items()},
                                  syscalls={t: record.of(Syscalls, c, where, at + ("syscalls", t))
                                            for t, c in need(s, "syscalls", prefix=at).items()},
                                  pg_counts={t: record.of(PgCount, c, where, at + ("pg_counts", t))
                                             for t, c in s.get("pg_counts", {}).items()})
    return CostResults(header=need(d, "header"), settings=need(d, "settings"), servers=servers,
                       throughput=need(d, "throughput"), cpu_profile=d.get("cpu_profile"))


def build_summary(note):
    """What a record keeps of a TFB h2o build note (the BUILD-NOTE beside the build): its opening paragraph, its pins
    and its checksums. The rest (the build's commands, flags and its libpq patch) is a recipe that builds TechEmpower's
    entry, which stays beside the build, outside this repository."""
    blocks = [b.strip("\n") for b in note.strip().split("\n\n")]
    kept = [b for i, b in enumerate(blocks) if i == 0 or b.startswith(("Pins", "sha256"))]
    return "\n\n".join(kept + ["(How it was built is in the BUILD-NOTE beside the build, outside this repository.)"])


def _cell(run, test, get, f):
    if run.status != "ok":
        return "– (not run)"
    if test in run.errors:
        return "failed (results.json: errors)"
    v = get(run, test)
    return "-" if v is None else f % v


def _ir(run, test):
    c = run.counts.get(test)
    return c.ir_per_request if c else None


def _td(run, test):
    c = run.counts.get(test)
    return c.time_driven if c else None


def _sys(side):
    def get(run, test):
        s = run.syscalls.get(test)
        return s.per_request(side) if s else None
    return get


def _ratio(res, test, get, other="tfb-h2o"):
    a, b = res.servers.get("preon"), res.servers.get(other)
    if not a or not b or a.status != "ok" or b.status != "ok":
        return "-"
    x, y = get(a, test), get(b, test)
    return "%.2f×" % (x / y) if x is not None and y else "-"


def render(res):
    h, s = res.header, res.settings
    lines = ["# Cost per request: preon beside TechEmpower's h2o entry", "",
             "Measured %s on %d CPUs (load average %.1f at the start, %.1f at the end; the machine is shared). `%s`" % (
                 h["date"], h["cpus"], h["loadavg_start"][0], h["loadavg_end"][0], h["command"]) +
             (". TCP congestion control: %s (bench/measure/tcp.py)." % h["tcp_congestion_control"]
              if h.get("tcp_congestion_control") else ""), ""]
    for name in SERVERS:
        r = res.servers.get(name)
        if r:
            lines.append("- %s: %s. %s" % (NAMES[name], r.build, "`%s`" % " ".join(r.argv) if r.status == "ok"
                                           else "Not measured: %s." % r.status))
    lines += ["", "One private PostgreSQL 15 (%s, without pg_stat_statements) for both servers, one server at a time, "
              "one server thread, %d client connections (keep-alive; ×16 pipelined for the pipelined test), "
              "%d warm-up requests before every counted run." % (s["postgres"], s["conns"], s["warmup"]), "",
              "## User-space instructions per request (callgrind)", "",
              "(Ir of a run of N2 requests − Ir of a run of N1) / (N2 − N1), each run whole under valgrind from exec "
              "to exit, so start-up, warm-up and shutdown cancel. Instruction counts repeat for the same binary and "
              "input: the machine's load does not move them. \"of which time-driven\": the inclusive cost of threads "
              "that wake on a timer, not on requests (preon's log writer polls every 5 ms): under valgrind a run lasts "
              "longer, so this part is inflated against a native run.", ""]
    rows = []
    cols = shown(res)
    for k, label, _, _ in TESTS:
        c = next((r.counts[k] for r in res.servers.values() if k in r.counts), None)
        rows.append([label, "%d / %d" % (c.n1, c.n2) if c else "-"] +
                    [_cell(res.servers[n], k, _ir, "%.0f") if n in res.servers else "-" for n in cols] +
                    [_ratio(res, k, _ir)] + stock_ratio(res, k, _ir) +
                    [_cell(res.servers[n], k, _td, "%.0f") if n in res.servers else "-" for n in cols])
    head = ["test", "N1 / N2"] + [NAMES[n] for n in cols] + ["preon / TFB h2o"] + stock_head(res) + \
        ["%s: of which time-driven" % NAMES[n] for n in cols]
    lines += md_table(head, rows, ["l"] + ["r"] * (len(head) - 1)).splitlines()
    if any(r.pg_counts for r in res.servers.values()):  # records made before it render as they did
        lines += postgres_section(res)
    lines += ["", "## System calls per request (strace -c -f)", "",
              "Over %d requests (%d for /queries and /updates), strace attached to every server thread and, "
              "separately, to every PostgreSQL backend connected to it." % (s["strace_n"], s["strace_n_db"]), ""]
    rows = []
    for k, label, _, _ in TESTS:
        rows.append([label] + [_cell(res.servers[n], k, _sys("server"), "%.2f") if n in res.servers else "-"
                               for n in cols] + [_ratio(res, k, _sys("server"))] +
                    stock_ratio(res, k, _sys("server")) +
                    [_cell(res.servers[n], k, _sys("postgres"), "%.2f") if n in res.servers else "-"
                     for n in cols])
    head = ["test"] + [NAMES[n] for n in cols] + ["preon / TFB h2o"] + stock_head(res) + \
        ["%s's PostgreSQL" % NAMES[n] for n in cols]
    lines += md_table(head, rows, ["l"] + ["r"] * (len(head) - 1)).splitlines()
    lines += throughput_section(res.throughput)
    if res.cpu_profile is not None:  # records made before the profile existed render as they did
        lines += profile_section(res.cpu_profile)
    lines += ["", "## Where the instructions go, per test", "",
              "Self cost per request by object (the groups add up to the total; in TFB h2o's binary, which links h2o "
              "statically, h2o's functions by name), then each server's top functions by inclusive cost per request.",
              ""]
    for k, label, _, _ in TESTS:
        counts = {n: r.counts[k] for n, r in res.servers.items() if k in r.counts}
        if not counts:
            continue
        lines += ["### %s" % label, ""]
        groups = []
        for c in counts.values():
            groups += [g for g in c.by_group if g not in groups]
        lines += md_table(["object"] + [NAMES[n] for n in counts],
                          [[g] + ["%.0f" % c.by_group[g] if g in c.by_group else "-" for c in counts.values()]
                           for g in groups], ["l"] + ["r"] * len(counts)).splitlines()
        for n, c in counts.items():
            lines += ["", "%s, top functions (inclusive Ir per request):" % NAMES[n], ""]
            lines += md_table(["function [object]", "Ir / request"],
                              [[t["function"], "%.0f" % t["ir"]] for t in c.top_inclusive[:12]],
                              ["l", "r"]).splitlines()
        lines.append("")
    lines += ["## System calls by kind, per request", ""]
    for k, label, _, _ in TESTS:
        sc = {n: r.syscalls[k] for n, r in res.servers.items() if k in r.syscalls}
        if not sc:
            continue
        kinds = []
        for side in ("server", "postgres"):
            for x in sc.values():
                kinds += [(side, c) for c in sorted(getattr(x, side), key=lambda c: -getattr(x, side)[c])
                          if (side, c) not in kinds]
        lines += ["### %s" % label, ""]
        lines += md_table(["side", "syscall"] + [NAMES[n] for n in sc],
                          [[side, c] + ["%.2f" % (getattr(x, side).get(c, 0) / float(x.n)) for x in sc.values()]
                           for side, c in kinds], ["l", "l"] + ["r"] * len(sc)).splitlines()
        lines.append("")
    return "\n".join(lines) + "\n"


def _pg(run, test):
    c = run.pg_counts.get(test)
    return c.ir_per_request if c else None


def _both(run, test):
    a, b = _ir(run, test), _pg(run, test)
    return a + b if a is not None and b is not None else None


def postgres_section(res):
    """PostgreSQL's instructions per request beside the server's, and the two together."""
    lines = ["", "## PostgreSQL's instructions per request (callgrind on its backends)", "",
             "The same cluster restarted with its postmaster under callgrind (every backend it forks counted, each "
             "into its own file at its exit), the server run natively: (the Ir of the backends it was connected to "
             "over a run of N2 requests − over a run of N1) / (N2 − N1), so the backends' start-up and the statements "
             "prepared at connect cancel; both runs had the same number of backends. \"together\": the server's "
             "instructions per request (above) plus its PostgreSQL's. Neither count includes the kernel.", ""]
    rows = []
    cols = shown(res)
    for k, label, _, _ in TESTS:
        c = next((r.pg_counts[k] for r in res.servers.values() if k in r.pg_counts), None)
        if c is None:
            continue
        rows.append([label, "%d / %d" % (c.n1, c.n2)] +
                    [_pg_cell(res.servers.get(n), k, _pg, "%.0f") for n in cols] + [_ratio(res, k, _pg)] +
                    stock_ratio(res, k, _pg) +
                    [_pg_cell(res.servers.get(n), k, _both, "%.0f") for n in cols] + [_ratio(res, k, _both)] +
                    stock_ratio(res, k, _both) +
                    [" / ".join(_pg_of(res, n, k, lambda c: str(c.backends)) for n in cols),
                     " / ".join(_pg_of(res, n, k, _not_200) for n in cols)])
    who = " / ".join(NAMES[n] for n in cols)
    head = ["test", "N1 / N2"] + ["%s's PostgreSQL" % NAMES[n] for n in cols] + ["preon / TFB h2o"] + \
        stock_head(res) + ["together: %s" % NAMES[n] for n in cols] + ["together: preon / TFB h2o"] + \
        stock_head(res, "together: preon / stock build") + \
        ["backends (%s)" % who, "answers not 200 of N2 (%s)" % who]
    return lines + md_table(head, rows, ["l"] + ["r"] * (len(head) - 1)).splitlines()


def _not_200(c):
    """How many of a count's N2 answers were not 200 (status keys are ints in a fresh run, strings when loaded)."""
    return str(c.n2 - sum(v for st, v in c.statuses.items() if str(st) == "200"))


def _pg_of(res, name, test, f):
    run = res.servers.get(name)
    return f(run.pg_counts[test]) if run and test in run.pg_counts else "-"


def _pg_cell(run, test, get, f):
    if run is None:
        return "-"
    if run.status == "ok" and "%s postgres" % test in run.errors:
        return "failed (results.json: errors)"
    return _cell(run, test, get, f)


def twin_of_shipped(tp, cpts):
    """The run of the same server as preon as shipped: preon-twin (a second preon as shipped, from 2026-12-03), else
    the preon-cN with the connections per thread the shipped one chose (throughput.py records its --check-config),
    else None (older runs)."""
    if any(by.get("preon-twin") for by in tp["per_round"].values()):
        return "preon-twin"
    shipped = tp.get("shipped")
    if not shipped or shipped.get("status") != "ok":
        return None
    name = "preon-c%d" % shipped["connections_per_thread"]
    return name if name in cpts else None


def throughput_section(tp):
    """The pinned throughput table from throughput.py's per-round figures: preon as shipped, with 2 and 4
    connections per thread, TFB h2o at its best -mN per test (by median), the ratio with "within noise" only where
    the rounds' ranges overlap, and shipped over the same server run again (twin_of_shipped): the noise floor."""
    out = ["", "## Throughput with the roles pinned", ""]
    if not tp:
        return out + ["Not run (--no-throughput).", ""]
    out += ["bench/throughput.py (its own report: %s), CPU partition: %s. wrk -t2, %d s per run, %d rounds with %s; "
            "answers that were not errors per second, median (min–max). TFB h2o's "
            "build: %s, one thread per CPU of the target's set. preon with its default threads (the CPUs it may run "
            "on). Round by round: each round's shipped / TFB-best ratio from the runs of that round, which cancels the "
            "drift between rounds, median (min–max)." % (tp["out"], tp["partition"].get("sentence"), tp["duration"],
                                                         tp["rounds"], ORDERS[tp.get("order", "rotated")],
                                                         tp["tfb_h2o"])]
    # preon at 1 and 3 connections per thread are columns of runs that had them (1 from 2026-12-02: the default became a
    # choice; 3 from 2026-12-03)
    cpts = [m for m in ("preon-c1", "preon-c2", "preon-c3", "preon-c4")
            if m not in ("preon-c1", "preon-c3") or any(by.get(m) for by in tp["per_round"].values())]
    twin = twin_of_shipped(tp, cpts)
    stock = any(by.get(STOCK) for by in tp["per_round"].values())  # the stock build, in runs that had it
    twin_label = twin if twin == "preon-twin" else "cpt=%s" % twin[-1] if twin else None
    shipped = tp.get("shipped") or {}
    if shipped.get("status") == "ok":
        out[-1] += " preon as shipped chose %d connections per thread (--check-config: %s)." % (
            shipped["connections_per_thread"], shipped["why"])
    if stock:
        out[-1] += (" preon, stock build: the stock build as shipped (its own config/preon.yaml), in the same rounds; "
                    "\"within noise\" where its rounds' range and preon's overlap.")
    if twin:
        out[-1] += (" The same server twice: %s is preon with the same settings as shipped, run in the same rounds; "
                    "its ratio to shipped is this machine's noise, and a difference inside its range cannot be told "
                    "apart here." % (twin if twin == "preon-twin" else "preon " + twin_label))
    out.append("")
    rows = []
    for k, label, _, _ in TESTS:
        by = tp["per_round"].get(k, {})
        sp = {m: Spread(v) for m, v in by.items() if v}
        tfb = [m for m in TFB_FLAG if m in sp]
        best = max(tfb, key=lambda m: float(sp[m])) if tfb else None
        shipped = sp.get("preon")
        rows.append([label, fmt(shipped)] + [fmt(sp.get(m)) for m in cpts] +
                    ["%s (%s)" % (fmt(sp[best]), TFB_FLAG[best])
                     if best else "– (%s)" % tp["status"].get("tfb-h2o", "not run"),
                     ratio(shipped, sp[best]) if best else "-",
                     paired(by.get("preon"), by.get(best)) if best else "-"] +
                    (["%s; %s" % (ratio(shipped, sp.get(twin)), paired(by.get("preon"), by.get(twin)))]
                     if twin else []) +
                    ([fmt(sp.get(STOCK)), "%s; %s" % (ratio(shipped, sp.get(STOCK)),
                                                      paired(by.get("preon"), by.get(STOCK)))] if stock else []))
    head = ["test", "preon as shipped"] + ["preon cpt=%s" % m[-1] for m in cpts] + \
        ["TFB h2o at its best", "shipped / TFB best", "round by round"] + \
        (["the same server twice: shipped / %s, medians; round by round" % twin_label] if twin else []) + \
        (["preon, stock build", "shipped / stock build, medians; round by round"] if stock else [])
    out += md_table(head, rows, ["l"] + ["r"] * (len(head) - 1)).splitlines()
    return out + [""]


PROFILE_PARTS = [("server_user", "server's code"), ("server_kernel", "kernel, server"),
                 ("postgres_user", "PostgreSQL's code"), ("postgres_kernel", "kernel, PostgreSQL"), ("other", "other")]


def profile_section(prof):
    """Per test: each server's CPU microseconds per request on the target's CPU, part by part, medians over the
    rounds (bench/measure/cpuprofile.py), the totals' ratio, the share of the CPU the server's own code takes, and
    the ceiling a server whose code cost nothing could reach."""
    out = ["", "## Where the server's CPU goes, per request (perf, roles pinned)", ""]
    if prof.get("status") != "ok":
        return out + ["Not measured: %s." % prof.get("status"), ""]
    out += ["`perf record -F %d -C <target>` (cpu-clock samples, kernel included) during one %d s wrk run per test, "
            "server and round after a 1 s warm-up, %d rounds with %s, CPU partition: %s. One "
            "server thread each: preon as shipped, TFB h2o at TechEmpower's flags (-a20 -m1). Each cell: CPU µs per "
            "answered request, medians over the rounds — the server's own code + the kernel while the server runs "
            "(its system calls and the loopback TCP work they carry) | PostgreSQL's code + the kernel while it runs "
            "| anything else = the total, median (min–max). Then the totals' ratio, each server's own code's share "
            "of the total, and a ceiling: TFB h2o's total over preon's without preon's code, the most preon's req/s "
            "could be over TFB h2o's if its code cost nothing, the kernel's and PostgreSQL's parts as measured. "
            "\"Stolen\": the most any round's CPU time went to the hypervisor's other guests (/proc/stat), which "
            "these figures, on the guest's clock, count as the server's or PostgreSQL's own." % (
                prof["freq"], prof["duration"], prof.get("rounds", 1),
                PROFILE_ORDERS[prof.get("order", "rotated")], prof.get("partition", {}).get("sentence")), ""]
    names = [n for n in SERVERS if n in prof["servers"]]
    rows = []
    for k, label, _, _ in TESTS:
        runs = {n: [g for g in prof["servers"][n].get(k, []) if g["requests"]] for n in names}
        if not any(runs.values()):
            continue
        med = {n: {p: statistics.median(g["us_per_request"][p] for g in rs) for p, _ in PROFILE_PARTS}
               for n, rs in runs.items() if rs}
        total = {n: Spread([sum(v for p, v in g["us_per_request"].items() if p != "idle") for g in rs])
                 for n, rs in runs.items() if rs}
        cells = []
        for n in names:
            if n not in med:
                cells.append("-")
                continue
            u = med[n]
            cells.append("%.1f + %.1f | %.1f + %.1f | %.1f = **%s** (%s/s, CPU %.0f%% busy, %.0f%% stolen)" % (
                u["server_user"], u["server_kernel"], u["postgres_user"], u["postgres_kernel"], u["other"],
                fmt(total[n], "%.1f"), fmt(Spread([g["rps"] or 0 for g in runs[n]])),
                100 * statistics.median(g["busy"] for g in runs[n]),
                100 * max(g.get("stolen", 0) for g in runs[n])))
        a, b, st = total.get("preon"), total.get("tfb-h2o"), total.get(STOCK)
        own = ["%s %.0f%%" % (NAMES[n], 100 * med[n]["server_user"] / total[n]) for n in names if n in med]
        free = a - med["preon"]["server_user"] if a else None
        rows.append([label] + cells + [ratio(a, b) if a and b else "-"] +
                    ([ratio(a, st) if a and st else "-"] if STOCK in names else []) +
                    [", ".join(own), "%.2f×" % (b / free) if b and free else "-"])
    head = ["test"] + ["%s: server | PostgreSQL | other = total µs" % NAMES[n] for n in names] + \
        ["preon / TFB h2o, total µs (below 1: preon cheaper)"] + \
        (["preon / stock build, total µs"] if STOCK in names else []) + \
        ["server code's share", "preon's req/s over TFB h2o's if preon's code cost nothing"]
    out += md_table(head, rows, ["l"] + ["r"] * (len(head) - 1)).splitlines()
    out += packets_table(prof, names)
    for what, why in sorted(prof.get("errors", {}).items()):
        out.append("- %s failed: %s" % (what, why))
    return out + [""]


def packets_table(prof, names):
    """Packets sent per request in the same runs (bench/measure/packets.py), each server's and its PostgreSQL's,
    medians (min–max) over the rounds; nothing for records made before they were counted."""
    rows = []
    for k, label, _, _ in TESTS:
        cells = []
        for n in names:
            runs = [g.get("packets_per_request") or {} for g in prof["servers"][n].get(k, []) if g["requests"]]
            cells += [fmt(Spread([r[who] for r in runs]) if runs and all(r.get(who) is not None for r in runs)
                          else None, "%.1f") for who in ("server", "postgres")]
        if any(c != "-" for c in cells):
            rows.append([label] + cells)
    if not rows:
        return []
    return ["", "Packets sent per request in the same runs (`perf stat -e net:net_dev_xmit -p`, every segment a "
            "process sends; on loopback the receiver's work runs in the sender's system call), medians (min–max). "
            "PostgreSQL flushes at every Sync; fewer packets than flushes means TCP joined them while its "
            "congestion window was full.", ""] + md_table(
        ["test"] + ["%s: %s" % (NAMES[n], who) for n in names for who in ("server", "PostgreSQL")], rows,
        ["l"] + ["r"] * (2 * len(names))).splitlines()
