# SPDX-License-Identifier: MIT
"""A ramp of virtual users, as the load tool of the published post 004 runs one: users arrive one after another
over --ramp seconds (user i at i × ramp / users), each opens its own keep-alive connection and loops over the
scenario's paths with a think time between requests (uniform in 0.5–1.5 × --think) until the end of the ramp plus
--hold seconds. A request is KO when it gets no 2xx answer within --timeout (refused, reset, timed out or
non-2xx); a KO'd connection is reopened for the user's next request.

Reports total requests, OK, KO %, requests/s, p95, and the saturation point: the number of active users at the
start of the first run of --sustain consecutive windows in which KO % exceeds --ko-break or p95 exceeds
max(--p95-factor × the early p95, the early p95 + --p95-margin ms), the early p95 being the lower quartile of the
windows' p95 until a quarter of the users have arrived. The users are spread over --procs worker
processes (each an asyncio loop); each worker measures how late its own timers fire (loop lag): a window whose lag
p95 exceeds --lag-bound ms is one where the driver, not the server, was the bottleneck (its latencies include the
driver's delay). Such windows do not count towards the saturation point; the first --sustain of them in a row are
reported as the driver's limit instead. Traffic goes to 127.0.0.1 only.

  bench/measure/ramp.py --port 8080 --path /fruits --users 10000 --ramp 120 --hold 30 --think 2
"""
import argparse
import array
import asyncio
import importlib.util
import json
import multiprocessing
import os
import random
import resource
import statistics
import sys
import time

LAG_TICK_S = 0.1


