# SPDX-License-Identifier: MIT
"""bench/run.py's `fixed` scenario: the database path at fixed loads. Each target is driven, open loop, at a ladder
of offered rates (the same for every target) on three requests — GET /hello, GET /fruits (post 002's database read)
and a write (POST a fruit, then DELETE it) — each ladder up to the first rate it does not sustain
(bench/measure/fixed_load.py: the driver, the latency from the planned send time, what "sustained" means, the
knee). Per step: achieved rate, errors, p50/p99/p99.9/max latency, CPU time per answered request of the target and
of PostgreSQL (their cgroups under --partition: every thread and child, exited ones too; /proc otherwise), the
target's peak RSS during the step. The roles are on CPUs of their own (run.py's default for this scenario: the driver
on the first CPU, the target and PostgreSQL on the rest, no quota). Every target starts fresh in each round, is
warmed (wrk, closed loop, fx_warmup_conns connections for fx_warmup_s on each request: stated in the report), idles
until at rest (fx_idle_s windows until one under fx_quiet_pct % of a CPU, at most fx_quiet_max_s: its CPU then is
recorded), then climbs the three ladders; fx_rounds rounds, the targets' order rotated by
one each round; every figure of the report is the median of the rounds with their min–max. The driver's own ceiling
is measured first: the same /hello ladder against the bare epoll responder on the target's CPUs."""
import os
import statistics
import time

from measure import (HERE, Spread, Target, fmt, free_port, log, main_pid, md_table, ramp_open, record, rss_kb,
                     tree_cpu_s, wrk)
from measure import fixed_load
from measure.container import ImageTarget

from . import params, plots, scenario
from .open004 import psql, settle, tidy
from .published import postmaster_pid

# fx_rates: the ladder, requests/s, the same for every target and request; fx_common: the rate at which every
# target's CPU per request is compared (one every stack sustains); fx_p99_ms: the bound of "sustained"; fx_lag_ms:
# the driver's send lag (p99) beyond which a step measured the driver, not the target.
FULL = {"fx_rates": [1000, 2000, 4000, 8000, 16000, 32000, 64000], "fx_step_s": 4, "fx_warmup_s": 10,
        "fx_warmup_conns": 8, "fx_common": 1000, "fx_p99_ms": 50.0, "fx_lag_ms": 10.0, "fx_timeout_s": 2,
        "fx_max_conns": 256, "fx_rounds": 3, "fx_requests": "hello,fruits,write", "fx_idle_s": 1,
        "fx_quiet_pct": 2.0, "fx_quiet_max_s": 20,
        "fx_ceiling_extra": 3, "fx_lead_s": 3}
QUICK = {"fx_rates": [200, 400], "fx_step_s": 1, "fx_warmup_s": 1, "fx_warmup_conns": 8, "fx_common": 200,
         "fx_p99_ms": 50.0, "fx_lag_ms": 10.0, "fx_timeout_s": 2, "fx_max_conns": 64, "fx_rounds": 1,
         "fx_requests": "hello,fruits,write", "fx_idle_s": 0.3, "fx_quiet_pct": 2.0,
         "fx_quiet_max_s": 1, "fx_ceiling_extra": 0, "fx_lead_s": 0.5}
params(FULL, QUICK)
CRUD_LUA = os.path.join(HERE, "wrk", "crud.lua")  # with the argument "write": POST, then DELETE of its row
LABELS = {"hello": "GET /hello", "fruits": "the read: GET /fruits", "write": "the write: POST /fruits + DELETE"}


def requests_of(p):
    out = [r for r in p["fx_requests"].split(",") if r]
    bad = [r for r in out if r not in fixed_load.REQUESTS]
    if bad:
        raise ValueError("fx_requests: unknown %s (from %s)" % (", ".join(bad), ", ".join(fixed_load.REQUESTS)))
    return out


