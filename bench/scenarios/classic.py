# SPDX-License-Identifier: MIT
"""bench/run.py's classic scenarios, re-running the published Quarkus / Go / Spring experiments: hello (wrk -t10
-c50 -d60s /hello), hello-latency (wrk -c50 -d20s --latency), db (ab -n 10000 -c 100 on the DB path, cold then
warm), startup, footprint, limits (post 001's Docker table), matrix (post 002), c10k and rounds (not in the classic
suite: side by side, medians of rounds; python3 bench/run.py --scenario rounds,startup,footprint --target preon --target go runs it). run.py's docstring says what each measures; each
renders as one table, rows = metrics, columns = targets, plus ratios to the first target."""
import os
import resource
import statistics
import time

from measure import HERE, Cgroup, Target, ab, cpu_s, log, metric_table, rss_kb, runtime_closure, threads, wrk
from measure import main_pid as process_main_pid
from measure import images, record
from measure.container import ImageTarget, PeakSampler, cgroup_mem_bytes, limit_label, parse_limits

from . import params, plots, published_docker, scenario

FULL = {"hello_s": 60, "latency_s": 20, "ab_n": 10000, "starts": 5, "limit_s": 60, "c10k_conns": 10000, "c10k_s": 30,
        "limits": "mem=8m,cpus=1;mem=16m,cpus=1;mem=32m,cpus=1;mem=64m,cpus=1;mem=128m,cpus=1;mem=256m,cpus=1",
        "matrix": "mem=100m,cpus=0.5;mem=200m,cpus=1;mem=300m,cpus=2", "idle_s": 10,
        "rounds_n": 3, "rounds_s": 10, "rounds_conns": "50,100", "limit_warm": 1}
QUICK = {"hello_s": 2, "latency_s": 2, "ab_n": 2000, "starts": 2, "limit_s": 2, "c10k_conns": 1000, "c10k_s": 3,
         "limits": "mem=16m,cpus=1;mem=64m,cpus=1", "matrix": "mem=100m,cpus=0.5;mem=200m,cpus=1", "idle_s": 1,
         "rounds_n": 1, "rounds_s": 2, "rounds_conns": "50,100", "limit_warm": 1}
params(FULL, QUICK)


def main_pid(t):
    """The service's own process: a container's first process, or the start command's (measure.main_pid)."""
    return t.pid() if isinstance(t, ImageTarget) else process_main_pid(t)


# ---------------------------------------------------------------- rendering

def section(results, s, title, rows, intro=None, extra=()):
    """The lines of one table (rows: (label, [value per target], format, ratio?)), then `extra`, then the
    targets that failed in scenario `s`, with their last log lines. results: a measure.record.Run or its JSON."""
    rec = record.run_from(results)
    out = ["", "### " + title, ""] + ([intro, ""] if intro else []) + [
        metric_table(rec.targets, rows).rstrip("\n")] + list(extra)
    for n in rec.targets:
        v = rec.runs(s).get(n)
        if isinstance(v, dict) and "error" in v:
            out.append("- **%s: %s**" % (n, v["error"]))
            tail = v.get("log_tail", "")
            if tail.strip():
                out.append("\n  last log lines:\n\n" + "".join("      " + l + "\n"
                                                                for l in tail.strip().split("\n")[-10:]))
    return out


def render_wrk(rec, s):
    """hello, hello-latency and c10k: wrk's figures, read through the record (a figure it lacks is a RecordError)."""
    names = rec.targets
    rows = [("requests/s", [rec.cell(s, n, "rps") for n in names], "%.0f", True),
            ("2xx answers/s", [rec.cell(s, n, "ok_rps") for n in names], "%.0f", True)]
    for p in (("p50", "p75", "p90", "p99") if s == "hello-latency" else ("p95",) if s == "c10k" else ()):
        rows.append(("%s latency (ms)" % p, [rec.cell(s, n, p) for n in names], "%.2f", True))
    rows.append(("non-2xx answers (503 = backpressure)", [rec.cell(s, n, "non2xx") for n in names], "%d", False))
    rows.append(("socket errors", [rec.cell(s, n, "socket_errors") for n in names], "%d", False))
    return section(rec, s, s, rows)


