# SPDX-License-Identifier: MIT
"""bench/run.py's `ramp004` scenario: post 004 with an open workload. Users arrive at a rate ramping from r0 to r1
users/s (bench/ramp004/cdriver, or the Go driver), each runs a 14-request journey with think times (reads by id,
paged lists, POST, PUT, DELETE of its own rows; docs/benchmarks.md) against a fruits table seeded to ~150 MB, and
leaves. Every
target is driven past its saturation point (bench/measure/ramp_open.py defines it) or to the cap r1; the report has the
post's columns, the post's figures in rows of their own, charts of p95, KO % and RPS against active users, how
each target failed, and the driver's own ceiling and send lag."""
import os
import subprocess
import time

from measure import PG_SH, fmt, free_port, log, main_pid, md_table, ramp_open, record, refdata
from measure.services import supervise

from . import params, plots, scenario
from .published import Sampler, postmaster_pid, published_004_rows

# The full schedule spans the post's ~1,100 s and ends at 800 users/s (about 10,000 users at once with 14-s
# journeys, the post's active users); arrivals stop r4_stop_after windows past the first broken one (0: never).
FULL = {"r4_r0": 1.0, "r4_r1": 800.0, "r4_s": 1100, "r4_think_s": 1.0, "r4_timeout_s": 60, "r4_seed_mb": 150,
        "r4_stop_after": 6, "r4_drain_s": 15, "r4_max_conns": 4096, "r4_ceiling_s": 60, "r4_ceiling_r1": 3000.0,
        "r4_driver": "c", "r4_compare_driver": "go"}
QUICK = {"r4_r0": 5.0, "r4_r1": 500.0, "r4_s": 90, "r4_think_s": 1.0, "r4_timeout_s": 10, "r4_seed_mb": 150,
         "r4_stop_after": 3, "r4_drain_s": 10, "r4_max_conns": 4096, "r4_ceiling_s": 30, "r4_ceiling_r1": 1500.0,
         "r4_driver": "c", "r4_compare_driver": ""}
# r4_driver: the driver that loads the targets (ramp_open.DRIVERS); r4_compare_driver: another whose ceiling and CPU
# cost are measured beside it, in the same partition ("": none). The driver must reach HEADROOM times the busiest
# target window's requests/s against the bare responder, or the run does not count.
HEADROOM = 2.0
DRIVER_DIRS = {"c": "bench/ramp004/cdriver", "go": "bench/ramp004/driver"}
params(FULL, QUICK)


def psql(pgdir, *args, stdin=None):
    return subprocess.run([PG_SH, "psql", pgdir, "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", *args], input=stdin,
                          capture_output=True, text=True, check=True).stdout.strip()


def seed(pgdir, mb):
    """Seeds table fruits to about `mb` MB; returns {"rows", "max_id", "table_bytes", "total_bytes", "seconds"}."""
    rows = int(mb * 1024 * 1024 / ramp_open.BYTES_PER_ROW)
    t0 = time.monotonic()
    with open(ramp_open.SEED_SQL) as f:
        psql(pgdir, "-v", "rows=%d" % rows, stdin=f.read())
    settle(pgdir)
    got = psql(pgdir, "-c", "SELECT count(*), max(id), pg_relation_size('fruits'), pg_total_relation_size('fruits') "
                            "FROM fruits").split("|")
    return {"rows": int(got[0]), "max_id": int(got[1]), "table_bytes": int(got[2]), "total_bytes": int(got[3]),
            "seconds": round(time.monotonic() - t0, 1)}


def tidy(pgdir, max_id):
    """Removes what a target's users left (rows created by journeys cut short), so that the next target starts from
    the same table."""
    psql(pgdir, "-c", "DELETE FROM fruits WHERE id > %d" % max_id)
    settle(pgdir)


def settle(pgdir):
    """Every target starts from the same state of the table: vacuumed (hint bits set, visibility map, statistics)
    and checkpointed. Otherwise the first target after the seed pays for it — the first read of each fresh page
    writes it again, autovacuum and a checkpoint run during its ramp — and the others do not."""
    psql(pgdir, "-c", "VACUUM (FREEZE, ANALYZE) fruits")
    psql(pgdir, "-c", "CHECKPOINT")