class Meter:
    """CPU seconds used so far by a target and by PostgreSQL: their cgroups' counters where the partition keeps
    them (the whole process tree, exited threads and children included), else /proc's process trees (a child that
    exited is lost there; a container is read that way too)."""

    def __init__(self, runner, t):
        part = runner.partition
        self.part = part if part is not None and part.enabled and part.accounting() else None
        self.t, self.pg = t, postmaster_pid(runner.pgdir)
        self.pid = t.pid() if isinstance(t, ImageTarget) else main_pid(t)
        self.target_cgroup = self.part is not None and not isinstance(t, ImageTarget)

    def how(self):
        return {"target": self.part.accounting() if self.target_cgroup else "/proc process tree",
                "postgres": self.part.accounting() if self.part else "/proc process tree"}

    def read(self):
        tgt = self.part.usage_s("target") if self.target_cgroup else tree_cpu_s(self.pid)
        pg = self.part.usage_s("postgres") if self.part else (tree_cpu_s(self.pg) if self.pg else None)
        return tgt, pg


def reset_peak(pid):
    """Starts the process's peak RSS (VmHWM) afresh, so that a step's peak is its own (Linux: clear_refs 5)."""
    try:
        with open("/proc/%d/clear_refs" % pid, "w") as f:
            f.write("5")
    except OSError:
        pass


def step(runner, t, meter, driver, request, rate, seconds, tag):
    """One step: `request` at `rate` requests/s for `seconds`, open loop; its figures and verdict (fixed_load)."""
    p = runner.p
    reset_peak(meter.pid)
    c0 = meter.read()
    argv = fixed_load.driver_argv(driver, t.url, request, rate, seconds, p["fx_timeout_s"], p["fx_max_conns"],
                                  t.db_path)
    rc, out = ramp_open.run(argv, seconds + 3 * p["fx_timeout_s"] + 60,
                            os.path.join(ramp_open.OUT_DIR, "fixed-%s-%s.log" % (t.name.replace("/", "_"), tag)),
                            realtime=True)
    c1 = meter.read()
    st = fixed_load.step_figures(out, rate, seconds)
    cpu = [b - a if a is not None and b is not None else None for a, b in zip(c0, c1)]
    st.update(driver_exit=rc, target_cpu_s=cpu[0], pg_cpu_s=cpu[1],
              target_us=fixed_load.per_answer_us(cpu[0], st["answers"]),
              pg_us=fixed_load.per_answer_us(cpu[1], st["answers"]), peak_rss_kb=rss_kb(meter.pid, "VmHWM"))
    st["verdict"] = fixed_load.judge(st, p["fx_p99_ms"], p["fx_lag_ms"])
    if not t.alive():
        st["verdict"] = "; ".join(x for x in (st["verdict"], "the target exited (%s)" % (
            t.proc.returncode if getattr(t, "proc", None) else "?")) if x)
    log("fixed: %s %s at %d/s: achieved %.0f/s, p99 %s ms, %s µs + %s µs (PostgreSQL) per request%s" % (
        t.name, request, rate, st["achieved"], fmt(st["p99_ms"], "%.2f"), fmt(st["target_us"], "%.1f"),
        fmt(st["pg_us"], "%.1f"), " — " + st["verdict"] if st["verdict"] else ""))
    return st