def render_db(rec, s):
    """db: ab's figures, cold then warm, read through the record."""
    names, rows = rec.targets, []
    for phase in ("cold", "warm"):
        rows += [("%s requests/s" % phase, [rec.cell(s, n, phase, "rps") for n in names], "%.0f", True),
                 ("%s mean latency (ms)" % phase, [rec.cell(s, n, phase, "mean_ms") for n in names], "%.2f", True),
                 ("%s max latency (ms)" % phase, [rec.cell(s, n, phase, "max_ms") for n in names], "%d", True),
                 ("%s failed requests" % phase, [rec.cell(s, n, phase, "failed") for n in names], "%d", False)]
    return section(rec, s, "db (ab)", rows)


def render_rounds(rec, s):
    """rounds: per path and connection count (the keys a target recorded), wrk's medians, read through the record;
    a target that lacks a key another recorded has none there (opt)."""
    names, keys, rows = rec.targets, [], []
    for n in names:
        keys += [k for k in (rec.runs(s).get(n) or {}) if k not in keys and k not in ("error", "log_tail")]
    for key in keys:
        path, c = key.split(" c")
        what = "%s -c%s" % ("DB path" if path == "db" else path, c)
        rows += [("%s requests/s" % what, [rec.opt(s, n, key, "rps") for n in names], "%.0f", True),
                 ("%s p50 latency (ms)" % what, [rec.opt(s, n, key, "p50") for n in names], "%.2f", True),
                 ("%s p99 latency (ms)" % what, [rec.opt(s, n, key, "p99") for n in names], "%.2f", True),
                 ("%s non-2xx + socket errors" % what, [rec.opt(s, n, key, "errors") for n in names], "%d", False),
                 ("%s CPU seconds per 10k requests" % what, [rec.opt(s, n, key, "cpu_s_per_10k") for n in names],
                  "%.3f", True)]
    return section(rec, s, "rounds", rows, "wrk -t2, %s s per run, median of %s rounds, the order of the targets "
                   "alternated." % (rec.params.get("rounds_s"), rec.params.get("rounds_n")))


def render_startup(rec, s):
    """startup: exec (or docker run) → first 200, read through the record; a container's own exec only where the
    target is an image."""
    names = rec.targets
    return section(rec, s, "startup", [
        ("exec (docker run) → first 200 on /hello (ms)", [rec.cell(s, n, "hello_ms") for n in names], "%.1f", True),
        ("exec (docker run) → first 200 on the DB path (ms)", [rec.cell(s, n, "db_ms") for n in names], "%.1f", True),
        ("container: process exec → first 200 on /hello (ms)", [rec.opt(s, n, "exec_hello_ms") for n in names],
         "%.1f", True)])


# footprint's figures: every target's (cell), and those of one kind of target only (opt): a binary's size and its
# runtime closure where the target names a binary, an image's size and docker stats' memory where it is an image
FOOTPRINT = (("binary (bytes)", "binary_bytes", "%d", "binary"), ("runtime closure (bytes)", "closure_bytes", "%d", "binary"),
             ("image (bytes)", "image_bytes", "%d", "image"),
             ("docker stats memory, idle (bytes)", "idle_mem_bytes", "%d", "image"),
             ("docker stats memory, after the loads (bytes)", "mem_after_load_bytes", "%d", "image"),
             ("idle RSS (kB)", "idle_rss_kb", "%d", None), ("peak RSS, hello load (kB)", "peak_rss_hello_kb", "%d", None),
             ("peak RSS, db load (kB)", "peak_rss_db_kb", "%d", None), ("threads", "threads", "%d", None),
             ("CPU seconds per 10k requests", "cpu_s_per_10k", "%.3f", None))


def render_footprint(rec, s):
    """footprint: sizes, memory, threads and CPU per request, read through the record; the figures of one kind of
    target only (FOOTPRINT) are opt."""
    return section(rec, s, "footprint", [(label, [(rec.opt if only else rec.cell)(s, n, k) for n in rec.targets], f, True)
                                         for label, k, f, only in FOOTPRINT])


