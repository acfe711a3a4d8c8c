# SPDX-License-Identifier: MIT
"""Post 003's scale-up argument, measured: an HAProxy of its own in front of three replica slots (its
configuration from scripts/fixtures/templates.py, its stats socket), a fixed-rate probe through it, and the
figures taken from the probe's latencies (p95 per 1-s bucket, the recovery time). Used by bench/scaleup.py; no
process is left running."""
import http.client
import os
import socket
import threading
import time

from .services import supervise, templates

SERVERS = ("r1", "r2", "r3")
RECOVERY_FACTOR = 1.5  # recovered: p95 stays below this many times the idle p95 for the rest of the spike


def parse_stat(csv_text, backend="replicas"):
    """`show stat` output → {server name: {column: value}} for the backend's servers."""
    rows = [line for line in csv_text.splitlines() if line.strip()]
    if not rows or not rows[0].startswith("# "):
        return {}
    cols = rows[0][2:].split(",")
    out = {}
    for line in rows[1:]:
        row = dict(zip(cols, line.split(",")))
        if row.get("pxname") == backend and row.get("svname") not in ("FRONTEND", "BACKEND"):
            out[row["svname"]] = row
    return out


class HAProxy:
    """Debian's haproxy as a child process (-db: foreground), with a generated configuration in `workdir`."""

    def __init__(self, workdir, port, server_ports, check_path="/fruits/1"):
        self.sock = os.path.join(workdir, "s.sock")
        self.cfg = os.path.join(workdir, "haproxy.cfg")
        self.log_path = os.path.join(workdir, "haproxy.log")
        self.port = port
        with open(self.cfg, "w") as f:
            f.write(templates.haproxy_spike(port, self.sock, list(zip(SERVERS, server_ports)), check_path))
        self.proc = None

    def start(self, timeout=10):
        self.proc = supervise.spawn(["haproxy", "-db", "-f", self.cfg], self.log_path, cwd=None, session=True)
        supervise.wait_ready(lambda: bool(self.stats()), timeout, "haproxy (its stats socket)", self.proc, self.log_path)

    def log_tail(self, lines=10):
        return supervise.log_tail(self.log_path, lines)

    def stats(self):
        """The backend's servers as `show stat` reports them; {} when the socket does not answer."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(1)
                s.connect(self.sock)
                s.sendall(b"show stat\n")
                chunks = []
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    chunks.append(b)
        except OSError:
            return {}
        return parse_stat(b"".join(chunks).decode(errors="replace"))

    def wait(self, want, timeout):
        """Polls every 20 ms until want(stats) holds; True, or False after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if want(self.stats()):
                return True
            time.sleep(0.02)
        return False

    def stop(self):
        if self.proc:
            supervise.stop(self.proc, timeout=10)


def is_up(row):
    return bool(row) and row.get("status", "").startswith("UP")


def hrsp_2xx(row):
    try:
        return int(row.get("hrsp_2xx") or 0)
    except (TypeError, ValueError):
        return 0


class Probe(threading.Thread):
    """`rate` GET `path` per second on one keep-alive connection of its own (reopened after an error); each
    sample is (send time on time.monotonic(), latency in s, status or None). A request slower than the interval
    delays the next one: the send times say so."""

    def __init__(self, port, path, rate=20.0, timeout=10.0):
        super().__init__(daemon=True)
        self.port, self.path, self.interval, self.timeout = port, path, 1.0 / rate, timeout
        self.samples, self.halt = [], threading.Event()

    def run(self):
        conn, nxt = None, time.monotonic()
        while not self.halt.is_set():
            delay = nxt - time.monotonic()
            if delay > 0 and self.halt.wait(delay):
                break
            t = time.monotonic()
            nxt = max(nxt + self.interval, t)
            try:
                conn = conn or http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
                conn.request("GET", self.path)
                r = conn.getresponse()
                r.read()
                self.samples.append((t, time.monotonic() - t, r.status))
            except (OSError, http.client.HTTPException):
                if conn:
                    conn.close()
                conn = None
                self.samples.append((t, time.monotonic() - t, None))
        if conn:
            conn.close()

    def stop(self):
        self.halt.set()
        self.join(timeout=self.timeout + 5)


def p95(values):
    """The 95th percentile (nearest rank, in the unit given), or None for no values."""
    v = sorted(values)
    return v[max(0, -(-95 * len(v) // 100) - 1)] if v else None


def window_p95_ms(samples, a, b):
    """p95 in ms of the samples sent in [a, b); failed requests count with their time to failure."""
    x = p95([lat for t, lat, _ in samples if a <= t < b])
    return round(x * 1000, 1) if x is not None else None


def buckets_ms(samples, a, b):
    """p95 (ms) of each 1-s bucket from a to b (a last partial bucket is left out)."""
    return [window_p95_ms(samples, a + k, a + k + 1) for k in range(int(b - a))]


def recovery_s(buckets, idle_p95_ms, factor=RECOVERY_FACTOR):
    """Seconds from the first bucket to the start of the first bucket after which every bucket's p95 stays below
    factor × the idle p95 (an empty bucket breaks nothing); None ("no recovery") when the last bucket is still
    above it or there is no bucket at all."""
    if idle_p95_ms is None or not buckets:
        return None
    bound, start = factor * idle_p95_ms, None
    for k, v in enumerate(buckets):
        if v is not None and v >= bound:
            start = None
        elif start is None:
            start = k
    return float(start) if start is not None else None


def spread(values):
    """{"median", "min", "max", "n"} of the values that are not None; None when there are none."""
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    mid = len(v) // 2
    med = v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2
    return {"median": med, "min": v[0], "max": v[-1], "n": len(v)}