def restore(pgdir):
    """The quickstart's 3 rows again, for the scenarios that follow in the same run."""
    psql(pgdir, "-c", "TRUNCATE fruits RESTART IDENTITY")
    with open(os.path.join(ramp_open.REPO, "sql", "02-seed.sql")) as f:
        psql(pgdir, stdin=f.read())


def measure_ceiling(runner, driver, p, kind=None):
    """The driver against the bare epoll responder (bench/limit/epoll_hello.c, 2 threads; on the partition's target
    CPUs without the target's quota, the driver in the load set), journeys of the same shape and think time, ramping
    steeply: the busiest window before its send lag exceeded the bound, and the driver's CPU time per request.
    kind: the driver's name in ramp_open.DRIVERS (None: a record without it, as before 2026-12-02)."""
    port = free_port()
    argv = [ramp_open.build_epoll_hello(), str(port), "2"]
    part = runner.partition
    srv = supervise.spawn(part.wrap("target", argv, capped=False) if part else argv, os.devnull, cwd=None,
                          session=True)
    try:
        try:
            supervise.wait_ready(lambda: supervise.http_ok("http://127.0.0.1:%d/hello" % port, 0.5), 5, "epoll_hello",
                                 srv, interval=0.05)
        except supervise.NotReady as e:  # the driver's run then says what it got, as the ceiling's record
            log("ramp004: %s" % e)
        argv = ramp_open.driver_argv(driver, "http://127.0.0.1:%d" % port, 1, p["r4_ceiling_r1"], p["r4_ceiling_s"],
                                     p["r4_think_s"], p["r4_timeout_s"], 1, drain=5, max_conns=p["r4_max_conns"],
                                     hello="/hello", window=5)
        rc, out = ramp_open.run(argv, p["r4_ceiling_s"] + p["r4_timeout_s"] + 60,
                                os.path.join(ramp_open.OUT_DIR, "ceiling-%s.log" % (kind or "driver")))
    finally:
        supervise.stop(srv, timeout=15, group=True)
    c = ramp_open.ceiling(out["windows"])
    s = out["summary"] or {}
    c.update(exit=rc, argv=" ".join(argv[1:]), lag_p50_ms=s.get("lag_p50_ms"), lag_p99_run_ms=s.get("lag_p99_ms"),
             lag_max_ms=s.get("lag_max_ms"), windows=out["windows"])
    if kind is not None:
        c.update(driver=kind, cpu_s=out["cpu_s"], cpu_us_per_request=ramp_open.cpu_us_per_request(out),
                 requests=s.get("requests"), responder="the target's CPUs without its quota" if part and part.enabled
                 and part.quota is not None else "the target's CPUs")
    log("ramp004: the %s driver's ceiling against epoll_hello: %.0f req/s at %s users (%s); %s µs CPU per request" % (
        kind or "", c["rps"], c["users"], "it fell behind beyond" if c["reached"] else
        "never fell behind: the ceiling is higher", c.get("cpu_us_per_request")))
    return c


def busiest(rec, s="ramp004"):
    """The busiest 10-s window of any target: (requests/s, target), or (0, None)."""
    best = (0, None)
    for n in rec.targets:
        for w in (rec.cell(s, n, "windows") if rec.result(s, n) is not None else None) or []:
            if (w.get("rps") or 0) > best[0]:
                best = (w["rps"], n)
    return best


def headroom(rec, s="ramp004"):
    """The driver's ceiling over the busiest target window: {"ceiling", "busiest", "target", "ratio", "ok"}, or None
    for a record whose ceiling does not name its driver (before 2026-12-02: no rule then)."""
    c = (rec.ramp004 or {}).get("ceiling") or {}
    if "driver" not in c:
        return None
    rps, n = busiest(rec, s)
    ratio = c["rps"] / rps if rps else None
    return {"ceiling": c["rps"], "busiest": rps, "target": n, "ratio": ratio,
            "ok": ratio is None or ratio >= HEADROOM}


def target_saturation(windows):
    """The saturation point of a target's windows; the windows after the last arrival (the drain) do not count."""
    arrival_end = max((w["t"] for w in windows if (w.get("arrivals") or 0) > 0), default=None)
    return ramp_open.saturation(windows, arrival_end + 10 if arrival_end is not None else None)


