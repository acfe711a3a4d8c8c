# SPDX-License-Identifier: MIT
"""The open-workload drivers — bench/ramp004/cdriver (C, one epoll loop: the default) and bench/ramp004/driver (Go,
net/http; the first one, kept to compare) take the same flags and write the same lines — building them, running
them, reading their output, and the figures drawn from that output: the saturation point, how a target failed, and
a driver's own ceiling and CPU cost per request.

The saturation point, defined once here and used everywhere (run.py's ramp004 scenario, docs/benchmarks.md):
the first window (10 s) of the arrival phase that starts two broken windows in a row — broken: at least
MIN_ANSWERS answers, and the p95 response time over 1,000 ms or more than 5 % of the answers KO (one broken window
alone may be a stall of a shared machine); it is reported as that window's peak of active users and its planned
arrival rate (users/s). The driver stops arrivals -stop-after windows after it.
"""
import json
import os
import resource
import shutil
import subprocess

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/
REPO = os.path.dirname(HERE)
DRIVER_SRC = os.path.join(HERE, "ramp004", "driver")
CDRIVER_SRC = os.path.join(HERE, "ramp004", "cdriver")
DRIVERS = {"c": "C on epoll, one thread (bench/ramp004/cdriver)", "go": "Go net/http (bench/ramp004/driver)"}
SEED_SQL = os.path.join(HERE, "ramp004", "seed.sql")
OUT_DIR = os.path.join(REPO, "build", "ramp004")  # build/ is ignored by git

BREAK_P95_MS = 1000.0
BREAK_KO_PCT = 5.0
MIN_ANSWERS = 20
BYTES_PER_ROW = 92  # a seeded row on disk (bench/ramp004/seed.sql): 150 MB ≈ 1.7 million rows

# the driver's KO causes, as the report names them
CAUSES = (("timeout", "timeouts"), ("refused", "refused connections"), ("reset", "connections reset/closed"),
          ("http_503", "503"), ("http_5xx", "other 5xx"), ("http_4xx", "4xx"), ("too_large", "answers over 1 MiB"),
          ("bad_body", "2xx without the created row"), ("other", "other errors"))


def go_binary():
    """Debian's Go (scripts/deps.sh bench installs golang-go), else whatever go is on the PATH."""
    for g in ("/usr/lib/go/bin/go", shutil.which("go")):
        if g and os.path.exists(g):
            return g
    raise RuntimeError("no Go toolchain: scripts/deps.sh bench installs golang-go")


def build_driver(kind="c"):
    """Builds driver `kind` ("c" or "go", DRIVERS) into build/ramp004/; returns its path."""
    if kind == "go":
        return build_go_driver()
    if kind != "c":
        raise ValueError("unknown ramp004 driver %r (expected one of %s)" % (kind, ", ".join(DRIVERS)))
    os.makedirs(OUT_DIR, exist_ok=True)
    out = os.path.join(OUT_DIR, "cdriver")
    srcs = sorted(os.path.join(CDRIVER_SRC, f) for f in os.listdir(CDRIVER_SRC) if f.endswith(".c"))
    subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", out] + srcs + ["-lm"], check=True)
    return out


def build_go_driver():
    """Builds the Go driver (standard library only, nothing downloaded) into build/ramp004/driver; returns its path."""
    os.makedirs(OUT_DIR, exist_ok=True)
    out = os.path.join(OUT_DIR, "driver")
    env = dict(os.environ, GOPROXY="off", GOFLAGS="-mod=mod", GOCACHE=os.path.join(OUT_DIR, "gocache"), CGO_ENABLED="0")
    subprocess.run([go_binary(), "build", "-trimpath", "-o", out, "."], cwd=DRIVER_SRC, env=env, check=True)
    return out


def build_epoll_hello():
    out = os.path.join(OUT_DIR, "epoll_hello")
    os.makedirs(OUT_DIR, exist_ok=True)
    subprocess.run(["cc", "-O2", "-pthread", "-o", out, os.path.join(HERE, "limit", "epoll_hello.c")], check=True)
    return out


def driver_argv(driver, url, r0, r1, duration, think, timeout, max_id, stop_after=0, drain=15, max_conns=4096,
                hello=None, window=10):
    argv = [driver, "-url", url, "-r0", str(r0), "-r1", str(r1), "-duration", str(duration), "-think", str(think),
            "-timeout", str(timeout), "-max-id", str(max_id), "-stop-after", str(stop_after), "-drain", str(drain),
            "-max-conns", str(max_conns), "-window", str(window), "-break-p95", str(BREAK_P95_MS),
            "-break-ko", str(BREAK_KO_PCT)]
    return argv + (["-hello", hello] if hello else [])


