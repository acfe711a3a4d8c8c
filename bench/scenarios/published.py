# SPDX-License-Identifier: MIT
"""The published posts' tables as bench/run.py scenarios: `build` (every target's build command, cold then warm),
`000` (wrk -c50 -d20s --latency on /hello, cold and warm), `001` (artifact size, build time, start time, wrk -t10
-c50 -d60s and memory, bare and under each heap/memory cap), `003` (start → first request → repeat request) and
`004` (a ramp of users to 10,000 on the DB path, bench/measure/ramp.py); 000 and 001 in rotated rounds (in_rounds). The
suite also runs classic's limits and matrix (posts 001 and 002's Docker experiments) on each target's image.
Each runs through run.py's Runner (targets in turn, failures reported) and renders in the post's own layout, with
the post's figures (bench/reference/) in columns or rows marked "published (their hardware)" that never enter a
ratio."""
import collections
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.parse

from measure import (REPO, Cgroup, Target, dir_bytes, fmt, get, jre_bytes, main_pid, md_table, metric_table, rss_kb,
                     runtime_closure, tree_cpu_s, wrk)
from measure import record, refdata
from measure.ramp import run_ramp
from measure.rounds import merge

from . import params, plots, scenario

# warmup_s: before each warm measured run, wrk on /hello then on the DB path for half of it each (a JVM compiles
# its hot code then); p003_starts: fresh starts of post 003's first-request scenario.
FULL = {"p000_s": 20, "p001_s": 60, "caps_mib": [32, 128], "p001_starts": 5, "ramp_users": 10000, "ramp_s": 180,
        "ramp_hold_s": 30, "ramp_think_s": 2.0, "ramp_timeout_s": 10, "warmup_s": 20, "p003_starts": 5,
        "p_rounds": 3}
QUICK = {"p000_s": 2, "p001_s": 2, "caps_mib": [32, 128], "p001_starts": 2, "ramp_users": 500, "ramp_s": 8,
         "ramp_hold_s": 2, "ramp_think_s": 1.0, "ramp_timeout_s": 5, "warmup_s": 2, "p003_starts": 2,
         "p_rounds": 1}
params(FULL, QUICK)
JVM_PEERS = ("quarkus", "spring-webflux", "spring-mvc", "quarkus-classic", "quarkus-routes", "quarkus-uber",
             "spring-mvc-undertow")  # bench/peers/ targets whose artifact runs on the JRE
PUBLISHED = "published (their hardware)"


class Sampler:
    """Samples a process (and PostgreSQL's postmaster with its backends) every `every` seconds in a thread: peak
    RSS, most threads, and CPU % (100 = one core) over the sampled time. Exited backends' CPU is lost, so
    PostgreSQL's CPU % is a lower bound when connections come and go (a pool keeps them)."""

    def __init__(self, pid, pg_pid=None, every=0.5):
        self.pid, self.pg_pid, self.every = pid, pg_pid, every
        self.max_threads = self.peak_rss_kb = 0
        self.stop_ev = threading.Event()
        self.t0 = time.monotonic()
        self.cpu0 = tree_cpu_s(pid)
        self.pg0 = tree_cpu_s(pg_pid) if pg_pid else None
        self.pg_last = self.pg0
        self.th = threading.Thread(target=self.loop, daemon=True)
        self.th.start()

    def loop(self):
        while not self.stop_ev.wait(self.every):
            self.sample()

    def sample(self):
        self.max_threads = max(self.max_threads, rss_kb(self.pid, "Threads") or 0)
        self.peak_rss_kb = max(self.peak_rss_kb, rss_kb(self.pid, "VmHWM") or 0)
        self.cpu_last = tree_cpu_s(self.pid)
        if self.pg_pid:
            self.pg_last = tree_cpu_s(self.pg_pid)

    def stop(self):
        self.stop_ev.set()
        self.th.join()
        self.sample()
        wall = time.monotonic() - self.t0
        return {"peak_rss_kb": self.peak_rss_kb, "max_threads": self.max_threads,
                "cpu_pct": 100.0 * (self.cpu_last - self.cpu0) / wall,
                "pg_cpu_pct": 100.0 * (self.pg_last - self.pg0) / wall if self.pg_pid else None}