def driver_failures(results):
    """The targets whose driver run failed (fell behind, could not start users, or crashed): [(target, why)].
    results: a measure.record.Run or its JSON."""
    rec, out = record.run_from(results), []
    for n in rec.targets:
        if rec.result("ramp004", n) is None:
            continue  # not run, or the target failed: the report says why
        code, summary = rec.cell("ramp004", n, "driver_exit"), rec.cell("ramp004", n, "summary")
        if code not in (None, 0):
            out.append((n, "; ".join((summary or {}).get("behind") or []) or "driver exit %s" % code))
    h = headroom(rec)
    if h is not None and not h["ok"]:
        out.append(("the driver's ceiling", "%.0f req/s, %.1f× the busiest window (%s, %.0f req/s): under %g×" % (
            h["ceiling"], h["ratio"], h["target"], h["busiest"], HEADROOM)))
    return out


def old_ceiling_line(top):
    """The ceiling's sentence of a record made before the driver was named (2026-12-02), as it was rendered."""
    return ("- the driver's own ceiling (the same journeys' shape, every request GET /hello, against the bare "
            "epoll responder of bench/limit/, on this machine at the same time): %s req/s at %s active users "
            "(%s); send lag over that run p50 %s ms, p99 %s ms, max %s ms." % (
                fmt(top("ceiling", "rps")), fmt(top("ceiling", "users"), "%d"),
                "beyond it the driver fell behind" if top("ceiling", "reached") else "it never fell behind: the "
                "ceiling is higher", fmt(top("ceiling", "lag_p50_ms"), "%.2f"),
                fmt(top("ceiling", "lag_p99_run_ms"), "%.1f"), fmt(top("ceiling", "lag_max_ms"), "%.1f")))


def ceiling_text(c):
    return "%s req/s at %s active users (%s); send lag p50 %s ms, p99 %s ms, max %s ms; CPU %s µs per request" % (
        fmt(c["rps"]), fmt(c["users"], "%d"), "beyond it the driver fell behind" if c["reached"] else
        "it never fell behind: the ceiling is higher", fmt(c["lag_p50_ms"], "%.2f"), fmt(c["lag_p99_run_ms"], "%.1f"),
        fmt(c["lag_max_ms"], "%.1f"), fmt(c.get("cpu_us_per_request"), "%.1f"))


def driver_lines(rec, s):
    """The driver, its ceiling and CPU cost per request, the headroom over the busiest target, and the driver
    compared with it."""
    c = rec.need("ramp004", "ceiling")
    h = headroom(rec, s)
    out = ["- the driver: %s, in the load set. Its own ceiling (the same journeys' shape, every request GET /hello, "
           "against the bare epoll responder of bench/limit/ on %s, in this run): %s." % (
               ramp_open.DRIVERS[c["driver"]], c["responder"], ceiling_text(c))]
    if h["busiest"]:
        out.append("- headroom: the driver's ceiling is %s× the busiest 10-s window of any target (%s, %s req/s)%s; "
                   "the rule is ≥ %g×: %s." % (
                       fmt(h["ratio"], "%.1f"), h["target"], fmt(h["busiest"]),
                       "" if c["reached"] else " or more (the ceiling was not reached)", HEADROOM,
                       "it holds" if h["ok"] else "**IT DOES NOT HOLD: this run does not count**"))
    at_sat = []
    for n in rec.targets:
        sat = saturation(rec, s, n) if rec.result(s, n) is not None else None
        w = [x for x in rec.cell(s, n, "windows") or [] if sat and x["t"] == sat["t"]] if sat else []
        at_sat.append("%s %s" % (n, fmt(w[0].get("rps")) if w else "not reached"))
    out.append("- requests/s in each target's saturation window, beside the driver's ceiling of %s: %s." % (
        fmt(c["rps"]), "; ".join(at_sat)))
    other = (rec.ramp004 or {}).get("ceiling_compared")
    if other:
        out.append("- compared in the same partition, %s: %s." % (ramp_open.DRIVERS[other["driver"]],
                                                                 ceiling_text(other)))
    return out


# ---------------------------------------------------------------- rendering

COLS = ["target", "source", "ACTIVE USERS (max)", "TOTAL REQUESTS", "OK", "KO (%)", "RPS",
        "RESPONSE TIME (95th pct) (ms)", "SATURATION POINT (users @ arrivals/s)", "RAM (MB)", "CPU (%)", "THREADS (MAX)",
        "POSTGRES CPU (%)"]