def parse_output(text):
    """The driver's stdout (one JSON object a line) → {"config": {...}, "windows": [...], "summary": {...} or None}.
    Lines that are not JSON objects with a known type are ignored."""
    out = {"config": None, "windows": [], "summary": None}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        kind = obj.get("type")
        if kind == "window":
            out["windows"].append(obj)
        elif kind in ("config", "summary"):
            out[kind] = obj
    return out


def broken(w):
    """Why window `w` counts as broken (a sentence), or None."""
    if (w.get("requests") or 0) < MIN_ANSWERS:
        return None
    why = []
    if w.get("p95_ms") is not None and w["p95_ms"] > BREAK_P95_MS:
        why.append("p95 %.0f ms > %.0f ms" % (w["p95_ms"], BREAK_P95_MS))
    if w.get("ko_pct") is not None and w["ko_pct"] > BREAK_KO_PCT:
        why.append("KO %.1f %% > %.0f %%" % (w["ko_pct"], BREAK_KO_PCT))
    return "; ".join(why) or None


def saturation(windows, arrival_end_s=None):
    """The saturation point (see the module's comment): {"t", "users", "rate", "reason"} or None. Windows that start
    at or after `arrival_end_s` (the drain, once users stop arriving) do not count, except as the second of a pair."""
    for w, nxt in zip(windows, windows[1:]):
        if arrival_end_s is not None and w["t"] >= arrival_end_s:
            break
        why = broken(w)
        if why and broken(nxt):
            return {"t": w["t"], "users": w.get("active_max"), "rate": w.get("rate_planned"), "reason": why}
    return None


def failure_modes(summary, exit_note=None):
    """How a target failed, in words: the KO causes by count, 503s with Retry-After, and whether it stayed up."""
    if not summary:
        return exit_note or "no summary from the driver"
    ko_by = summary.get("ko_by") or {}
    parts = ["%s %d" % (label, ko_by[k]) for k, label in CAUSES if ko_by.get(k)]
    if ko_by.get("http_503"):
        parts.append("of the 503s %d with Retry-After" % (summary.get("retry_after_503") or 0))
    text = ", ".join(parts) if parts else "no KO"
    return text + "; " + (exit_note or "stayed up")


def ceiling(windows):
    """The driver's own ceiling from a run against the bare responder: the busiest window before the first one in
    which it fell behind (its send-lag p99 over the bound) → {"rps", "users", "rate", "reached"}; reached is False
    when it never fell behind (the ceiling is then above the figure)."""
    best, reached = None, False
    for w in windows:
        if w.get("behind"):
            reached = True
            break
        if best is None or (w.get("rps") or 0) > best["rps"]:
            best = {"rps": w.get("rps") or 0, "users": w.get("active_max"), "rate": w.get("rate_planned"),
                    "lag_p99_ms": w.get("lag_p99_ms")}
    if best is None:
        return {"rps": 0, "users": 0, "rate": None, "reached": reached, "lag_p99_ms": None}
    best["reached"] = reached
    return best


def prioritized(argv, realtime=False):
    """The driver is the measuring instrument: on a shared machine it runs at nice -10 (as root), so that the
    target, PostgreSQL and other people's work do not delay its sends; with `realtime`, in the SCHED_FIFO class
    (priority 20, chrt) instead, so that nothing of a lower class runs before it when a send is due (the kernel's
    real-time throttling still leaves others 5 % of its CPU); elsewhere as it is."""
    if os.geteuid() != 0:
        return argv
    if realtime and shutil.which("chrt"):
        return ["chrt", "-f", "20"] + argv
    return ["nice", "-n", "-10"] + argv


def run(argv, timeout_s, log_path=None, realtime=False):
    """Runs the driver (prioritized); returns (exit status, parsed output). Its per-window lines on stderr go to
    `log_path`. The output has "cpu_s" too: the CPU time (user + system) the driver used, from its rusage."""
    argv = prioritized(argv, realtime)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(log_path or os.devnull, "w") as err:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=err, text=True, timeout=timeout_s)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = parse_output(p.stdout)
    out["cpu_s"] = round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 3)
    return p.returncode, out


def cpu_us_per_request(out):
    """The driver's CPU time per request it sent, in µs, from run()'s output; None without a summary."""
    n = (out.get("summary") or {}).get("requests")
    return round(out["cpu_s"] / n * 1e6, 1) if n and out.get("cpu_s") is not None else None