def cap_figures(rec, s, label, *keys, older=False):
    """Each target's figure keys… under the caps `label` of limits or matrix, read through the record: None for a
    target that failed the scenario; a row that ran (result ok) has every figure its scenario measures, else a
    RecordError; a row that did not (failed to start, OOM-killed, exited) has what it measured before, if anything
    (opt). older: a figure that older records lack (opt in every row; the use says which)."""
    out = []
    for n in rec.targets:
        ran = rec.cell(s, n, label, "result") == "ok"
        out.append(rec.cell(s, n, label, *keys) if ran and not older else rec.opt(s, n, label, *keys))
    return out


def limit_rows(rec, s, label):
    """The rows of one row of caps of limits or matrix."""
    def g(*keys, older=False):
        return cap_figures(rec, s, label, *keys, older=older)
    if s == "limits":
        # a cell that was OOM-killed or exited under load has no rate to show (wrk counts its errors as requests)
        ok = lambda vals: [v if r == "ok" else None for v, r in zip(vals, g("result"))]  # noqa: E731
        # warm: only with limit_warm, where the target was still up after the cold run (since 2026-12-01)
        warm = any(g("warm", older=True))
        # mem_bytes, non2xx and socket_errors: not in 2026-11-29's record (process targets under cgroups)
        errors = [add(a, b) for a, b in zip(g("non2xx", older=True), g("socket_errors", older=True))]
        return [("%s: /hello requests/s%s" % (label, ", cold: wrk the moment it answers, as the post ran it"
                                               if warm else ""), ok(g("rps")), "%.0f", True)] + (
               [("%s: /hello requests/s, warm: the same wrk again at once" % label, ok(g("warm", "rps", older=True)),
                 "%.0f", True),
                ("%s: non-2xx + socket errors, warm run" % label,
                 [add(a, b) for a, b in zip(g("warm", "non2xx", older=True), g("warm", "socket_errors", older=True))],
                 "%d", False)]
               if warm else []) + [
                ("%s: memory, docker stats (MiB)" % label, [mib(v) for v in g("mem_bytes", older=True)], "%.2f", True),
                ("%s: peak RSS (kB)" % label, g("rss_kb"), "%d", True),
                ("%s: non-2xx + socket errors" % label, errors, "%d", False)]
    return [("%s: boot, start → first 200 on the DB path (ms)" % label, g("boot_ms"), "%.1f", True),
            ("%s: idle CPU %%" % label, g("idle_cpu_pct"), "%.2f", False),
            ("%s: idle RAM, docker stats (MiB)" % label, [mib(v) for v in g("idle_mem_bytes")], "%.2f", True),
            ("%s: RAM under load, docker stats peak (MiB)" % label, [mib(v) for v in g("load_mem_bytes")], "%.2f",
             True),
            ("%s: peak RSS (kB)" % label, g("peak_rss_kb"), "%d", True),
            ("%s: ab cold requests/s" % label, g("cold", "rps"), "%.0f", True),
            ("%s: ab warm requests/s" % label, g("warm", "rps"), "%.0f", True),
            ("%s: ab warm mean latency (ms)" % label, g("warm", "mean_ms"), "%.2f", True),
            ("%s: failed requests (cold + warm)" % label, g("failed"), "%d", False)]


def render_limits(rec, s):
    """limits and matrix: a block of rows per row of caps, each target's outcome under each, and the published
    Docker experiments' own table, read through the record (cap_figures)."""
    labels = []
    for n in rec.targets:
        for label in (rec.runs(s).get(n) or {}):
            if label not in labels and label not in ("error", "log_tail"):
                labels.append(label)
    outcomes = ["- %s, %s: %s" % (n, label, rec.cell(s, n, label, "result") or "not run")
                for n in rec.targets for label in labels]
    return section(rec, s, s, [row for label in labels for row in limit_rows(rec, s, label)],
                   extra=outcomes + ["", published_docker.render(s)])


# ---------------------------------------------------------------- the scenarios

@scenario("hello", render_wrk, suite="classic")
def hello(runner, i):
    runner.each("hello", i, lambda t: wrk(t.url + "/hello", 50, runner.p["hello_s"], threads=10), runner.p["hello_s"])


@scenario("hello-latency", render_wrk, suite="classic")
def hello_latency(runner, i):
    runner.each("hello-latency", i, lambda t: wrk(t.url + "/hello", 50, runner.p["latency_s"], threads=2),
                runner.p["latency_s"])