PUB_METRICS = ["active_users", "requests_total", "requests_ok", "ko", "requests_per_s", "response_time_p95",
               "saturation_point", "memory", "cpu", "threads_max", "postgres_cpu"]


def sat_text(s):
    if not s:
        return "not reached"
    return "%s @ %s/s" % (fmt(s.get("users"), "%d"), fmt(s.get("rate"), "%.0f"))


def saturation(rec, s, n):
    """Target n's saturation point, from its windows so that a re-render applies the definition of today (the one
    recorded where it has none)."""
    windows = rec.cell(s, n, "windows")
    return target_saturation(windows) if windows else rec.cell(s, n, "saturation")


def render(rec, s="ramp004", refs=None):
    """Markdown lines of the ramp004 section (s: the scenario's name, as every renderer takes it), read through the
    record: the run's database and the driver's ceiling (rec.ramp004, in every run of ramp004), each target's
    figures and the driver's summary of its run (none when the driver printed none). The driver's windows are read as
    it wrote them (windows_table)."""
    refs = refs if refs is not None else refdata.load()
    names = rec.targets

    def p(k):
        return rec.need("params", k)

    def top(*keys):
        return rec.need("ramp004", *keys)

    def summary(n):
        """Target n's summary by the driver as fn(key), None for every key when there is none."""
        sm = rec.cell(s, n, "summary")
        return lambda key: record.need(sm, key, where=rec.where, prefix=("scenarios", s, n, "summary")) if sm else None
    out = ["", "### ramp004: post 004 with an open workload, every target past its saturation point", "",
           "Users arrive at a rate ramping from %g to %g users/s over %d s (stopping %s), whether or not earlier users "
           "got their answers; each runs a 14-request journey (5 writes) with think times %.1f s (uniform 0.5–1.5×) and "
           "leaves (docs/benchmarks.md). Table fruits: %s rows, %s MB (%s MB with its index). Per-request timeout %d s; "
           "all users share one connection pool of at most %d connections (%s). Saturation point: "
           "the first of two 10-s windows in a row with p95 > %.0f ms or KO > %.0f %% (at least %d answers), as its "
           "peak of active users and its planned arrival rate. RAM: the service's peak RSS; CPU %%: 100 = one core; PostgreSQL's: "
           "its postmaster and backends." % (
               p("r4_r0"), p("r4_r1"), p("r4_s"),
               "%d windows after the saturation window" % p("r4_stop_after") if p("r4_stop_after") else "at the end",
               p("r4_think_s"), fmt(top("database", "rows"), "%d"), fmt(top("database", "table_bytes") / 1e6 or None),
               fmt(top("database", "total_bytes") / 1e6 or None), p("r4_timeout_s"), p("r4_max_conns"),
               # the driver is named since 2026-12-02; before, the Go one was the only one
               DRIVER_DIRS[top("ceiling").get("driver", "go")],
               ramp_open.BREAK_P95_MS, ramp_open.BREAK_KO_PCT, ramp_open.MIN_ANSWERS), ""]
    rows = []
    for n in names:
        sm = summary(n)
        if not rec.cell(s, n, "summary"):
            rows.append([n, "measured here"] + ["-"] * (len(COLS) - 2))
            continue
        rows.append([n, "measured here", "%d" % sm("max_active"), "%d" % sm("requests"), "%d" % sm("ok"),
                     fmt(sm("ko_pct"), "%.2f"), fmt(sm("rps"), "%.1f"), fmt(sm("p95_ms"), "%.1f"),
                     sat_text(saturation(rec, s, n)), fmt((rec.cell(s, n, "peak_rss_kb") or 0) / 1024 or None, "%.1f"),
                     fmt(rec.cell(s, n, "cpu_pct"), "%.0f"), fmt(rec.cell(s, n, "max_threads"), "%d"),
                     fmt(rec.cell(s, n, "pg_cpu_pct"), "%.0f")])
    rows += published_004_rows(refs, PUB_METRICS)
    out.append(md_table(COLS, rows).rstrip("\n"))
    out.append("")
    out.extend(driver_lines(rec, s) if "driver" in top("ceiling") else [old_ceiling_line(top)])
    for n in names:
        v = rec.runs(s).get(n)
        if isinstance(v, dict) and "error" in v:
            out.append("- **%s: %s**" % (n, v["error"]))
            continue
        if rec.result(s, n) is None:
            continue
        sm, sat = summary(n), saturation(rec, s, n)
        out.append("- %s: how it failed: %s. Saturation: %s. p50 %s ms, p99 %s ms; %s users arrived, %s journeys "
                   "finished, %s steps skipped (their POST was KO). Driver: send lag p50 %s ms, p99 %s ms, max %s ms%s%s; "
                   "load average %s before, %s after." % (
                       n, rec.cell(s, n, "failed_how"),
                       "%s (%s, window at %s s)" % (sat_text(sat), sat["reason"], fmt(sat["t"])) if sat else "not reached",
                       fmt(sm("p50_ms"), "%.1f"), fmt(sm("p99_ms"), "%.1f"), fmt(sm("users_started"), "%d"),
                       fmt(sm("users_finished_journey"), "%d"), fmt(sm("skipped_steps"), "%d"),
                       fmt(sm("lag_p50_ms"), "%.2f"), fmt(sm("lag_p99_ms"), "%.1f"), fmt(sm("lag_max_ms"), "%.1f"),
                       cpu_note(rec.opt(s, n, "driver_cpu_us_per_request")),
                       " — **DRIVER FELL BEHIND (%s): these figures understate the load offered**" % "; ".join(sm("behind"))
                       if sm("behind") else "", "/".join("%.1f" % x for x in rec.cell(s, n, "loadavg_before")),
                       "/".join("%.1f" % x for x in rec.cell(s, n, "loadavg_after"))))
    for n in names:
        if rec.result(s, n) is not None and rec.cell(s, n, "windows"):
            out.extend(["", "#### %s, per 10-s window" % n, "", windows_table(rec.cell(s, n, "windows")).rstrip("\n")])
    return out


