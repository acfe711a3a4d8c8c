#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Container-limit tables without a container engine: preon under a cgroup memory cap (as `docker run -m`) and
a cgroup CPU quota (as `docker run --cpus`), each with the /hello and /fruits loads (wrk -t2 -c50). Reports
requests/s, peak RSS and "OOM"/"failed" where the service dies. Needs root and cgroup v1 `memory` and `cpu`
hierarchies (or cgroup v2 with those controllers) under /sys/fs/cgroup.

  bench/limits.py                                  # 10 s per load
  bench/limits.py --memory 8,16,32 --cpus 0.5,1 --quick
"""
import argparse
import os
import signal
import time

from measure import Cgroup, Target, build_preon, free_port, log, preon_env, private_postgres, rss_kb, save, wrk

def run_one(preon_bin, pgport, label, duration, memory_mib=None, cpus=None):
    cg = Cgroup("preon-bench-%d-%s" % (os.getpid(), label.replace(" ", "").replace(".", "_")), memory_mib, cpus)
    port = free_port()
    t = Target("preon", cg.wrap([preon_bin]), preon_env(pgport, port), port)
    row = {"limit": label, "hello_rps": None, "fruits_rps": None, "peak_rss_kb": None, "result": "ok"}
    try:
        try:
            t.start()
        except RuntimeError as e:
            row["result"] = "failed to start (%s)" % e
            return row
        row["hello_rps"] = wrk(t.url + "/hello", 50, duration)["rps"]
        if t.proc.poll() is None:
            row["fruits_rps"] = wrk(t.url + "/fruits", 50, duration)["rps"]
        if t.proc.poll() is not None:
            row["result"] = "OOM" if t.proc.returncode == -signal.SIGKILL else "failed (exit %d)" % t.proc.returncode
        else:
            row["peak_rss_kb"] = rss_kb(t.proc.pid, "VmHWM")
        row["cgroup_peak_bytes"] = cg.peak_bytes()
    finally:
        t.stop()
        cg.remove()
    log("%s: %s" % (label, row))
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memory", default="2,3,4,8,16,32,64,128,256", help="MiB caps")
    ap.add_argument("--cpus", default="0.5,1,2", help="CPU quotas")
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="2 s per load")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.quick:
        args.duration = 2
    preon_bin = build_preon()
    results = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "cpus": os.cpu_count(), "args": vars(args), "rows": []}
    with private_postgres() as pgport:
        base = run_one(preon_bin, pgport, "no limit", args.duration)
        results["rows"].append(base)
        for m in [int(x) for x in args.memory.split(",") if x]:
            results["rows"].append(run_one(preon_bin, pgport, "memory %d MiB" % m, args.duration, memory_mib=m))
        for c in [float(x) for x in args.cpus.split(",") if x]:
            results["rows"].append(run_one(preon_bin, pgport, "cpus %g" % c, args.duration, cpus=c))

    def fmt(v, f="%.0f"):
        return f % v if v is not None else "-"

    lines = ["Measured %s on %d CPUs: wrk -t2 -c50, %d s per load, preon with default settings (one event loop per "
             "CPU of the quota)." % (results["date"], results["cpus"], args.duration), "",
             "| limit | /hello req/s | vs no limit | /fruits req/s | vs no limit | peak RSS (kB) | peak charged to the cgroup (kB) | result |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results["rows"]:
        rel = lambda k: "%.2f" % (r[k] / base[k]) if r[k] and base[k] else "-"  # noqa: E731
        charged = r.get("cgroup_peak_bytes")
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["limit"], fmt(r["hello_rps"]), rel("hello_rps"), fmt(r["fruits_rps"]), rel("fruits_rps"),
            fmt(r["peak_rss_kb"], "%d"), fmt(charged // 1024 if charged else None, "%d"), r["result"]))
    save(results, "\n".join(lines) + "\n", args.out, "limits-")


if __name__ == "__main__":
    main()