def ladder(runner, t, meter, driver, request, rates, tag, refine=True, leads=None):
    """The steps of one ladder, up to and with the first that is not sustained; then, after a rest, one step at
    fixed_load.REFINE times the last rate sustained (marked "refine"); then a rest again, so that an overload does not
    spill into what comes next."""
    p = runner.p
    steps = []
    if p["fx_lead_s"] > 0:
        # the lead-in: the first seconds of load after a rest cost a JVM two to five times the CPU per request of the
        # seconds after them (2026-12-05: Spring MVC 545 µs on /hello at 1,000/s, then 114 and 113 µs on the same
        # rate again), so a ladder's first step would measure the wake-up, not the rate; it is run, kept, not judged
        lead = step(runner, t, meter, driver, request, rates[0], p["fx_lead_s"], "%s-%s-lead" % (tag, request))
        if leads is not None:
            leads[request] = lead
    for rate in rates:
        steps.append(step(runner, t, meter, driver, request, rate, p["fx_step_s"], "%s-%s-%d" % (tag, request, rate)))
        if steps[-1]["verdict"] or not t.alive():
            break
    if refine and len(steps) > 1 and steps[-1]["verdict"] and t.alive():
        settle_down(meter, p["fx_idle_s"], p["fx_quiet_pct"], p["fx_quiet_max_s"] / 2)
        rate = int(steps[-2]["rate"] * fixed_load.REFINE)
        steps.append(dict(step(runner, t, meter, driver, request, rate, p["fx_step_s"], "%s-%s-%d" % (
            tag, request, rate)), refine=True))
    if t.alive():
        settle_down(meter, p["fx_idle_s"], p["fx_quiet_pct"], p["fx_quiet_max_s"] / 2)
    return steps


def one_round(runner, t, rnd, driver, base_id):
    """A fresh start, the warm-up, the idle CPU, then the ladders of every request; the table as it was found
    afterwards (what the writes left is counted, then removed)."""
    p, pgdir = runner.p, runner.pgdir
    t.stop()
    settle(pgdir)
    first = t.start()
    meter = Meter(runner, t)
    out = {"start_s": first[1], "accounting": meter.how(), "warmup": {}, "lead_in": {}, "ladders": {}}
    for req in requests_of(p):
        out["warmup"][req] = warm_up(t, req, p["fx_warmup_s"], p["fx_warmup_conns"])
    out["warmup_peak_rss_kb"] = rss_kb(meter.pid, "VmHWM")
    tidy(pgdir, base_id)  # the rows of POSTs whose DELETE wrk did not send before it stopped
    out["idle"] = settle_down(meter, p["fx_idle_s"], p["fx_quiet_pct"], p["fx_quiet_max_s"])
    for req in requests_of(p):
        out["ladders"][req] = ladder(runner, t, meter, driver, req, p["fx_rates"], "r%d" % rnd, leads=out["lead_in"])
    out["peak_rss_kb"] = max([s.get("peak_rss_kb") or 0 for ss in out["ladders"].values() for s in ss]
                             + [out["warmup_peak_rss_kb"] or 0])
    t.stop()
    out["rows_left"] = int(psql(pgdir, "-c", "SELECT count(*) FROM fruits WHERE id > %d" % base_id))
    tidy(pgdir, base_id)
    return out


def warm_up(t, request, seconds, conns):
    """The stated warm-up of one request: wrk, closed loop, `conns` connections for `seconds` (a JVM compiles its hot
    code at the rate the target can serve, not at a rate it may not sustain yet); wrk's figures, kept."""
    path = "/hello" if request == "hello" else t.db_path
    r = wrk(t.url + path, conns, seconds, threads=1, script=CRUD_LUA if request == "write" else None,
            script_args=("write",) if request == "write" else ())
    return {"s": seconds, "conns": conns, "rps": r.get("rps"), "non2xx": r.get("non2xx"),
            "socket_errors": r.get("socket_errors")}


def settle_down(meter, window_s, quiet_pct, max_s):
    """After the warm-up, the target at rest: windows of `window_s` until one in which it used under `quiet_pct` % of
    a CPU (a JVM still compiling what the warm-up made hot, a collector still shrinking its heap, is not at rest), at
    most `max_s` s. Returns the last window's CPU % of the target and of PostgreSQL, and how long it took."""
    t0 = time.monotonic()
    while True:
        c0 = meter.read()
        time.sleep(window_s)
        c1 = meter.read()
        idle = {"s": window_s, "target_cpu_pct": _pct(c0[0], c1[0], window_s), "pg_cpu_pct": _pct(c0[1], c1[1], window_s),
                "settled_s": round(time.monotonic() - t0, 1)}
        if idle["target_cpu_pct"] is None or idle["target_cpu_pct"] < quiet_pct or idle["settled_s"] >= max_s:
            idle["quiet"] = idle["target_cpu_pct"] is not None and idle["target_cpu_pct"] < quiet_pct
            return idle