def cpu_note(us):
    """The driver's CPU per request in a target's sentence; nothing for a record without it (before 2026-12-02)."""
    return ", CPU %.1f µs per request" % us if us is not None else ""


def windows_table(windows):
    """The driver's windows as a Markdown table: arrivals planned, active users, RPS, OK, KO, p95, send lag."""
    rows = [[fmt(w["t"]), fmt(w.get("rate_planned"), "%.1f"), fmt(w.get("active_max"), "%d"), fmt(w.get("rps"), "%.1f"),
             fmt(w.get("ok"), "%d"), fmt(w.get("ko"), "%d"), fmt(w.get("p95_ms"), "%.1f"), fmt(w.get("lag_p99_ms"), "%.1f"),
             ", ".join("%s %d" % (k, v) for k, v in sorted((w.get("ko_by") or {}).items()) if v) or "-"]
            for w in windows if w.get("requests")]
    return md_table(["t (s)", "arrivals planned (users/s)", "active users", "RPS", "OK", "KO", "p95 (ms)",
                     "send lag p99 (ms)", "KO by cause"], rows, ["r"] * 8 + ["l"])


@plots
def charts(results, plot):
    """p95, KO % and RPS against active users, per target (one line each)."""
    names, sc = results["targets"], results["scenarios"].get("ramp004", {})
    series = [(n, [w for w in sc[n]["windows"] if w.get("requests")]) for n in names
              if isinstance(sc.get(n), dict) and sc[n].get("windows")]
    series = [(n, ws) for n, ws in series if ws]
    if not series:
        return
    blocks = "\n\n\n".join("# %s\n" % n + "\n".join("%d %.3f %.3f %.3f" % (
        w.get("active_max") or 0, max(0.01, w.get("p95_ms") or 0), w.get("ko_pct") or 0, w.get("rps") or 0) for w in ws)
        for n, ws in series)

    def lines(col):
        return ", ".join('"%%(dat)s" index %d using 1:%d with linespoints title "%s"' % (i, col, n)
                         for i, (n, _) in enumerate(series))
    common = 'set style data lines; set xlabel "active users"; '
    plot("ramp004-p95", blocks + "\n", common + 'set title "ramp004: p95 response time against active users"; '
         'set ylabel "ms"; set logscale y; set yrange [*:*]; plot ' + lines(2))
    plot("ramp004-ko", blocks + "\n", common + 'set title "ramp004: KO %% against active users"; set ylabel "KO (%%)"; '
         'set yrange [0:100]; plot ' + lines(3))
    plot("ramp004-rps", blocks + "\n", common + 'set title "ramp004: requests/s against active users"; '
         'set ylabel "requests/s"; plot ' + lines(4))


