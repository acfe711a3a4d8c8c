#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Post 003's argument measured for every stack: does a new replica, started during a load spike, take load
quickly enough to matter? Per target and round, on 127.0.0.1:

  an HAProxy of its own (Debian's, a child process, a stats socket) with three server slots, health-checked with
  GET /fruits/1 (the same for every target: a replica is in when it serves the DB path); replicas 1 and 2 started
  and UP; the probe alone (20 req/s, its own connection) for the idle p95; then wrk -t2 -c64 on /fruits/1 through
  HAProxy for 30 s (--quick: 8 s) with the probe going on; at 5 s (--quick: 2 s) replica 3's start command is
  exec'd. Measured: start → HAProxy marks it UP and start → its first 2xx through HAProxy (`show stat` every
  20 ms), its RSS when the spike ends, wrk's req/s and errors, the probe's p95 idle / during the spike before
  replica 3's first 2xx / after it, per 1-s bucket, and the recovery time (see report.md). Then everything it
  started is stopped, by PID.

  Each replica runs in a cgroup of its own capped at --cpus-per-replica (default 0.4 CPU, as a Kubernetes pod's
  `resources.limits.cpu: 400m`): on this 2-core machine a third uncapped replica would only share the cores the
  first two already use, so it could add no capacity and no recovery could be seen; capped, replicas 1-2 are the
  saturated pool (0.8 CPU) and replica 3 brings 0.4 more, leaving the rest to wrk, HAProxy and PostgreSQL.
  --cpus-per-replica 0 runs them uncapped.

  --partition (bench/measure/cpus.py; default off: every role on every CPU, as the recorded runs were measured)
  puts the roles on CPUs of their own: this process joins the load set, so wrk, the probe (a thread of it) and
  HAProxy, started by it, run there: HAProxy is the load balancer, infrastructure in front of the replicas and
  not what is measured, and in the target set it would take the CPU the replicas' caps are about; the replicas
  start in the target set, each still in its own `cpu` cgroup under its cap (cgroup v1: cpuset and cpu are
  separate hierarchies, a process is in one group of each; cgroup v2: the replica's group is made inside the
  target set's); PostgreSQL is moved into the postgres set after it starts. A quota= in the spec would cap the
  replicas together, so it is refused unless --cpus-per-replica is 0. On 2 CPUs `auto` leaves the replicas and
  PostgreSQL one CPU: three replicas at 0.4 CPU oversubscribe it. results.json has the partition, what nproc (and
  a JVM, Go) detect in a replica's set and cap, and each replica's and HAProxy's cgroups read while they ran.

  bench/scaleup.py --target preon --target go --target quarkus --target spring-webflux --target spring-mvc \\
      [--rounds 3] [--quick] [--partition auto] [--out DIR]

Targets take turns, the order rotated each round; report.md gives medians with min–max over the rounds, beside
post 003's figures (bench/reference/003.json). One private PostgreSQL serves the whole run. PREON_BIN names a
preon binary to use instead of building build/preon.
"""
import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

import run
from measure import free_port, log, main_pid, md_table, private_postgres_dir, results_header, rss_kb, save, wrk
from measure import scaleup as su
from measure.cpus import V1_CPU, V1_CPUSET, Partition, cpus_text, report_sentence
from measure.services import Cgroup, build_preon, supervise

FULL = {"spike_s": 30, "start_at_s": 5, "idle_s": 3}
QUICK = {"spike_s": 8, "start_at_s": 2, "idle_s": 2}
PROBE_RATE = 20.0
UP_BOUND_S = 120  # a replica that is not UP (or has served nothing) by then is recorded as a failure
CONNS = 64
REFERENCE = os.path.join(run.HERE, "reference", "003.json")


def ident(pid):
    """(pid, start time in clock ticks): tells a process from a later one with the same PID."""
    return [pid, supervise.start_time(pid)]


def replica_cgroup(part, name, cpus):
    """The cgroup that caps one replica at `cpus` CPU (None for 0: uncapped). Under a cgroup v2 partition it is made
    inside the target set's group (one hierarchy: a process is in one group only, which must then be both)."""
    if not cpus:
        return None
    if part.how == "cgroup v2 cpuset":
        target = part.dirs["target"][0]
        with open(os.path.join(target, "cgroup.subtree_control"), "w") as f:
            f.write("+cpu")
        name = os.path.join(os.path.basename(target), name)
    return Cgroup(name, cpus=cpus)


def in_replica(part, cg, argv):
    """`argv` started as a replica: in the partition's target set and in its own capped cgroup `cg` (or None)."""
    if cg is None:
        return part.wrap("target", argv)
    if part.how == "cgroup v2 cpuset":
        return cg.wrap(argv)  # its group is inside the target set's
    return cg.wrap(part.wrap("target", argv))  # joins its cpu group, then (exec'd) the target cpuset


def placement(pid):
    """Where process `pid` runs, read while it does: its cpuset and cpu cgroups (/proc/PID/cgroup; "unified" is
    cgroup v2's hierarchy), its CPU affinity, whether the cpuset's `tasks` lists it, and its cpu group's quota."""
    groups = {}
    try:
        with open("/proc/%d/cgroup" % pid) as f:
            for line in f:
                _, ctrls, path = line.rstrip("\n").split(":", 2)
                for c in ctrls.split(","):
                    if c in ("cpuset", "cpu", ""):
                        groups[c or "unified"] = path
        out = {"cgroups": groups, "affinity": cpus_text(sorted(os.sched_getaffinity(pid)))}
        if "cpuset" in groups:
            with open(os.path.join(V1_CPUSET + groups["cpuset"], "tasks")) as f:
                out["in_cpuset_tasks"] = str(pid) in f.read().split()
        if "cpu" in groups:
            with open(os.path.join(V1_CPU + groups["cpu"], "cpu.cfs_quota_us")) as f:
                out["cpu_quota_us"] = int(f.read())
    except (OSError, ValueError) as e:  # gone meanwhile, or a hierarchy mounted elsewhere: said, not fatal
        return dict(groups and {"cgroups": groups}, error=str(e))
    return out


def postmaster(pgdir):
    """The PID of the cluster's postmaster (scripts/pg.sh keeps its data in pgdir/data)."""
    with open(os.path.join(pgdir, "data", "postmaster.pid")) as f:
        return int(f.readline())


def detect(part, cpus):
    """What nproc (and, in a partition, a JVM and Go) detect where a replica runs: its set and its cap."""
    cg = replica_cgroup(part, "preon-scaleup-%d-detect" % os.getpid(), cpus)
    try:
        return part.detect(("nproc", "java", "go") if part.enabled else ("nproc",),
                           wrap=lambda argv: in_replica(part, cg, argv))
    finally:
        if cg:
            cg.remove()


def one_run(spec, preon_bin, pgport, pgdir, p, part):
    """One target, one round: the figures, or an "error" with the last log lines, and the PIDs it started."""
    reps = [run.make_target(spec, preon_bin, pgport, pgdir) for _ in su.SERVERS]
    cgroups = []
    for i, t in enumerate(reps):
        cg = replica_cgroup(part, "preon-scaleup-%d-r%d" % (os.getpid(), i + 1), p.get("cpus_per_replica"))
        cgroups += [cg] if cg else []
        t.argv = in_replica(part, cg, t.argv)
    workdir = tempfile.mkdtemp(prefix="preon-scaleup-")
    ha = su.HAProxy(workdir, free_port(), [int(t.url.rsplit(":", 1)[1]) for t in reps])
    out = {"loadavg_before": list(os.getloadavg()), "pids": []}
    probe = None
    try:
        ha.start()
        out["pids"].append(ident(ha.proc.pid))
        # replicas 1 and 2 start together (a JVM under its CPU cap takes tens of seconds): the run's set-up, not timed
        errors = []

        def start(t):
            try:
                t.start(timeout=UP_BOUND_S)
            except Exception as e:  # noqa: BLE001 - raised below, after both have ended
                errors.append(e)
        starters = [threading.Thread(target=start, args=(t,)) for t in reps[:2]]
        for th in starters:
            th.start()
        for th in starters:
            th.join()
        for t in reps[:2]:
            if t.proc is not None:
                out["pids"].append(ident(main_pid(t)))
        if errors:
            raise errors[0]
        if not ha.wait(lambda s: su.is_up(s.get("r1")) and su.is_up(s.get("r2"))
                       and not su.is_up(s.get("r3")), UP_BOUND_S):
            raise RuntimeError("replicas 1 and 2 not UP (and slot 3 DOWN) in HAProxy within %ds: %s"
                               % (UP_BOUND_S, ha.stats()))
        probe = su.Probe(ha.port, "/fruits/1", PROBE_RATE)
        probe.start()
        time.sleep(p["idle_s"])
        spike, res = time.monotonic(), {}
        loader = threading.Thread(target=lambda: res.update(wrk("http://127.0.0.1:%d/fruits/1" % ha.port, CONNS,
                                                                p["spike_s"], threads=2)))
        loader.start()
        time.sleep(p["start_at_s"])
        t0 = time.monotonic()
        reps[2].spawn()  # not polled: only HAProxy talks to it
        out["pids"].append(ident(reps[2].proc.pid))
        up = first = None
        while time.monotonic() < t0 + UP_BOUND_S and (up is None or first is None):
            if not reps[2].alive():
                break
            now, row = time.monotonic(), ha.stats().get("r3", {})
            if up is None and su.is_up(row):
                up = now
            if first is None and su.hrsp_2xx(row) > 0:
                first = now
            if not loader.is_alive() and out.get("rss_kb") is None:
                out["rss_kb"] = rss_kb(main_pid(reps[2]))  # the spike has ended
            time.sleep(0.02)
        loader.join(timeout=p["spike_s"] + 70)
        spike_end = spike + p["spike_s"]
        if out.get("rss_kb") is None:
            out["rss_kb"] = rss_kb(main_pid(reps[2]))
        out["placement"] = dict({n: placement(main_pid(t)) for n, t in zip(su.SERVERS, reps)},
                                haproxy=placement(ha.proc.pid), postgres=placement(postmaster(pgdir)))
        if ident(main_pid(reps[2])) not in out["pids"]:  # run.sh may have started it as a child
            out["pids"].append(ident(main_pid(reps[2])))
        probe.stop()
        s = probe.samples
        out.update({
            "start_to_up_s": round(up - t0, 3) if up else None,
            "start_to_first_2xx_s": round(first - t0, 3) if first else None,
            "p95_idle_ms": su.window_p95_ms(s, spike - p["idle_s"], spike),
            "p95_during_ms": su.window_p95_ms(s, spike, min(first or spike_end, spike_end)),
            "p95_after_ms": su.window_p95_ms(s, first, spike_end) if first and first < spike_end else None,
            "buckets_from_spike_ms": su.buckets_ms(s, spike, spike_end),
            "buckets_from_start_ms": su.buckets_ms(s, t0, spike_end),
            "probe_failed": sum(1 for _, _, st in s if st is None or not 200 <= st < 300),
            "probe_requests": len(s),
            "rps": res.get("rps"), "requests": res.get("requests"), "non2xx": res.get("non2xx"),
            "socket_errors": res.get("socket_errors"), "wrk_errors": res.get("errors"),
        })
        out["recovery_s"] = su.recovery_s(out["buckets_from_start_ms"], out["p95_idle_ms"])
        if first is None:
            out["error"] = "replica 3 %s within %ds of its start" % (
                "exited" if not reps[2].alive() else "served no 2xx through HAProxy", UP_BOUND_S)
            out["log_tail"] = reps[2].log_tail()
    except Exception as e:  # noqa: BLE001 - recorded; the other targets and rounds still run
        out["error"] = str(e)
        out["log_tail"] = "\n".join(x for x in (ha.log_tail(), *(t.log_tail() for t in reps)) if x)
    finally:
        if probe:
            probe.stop()
        for t in reps:
            t.stop()
            if os.path.exists(t.log_path):
                os.unlink(t.log_path)  # its last lines are in results.json when it failed
        ha.stop()
        for cg in cgroups:
            cg.remove()
        shutil.rmtree(workdir, ignore_errors=True)
        out["loadavg_after"] = list(os.getloadavg())
    return out


def summary(runs):
    """Per figure: median and min–max over the rounds that measured it."""
    keys = ("start_to_up_s", "start_to_first_2xx_s", "p95_idle_ms", "p95_during_ms", "p95_after_ms", "recovery_s",
            "rps", "non2xx", "socket_errors", "rss_kb", "probe_failed")
    out = {k: su.spread([r.get(k) for r in runs]) for k in keys}
    out["rounds"] = len(runs)
    out["no_recovery"] = sum(1 for r in runs if "error" not in r and r.get("recovery_s") is None)
    out["errors"] = [r["error"] for r in runs if "error" in r]
    return out


def cell(s, f="%.2f", scale=1.0):
    if not s:
        return "-"
    text = f % (s["median"] * scale)
    return text if s["min"] == s["max"] else "%s (%s–%s)" % (text, f % (s["min"] * scale), f % (s["max"] * scale))


def post_cell(name, ref):
    """Post 003's figures for the stack the post measured (Quarkus JVM; its native build is not a target here)."""
    if name != "quarkus":
        return "-"
    rec = {(r["system"], r["metric"], r["value"]) for r in ref["records"]}
    start = sorted(v for s, m, v in rec if s == "Quarkus JVM" and m == "pod_startup_time")
    first = [v for s, m, v in rec if s == "Quarkus JVM" and m == "first_request_time"]
    if not start or not first:
        return "-"
    return "Quarkus JVM: pod start %g–%g s, first request %g s" % (start[0], start[-1], first[0])


def cap_sentence(cpus, partitioned=False):
    if not cpus and partitioned:
        return "Replicas uncapped (they share the target's CPU set)."
    if not cpus:
        return "Replicas uncapped (they share the machine's cores with wrk, HAProxy and PostgreSQL)."
    return ("Each replica in a cgroup of its own capped at %g CPU (a pod's CPU limit), so that replica 3 adds "
            "capacity." % cpus)


def render(results):
    ref = json.load(open(REFERENCE))
    lines = ["# Scale-up under a spike (post 003)", "",
             "%s, %s × %s, load average before %s, after %s. Command: `%s`." % (
                 results["date"], results["cpus"], results["machine"],
                 " ".join("%.2f" % x for x in results["loadavg_start"]),
                 " ".join("%.2f" % x for x in results["loadavg_end"]), results["command"]), ""]
    if "partition" in results:  # a run from before it has none, and its report stays as it was
        where = "in a replica's set" + (" and cap" if results["params"].get("cpus_per_replica") else "")
        lines += [report_sentence(results["partition"], where), ""]
    lines += ["Per target and round: HAProxy (roundrobin, `option httpchk GET /fruits/1`, `inter 200 fall 2 rise 1`, "
              "retry-on conn-failure, retries 2) in front of 3 slots; replicas 1 and 2 UP; wrk -t2 -c%d for %d s on "
              "/fruits/1 through HAProxy, a probe at %g req/s on a connection of its own; replica 3 exec'd %d s into "
              "the spike. A replica is in when it serves the DB path (the same check for every target). %s p95 idle: "
              "the probe alone, %d s before the spike; during: from the spike's start to replica 3's first 2xx; "
              "after: from then to the spike's end. Recovery: seconds from replica 3's start to the start of the "
              "first 1-s bucket after which the probe's p95 stays below %g × the idle p95 until the spike ends; "
              "\"no recovery\" when the last second is still above it. Medians over %d round(s), min–max in "
              "brackets." % (CONNS, results["params"]["spike_s"], PROBE_RATE, results["params"]["start_at_s"],
                             cap_sentence(results["params"].get("cpus_per_replica"),
                                          results.get("partition", {}).get("enabled")),
                             results["params"]["idle_s"], su.RECOVERY_FACTOR, results["rounds"]), ""]
    header = ["target", "start → UP (s)", "start → first 2xx (s)", "p95 idle (ms)", "p95 during (ms)",
              "p95 after (ms)", "recovery (s)", "req/s", "non-2xx", "socket errors", "RSS new replica (MiB)",
              "post 003 (as published)"]
    rows = []
    for name, s in results["summary"].items():
        rec = cell(s["recovery_s"], "%.0f")
        if s["no_recovery"]:
            rec = "no recovery" if rec == "-" else rec + ", no recovery in %d of %d" % (s["no_recovery"], s["rounds"])
        rows.append([name, cell(s["start_to_up_s"]), cell(s["start_to_first_2xx_s"]), cell(s["p95_idle_ms"], "%.1f"),
                     cell(s["p95_during_ms"], "%.1f"), cell(s["p95_after_ms"], "%.1f"), rec,
                     cell(s["rps"], "%.0f"), cell(s["non2xx"], "%.0f"), cell(s["socket_errors"], "%.0f"),
                     cell(s["rss_kb"], "%.1f", 1 / 1024.0), post_cell(name, ref)])
    lines.append(md_table(header, rows))
    errs = ["- %s: %s" % (n, e) for n, s in results["summary"].items() for e in s["errors"]]
    if errs:
        lines += ["Failures (results.json has each one's last log lines):", ""] + errs + [""]
    lines += ["Post 003's own figures (bench/reference/003.json; %s, %s, %s): " % (
        ref["hardware"], ref["tool"], ref["date"]), ""]
    post = [[r["system"], r["metric"], "%g %s" % (r["value"], r["unit"]), r.get("note", "")]
            for r in ref["records"] if r["metric"] in ("pod_startup_time", "first_request_time", "second_request_time")]
    lines.append(md_table(["system", "metric", "value", "as the post wrote it"], post))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", action="append", default=[], choices=["preon"] + sorted(run.PEER_TARGETS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="an 8-s spike, replica 3 at 2 s")
    ap.add_argument("--cpus-per-replica", type=float, default=0.4,
                    help="each replica's CPU cap (a cgroup of its own; 0: uncapped)")
    ap.add_argument("--partition", default="off",
                    help="CPU sets for the roles: off (the default), auto (wrk, the probe and HAProxy on the first "
                         "CPU, the replicas and PostgreSQL on the rest) or load=LIST,target=LIST,postgres=LIST "
                         "(bench/measure/cpus.py)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--render", metavar="DIR", help="only rewrite DIR's report.md from its results.json")
    args = ap.parse_args()
    if args.render:
        with open(os.path.join(args.render, "results.json")) as f:
            results = json.load(f)
        save(results, render(results), args.render)
        return
    if args.rounds < 1:
        ap.error("--rounds: at least 1")
    try:
        part = Partition.parse(args.partition)
    except ValueError as e:
        ap.error(str(e))
    if part.quota is not None and args.cpus_per_replica:
        ap.error("--partition quota= would cap the replicas together: their cap is --cpus-per-replica (0 for none)")
    # SIGTERM unwinds like Ctrl-C: every `finally` stops what it started (replicas, HAProxy, PostgreSQL)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    names = args.target or ["preon"]
    p = dict(QUICK if args.quick else FULL, cpus_per_replica=args.cpus_per_replica)
    preon_bin = os.environ.get("PREON_BIN") or build_preon() if "preon" in names else None
    results = results_header(args, quick=args.quick, params=p, rounds=args.rounds, targets=names, runs={})
    with part, private_postgres_dir("synchronous_commit = off") as (pgdir, pgport):
        part.place_postgres(pgdir)
        results["partition"] = part.record(detect(part, args.cpus_per_replica))
        for r in range(args.rounds):
            k = r % len(names)
            for name in names[k:] + names[:k]:
                log("scale-up round %d/%d: %s" % (r + 1, args.rounds, name))
                res = one_run(run.parse_target(name), preon_bin, pgport, pgdir, p, part)
                res["round"] = r + 1
                results["runs"].setdefault(name, []).append(res)
                log("%s: %s" % (name, res.get("error") or "start → first 2xx %ss, recovery %s" % (
                    res.get("start_to_first_2xx_s"), res.get("recovery_s"))))
    results["loadavg_end"] = list(os.getloadavg())
    results["summary"] = {n: summary(results["runs"][n]) for n in names}
    out = args.out or os.path.join(run.HERE, "results", time.strftime("%Y%m%d-%H%M%S") + "-scaleup")
    save(results, render(results), out)


if __name__ == "__main__":
    main()