@scenario("db", render_db, suite="classic")
def db(runner, i):
    def run(t):
        t.stop()  # cold: a fresh start, as the published Go-vs-Quarkus runs did
        t.start()
        cold = ab(t.url + t.db_path, runner.p["ab_n"], 100)
        return {"cold": cold, "warm": ab(t.url + t.db_path, runner.p["ab_n"], 100)}
    runner.each("db", i, run, 20)


@scenario("startup", render_startup, suite="classic")
def startup(runner, i):
    def run(t):
        times, execs = [], []
        for _ in range(runner.p["starts"]):
            t.stop()
            times.append(t.start())
            execs.append(getattr(t, "exec_first_200", None))
        out = {"hello_ms": statistics.median(x[0] for x in times) * 1000,
               "db_ms": statistics.median(x[1] for x in times) * 1000}
        if None not in execs:  # a container: hello_ms is docker run → first 200, this the process's own start
            out["exec_hello_ms"] = statistics.median(execs) * 1000
        return out
    runner.each("startup", i, run, 2 * runner.p["starts"])


@scenario("footprint", render_footprint, suite="classic")
def footprint(runner, i):
    def run(t):
        t.stop()
        t.start()
        time.sleep(1)
        pid = main_pid(t)
        out = {"idle_rss_kb": rss_kb(pid), "threads": threads(pid)}
        if t.binary:
            out["binary_bytes"] = os.path.getsize(t.binary)
            out["closure_bytes"] = runtime_closure(t.binary)
        if isinstance(t, ImageTarget):
            out["image_bytes"] = t.image_bytes()
            out["idle_mem_bytes"] = t.mem_bytes()
        c0 = cpu_s(pid)
        h = wrk(t.url + "/hello", 50, runner.p["latency_s"])
        out["peak_rss_hello_kb"] = rss_kb(pid, "VmHWM")
        d = wrk(t.url + t.db_path, 50, runner.p["latency_s"])
        out["peak_rss_db_kb"] = rss_kb(pid, "VmHWM")
        if isinstance(t, ImageTarget):
            out["mem_after_load_bytes"] = t.mem_bytes()
        n = h["requests"] + d["requests"]
        out["cpu_s_per_10k"] = (cpu_s(pid) - c0) / n * 10000 if n else None
        return out
    runner.each("footprint", i, run, 2 * runner.p["latency_s"] + 3)


def caps(runner, name):
    """The rows of caps of scenario `name` (limits or matrix): --limits, else the scenario's own."""
    return parse_limits(runner.args.limits or runner.p[name])


def under_limits(t, row, fn):
    """Starts t under one row of caps (docker run flags for an image, a cgroup of its own for a process), runs
    fn(limited, mem, start_times) and returns its dict with "result": ok, OOM-killed, exited (code) or failed
    to start. mem() is the charge as docker stats shows it."""
    cg = None
    if isinstance(t, ImageTarget):
        limited = t.limited(row["mem_mib"], row["cpus"])
        mem = limited.mem_bytes
    else:
        cg = Cgroup("preon-bench-%d-%s" % (os.getpid(), limit_label(row).replace(" ", "").replace(",", "-")
                                           .replace(".", "_")), row["mem_mib"], row["cpus"])
        limited = Target(t.name, cg.wrap(t.argv), t.env, db_path=t.db_path, url=t.url)
        mem = lambda: cgroup_mem_bytes(cg)  # noqa: E731
    out, alive = {"result": "ok"}, None
    try:
        times = limited.start()
    except RuntimeError as e:
        out["result"] = "failed to start: %s" % e
    else:
        try:
            out.update(fn(limited, mem, times))
            alive = limited.alive()
        except Exception as e:  # noqa: BLE001 - the row says what happened
            out["result"] = "failed: %s" % e
    if cg is None:
        limited.stop()  # records the exit code and Docker's OOMKilled
        ex = limited.exit or {}
        if ex.get("oom_killed"):
            out["result"] = "OOM-killed"
        elif alive is False:
            out["result"] = "exited (%s)" % ex.get("exit_code")
    else:
        code = limited.proc.poll() if limited.proc else None
        limited.stop()
        cg.remove()
        if alive is False:
            out["result"] = "OOM-killed" if code == -9 else "exited (%s)" % code
    return out