def postmaster_pid(pgdir):
    try:
        with open(os.path.join(pgdir, "data", "postmaster.pid")) as f:
            return int(f.readline())
    except (OSError, ValueError, TypeError):
        return None


def capped(t, mib):
    """(the target restarted under a `mib` MiB heap/memory cap, a Cgroup to remove or None, how the cap was set)."""
    spec = t.spec
    cap = spec.get("cap")
    if cap:
        text = cap.replace("{mib}", str(mib))
        name, eq, val = text.partition("=")
        if eq and name.isidentifier() and name.upper() == name:
            env = dict(t.env)
            env[name] = (env.get(name, "") + " " + val).strip()
            return Target(t.name, t.argv, env, db_path=t.db_path, url=t.url), None, text
        start = spec["start"]
        start = start.replace("{cap}", text) if "{cap}" in start else start + " " + text
        return Target(t.name, ["sh", "-c", start], t.env, db_path=t.db_path, url=t.url), None, text
    if os.geteuid() != 0:
        raise RuntimeError("no cap= flags for this target and no root for a cgroup memory cap")
    cg = Cgroup("preon-bench-%d-cap%d" % (os.getpid(), mib), mib, None)
    return Target(t.name, cg.wrap(t.argv), t.env, db_path=t.db_path, url=t.url), cg, "cgroup memory.max %d MiB" % mib


def peak_rss_kb(t):
    return rss_kb(main_pid(t), "VmHWM")


