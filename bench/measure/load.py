# SPDX-License-Identifier: MIT
"""The load tools the posts used (wrk, ApacheBench) and pgbench for PostgreSQL's own ceiling: one bounded run
each, and the parsers of their output (kept apart, so that tests can parse recorded output)."""
import re
import subprocess


_PCT = {k: re.compile(r"^\s+%s%%\s+([\d.]+)(us|ms|s)\s*$" % k[1:], re.M) for k in ("p50", "p75", "p90", "p99")}
_SCALE_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def parse_wrk(out):
    """wrk's output → requests/s, latency percentiles (ms, with --latency; p95 from bench/wrk/percentiles.lua),
    non-2xx and socket error counts."""
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    res = {"rps": float(m.group(1)) if m else 0.0}
    for k, rx in _PCT.items():
        m = rx.search(out)
        res[k] = float(m.group(1)) * _SCALE_MS[m.group(2)] if m else None
    m = re.search(r"^p95_us=(\d+)", out, re.M)
    res["p95"] = int(m.group(1)) / 1000.0 if m else None
    m = re.search(r"(\d+) requests in ([\d.]+)(ms|s|m)\b", out)
    res["requests"] = int(m.group(1)) if m else 0
    secs = float(m.group(2)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(3)] if m else 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    non2xx = int(m.group(1)) if m else 0
    # answers that were not errors, per second: with backpressure (503) requests/s alone flatters a server
    res["ok_rps"] = (res["requests"] - non2xx) / secs if secs else 0.0
    res["non2xx"] = non2xx
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    res["errors"] = dict(zip(("connect", "read", "write", "timeout"), (int(x) for x in m.groups()) if m else (0,) * 4))
    res["socket_errors"] = sum(res["errors"].values())
    # from bench/wrk/mix.lua: answers by status
    res["statuses"] = {int(k): int(v) for k, v in re.findall(r"^status_(\d+)=(\d+)", out, re.M)}
    m = re.search(r"^responses=(\d+)", out, re.M)
    res["responses"] = int(m.group(1)) if m else None
    return res


def wrk(url, conns, duration, threads=2, script=None, script_args=()):
    """One wrk run (bounded by `duration`); see parse_wrk."""
    argv = ["wrk", "-t%d" % min(threads, conns), "-c%d" % conns, "-d%ds" % duration, "--latency"]
    if script:
        argv += ["-s", script]
    argv.append(url)
    if script_args:
        argv += ["--", *script_args]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 60).stdout
    return parse_wrk(out)


def _num(out, rx, conv=float):
    """The first group of `rx` in `out` (multi-line), converted, or None."""
    m = re.search(rx, out, re.M)
    return conv(m.group(1)) if m else None


def parse_ab(out):
    """ApacheBench's output → requests/s, mean and max latency (ms), completed and failed requests."""
    def num(rx, conv=float):
        return _num(out, rx, conv)
    return {"rps": num(r"^Requests per second:\s+([\d.]+)") or 0.0,
            "mean_ms": num(r"^Time per request:\s+([\d.]+) \[ms\] \(mean\)$"),
            "max_ms": num(r"^\s*100%\s+(\d+) \(longest request\)", int),
            "complete": num(r"^Complete requests:\s+(\d+)", int) or 0,
            "failed": num(r"^Failed requests:\s+(\d+)", int) or 0,
            "non2xx": num(r"^Non-2xx responses:\s+(\d+)", int) or 0}


def ab(url, n, c, timeout=300):
    """One ApacheBench run: `n` requests, `c` at a time (keep-alive off, as the published posts ran it)."""
    out = subprocess.run(["ab", "-q", "-n", str(n), "-c", str(c), "-s", "30", url], capture_output=True, text=True,
                         timeout=timeout).stdout
    return parse_ab(out)


def parse_pgbench(out):
    """pgbench's output → transactions/s (without connection time), transactions processed and failed."""
    def num(rx, conv=float):
        return _num(out, rx, conv)
    return {"tps": num(r"^tps = ([\d.]+) \(without initial connection time\)") or 0.0,
            "transactions": num(r"^number of transactions actually processed: (\d+)", int) or 0,
            "failed": num(r"^number of failed transactions: (\d+)", int) or 0}


def pgbench(pgport, script, duration, clients=2, dbname="preon"):
    """One pgbench run of `script` (prepared statements, `clients` connections and threads) against the private
    PostgreSQL on 127.0.0.1:`pgport`; see parse_pgbench."""
    argv = ["pgbench", "-n", "-M", "prepared", "-c%d" % clients, "-j%d" % clients, "-T%d" % duration, "-f", script,
            "-h", "127.0.0.1", "-p", str(pgport), "-U", "postgres", dbname]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 60).stdout
    return parse_pgbench(out)