def under_each_cap(runner, name, i, fn, row_s):
    """Runs fn(limited, mem, start_times) on every target (stopped first) under each row of scenario `name`'s caps
    (under_limits); row_s: about how long a row takes. With runner.images (--images, which --suite published
    implies: the posts ran containers), each target runs as its container image (measure.images), built first when
    missing unless in --quick mode; a target without one reports why."""
    def run(t):
        t.stop()
        if runner.images and not isinstance(t, ImageTarget):
            t = runner.image_target(t.spec, images.ensure(t.spec, build=not runner.args.quick))
        return {limit_label(row): under_limits(t, row, fn) for row in caps(runner, name)}
    runner.each(name, i, run, len(caps(runner, name)) * row_s, start=False)  # run() starts its limited copy


@scenario("limits", render_limits, suite=("classic", "published"))
def limits(runner, i):
    def load(limited, mem, _times):
        pid = main_pid(limited)
        with PeakSampler(mem) as peak:
            r = wrk(limited.url + "/hello", 50, runner.p["limit_s"], threads=10)
            out = {"rps": r["rps"], "non2xx": r["non2xx"], "socket_errors": r["socket_errors"]}
            if runner.p["limit_warm"] and limited.alive():  # the same wrk again: the cold run was its warm-up
                w = wrk(limited.url + "/hello", 50, runner.p["limit_s"], threads=10)
                out["warm"] = {"rps": w["rps"], "non2xx": w["non2xx"], "socket_errors": w["socket_errors"]}
        return dict(out, rss_kb=rss_kb(pid, "VmHWM"), mem_bytes=peak.peak)
    under_each_cap(runner, "limits", i, load, runner.p["limit_s"] + 3)


@scenario("matrix", render_limits, suite=("classic", "published"))
def matrix(runner, i):
    def measure(limited, mem, times):
        pid = main_pid(limited)
        c0 = cpu_s(pid)
        time.sleep(runner.p["idle_s"])
        out = {"boot_ms": times[1] * 1000, "idle_cpu_pct": (cpu_s(pid) - c0) / runner.p["idle_s"] * 100,
               "idle_mem_bytes": mem(), "idle_rss_kb": rss_kb(pid)}
        with PeakSampler(mem) as peak:
            out["cold"] = ab(limited.url + limited.db_path, runner.p["ab_n"], 100)
            out["warm"] = ab(limited.url + limited.db_path, runner.p["ab_n"], 100)
        out["load_mem_bytes"] = peak.peak
        out["peak_rss_kb"] = rss_kb(pid, "VmHWM")
        out["failed"] = sum(out[p]["failed"] + out[p]["non2xx"] + runner.p["ab_n"] - out[p]["complete"]
                            for p in ("cold", "warm"))
        return out
    under_each_cap(runner, "matrix", i, measure, runner.p["idle_s"] + 20)


@scenario("c10k", render_wrk, suite="classic")
def c10k(runner, i):
    n = runner.p["c10k_conns"]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, n + 4096) if hard != resource.RLIM_INFINITY else n + 4096
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))  # wrk's, and restarted targets'

    def run(t):
        t.stop()  # restarted to inherit the raised descriptor limit
        t.start()
        return wrk(t.url + t.db_path, n, runner.p["c10k_s"], threads=2,
                   script=os.path.join(HERE, "wrk", "percentiles.lua"))
    runner.each("c10k", i, run, runner.p["c10k_s"] + 2)


