# SPDX-License-Identifier: MIT
"""A fixed offered rate, open loop, and what one step of a ladder of them measured (bench/scenarios/fixed.py).

One step: the C open-workload driver (bench/ramp004/cdriver, fixed-load mode) sends `rate` requests/s for `s`
seconds at evenly spaced planned send times, whether or not earlier ones were answered, each request's latency taken
from its PLANNED send time (-latency-from planned: a stall of the target, a wait for a connection or the driver's own
lag is counted in full, Gil Tene's coordinated-omission rule). A request is one of:

  hello   GET /hello
  fruits  GET /fruits (post 002's database path: the list, as its ab run read it)
  write   POST /fruits with a new fruit, then DELETE /fruits/{its id} when the POST is answered: a write is two
          requests, and the offered rate counts requests (rate / 2 pairs arrive per second)

A ladder doubles its rate from step to step; where it fails, one more step at REFINE times the last rate it
sustained halves the knee's uncertainty. A step is sustained when its p99 is within the bound, no more than ERROR_PCT of its requests failed, and it
answered at least ACHIEVED_FRACTION of the offered rate within the step's own time. A step whose driver send lag
(p99) passed the driver's bound measured the driver, not the target. A ladder stops at its first step that is
not sustained (and its refinement); its knee is the highest rate sustained below the lowest that was not.
"""
from . import ramp_open

REQUESTS = {"hello": "GET /hello", "fruits": "GET /fruits", "write": "POST /fruits, then DELETE /fruits/{id}"}
ERROR_PCT = 1.0
REFINE = 1.5
ACHIEVED_FRACTION = 0.95
# KO causes that are no HTTP answer at all: such a request is not divided into the CPU time (nothing was served)
NO_ANSWER = ("timeout", "refused", "reset", "other")


def driver_argv(driver, url, request, rate, seconds, timeout_s, max_conns, db_path="/fruits"):
    """The driver's command line for one step of `request` (REQUESTS) at `rate` requests/s."""
    users = rate / 2.0 if request == "write" else float(rate)  # a write is two requests
    argv = [driver, "-url", url, "-r0", "%g" % users, "-r1", "%g" % users, "-duration", "%g" % seconds, "-think", "0",
            "-timeout", "%g" % timeout_s, "-window", "%g" % seconds, "-drain", "%g" % timeout_s, "-stop-after", "0",
            "-max-conns", str(max_conns), "-latency-from", "planned", "-lag-bound", "1e9"]
    if request == "write":
        return argv + ["-write", "1"]
    return argv + ["-only", "/hello" if request == "hello" else db_path]


def step_figures(out, rate, seconds):
    """A step's figures from the driver's parsed output (ramp_open.parse_output, with cpu_s): offered and achieved
    rate, requests, answers, errors by cause, latency percentiles (ms, from the planned send time), the driver's send
    lag and CPU per request. Achieved: the requests answered OK within the step's own time (the driver's first
    window) per second."""
    s = out.get("summary") or {}
    ko_by = s.get("ko_by") or {}
    first = out["windows"][0] if out.get("windows") else {}
    requests = s.get("requests") or 0
    return {"rate": rate, "s": seconds, "requests": requests,
            "answers": requests - sum(ko_by.get(k, 0) for k in NO_ANSWER), "ok": s.get("ok") or 0,
            "errors": s.get("ko") or 0, "ko_by": ko_by, "achieved": (first.get("ok") or 0) / float(seconds),
            "p50_ms": s.get("p50_ms"), "p99_ms": s.get("p99_ms"), "p999_ms": s.get("p999_ms"),
            "max_ms": s.get("max_ms"), "lag_p99_ms": s.get("lag_p99_ms"),
            "driver_cpu_us": ramp_open.cpu_us_per_request(out)}


def per_answer_us(cpu_s, answers):
    """CPU seconds spread over the answers, in µs each; None without answers or without a CPU figure."""
    return round(cpu_s / answers * 1e6, 2) if answers and cpu_s is not None else None


def judge(step, p99_bound_ms, lag_bound_ms):
    """Why `step` is not sustained (a sentence), or None when it is. A step whose driver fell behind says so first:
    its figures are the driver's."""
    why = []
    if step.get("lag_p99_ms") is not None and step["lag_p99_ms"] > lag_bound_ms:
        why.append("the driver fell behind (send lag p99 %.1f ms > %g ms)" % (step["lag_p99_ms"], lag_bound_ms))
    if not step.get("requests"):
        why.append("no request ended")
    else:
        if 100.0 * step["errors"] / step["requests"] > ERROR_PCT:
            why.append("%.1f %% errors > %g %%" % (100.0 * step["errors"] / step["requests"], ERROR_PCT))
        if step.get("p99_ms") is None or step["p99_ms"] > p99_bound_ms:
            why.append("p99 %s ms > %g ms" % ("?" if step.get("p99_ms") is None else "%.0f" % step["p99_ms"],
                                               p99_bound_ms))
        if step["achieved"] < ACHIEVED_FRACTION * step["rate"]:
            why.append("achieved %.0f/s < %.0f %% of the offered rate" % (step["achieved"], 100 * ACHIEVED_FRACTION))
    return "; ".join(why) or None


def knee(steps, rates):
    """A ladder's knee: {"rate": the highest sustained rate below the lowest rate that was not sustained (None when
    none below it was), "limit": "target" (a step above it failed), "driver" (the lowest failed because the driver
    fell behind), "ladder" (every rate of the ladder was sustained: the knee is higher)}. The steps may hold a
    refinement between the last sustained rate of the ladder and the first that failed (REFINE)."""
    failed = [s for s in steps if s.get("verdict")]
    if not failed:
        return {"rate": max((s["rate"] for s in steps), default=None),
                "limit": "ladder" if len(steps) >= len(rates) else "target"}
    low = min(failed, key=lambda s: s["rate"])
    below = [s["rate"] for s in steps if not s.get("verdict") and s["rate"] < low["rate"]]
    return {"rate": max(below, default=None),
            "limit": "driver" if "driver fell behind" in low["verdict"] else "target"}