def _pct(a, b, seconds):
    return round(100.0 * (b - a) / seconds, 2) if a is not None and b is not None else None


def ceiling(runner, driver, rates):
    """The driver's own ceiling in this run: the /hello ladder, continued past its top (fx_ceiling_extra steps, ×2
    each), against the bare epoll responder (bench/limit/epoll_hello.c, a thread per CPU of the target's set) in the
    target's set, as a target would be."""
    part = runner.partition
    threads = len(part.target) if part is not None and part.enabled else 2
    port = free_port()
    argv = [ramp_open.build_epoll_hello(), str(port), str(threads)]
    bare = Target("bare responder", part.wrap("target", argv) if part is not None else argv, dict(os.environ), port,
                  db_path="/hello")
    extra = [rates[-1] * 2 ** (k + 1) for k in range(runner.p["fx_ceiling_extra"])]
    try:
        bare.start(timeout=10)
        meter = Meter(runner, bare)
        steps = ladder(runner, bare, meter, driver, "hello", list(rates) + extra, "ceiling", refine=False)
    finally:
        bare.stop()
    return {"responder": "bench/limit/epoll_hello.c, %d thread%s, in the target's set" % (threads, "s" * (threads > 1)),
            "steps": steps, "knee": fixed_load.knee(steps, list(rates) + extra)}


# ---------------------------------------------------------------- rendering

def rounds(rec, s, n):
    """Target n's rounds ([] where it failed every one, and the record says so)."""
    r = rec.result(s, n)
    return record.need(r, "rounds", where=rec.where, prefix=("scenarios", s, n)) if r is not None else []


def at(rec, s, n, req, rate):
    """Target n's steps of `req` at `rate`, one per round that reached it."""
    return [st for r in rounds(rec, s, n) for st in r["ladders"].get(req, []) if st["rate"] == rate]


def spread(values):
    vs = [v for v in values if v is not None]
    return Spread(vs) if vs else None


def knees(rec, s, n, req):
    """(the knees of the rounds as a Spread, or None; the limit of the highest-reaching round: "target", "driver"
    or "ladder")."""
    ks = [fixed_load.knee(r["ladders"][req], rec.need("params", "fx_rates")) for r in rounds(rec, s, n)
          if req in r["ladders"]]
    if not ks:
        return None, None
    vals = [k["rate"] or 0 for k in ks]
    top = max(ks, key=lambda k: k["rate"] or 0)
    return Spread(vals), top["limit"]


def knee_text(sp, limit, first):
    """A knee with its rounds' min–max: "≥" where the ladder's top or the driver, not the target, ended it; "< the
    first rate" where no round sustained even that."""
    if sp is None:
        return "-"
    if sp.hi == 0:
        return "< %s" % _k(first)
    text = _k(sp) + (" (%s–%s)" % (_k(sp.lo), _k(sp.hi)) if sp.n > 1 and sp.lo != sp.hi else "")
    return ("≥ " + text + (" (the driver)" if limit == "driver" else "")) if limit in ("driver", "ladder") else text


def _k(v):
    return "{:,.0f}".format(v) if v < 10000 else "%.0fk" % (v / 1000.0)


def _us(v):
    return "-" if v is None else ("%.1f" if v < 100 else "%.0f") % v


def us_text(sp):
    """A CPU figure in µs with its rounds' min–max."""
    if sp is None:
        return "-"
    return _us(sp) + (" (%s–%s)" % (_us(sp.lo), _us(sp.hi)) if sp.n > 1 else "")


def ms_text(sp):
    if sp is None:
        return "-"
    f = "%.2f" if sp < 10 else "%.1f" if sp < 100 else "%.0f"
    return f % sp + (" (%s–%s)" % (f % sp.lo, f % sp.hi) if sp.n > 1 else "")