def warm_up(t, seconds):
    """The stated warm-up before a warm measured run: wrk -t2 -c50 on /hello, then on the DB path, half each."""
    if seconds > 0:
        wrk(t.url + "/hello", 50, max(1, seconds // 2), threads=2)
        wrk(t.url + t.db_path, 50, max(1, seconds - seconds // 2), threads=2)


def closure_bytes(spec):
    """The artifact with what it needs to run, one way for all: a binary with the shared libraries a slim Debian
    image lacks; a JVM peer's jar or fast-jar folder with Debian's JRE 17 (measure.closure)."""
    art = spec.get("artifact")
    if not art or not os.path.exists(art):
        return None
    if spec.get("peer") in JVM_PEERS:
        jre = jre_bytes()
        return dir_bytes(art) + jre if jre is not None else None
    return runtime_closure(art) if os.path.isfile(art) else dir_bytes(art)


# ---------------------------------------------------------------- rendering: each scenario's beside its run below

Row = collections.namedtuple("Row", "label values format ratio published")  # a metric_table row, one per metric
Row.__doc__ = ("A table row: the label, the measured value per target, its format, whether a ratio to the first target "
               "is wanted, and the published text per published column.")


def _bytes_mb(v):
    """Bytes as MB for a cell; None (no figure) for none or 0."""
    return (v or 0) / 1e6 or None


def _mb(kb):
    return kb / 1024.0 if kb is not None else None


def _rounds_note(rec, s):
    """The sentence that says how a scenario's figures were taken in rounds, or "" for a single run."""
    n = max([len(v.get("rounds") or []) for v in rec.runs(s).values() if isinstance(v, dict)] or [0])
    if n < 2:
        return "Each figure is one run. "
    return ("Each load figure is the median of %d rounds, min–max in brackets; the targets' order rotated by one each "
            "round. A ratio is of the medians, marked \"within noise\" where the two ranges overlap (no verdict "
            "either way). " % n)


def _table(out, title, names, pub_cols, rows, intro=None):
    """rows: Rows, each with its published text per pub column."""
    out.extend(["", "### " + title, ""] + ([intro, ""] if intro else []) + [
        metric_table(names, rows, ["%s: %s" % (PUBLISHED, c) for c in pub_cols]).rstrip("\n")])


def _errors(out, rec, s):
    """The targets that failed scenario s (with their last log lines) or skipped it, as the record says."""
    for n in rec.targets:
        v = rec.runs(s).get(n)
        if isinstance(v, dict) and "error" in v:
            out.append("- **%s: %s**" % (n, v["error"]))
            lines = []
            for line in (v.get("log_tail") or "").strip().split("\n"):
                if line and (not lines or lines[-1] != line):  # a target started several times repeats itself
                    lines.append(line)
            if lines:
                out.append("\n  last log lines:\n\n" + "".join("      " + l + "\n" for l in lines[-10:]))
        elif isinstance(v, dict) and "skipped" in v:
            out.append("- %s: not run: %s" % (n, v["skipped"]))


def _section(results, refs):
    """(the results as a record, the published figures, the lines to fill) for a scenario's render."""
    return record.run_from(results), refs if refs is not None else refdata.load(), []


COLS_004 = ["TYPE", "SOURCE", "BUILD TIME (s)", "ARTIFACT SIZE (MB)", "BOOT UP (s)", "ACTIVE USERS", "TOTAL REQUESTS",
            "OK", "KO (%)", "RPS", "RESPONSE TIME (95th pct) (ms)", "SATURATION POINT", "RAM (MB)", "CPU (%)",
            "THREADS (MAX)", "POSTGRES CPU (%)"]
METRICS_004 = ["build_time", "artifact_size", "startup_time", "active_users", "requests_total", "requests_ok", "ko",
               "requests_per_s", "response_time_p95", "saturation_point", "memory", "cpu", "threads_max", "postgres_cpu"]


def sat_cell(r):
    """The saturation point; windows where the driver itself lagged do not count, and where it lagged for good the
    cell says from how many users on."""
    if r.get("saturation"):
        return "%d" % r["saturation"]["users"]
    if r.get("driver_limit"):
        return "none before the driver's limit (%d)" % r["driver_limit"]["users"]
    return "none"


def published_004_rows(refs, metrics):
    """Post 004's chapter-6 table as rows [system, PUBLISHED, value per metric] ("N/A" where the post has none)."""
    rows = []
    for system in refdata.systems(refs, "004", "chapter 6"):
        cells = []
        for m in metrics:
            rs = [x for x in refs if x["post"] == "004" and x.get("table") == "chapter 6" and x["system"] == system
                  and x["metric"] == m]
            v = rs[0]["value"] if rs else None
            cells.append("N/A" if v is None else refdata.num(v))
        rows.append([system, PUBLISHED] + cells)
    return rows


def render_004(results, s="004", refs=None):
    """Markdown lines of post 004's table (its chapter 6): a ramp of users on the DB path."""
    rec, refs, _ = _section(results, refs)
    names, p = rec.targets, rec.params
    out = ["", "### 004: ramp to %d users on the DB path" % p["ramp_users"], "",
           "Post 004's layout (its chapter 6). Here: users arrive evenly over %d s, then all keep going for %d s; each "
           "user has its own keep-alive connection and loops GET <db-path>, think %.1f s (uniform 0.5–1.5×); KO = no "
           "2xx within %d s (bench/measure/ramp.py). The post's ramp ran for about 1,100 s (its total requests / RPS). "
           "Saturation point: active users at the first of 3 windows in a row with KO > 1 %% or p95 > max(10 × the "
           "early p95, early p95 + 50 ms), not counting windows in which the driver's own event loop lagged by "
           "more than 50 ms (p95): there the driver, not the target, was the bottleneck. CPU %%: 100 = one core; "
           "PostgreSQL's: its postmaster and backends." % (p["ramp_s"], p["ramp_hold_s"], p["ramp_think_s"],
                                                           p["ramp_timeout_s"]), ""]
    rows = []
    for n in names:
        r = rec.result(s, n)
        if r is None:  # failed, and the record says so
            rows.append([n, "measured here"] + ["-"] * (len(COLS_004) - 2))
            continue
        art = rec.opt("001", n, "artifact_bytes") or rec.opt("build", n, "artifact_bytes")
        rows.append([n, "measured here", fmt(rec.cell("build", n, "cold_s"), "%.1f"), fmt(art / 1e6 if art else None, "%.2f"),
                     fmt(r.get("boot_s"), "%.3f"), "%d" % r["max_users"], "%d" % r["total"], "%d" % r["ok"],
                     fmt(r["ko_pct"], "%.2f"), fmt(r["rps"], "%.1f"), fmt(r["p95_ms"], "%.1f"),
                     sat_cell(r), fmt(_mb(r.get("peak_rss_kb")), "%.1f"),
                     fmt(r.get("cpu_pct"), "%.0f"), fmt(r.get("max_threads"), "%d"), fmt(r.get("pg_cpu_pct"), "%.0f")])
    rows += published_004_rows(refs, METRICS_004)
    out.append(md_table(COLS_004, rows).rstrip("\n"))
    out.append("")
    for n in names:
        r = rec.result(s, n)
        if r is not None:
            d = r["driver"]
            sat = r.get("saturation")
            dl = r.get("driver_limit")
            # CPU per request, from CPU % and requests/s (the sampler's and the driver's spans are both the ramp's)
            per_req = lambda pct: pct / 100.0 / r["rps"] * 1e6 if r.get("rps") and pct is not None else None  # noqa: E731
            out.append("- %s: p50 %.1f ms; saturation %s; driver: %d processes, CPU %s %% each (%s µs of CPU per request, "
                       "the target %s µs), event-loop lag p95 %.0f ms%s%s" % (
                           n, r["p50_ms"] or 0, "at %d users (%s)" % (sat["users"], sat["reason"]) if sat else "none",
                           d["procs"], "/".join("%.0f" % c for c in d["cpu_pct_per_proc"]),
                           fmt(per_req(sum(d["cpu_pct_per_proc"]))), fmt(per_req(r.get("cpu_pct"))), d["loop_lag_p95_ms"] or 0,
                           " — **from %d users on the driver itself was the bottleneck: the figures beyond include its "
                           "delay and under-state the load offered**" % dl["users"] if dl else "",
                           "; " + r["died"] if r.get("died") else ""))
    for ref in refs:
        if ref["post"] == "004" and ref.get("table") == "chapter 6" and ref["note"] and (
                "SWAP" in ref["note"] or "impossible" in ref["note"] or "disagrees" in ref["note"]):
            out.append("- published, %s, %s: %s" % (ref["system"], ref["metric"], ref["note"]))
    _errors(out, rec, s)
    return out


@plots
def charts(results, plot):
    """The ramp's p95 and KO % against active users, per target, and 001's requests/s bare and capped.
    `plot(name, data, gnuplot script)` is run.py's."""
    rec = record.run_from(results)
    names = rec.targets
    series = [(n, r["windows"]) for n, r in ((n, rec.runs("004").get(n)) for n in names)
              if isinstance(r, dict) and "windows" in r]
    if series:
        blocks = "\n\n\n".join("# %s\n" % n + "\n".join("%d %.3f %.3f %.3f" % (w["users"], w["p95_ms"], w["ko_pct"],
                                                                             max(0.01, w.get("driver_lag_ms") or 0))
                                                        for w in ws) for n, ws in series)
        titles = ", ".join('"%%(dat)s" index %d using 1:%%(col)d with linespoints title "%s"' % (i, n)
                           for i, (n, _) in enumerate(series))
        lag = ", ".join('"%%(dat)s" index %d using 1:4 with lines dashtype 2 title "%s: driver lag p95"' % (i, n)
                        for i, (n, _) in enumerate(series))
        plot("ramp-p95", blocks + "\n", 'set style data lines; set title "ramp: p95 response time against active '
             'users (dashed: the driver\'s own event-loop lag)"; set xlabel "active users"; set ylabel "ms"; '
             'set logscale y; set yrange [*:*]; plot ' + titles.replace("%(col)d", "2") + ", " + lag)
        plot("ramp-ko", blocks + "\n", 'set style data lines; set title "ramp: KO %% against active users"; '
             'set xlabel "active users"; set ylabel "KO (%%)"; set yrange [0:100]; plot ' + titles.replace("%(col)d", "3"))
    if "001" in rec.scenarios:
        caps = rec.need("params", "caps_mib")
        rows = []
        for n in names:
            vals = [rec.cell("001", n, "rps")] + [rec.cell("001", n, "caps", str(m), "rps") for m in caps]
            rows.append('"%s" %s' % (n, " ".join("%.1f" % (v or 0) for v in vals)))
        cols = '"bare" ' + " ".join('"cap %d MiB"' % m for m in caps)
        # a dozen targets' names side by side overrun each other: slanted past six
        slant = "set xtics rotate by -35 left; " if len(names) > 6 else ""
        plot("001-rps", "target %s\n%s\n" % (cols, "\n".join(rows)),
             'set title "001: /hello requests/s (wrk -t10 -c50)%s"; set ylabel "requests/s"; %s'
             'plot for [i=2:%d] "%%(dat)s" using i:xtic(1) title columnhead' % (
                 ", bare and capped" if caps else "", slant, len(caps) + 2))


# ---------------------------------------------------------------- the scenarios

def in_rounds(runner, name, i, fn, eta_s, start=True):
    """Scenario `name` in p_rounds rounds: fn(target, round) for every target, the order rotated by one place each
    round (no target always first or last after another's load); each target's record is merge() of its rounds.
    A target none of whose rounds succeeded keeps its last error."""
    n = runner.p["p_rounds"]
    done = {t.name: [] for t in runner.targets}
    for rnd in range(n):
        def one(t):
            v = fn(t, rnd)
            done[t.name].append(v)
            return v
        runner.each(name, i, one, eta_s * (n - rnd), start=start, rotate=rnd, label=" round %d/%d" % (rnd + 1, n))
    for t in runner.targets:
        if done[t.name]:
            runner.record(name, t, merge(done[t.name]))


def render_build(results, s="build", refs=None):
    """Markdown lines of the build table (posts 001 and 004)."""
    rec, refs, out = _section(results, refs)
    names, V = rec.targets, refdata.value
    pub = [("001", "Quarkus RESTEasy Reactive JVM", None), ("001", "Quarkus RESTEasy Reactive native", None),
           ("004", "Quarkus Reactive + R2DBC, fast jar", "chapter 6"),
           ("004", "Quarkus Reactive + R2DBC, native executable", "chapter 6")]
    _table(out, "build time (posts 001 and 004)", names, ["%s %s" % (p, sy) for p, sy, _ in pub], [
        Row("cold build (s): clean, then the build command", [rec.cell(s, n, "cold_s") for n in names], "%.1f", True,
            [V(refs, p, "build_time", sy, table=tb) for p, sy, tb in pub]),
        Row("warm build (s): the build command again", [rec.cell(s, n, "warm_s") for n in names], "%.1f", True,
            ["-"] * len(pub)),
        # artifact_bytes and closure_bytes: only where the artifact was there, closure_bytes since 2026-12-01
        Row("artifact (MB)", [_bytes_mb(rec.opt(s, n, "artifact_bytes")) for n in names], "%.2f", True,
            [V(refs, p, "artifact_size", sy, table=tb) for p, sy, tb in pub]),
        Row("artifact + runtime closure (MB): shared libraries a slim Debian lacks; for a jar, the JRE 17",
            [_bytes_mb(rec.opt(s, n, "closure_bytes")) for n in names], "%.2f", True, ["-"] * len(pub))],
        "Build commands run under `nice -n 10`; warm = the same command again at once (caches and build folder "
        "kept; Go's GOCACHE is a fresh folder for the cold build). Published times are the posts' own builds "
        "(Gradle/Maven, their machines).")
    _errors(out, rec, s)
    return out


@scenario("build", render_build, suite="published")
def s_build(runner, i):
    gocache = tempfile.mkdtemp(prefix="preon-bench-gocache-")

    def timed(cmd):
        t0 = time.monotonic()
        r = subprocess.run(["nice", "-n", "10", "sh", "-c", cmd], cwd=REPO, capture_output=True, text=True,
                           env=dict(os.environ, GOCACHE=gocache), timeout=3600)
        if r.returncode != 0:
            raise RuntimeError("build command failed (%d): %s" % (r.returncode, (r.stdout + r.stderr).strip()[-400:]))
        return time.monotonic() - t0

    def run(t):
        spec = t.spec
        if spec.get("missing"):
            raise RuntimeError(spec["missing"])
        if not spec.get("build"):
            return {"skipped": "no build command (give build='…' in the target)"}
        t.stop()
        if spec.get("clean"):
            subprocess.run(["sh", "-c", spec["clean"]], cwd=REPO, check=False)
        out = {"cold_s": timed(spec["build"]), "warm_s": timed(spec["build"])}
        if spec.get("artifact") and os.path.exists(spec["artifact"]):
            out["artifact_bytes"] = dir_bytes(spec["artifact"])
            out["closure_bytes"] = closure_bytes(spec)
        return out
    try:
        runner.each("build", i, run, 60, start=False)
    finally:
        shutil.rmtree(gocache, ignore_errors=True)


def render_000(results, s="000", refs=None):
    """Markdown lines of post 000's table: wrk's latency distribution, warm (and cold where it was run)."""
    rec, refs, out = _section(results, refs)
    names, V = rec.targets, refdata.value
    pub = ["Quarkus JVM", "Quarkus native"]
    warm = rec.params.get("warmup_s")  # None in runs recorded before the warm-up
    rows = [Row("requests/s" + (" (warm)" if warm is not None else ""), [rec.spread(s, n, "rps") for n in names],
                "%.0f", True, [V(refs, "000", "requests_per_s", x) for x in pub])]
    if any(rec.opt(s, n, "cold") for n in names):  # the cold run: since 2026-12-01
        rows += [Row("requests/s, cold: a fresh start, wrk at once (as the post ran)",
                     [rec.spread(s, n, "cold", "rps") for n in names], "%.0f", True, ["-", "-"]),
                 Row("latency p99 (ms), cold", [rec.spread(s, n, "cold", "p99") for n in names], "%.2f", True,
                     ["-", "-"])]
    for k in ("p50", "p75", "p90", "p99"):
        rows.append(Row("latency %s (ms)" % k, [(rec.spread if k == "p99" else rec.cell)(s, n, k) for n in names],
                        "%.2f", True, [V(refs, "000", "latency_" + k, x) for x in pub]))
    rows.append(Row("requests in the run", [rec.cell(s, n, "requests") for n in names], "%d", False,
                    [V(refs, "000", "requests_total", x, condition=c) for x, c in zip(pub, ("in 20.04 s", "in 20.09 s"))]))
    rows.append(Row("non-2xx + socket errors", [errors_of(rec, s, n) for n in names], "%d", False, ["-", "-"]))
    _table(out, "000: wrk -c50 -d%ds --latency /hello" % rec.need("params", "p000_s"), names, pub, rows,
           "Post 000's layout (wrk's latency distribution). %s%sPublished: a Quarkus 1.13 route returning a "
           "string, on a 2017 MacBook Pro." % (
               _rounds_note(rec, s),
               "Warm: after a %s s warm-up (wrk on /hello, then on the DB path), the figures of every row without "
               "\"cold\"; cold: the same wrk the moment a fresh start answers, as the post ran it. " % warm
               if warm is not None else ""))
    _errors(out, rec, s)
    return out


def errors_of(rec, s, n):
    """wrk's non-2xx answers and socket errors of target n in scenario s, or None when it has no figures."""
    if rec.cell(s, n, "rps") is None:
        return None
    return (rec.cell(s, n, "non2xx") or 0) + (rec.cell(s, n, "socket_errors") or 0)


@scenario("000", render_000, suite="published")
def s_000(runner, i):
    """Cold as the post ran it (wrk the moment a fresh start answers), then warm (after the stated warm-up); the
    warm run's figures are the row's, the cold run's are kept under "cold"."""
    s, w = runner.p["p000_s"], runner.p["warmup_s"]

    def run(t, _rnd):
        t.stop()
        t.start()
        cold = wrk(t.url + "/hello", 50, s, threads=2)
        warm_up(t, w)
        return dict(wrk(t.url + "/hello", 50, s, threads=2), cold=cold, warmup_s=w)
    in_rounds(runner, "000", i, run, 2 * s + w, start=False)  # run() starts it afresh itself


def render_001(results, s="001", refs=None):
    """Markdown lines of post 001's table: size, build and start time, wrk and memory, bare and under each cap."""
    rec, refs, out = _section(results, refs)
    names, V = rec.targets, refdata.value
    caps = rec.need("params", "caps_mib")
    pub = refdata.systems(refs, "001", "JVM table") + refdata.systems(refs, "001", "native table")
    rows = [Row("artifact size (MB)", [_bytes_mb(rec.opt(s, n, "artifact_bytes")) for n in names], "%.2f", True,
                [V(refs, "001", "artifact_size", x) for x in pub]),  # only where the artifact was there
            Row("build time (s)", [rec.cell("build", n, "cold_s") for n in names], "%.1f", True,
                [V(refs, "001", "build_time", x) for x in pub]),
            Row("start time (s)", [rec.cell(s, n, "start_s") for n in names], "%.3f", True,
                [V(refs, "001", "startup_time", x) for x in pub]),
            Row("requests per second", [rec.spread(s, n, "rps") for n in names], "%.0f", True,
                [V(refs, "001", "requests_per_s", x) for x in pub])]
    for mib in caps:
        rows.append(Row("requests per second (cap %d MiB)" % mib, [rec.spread(s, n, "caps", str(mib), "rps") for n in names],
                        "%.0f", True, [V(refs, "001", "requests_per_s", x, condition="-Xmx%dm" % mib) for x in pub]))
    rows.append(Row("memory (MB, peak RSS)", [_mb(rec.cell(s, n, "memory_kb")) for n in names], "%.1f", True,
                    [V(refs, "001", "memory", x) for x in pub]))
    for mib in caps:
        rows.append(Row("memory (MB, cap %d MiB)" % mib, [_mb(rec.cell(s, n, "caps", str(mib), "memory_kb")) for n in names],
                        "%.1f", True, [V(refs, "001", "memory", x, condition="-Xmx%dm" % mib) for x in pub]))
    _table(out, "001: wrk -t10 -c50 -d%ds /hello, bare and capped" % rec.need("params", "p001_s"), names, pub, rows,
           "Post 001's layout. Build time comes from the build scenario (cold); size and start time from the "
           "first round. %s%sPublished: Spring and Quarkus on an i5-10400; their caps are -Xmx (heap) flags." % (
               _rounds_note(rec, s),
               "Every wrk run here is warm: after a %s s warm-up (wrk on /hello, then on the DB path), capped runs "
               "too. " % rec.params["warmup_s"] if "warmup_s" in rec.params else ""))
    for n in names:
        for mib in caps:
            row = rec.cell(s, n, "caps", str(mib))
            if isinstance(row, dict):
                out.append("- %s, cap %d MiB: %s%s" % (n, mib, row.get("how", "not applied"),
                                                      "" if row.get("result") == "ok" else " → " + row["result"]))
    _errors(out, rec, s)
    return out


@scenario("001", render_001, suite="published")
def s_001(runner, i):
    p = runner.p

    def run(t, rnd):
        out = {}
        if rnd == 0:  # size and start time once: neither is a load figure
            if t.spec.get("artifact") and os.path.exists(t.spec["artifact"]):
                out["artifact_bytes"] = dir_bytes(t.spec["artifact"])
            starts = []
            for _ in range(p["p001_starts"]):
                t.stop()
                starts.append(t.start()[0])
            out["start_s"] = statistics.median(starts)  # later rounds: a fresh start, by runner.each
        warm_up(t, p["warmup_s"])
        out["rps"] = wrk(t.url + "/hello", 50, p["p001_s"], threads=10)["rps"]
        out["memory_kb"] = peak_rss_kb(t)
        t.stop()
        out["caps"] = {}
        for mib in p["caps_mib"]:
            row = {"rps": None, "memory_kb": None, "result": "ok"}
            cg = None
            try:
                limited, cg, row["how"] = capped(t, mib)
                limited.start()
                if limited.alive():
                    warm_up(limited, p["warmup_s"])
                row["rps"] = wrk(limited.url + "/hello", 50, p["p001_s"], threads=10)["rps"]
                if limited.alive():
                    row["memory_kb"] = peak_rss_kb(limited)
                else:
                    row["result"] = "OOM" if limited.proc.returncode in (-9, 137) else "exited (%d)" % limited.proc.returncode
                limited.stop()
            except Exception as e:  # noqa: BLE001 - the row says what happened
                row["result"] = "failed: %s" % e
                if "limited" in locals():
                    limited.stop()
            finally:
                if cg:
                    cg.remove()
            out["caps"][str(mib)] = row
        return out
    in_rounds(runner, "001", i, run, (1 + len(p["caps_mib"])) * (p["p001_s"] + p["warmup_s"] + 2))


def timed_get(url):
    """Seconds one GET takes (a new connection, as a user's next click), and its status."""
    t0 = time.monotonic()
    status = get(url, 60)
    return time.monotonic() - t0, status


def render_003(results, s="003", refs=None):
    """Markdown lines of post 003's table: start → first request → repeat request."""
    rec, refs, out = _section(results, refs)
    names, V = rec.targets, refdata.value
    pub = ["Quarkus JVM", "Quarkus native"]
    cond = "Kubernetes pod with 512 MB RAM"
    rows = [Row("start → first 200 on /hello (ms)", [rec.cell(s, n, "first_hello_ms") for n in names], "%.1f", True,
                [V(refs, "003", "pod_startup_time", x, condition=cond) for x in pub]),
            Row("start → first 200 on the DB path (ms)", [rec.cell(s, n, "first_db_ms") for n in names], "%.1f", True,
                [V(refs, "003", "first_request_time", x, condition=cond) for x in pub]),
            Row("start → first 200 on the DB path, slowest start (ms)",
                [rec.cell(s, n, "first_db_max_ms") for n in names], "%.1f", True, ["-", "-"]),
            Row("repeat request on the DB path (ms)", [rec.cell(s, n, "repeat_db_ms") for n in names], "%.2f", True,
                [V(refs, "003", "second_request_time", x, condition=cond) for x in pub]),
            Row("repeat request on /hello (ms)", [rec.cell(s, n, "repeat_hello_ms") for n in names], "%.2f", True,
                ["-", "-"]),
            # image_bytes: only an image target's
            Row("image (MB)", [_bytes_mb(rec.opt(s, n, "image_bytes")) for n in names], "%.1f", True, ["-", "-"])]
    _table(out, "003: start → first request → repeat request", names, pub, rows,
           "Post 003's scenario, median of %s fresh starts: the process's exec (or docker run) until the first 200 "
           "on /hello, then on the DB path (polled), then one more GET of each on a new connection. Published: a "
           "Kubernetes pod (512 MB) serving GraphQL pages; its first row is the pod's start."
           % rec.params.get("p003_starts"))
    _errors(out, rec, s)
    return out


@scenario("003", render_003, suite="published")
def s_003(runner, i):
    """Post 003: a fresh start (the process's exec, or docker run for an image) → first 200 on /hello and on the DB
    path, then the same two requests again; medians of several starts."""
    n = runner.p["p003_starts"]

    def run(t):
        rows = []
        for _ in range(n):
            t.stop()
            hello_s, db_s = t.start(timeout=180)
            repeat_db, status_db = timed_get(t.url + t.db_path)
            repeat_hello, status_hello = timed_get(t.url + "/hello")
            if (status_db, status_hello) != (200, 200):
                raise RuntimeError("repeat requests answered %s (DB path) and %s (/hello)" % (status_db, status_hello))
            rows.append((hello_s, db_s, repeat_hello, repeat_db))
        med = [statistics.median(r[k] for r in rows) * 1000 for k in range(4)]
        out = {"starts": n, "first_hello_ms": med[0], "first_db_ms": med[1], "repeat_hello_ms": med[2],
               "repeat_db_ms": med[3], "first_db_max_ms": max(r[1] for r in rows) * 1000}
        if hasattr(t, "image_bytes"):  # an image target: what a pod pulls before it starts
            out["image_bytes"] = t.image_bytes()
        return out
    runner.each("003", i, run, 10 * n, start=False)


@scenario("004", render_004, suite="published")
def s_004(runner, i):
    p = runner.p

    def run(t):
        t.stop()  # a fresh start, as a deployment would be
        boot = t.start()[0]
        port = urllib.parse.urlsplit(t.url).port
        sampler = Sampler(main_pid(t), postmaster_pid(runner.pgdir))
        try:
            r = run_ramp(port, [t.db_path], p["ramp_users"], p["ramp_s"], p["ramp_hold_s"], p["ramp_think_s"],
                         p["ramp_timeout_s"])
        finally:
            res = sampler.stop()
        r.update(res, boot_s=boot)
        if not t.alive():
            r["died"] = "exited with %s during the ramp" % t.proc.returncode
        return r
    runner.each("004", i, run, p["ramp_s"] + p["ramp_hold_s"] + 10)