# ---------------------------------------------------------------- the scenario

@scenario("ramp004", render)
def s_ramp004(runner, i):
    p, pgdir = runner.p, runner.pgdir
    driver = ramp_open.build_driver(p["r4_driver"])
    runner.results.setdefault("ramp004", {})["ceiling"] = measure_ceiling(runner, driver, p, p["r4_driver"])
    if p["r4_compare_driver"]:
        runner.results["ramp004"]["ceiling_compared"] = measure_ceiling(
            runner, ramp_open.build_driver(p["r4_compare_driver"]), p, p["r4_compare_driver"])
    db = seed(pgdir, p["r4_seed_mb"])
    runner.results["ramp004"]["database"] = db
    log("ramp004: fruits seeded: %d rows, %.0f MB table, %.0f MB with its index, in %.0f s" % (
        db["rows"], db["table_bytes"] / 1e6, db["total_bytes"] / 1e6, db["seconds"]))

    def one(t):
        t.stop()  # a fresh start on the seeded table
        # ready = /hello answers, then a read by id answers anything but a 5xx (a service without paging would
        # send the whole table to GET /fruits; the peers of 2026-12-01 have no GET /fruits/{id} at all: 404)
        db_path, t.db_path = t.db_path, getattr(t, "hello_path", "/hello")  # an ImageTarget has no hello_path
        try:
            t.start()
        finally:
            t.db_path = db_path
        deadline = time.monotonic() + 30
        while (supervise.http_status(t.url + "/fruits/1") or 599) >= 500 and time.monotonic() < deadline:
            time.sleep(0.1)
        pid = main_pid(t)
        sampler = Sampler(pid, postmaster_pid(pgdir))
        argv = ramp_open.driver_argv(driver, t.url, p["r4_r0"], p["r4_r1"], p["r4_s"], p["r4_think_s"], p["r4_timeout_s"],
                                     db["max_id"], p["r4_stop_after"], p["r4_drain_s"], p["r4_max_conns"])
        load0 = os.getloadavg()
        try:
            rc, out = ramp_open.run(argv, p["r4_s"] + p["r4_drain_s"] + 2 * p["r4_timeout_s"] + 120,
                                    os.path.join(ramp_open.OUT_DIR, "%s.log" % t.name))
        finally:
            res = sampler.stop()
        r = {"driver_exit": rc, "argv": " ".join(argv[1:]), "driver": p["r4_driver"], "driver_cpu_s": out["cpu_s"],
             "driver_cpu_us_per_request": ramp_open.cpu_us_per_request(out), "loadavg_before": list(load0),
             "loadavg_after": list(os.getloadavg()), "windows": out["windows"], "summary": out["summary"]}
        r.update(res)
        exit_note = None
        if not t.alive():
            code = t.proc.returncode if t.proc else None
            exit_note = "OOM-killed or SIGKILLed (exit -9)" if code == -9 else "exited with %s during the run" % code
        else:
            # preon's readiness (its pool reconnected, its queue drained) and a read; a peer has no readiness path
            first = "/health/ready" if t.spec.get("preon") else "/hello"
            after = [supervise.http_status(t.url + first, 5), supervise.http_status(t.url + "/fruits/1", 5)]
            exit_note = "stayed up (after the run: %s %s, /fruits/1 %s)" % (first, after[0], after[1])
        r["failed_how"] = ramp_open.failure_modes(out["summary"], exit_note)
        r["saturation"] = target_saturation(out["windows"])
        if rc == 3:
            log("ramp004: %s: DRIVER FELL BEHIND (%s): this target's figures understate the load offered" % (
                t.name, "; ".join((out["summary"] or {}).get("behind") or [])))
        t.stop()
        tidy(pgdir, db["max_id"])
        return r

    try:
        runner.each("ramp004", i, one, p["r4_s"] + p["r4_drain_s"] + 30, start=False)
    finally:
        restore(pgdir)