def common_cells(rec, s, n, req):
    """(CPU per request, the target's + PostgreSQL's; p99) at the common rate, each with its spread; a ✗ where a
    round did not sustain that rate."""
    steps = at(rec, s, n, req, rec.need("params", "fx_common"))
    if not steps:
        return "-", "-"
    mark = " ✗" if any(st["verdict"] for st in steps) else ""
    cpu = "%s + %s" % (us_text(spread(st["target_us"] for st in steps)), us_text(spread(st["pg_us"] for st in steps)))
    return cpu + mark, ms_text(spread(st["p99_ms"] for st in steps)) + mark


def headline_rows(rec, s="fixed"):
    """README's table: a row per target — CPU per request (µs, the target's + PostgreSQL's) and p99 at the common
    rate on the read and the write, each ladder's knee, the peak RSS."""
    rows = []
    for n in rec.targets:
        if not rounds(rec, s, n):
            rows.append([n] + ["failed"] + ["-"] * 6)
            continue
        row = [n]
        for req in ("fruits", "write"):
            cpu, p99 = common_cells(rec, s, n, req)
            row += [cpu, p99, knee_text(*knees(rec, s, n, req), rec.need("params", "fx_rates")[0])]
        rss = spread(r["peak_rss_kb"] / 1024.0 for r in rounds(rec, s, n))
        row.append("%.0f" % rss if rss is not None and rss >= 100 else fmt(rss, "%.1f"))
        rows.append(row)
    return rows


def cpu_at(rec, n, req, rate, s="fixed"):
    """Target n's CPU per request at `rate` in `req`'s ladder, the target's + PostgreSQL's (µs), median of the rounds
    that reached it; None where none did."""
    steps = [st for st in at(rec, s, n, req, rate) if st["target_us"] is not None and st["pg_us"] is not None]
    return statistics.median(st["target_us"] + st["pg_us"] for st in steps) if steps else None


def agreement_table(a, b, s="fixed", what="first → second run"):
    """Two runs of the scenario side by side: CPU per request (the target's + PostgreSQL's) at the common rate of
    each on the read and the write, for the targets both ran, and the ratio b / a; each ladder's knee in both where
    both climbed the same ladder. `what` names the two runs in the headings (a → b)."""
    rate = a.need("params", "fx_common")
    if b.need("params", "fx_common") != rate:
        raise record.RecordError("%s and %s compare CPU per request at different rates" % (a.where, b.where))
    same_ladder = a.need("params", "fx_rates") == b.need("params", "fx_rates")
    both = [x for x in a.targets if x in b.targets]
    reqs = [r for r in ("fruits", "write") if r in requests_of(a.params) and r in requests_of(b.params)]
    rows = []
    for n in both:
        row = [n]
        for req in reqs:
            x, y = cpu_at(a, n, req, rate, s), cpu_at(b, n, req, rate, s)
            row.append("%s → %s (%s)" % (_us(x), _us(y), "%.2f×" % (y / x) if x and y else "-"))
        if same_ladder:
            first = a.need("params", "fx_rates")[0]
            for req in reqs:
                ka, kb = knees(a, s, n, req), knees(b, s, n, req)
                row.append("%s → %s" % (knee_text(ka[0], ka[1], first), knee_text(kb[0], kb[1], first)))
        rows.append(row)
    c = "{:,}".format(rate)
    head = ["stack"] + ["%s: CPU µs/request at %s/s, %s (ratio)" % (LABEL_SHORT[r], c, what) for r in reqs]
    if same_ladder:
        head += ["%s: knee, req/s" % LABEL_SHORT[r] for r in reqs]
    return md_table(head, rows)


LABEL_SHORT = {"hello": "/hello", "fruits": "read", "write": "write"}


def headline_table(rec, s="fixed"):
    c = "{:,}".format(rec.need("params", "fx_common"))
    return md_table(["stack", "read: CPU µs/request, stack + PostgreSQL, at %s/s" % c, "read: p99 ms at %s/s" % c,
                     "read: knee, req/s", "write: CPU µs/request, stack + PostgreSQL, at %s/s" % c,
                     "write: p99 ms at %s/s" % c, "write: knee, req/s", "peak RSS, MB"], headline_rows(rec, s))