def raise_nofile(need):
    """Raises the soft limit on open files to the hard one; returns the soft limit now in force. A user holds one
    connection, so a worker needs about users/procs descriptors."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, need)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _parse(buf):
    """A complete HTTP/1.1 response at the start of buf → (status, keep-alive?, its length), or None while it is
    incomplete."""
    h = buf.find(b"\r\n\r\n")
    if h < 0:
        return None
    lines = bytes(buf[:h]).decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length, chunked, close = 0, False, False
    for line in lines[1:]:
        name, _, val = line.partition(":")
        name, val = name.strip().lower(), val.strip().lower()
        if name == "content-length":
            length = int(val)
        elif name == "transfer-encoding" and "chunked" in val:
            chunked = True
        elif name == "connection" and val == "close":
            close = True
    pos = h + 4
    if not chunked:
        return (status, not close, pos + length) if len(buf) >= pos + length else None
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None
        size = int(bytes(buf[pos:eol]).split(b";")[0], 16)
        pos = eol + 2 + size + 2
        if len(buf) < pos:
            return None
        if size == 0:
            return status, not close, pos


class _User(asyncio.Protocol):
    """One virtual user, driven by callbacks (no task per request, so that one process drives thousands): connect
    when needed, send, parse, think, repeat until the end."""

    def __init__(self, w, i):
        self.w, self.rng, self.step = w, random.Random(i), 0
        self.transport = self.timer = None
        self.buf = bytearray()
        self.busy = False

    def connection_made(self, transport):
        self.transport = transport

    def next(self):
        w = self.w
        if time.monotonic() >= w.end:
            if self.transport is not None:
                self.transport.close()
            self.transport = None
            w.user_done()
            return
        self.path = w.paths[self.step % len(w.paths)]
        self.step += 1
        self.start = time.monotonic()
        self.busy = True
        self.timer = w.loop.call_later(w.cfg["timeout"], self.on_timeout)
        if self.transport is None:
            w.loop.create_task(w.loop.create_connection(lambda: self, "127.0.0.1", w.cfg["port"])).add_done_callback(
                self.on_connected)
        else:
            self.send()

    def on_connected(self, fut):
        if not self.busy:
            return  # timed out meanwhile
        if fut.cancelled() or fut.exception() is not None:
            self.finish(False)
        else:
            self.send()

    def send(self):
        self.buf.clear()
        self.transport.write(self.w.requests[self.path])

    def data_received(self, data):
        if not self.busy:
            return
        self.buf += data
        try:
            r = _parse(self.buf)
        except (ValueError, IndexError):
            self.transport.abort()
            return
        if r is not None:
            status, keep, _ = r
            if not keep:
                self.transport.close()
                self.transport = None
            self.finish(200 <= status < 300, drop=False)

    def connection_lost(self, exc):
        self.transport = None
        if self.busy:
            self.finish(False)

    def on_timeout(self):
        self.timer = None
        if self.transport is not None:
            self.transport.abort()
            self.transport = None
        if self.busy:
            self.finish(False)

    def finish(self, ok, drop=True):
        """Records the request; a failed connection (drop) is closed and reopened for the next request, while a
        non-2xx answer keeps it, as a browser or a load tool would."""
        self.busy = False
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if drop and not ok and self.transport is not None:
            self.transport.abort()
            self.transport = None
        now = time.monotonic()
        self.w.record(now, now - self.start, ok)
        self.w.loop.call_later(self.w.cfg["think"] * self.rng.uniform(0.5, 1.5), self.next)


class _Worker:
    def __init__(self, cfg, my_users, t0):
        self.cfg, self.my_users, self.t0 = cfg, list(my_users), t0
        self.end = t0 + cfg["ramp"] + cfg["hold"]
        self.paths = cfg["paths"]
        self.requests = {p: ("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (p, cfg["port"])).encode() for p in self.paths}
        self.done_t, self.lat_ms, self.ok = array.array("d"), array.array("d"), array.array("b")
        self.lags, self.lag_t = array.array("d"), array.array("d")
        self.left = len(self.my_users)

    def record(self, now, seconds, ok):
        self.done_t.append(now - self.t0)
        self.lat_ms.append(seconds * 1000)
        self.ok.append(1 if ok else 0)

    def user_done(self):
        self.left -= 1
        if self.left == 0:
            self.finished.set_result(None)

    def lag_probe(self, before):
        now = time.monotonic()
        self.lags.append(max(0.0, now - before - LAG_TICK_S) * 1000)
        self.lag_t.append(now - self.t0)
        if now < self.end:
            self.loop.call_later(LAG_TICK_S, self.lag_probe, now)

    async def main(self):
        self.loop = asyncio.get_running_loop()
        self.finished = self.loop.create_future()
        if not self.my_users:
            return
        for i in self.my_users:
            at = self.t0 + i * self.cfg["ramp"] / self.cfg["users"]
            self.loop.call_at(self.loop.time() + max(0.0, at - time.monotonic()), _User(self, i).next)
        self.loop.call_later(LAG_TICK_S, self.lag_probe, time.monotonic())
        # every user ends by itself (the end of the run, or its timeout at the latest); the bound is a safety net
        await asyncio.wait_for(self.finished, self.end - time.monotonic() + self.cfg["timeout"] + 10)


def _worker_main(cfg, index, t0, conn):
    raise_nofile(cfg["users"] // cfg["procs"] + 256)
    w = _Worker(cfg, range(index, cfg["users"], cfg["procs"]), t0)
    cpu0 = time.process_time()
    if cfg.get("uvloop"):
        import uvloop  # Debian's python3-uvloop: the same loop API in C, several times less CPU per request
        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    asyncio.run(w.main())
    conn.send((w.done_t.tobytes(), w.lat_ms.tobytes(), w.ok.tobytes(), w.lags.tobytes(), w.lag_t.tobytes(),
               time.process_time() - cpu0))
    conn.close()


def p95(values):
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(0.95 * len(s)))]


def active_users(t, cfg):
    """Users started by time t (user i starts at i × ramp / users)."""
    if cfg["ramp"] <= 0:
        return cfg["users"]
    return min(cfg["users"], int(t * cfg["users"] / cfg["ramp"]) + 1)


def analyse(cfg, done_t, lat_ms, ok, window_s, lag_t=(), lags=()):
    """Per-window figures, the saturation point and the driver's limit from the raw samples: (completion time,
    latency, ok) per request and (time, lag) per timer tick of the driver."""
    n_win = int((cfg["ramp"] + cfg["hold"] + cfg["timeout"]) / window_s) + 1
    lat = [[] for _ in range(n_win)]
    lag = [[] for _ in range(n_win)]
    kos = [0] * n_win
    for t, l, o in zip(done_t, lat_ms, ok):
        w = min(n_win - 1, int(t / window_s))
        lat[w].append(l)
        kos[w] += 0 if o else 1
    for t, l in zip(lag_t, lags):
        lag[min(n_win - 1, int(t / window_s))].append(l)
    windows = []
    for w in range(n_win):
        if lat[w]:
            windows.append({"t": round(w * window_s, 3), "users": active_users(w * window_s, cfg), "responses": len(lat[w]),
                            "ko_pct": 100.0 * kos[w] / len(lat[w]), "p95_ms": p95(lat[w]), "driver_lag_ms": p95(lag[w])})
    ramp_end = cfg["ramp"] + cfg["hold"]
    counted = [x for x in windows if x["t"] < ramp_end and x["responses"] >= cfg["min_samples"]]
    # the early p95: the lower quartile of the windows' p95 while at most a quarter of the users had arrived, so
    # that one hiccup of a busy machine at the start does not raise the bar for the whole run
    early = sorted(x["p95_ms"] for i, x in enumerate(counted)
                   if (i < 3 or x["users"] <= cfg["users"] // 4) and x["ko_pct"] <= cfg["ko_break"])
    base = early[len(early) // 4] if early else None
    limit = max(base * cfg["p95_factor"], base + cfg["p95_margin"]) if base is not None else None
    sat, driver, run, drun = None, None, [], []
    for x in counted:
        lagging = x["driver_lag_ms"] is not None and x["driver_lag_ms"] > cfg["lag_bound"]
        drun = drun + [x] if lagging else []
        if driver is None and len(drun) >= cfg["sustain"]:
            driver = {"users": drun[0]["users"], "t": drun[0]["t"]}
        why = []
        if x["ko_pct"] > cfg["ko_break"]:
            why.append("KO %.1f%% > %g%%" % (x["ko_pct"], cfg["ko_break"]))
        if limit is not None and x["p95_ms"] > limit:
            why.append("p95 %.0f ms > %.0f ms" % (x["p95_ms"], limit))
        run = run + [(x, why)] if why and not lagging else []
        if len(run) >= cfg["sustain"]:
            sat = {"users": run[0][0]["users"], "t": run[0][0]["t"], "reason": "; ".join(run[0][1])}
            break
    return windows, base, limit, sat, driver


def run_ramp(port, paths, users, ramp, hold=0.0, think=1.0, timeout=10.0, procs=None, window=None, ko_break=1.0,
             p95_factor=10.0, p95_margin=50.0, sustain=3, min_samples=5, lag_bound=50.0, loop="auto"):
    """Runs the ramp against 127.0.0.1:port and returns its figures (see the module's comment)."""
    have_uvloop = importlib.util.find_spec("uvloop") is not None
    procs = procs or min(os.cpu_count() or 1, 4)
    procs = max(1, min(procs, users))
    window = window or max(0.25, min(2.0, (ramp + hold) / 60.0))
    cfg = {"port": port, "paths": list(paths), "users": users, "ramp": ramp, "hold": hold, "think": think,
           "timeout": timeout, "procs": procs, "ko_break": ko_break, "p95_factor": p95_factor,
           "p95_margin": p95_margin, "sustain": sustain, "min_samples": min_samples,
           "lag_bound": lag_bound, "uvloop": have_uvloop if loop == "auto" else loop == "uvloop"}
    limit = raise_nofile(users // procs + 256)
    if users // procs + 64 > limit:
        raise RuntimeError("open files limit %d is too low for %d users in %d processes" % (limit, users, procs))
    ctx = multiprocessing.get_context("fork")
    t0 = time.monotonic() + 0.2
    pipes, workers = [], []
    for i in range(procs):
        parent, child = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_worker_main, args=(cfg, i, t0, child), daemon=True)
        p.start()
        child.close()
        pipes.append(parent)
        workers.append(p)
    done_t, lat_ms, ok, lags, lag_t, cpu = (array.array("d"), array.array("d"), array.array("b"), array.array("d"),
                                            array.array("d"), [])
    deadline = t0 + ramp + hold + timeout + 30
    for parent, p in zip(pipes, workers):
        if not parent.poll(max(0.0, deadline - time.monotonic())):
            for q in workers:
                q.kill()
            raise RuntimeError("a ramp worker did not finish in time")
        a, b, c, d, e, f = parent.recv()
        for arr, raw in ((done_t, a), (lat_ms, b), (ok, c), (lags, d), (lag_t, e)):
            arr.frombytes(raw)
        cpu.append(f)
        p.join(5)
    wall = max(done_t) if done_t else ramp + hold
    windows, base, limit_ms, sat, driver_limit = analyse(cfg, done_t, lat_ms, ok, window, lag_t, lags)
    total = len(ok)
    n_ok = sum(ok)
    lag95 = p95(lags)
    return {"config": cfg, "window_s": window, "total": total, "ok": n_ok, "ko": total - n_ok,
            "ko_pct": 100.0 * (total - n_ok) / total if total else None,
            "rps": total / wall if wall else None, "p95_ms": p95(lat_ms),
            "p50_ms": statistics.median(lat_ms) if total else None, "max_users": users,
            "saturation": sat, "driver_limit": driver_limit, "baseline_p95_ms": base, "p95_break_ms": limit_ms,
            "windows": windows,
            "driver": {"procs": procs, "loop": "uvloop" if cfg["uvloop"] else "asyncio",
                       "cpu_pct_per_proc": [100.0 * c / wall for c in cpu] if wall else [],
                       "loop_lag_p95_ms": lag95, "loop_lag_max_ms": max(lags) if lags else None,
                       "bound": driver_limit is not None}}


# The driver's own command line (python3 bench/measure/ramp.py --help): a ramp against any server on 127.0.0.1.
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True, help="the server, on 127.0.0.1")
    ap.add_argument("--path", action="append", default=[], help="scenario path (repeatable; default /hello)")
    ap.add_argument("--users", type=int, default=1000)
    ap.add_argument("--ramp", type=float, default=30.0, help="seconds over which the users arrive")
    ap.add_argument("--hold", type=float, default=0.0, help="seconds all users keep going after the last arrived")
    ap.add_argument("--think", type=float, default=1.0, help="mean think time between a user's requests (s)")
    ap.add_argument("--timeout", type=float, default=10.0, help="a request without an answer by then is KO (s)")
    ap.add_argument("--procs", type=int, default=None, help="worker processes (default: CPUs, at most 4)")
    ap.add_argument("--window", type=float, default=None, help="seconds per window for p95/KO over time")
    ap.add_argument("--ko-break", type=float, default=1.0, help="KO %% in a window that counts as broken")
    ap.add_argument("--p95-factor", type=float, default=10.0)
    ap.add_argument("--p95-margin", type=float, default=50.0, help="ms")
    ap.add_argument("--sustain", type=int, default=3, help="consecutive broken windows for the saturation point")
    ap.add_argument("--loop", choices=("auto", "uvloop", "asyncio"), default="auto",
                    help="event loop of the workers (auto: uvloop when python3-uvloop is installed)")
    ap.add_argument("--lag-bound", type=float, default=50.0,
                    help="driver lag p95 (ms) that marks a window driver-bound")
    ap.add_argument("--json", help="write every figure (with per-window series) to this file")
    a = ap.parse_args()
    r = run_ramp(a.port, a.path or ["/hello"], a.users, a.ramp, a.hold, a.think, a.timeout, a.procs, a.window,
                      a.ko_break, a.p95_factor, a.p95_margin, a.sustain, lag_bound=a.lag_bound, loop=a.loop)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1)
    s, d = r["saturation"], r["driver_limit"]
    print("users %d  total %d  OK %d  KO %.2f%%  req/s %.1f  p95 %.1f ms  saturation %s" % (
        a.users, r["total"], r["ok"], r["ko_pct"] or 0, r["rps"] or 0, r["p95_ms"] or 0,
        "%d users (%s)" % (s["users"], s["reason"]) if s else "none"))
    if d:
        print("the driver was the bottleneck from %d users on (event-loop lag > %g ms)" % (d["users"], a.lag_bound))
    print("driver: %d procs (%s), CPU %s %%, loop lag p95 %.1f ms%s" % (
        r["driver"]["procs"], r["driver"]["loop"], ", ".join("%.0f" % c for c in r["driver"]["cpu_pct_per_proc"]),
        r["driver"]["loop_lag_p95_ms"] or 0, " (driver-bound)" if r["driver"]["bound"] else ""))



if __name__ == "__main__":
    sys.exit(main())