@scenario("rounds", render_rounds)
def rounds(runner, i):
    """Side by side: wrk on /hello and on the DB path at each connection count, rounds_n rounds with the order
    of the targets alternated, so that a noisy machine hurts every target alike; medians per target."""
    conns = [int(c) for c in str(runner.p["rounds_conns"]).split(",") if c]
    secs, runs, failed = runner.p["rounds_s"], {t.name: {} for t in runner.targets}, set()
    total, done = runner.p["rounds_n"] * len(conns) * 2 * len(runner.targets), 0
    for rnd in range(runner.p["rounds_n"]):
        order = runner.targets if (i + rnd) % 2 == 0 else list(reversed(runner.targets))
        for c in conns:
            for path in ("/hello", "db"):
                for t in order:
                    done += 1
                    if t.name in failed:
                        continue
                    try:
                        runner.ensure(t)
                        pid = main_pid(t)
                        c0 = cpu_s(pid)
                        r = wrk(t.url + (t.db_path if path == "db" else path), c, secs)
                        r["cpu_s"] = cpu_s(pid) - c0
                    except Exception as e:  # noqa: BLE001 - reported, and the other targets still run
                        runner.record("rounds", t, {"error": str(e), "log_tail": t.log_tail()})
                        failed.add(t.name)
                        t.stop()
                        continue
                    runs[t.name].setdefault("%s c%d" % (path, c), []).append(r)
                    log("rounds [%d/%d, ~%ds left] %s %s -c%d: %.0f req/s, p99 %s ms" % (
                        done, total, (total - done) * secs, t.name, path, c, r["rps"], r["p99"]))
    for t in runner.targets:
        if t.name not in failed:
            runner.record("rounds", t, {key: rounds_medians(rs) for key, rs in runs[t.name].items()})


def rounds_medians(runs):
    """The medians of a series of wrk runs, and their errors summed."""
    def med(key):
        vals = [r[key] for r in runs if r.get(key) is not None]
        return statistics.median(vals) if vals else None
    cpu = [r["cpu_s"] / r["requests"] * 10000 for r in runs if r.get("requests")]
    return {"rps": med("rps"), "ok_rps": med("ok_rps"), "p50": med("p50"), "p99": med("p99"), "runs": len(runs),
            "errors": sum(r["non2xx"] + r["socket_errors"] for r in runs),
            "cpu_s_per_10k": statistics.median(cpu) if cpu else None}


def mib(v):
    return None if v is None else v / 1048576


def add(a, b):
    return None if a is None or b is None else a + b


# ---------------------------------------------------------------- charts

@plots
def charts(results, plot):
    """requests/s per target per scenario, hello latency percentiles, RSS and requests/s under each memory limit."""
    names, sc = results["targets"], results["scenarios"]
    cols = " ".join('"%s"' % n for n in names)
    rows = []
    for s, key in (("hello", ("rps",)), ("hello-latency", ("rps",)), ("db", ("warm", "rps")), ("c10k", ("rps",))):
        if s in sc:
            vals = []
            for n in names:
                v = sc[s].get(n, {})
                for k in key:
                    v = v.get(k) if isinstance(v, dict) else None
                vals.append(v or 0)
            rows.append('"%s" %s' % (s, " ".join("%.1f" % v for v in vals)))
    if rows:
        plot("requests", "scenario %s\n%s\n" % (cols, "\n".join(rows)),
             'set title "requests/s"; set ylabel "requests/s"; '
             'plot for [i=2:%d] "%%(dat)s" using i:xtic(1) title columnhead'
             % (len(names) + 1))
    if "hello-latency" in sc:
        rows = ['"%s" %s' % (p, " ".join("%.3f" % ((sc["hello-latency"].get(n) or {}).get(p) or 0) for n in names))
                for p in ("p50", "p75", "p90", "p99")]
        plot("latency", "percentile %s\n%s\n" % (cols, "\n".join(rows)),
             'set title "/hello latency (wrk -c50)"; set ylabel "ms"; '
             'plot for [i=2:%d] "%%(dat)s" using i:xtic(1) title columnhead' % (len(names) + 1))
    if "limits" in sc:
        first = next((v for v in sc["limits"].values() if isinstance(v, dict)), {})
        labels = [l for l in first if l.startswith("memory")]
        if labels:
            def row(l, key):
                return " ".join("%.0f" % (((sc["limits"].get(n) or {}).get(l) or {}).get(key) or 0) for n in names)
            rows = ['"%s" %s %s' % (l.replace("memory ", ""), row(l, "rss_kb"), row(l, "rps")) for l in labels]
            rss_cols = " ".join('"%s RSS kB"' % n for n in names)
            rps_cols = " ".join('"%s req/s"' % n for n in names)
            plot("limits", "limit %s %s\n%s\n" % (rss_cols, rps_cols, "\n".join(rows)),
                 'set title "under memory limits: peak RSS (kB) and /hello requests/s"; set logscale y; '
                 'set yrange [1:*]; '
                 'plot for [i=2:%d] "%%(dat)s" using i:xtic(1) title columnhead' % (2 * len(names) + 1))