def warmup_table(rec, s, reqs):
    """A row per target: wrk's requests/s in each warm-up (the closed-loop rate with a few connections), median of
    the rounds with their min–max."""
    rows = []
    for n in rec.targets:
        rs = rounds(rec, s, n)
        rows.append([n] + [fmt(spread(r["warmup"][req]["rps"] for r in rs if req in r["warmup"]), "%.0f")
                           for req in reqs])
    return md_table(["target"] + [LABELS[r] for r in reqs], rows)


def ladder_table(rec, s, req):
    """A row per target: its knee and the p99 (median of the rounds) at each rate of the ladder."""
    rates = rec.need("params", "fx_rates")
    rows = []
    for n in rec.targets:
        row = [n, knee_text(*knees(rec, s, n, req), rec.need("params", "fx_rates")[0])]
        for rate in rates:
            steps = at(rec, s, n, req, rate)
            sp = spread(st["p99_ms"] for st in steps)
            row.append("-" if sp is None else ms_text(Spread([sp])) + (" ✗" if any(st["verdict"] for st in steps)
                                                                         else ""))
        rows.append(row)
    return md_table(["target", "knee, req/s"] + ["p99 ms at %s/s" % _k(r) for r in rates], rows)


def detail_table(rec, s, n, req):
    """Target n's ladder of `req`: each rate's figures, the median of the rounds that reached it (how many)."""
    rows = []
    for rate in sorted({st["rate"] for r in rounds(rec, s, n) for st in r["ladders"].get(req, [])}):
        steps = at(rec, s, n, req, rate)

        def med(key, f, scale=1.0):
            sp = spread(None if st.get(key) is None else st[key] * scale for st in steps)
            return "-" if sp is None else f % sp
        bad = [st["verdict"] for st in steps if st["verdict"]]
        rows.append([_k(rate), "%d" % len(steps), med("achieved", "%.0f"), med("errors", "%.0f"),
                     med("p50_ms", "%.2f"), med("p99_ms", "%.2f"), med("p999_ms", "%.2f"), med("max_ms", "%.1f"),
                     us_text(spread(st["target_us"] for st in steps)), us_text(spread(st["pg_us"] for st in steps)),
                     med("peak_rss_kb", "%.1f", 1 / 1024.0), med("lag_p99_ms", "%.2f"),
                     "; ".join(sorted(set(bad))) if bad else "sustained"])
    return md_table(["offered/s", "rounds", "achieved/s", "errors", "p50 ms", "p99 ms", "p99.9 ms", "max ms",
                     "CPU µs/request: target", "PostgreSQL", "peak RSS MB", "driver lag p99 ms", "verdict"], rows,
                    ["r"] * 12 + ["l"])


INTRO = (
    "Each target at a ladder of offered rates (%s requests/s), %g s a step, open loop: the C driver "
    "(bench/ramp004/cdriver, one thread on the load CPU, SCHED_FIFO where run as root) sends at evenly spaced planned "
    "times whether or not earlier requests were answered, and a request's latency runs from its planned send time, so "
    "that a stall is counted, not hidden. Requests: %s. A step is sustained when its p99 is at most %g ms, at most "
    "%g %% of its requests failed (timeout %g s) and it answered %.0f %% of the offered rate within the step; a ladder "
    "stops at its first step that is not (✗); the knee is the highest rate sustained before it (≥: the ladder's "
    "top, or the driver's limit: send lag p99 over %g ms); where a ladder failed, one more step at 1.5 times the "
    "last rate it sustained (the target at rest again first) halves the knee's uncertainty. CPU per request: the CPU time (user + system) of the target's "
    "whole process tree, and of PostgreSQL's cluster, over the step, divided by the requests answered (counted by "
    "%s). Every target starts afresh each round and is warmed first: wrk, closed loop, %d connections for %g s on "
    "each request (its rate is in the table below); then at rest: %g-s windows until one in which it used under "
    "%g %% of a CPU (a JVM still compiling, a collector still at work, is not at rest), at most %g s. %d round%s, the targets' order rotated by one "
    "each round; each figure is the median of the rounds with their min–max. PostgreSQL: the bench's own cluster "
    "(synchronous_commit off), table fruits with %s rows, vacuumed and checkpointed before each target; the targets' "
    "pools: %s.")

LEAD = (" Each ladder starts with a lead-in of %g s at its first rate, run and kept in results.json but not judged "
        "nor shown: the first seconds of load after a rest cost a JVM two to five times the CPU per request of the "
        "seconds after them, and a ladder's first step would measure that wake-up, not the rate.")


def render(rec, s="fixed"):
    """Markdown lines of the fixed-load section, read through the record."""
    p = rec.params
    top = rec.need(s)
    reqs = requests_of(p)
    out = ["", "### %s: the database path at fixed loads, open loop" % s, "",
           INTRO % (
               ", ".join(_k(r) for r in p["fx_rates"]), p["fx_step_s"],
               "; ".join("%s (%s)" % (r, fixed_load.REQUESTS[r]) for r in reqs), p["fx_p99_ms"],
               fixed_load.ERROR_PCT, p["fx_timeout_s"], 100 * fixed_load.ACHIEVED_FRACTION, p["fx_lag_ms"],
               top.get("accounting", "?"), p["fx_warmup_conns"], p["fx_warmup_s"], p["fx_idle_s"],
               p["fx_quiet_pct"], p["fx_quiet_max_s"], p["fx_rounds"],
               "s" * (p["fx_rounds"] > 1), "{:,}".format(top["rows"]), top.get("pool", "8 connections")) + (
               LEAD % p["fx_lead_s"] if p.get("fx_lead_s") else ""), ""]
    out += ["#### CPU per request and p99 at %s/s, and each ladder's knee" % _k(p["fx_common"]), "",
            headline_table(rec, s).rstrip("\n"), ""]
    out += ["#### The warm-up: wrk, closed loop, %d connections, %g s on each request (requests/s)" % (
        p["fx_warmup_conns"], p["fx_warmup_s"]), "", warmup_table(rec, s, reqs).rstrip("\n"), ""]
    c = top["ceiling"]
    k = c["knee"]
    out.append("- the driver's ceiling in this run (%s): the /hello ladder %s %s req/s%s." % (
        c["responder"], "sustained up to" if k["rate"] else "sustained nothing up to",
        _k(k["rate"] or 0), {"ladder": " (its top: the ceiling is higher)", "driver": ", then the driver fell behind",
                             "target": ", then the bare responder or the loopback did not keep up"}[k["limit"]]))
    for n in rec.targets:
        v = rec.runs(s).get(n)
        if isinstance(v, dict) and "error" in v:
            out.append("- **%s: %s**" % (n, v["error"]))
        for why in (v or {}).get("failed_rounds", []) if isinstance(v, dict) else []:
            out.append("- %s: a round failed: %s" % (n, why))
        rs = rounds(rec, s, n)
        if rs:
            idle = spread(r["idle"]["target_cpu_pct"] for r in rs)
            pg_idle = spread(r["idle"]["pg_cpu_pct"] for r in rs)
            left = [r["rows_left"] for r in rs]
            settled = spread(r["idle"]["settled_s"] for r in rs)
            loud = sum(1 for r in rs if not r["idle"]["quiet"])
            out.append("- %s: started in %s s (to a first database answer); at rest %s s after the warm-up, then %s %% "
                       "of a CPU (PostgreSQL %s %%)%s%s." % (
                           n, fmt(spread(r["start_s"] for r in rs), "%.2f"), fmt(settled, "%.0f"), fmt(idle, "%.1f"),
                           fmt(pg_idle, "%.1f"), "; **not at rest within %g s in %d round%s**" % (
                               p["fx_quiet_max_s"], loud, "s" * (loud > 1)) if loud else "",
                           "; rows its writes left in the table: %s" % left if any(left) else ""))
    for req in reqs:
        out += ["", "#### %s: p99 at each offered rate" % LABELS[req], "", ladder_table(rec, s, req).rstrip("\n")]
    for n in rec.targets:
        if not rounds(rec, s, n):
            continue
        for req in reqs:
            out += ["", "#### %s, %s" % (n, LABELS[req]), "", detail_table(rec, s, n, req).rstrip("\n")]
    return out


@plots
def charts(results, plot):
    """p99 against the offered rate, one line per target (log scales), for each request."""
    rec = record.run_from(results)
    if "fixed" not in rec.scenarios:
        return
    for req in requests_of(rec.params):
        series = []
        for n in rec.targets:
            pts = []
            for rate in rec.need("params", "fx_rates"):
                steps = at(rec, "fixed", n, req, rate)
                if steps:
                    pts.append((rate, statistics.median(max(0.01, st["p99_ms"] or 0.01) for st in steps)))
            if pts:
                series.append((n, pts))
        if not series:
            continue
        data = "\n\n\n".join("# %s\n" % n + "\n".join("%d %.3f" % pt for pt in pts) for n, pts in series) + "\n"
        lines = ", ".join('"%%(dat)s" index %d using 1:2 with linespoints dashtype %d title "%s"' % (
            i, 1 + i // 8, n) for i, (n, _) in enumerate(series))
        plot("fixed-%s-p99" % req, data,
             'set style data lines; set title "%s: p99 (from the planned send time) against the offered rate"; '
             'set xlabel "offered requests/s"; set ylabel "p99, ms"; set logscale xy; set yrange [*:*]; '
             'set xrange [*:*]; set arrow from graph 0, first %g to graph 1, first %g nohead dashtype 3; plot %s' % (
                 LABELS[req], rec.params["fx_p99_ms"], rec.params["fx_p99_ms"], lines))


# ---------------------------------------------------------------- the scenario

@scenario("fixed", render)
def s_fixed(runner, i):
    p, pgdir = runner.p, runner.pgdir
    requests_of(p)  # a bad fx_requests fails before anything runs
    driver = ramp_open.build_driver("c")
    base_id = int(psql(pgdir, "-c", "SELECT coalesce(max(id), 0) FROM fruits"))
    part = runner.partition
    top = runner.results.setdefault("fixed", {})
    top.update(rows=int(psql(pgdir, "-c", "SELECT count(*) FROM fruits")),
               pool="a peer's %s connections (POOL_SIZE), preon's as configured (database.connections_per_thread: "
               "4 on one thread)" % os.environ.get("POOL_SIZE", "8"),
               accounting=(part.accounting() if part is not None and part.enabled and part.accounting() else
                           "/proc process trees"))
    top["ceiling"] = ceiling(runner, driver, p["fx_rates"])
    done = {t.name: [] for t in runner.targets}
    failed = {t.name: [] for t in runner.targets}
    n = p["fx_rounds"]
    eta = 3 * (p["fx_warmup_s"] + len(p["fx_rates"]) * (p["fx_step_s"] + 0.5)) + p["fx_quiet_max_s"] / 2 + 10
    for rnd in range(n):
        def one(t, rnd=rnd):
            try:
                done[t.name].append(one_round(runner, t, rnd, driver, base_id))
            except Exception as e:
                failed[t.name].append("round %d: %s" % (rnd + 1, e))
                tidy(pgdir, base_id)
                raise
            return {"rounds": list(done[t.name])}
        runner.each("fixed", i, one, eta * (n - rnd), start=False, rotate=rnd, label=" round %d/%d" % (rnd + 1, n))
    for t in runner.targets:
        if done[t.name]:
            runner.record("fixed", t, dict({"rounds": done[t.name]},
                                           **({"failed_rounds": failed[t.name]} if failed[t.name] else {})))
