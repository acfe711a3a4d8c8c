#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The table of what the load and fault tests measured: every test appends one JSON record per result to the file
PREON_RECORD names (scripts/test.sh: build/reliability.jsonl; the long form, tests/integration/long.py: its
results.jsonl); this prints them as docs/reliability.md's table.

  python3 bench/reliability.py build/reliability.jsonl [more.jsonl ...]

(The long form itself is run by the tests: /usr/bin/python3 tests/integration/long.py [--only soak,hostile].)
"""
import argparse
import json
import sys

from measure import md_table


def fmt_statuses(d):
    return ", ".join("%s: %s" % (k, "{:,}".format(v)) for k, v in sorted(d.items())) or "none"


def describe(r):
    """One table row for a record: (test, load, duration, result)."""
    t, secs = r["test"], "%.1f s" % r["seconds"] if "seconds" in r else "–"
    if t == "soak":
        return ("mixed soak", "{:,} requests /hello + /fruits, {} connections".format(r["requests"], r["conns"]), secs,
                "%s; socket errors %d; 503s counted as backpressure %d; RSS max %d → %d KiB (1st → 2nd half)" % (
                    fmt_statuses(r["statuses"]), r["socket_errors"], r["backpressure_503"],
                    r["rss_first_half_max_kib"], r["rss_second_half_max_kib"]))
    if t == "10k-connections":
        return ("connections at once", "{:,} connections, then one GET {} each".format(r["conns"], r["path"]), secs,
                fmt_statuses(r["outcomes"]))
    if t == "max-connections":
        return ("over max_connections", "{:,} connections, max_connections {:,}".format(r["conns"], r["max_connections"]),
                secs, "%s; refusals counted %d" % (fmt_statuses(r["outcomes"]), r["counted_refused"]))
    if t == "out-of-descriptors":
        return ("over the open files limit", "{:,} connections held, nofile {:,}".format(r["conns"], r["nofile"]), secs,
                "%s; refusals counted %d; CPU while full %.2f s/s" % (fmt_statuses(r["outcomes"]), r["counted_refused"],
                                                                     r["cpu_while_full_s"]))
    if t == "postgres-killed":
        return ("PostgreSQL killed", "%d × kill -m immediate + restart, %d clients" % (r["rounds"], r["clients"]), secs,
                "%s; back to 100%% 200 after %s s" % (fmt_statuses(r["statuses"]), " / ".join(map(str, r["recovery_s"]))))
    if t.startswith("hostile-"):
        what = {k: v for k, v in r.items() if k not in ("test", "build", "date", "seconds", "probe_requests", "load",
                                                          "probe_p99_ms", "probe_failures", "statuses", "requests")}
        parts = ["{:,} requests".format(r["requests"])] if "requests" in r else []
        parts += [fmt_statuses(r["statuses"])] if "statuses" in r else []
        parts += ["%s %s" % (k.replace("_", " "), "{:,}".format(v) if isinstance(v, int) else v) for k, v in what.items()]
        return (t[len("hostile-"):], r.get("load", ""), secs, "%s; /hello probe p99 %.2f ms over %d requests, %d failed" % (
            ", ".join(parts), r["probe_p99_ms"], r["probe_requests"], r["probe_failures"]))
    if t == "sigterm-under-load":
        e, c = r["wrk_errors"], r["clients"]
        return ("SIGTERM under load", "wrk 16 connections + 8 counting clients on /fruits, SIGTERM after 1.5 s", secs,
                "wrk: %s, read errors %d, timeouts %d (refused reconnects %d); clients: %d answered 200, %d lost, %d "
                "not 200, %d refused after the drain; exit %d" % (
                    fmt_statuses(r["wrk_statuses"]), e["read"], e["timeout"], e["connect"] + e["write"], c["ok"],
                    c["lost"], c["bad"], c["refused"], r["exit_status"]))
    if t in ("burst", "closed-loop-overload"):
        load = ("{:,} connections, then one GET {} each, {} rounds".format(r["conns"], r["path"], r["rounds"])
                if t == "burst" else "wrk -c{:,} on {} for {} s".format(r["conns"], r["path"], r["seconds"]))
        return ("overload, slow table: " + ("a burst" if t == "burst" else "closed loop"), load, secs,
                "%s; queries run %s for %s served; queue depth after %s" % (
                    fmt_statuses(r["statuses"]), "{:,}".format(r["queries_run"]), "{:,}".format(r["queries_served"]),
                    r["queue_depth_after"]))
    if t == "dropped-table":
        return ("dropped table", "table fortune dropped; 8 clients × 5 requests on one pipeline (sync=%s)" % r["sync"],
                secs, "; ".join("%s %s" % (p, fmt_statuses(s)) for p, s in r["answers"].items()))
    if t == "user-without-rights":
        return ("user without rights", "preon connects as a role with no grants", secs,
                "; ".join("%s %s" % (p, s) for p, s in r["answers"].items()) + "; /hello, /json 200")
    if t == "abandoned-queries":
        return ("abandoned queries", "a lock on fruits held ~4 s, /fruits asked every 0.25 s, query timeout 300 ms, one "
                "thread", secs, "preon's backends waiting on the lock, per sample: with client_check_ms 1000: %s (max %d)%s" % (
                    " ".join(map(str, r["checked"])), max(r["checked"]),
                    "; with 0: %s (max %d)" % (" ".join(map(str, r["unchecked"])), max(r["unchecked"]))
                    if r.get("unchecked") else ""))
    if t == "password-never-shown":
        return ("password never shown", "%d secrets (password right / wrong / database down, URI and key=value, "
                "sslpassword) at log level debug with the access log" % r["secrets"], secs,
                "{:,} texts ({:,} bytes: logs, answers, --check-config, errors) searched; shown {}".format(
                    r["texts_checked"], r["bytes_checked"], r["shown"]))
    if t == "tls-load":
        wrk = "; wrk 32 connections: {:,} answers ({}); req/s over TLS {} vs plain {}, in turns".format(
            r["wrk_requests"], fmt_statuses(r["wrk_statuses"]), " / ".join(map(str, r["wrk_rps_tls"])),
            " / ".join(map(str, r["wrk_rps_plain"]))) if r["wrk_requests"] else ""
        return ("TLS under load", "sslmode=verify-full; %d clients × `/fruits` (~100 KiB), `/queries?queries=500`, `/fortunes` "
                "(~60 KiB), `/db`; then wrk" % r["clients"], secs,
                "{:,} answers ({:.1f} MB), every one 200 and equal to a plain connection's; no stall{}".format(
                    r["requests"], r["bytes"] / 1e6, wrk))
    if t == "tls-16k-records":
        return ("TLS, full-size records", "a TLS front writing 16 KiB records; `/fruits`, `/fortunes`, "
                "`/queries?queries=500` one at a time", secs, fmt_statuses(r["statuses"]))
    if t == "failover":
        return ("failover", "%d × (primary stopped `-m immediate`, standby promoted), %s, sync replication" % (
            r["rounds"], r["clients"]), secs,
                "%s; %d writes answered 201, of which not on the new primary: %s; back to 100 %% 2xx %s s after the promotion began, "
                "%s s after `pg_ctl promote` returned (it took %s s); idle CPU after: %s s/s; sockets left: %s" % (
                    fmt_statuses(r["statuses"]), r["writes_201"], " / ".join(map(str, r.get("false_201", []))),
                    " / ".join(map(str, r["recovery_after_promote_s"])),
                    " / ".join(map(str, r.get("after_promoted_s", []))), " / ".join(map(str, r["promote_s"])),
                    " / ".join(map(str, r["idle_cpu"])),
                    " / ".join(", ".join("%s %d" % kv for kv in sorted(x.items()) if kv[0] != "LISTEN") for x in r.get("sockets", []))))
    if t.startswith("pgbouncer-"):
        return ("PgBouncer, %s mode" % t[len("pgbouncer-"):], "pool of %d; preon %s, database.pooler: %s" % (
            r["pool_size"], r["preon"], r["pooler"]), secs, "%s; writes %s; afterwards %s; %d clients on %d server "
                "connections" % (fmt_statuses(r["statuses"]), fmt_statuses(r["writes"]), fmt_statuses(r["after"]),
                                 r["pgbouncer_clients"], r["pgbouncer_servers"]))
    if t == "stack-standby-stops":
        return ("a standby stops", "deploy/stack, 4 readers + 2 writers through HAProxy", secs,
                "%s; preon's connections on the other standby after: %d" % (fmt_statuses(r["statuses"]),
                                                                          r["preon_backends_on_other_standby"]))
    if t == "stack-rolling-restart":
        return ("rolling restart", "deploy/stack, %d replicas, HAProxy %s, drain_delay_ms %d, %d round(s)" % (
            r["replicas"], r["haproxy"], r["drain_delay_ms"], r["rounds"]), secs,
                "failed per round: %s; %s" % (" / ".join(map(str, r["failed"])),
                                              " / ".join(fmt_statuses(s) for s in r["statuses"])))
    if t == "stack-scale-up":
        return ("scale-up under a spike", "deploy/stack, %d replicas + 1, wrk %d connections" % (
            r["replicas_before"], r["wrk_conns"]), secs, "first 200 through HAProxy %.2f s after the start; wrk %s; probe "
                "p95 %s ms before, %s ms per second after" % (r["start_to_first_200_s"], fmt_statuses(r["wrk_statuses"]),
                                                              r["probe_p95_ms_before"], " / ".join(map(str, r["probe_p95_ms_after_per_s"]))))
    if t == "stack-leader-kill":
        return ("Patroni leader killed", "deploy/stack, %d × SIGKILL (Patroni + postmaster), %s" % (r["rounds"], r["clients"]),
                secs, "%s; writes answered 201: %s, of which not on the new primary: %s; new leader after %s s; 100 %% "
                "2xx after %s s" % (" / ".join(fmt_statuses(s) for s in r["statuses"]), " / ".join(map(str, r["writes_201"])),
                                    " / ".join(map(str, r["false_201"])), " / ".join(map(str, r["new_leader_s"])),
                                    " / ".join(map(str, r["recovery_s"]))))
    if t == "histories":
        form = " (%s)" % r["form"] if r.get("form", "shipped") != "shipped" else ""
        piped = (", {:,} of them pipelined, {:,} abandoned with the answer pending".format(r["pipelined"], r["abandoned"])
                 if "pipelined" in r else "")
        return ("history under %s%s" % (r["nemesis"], form),
                "8 clients, %d round(s), {:,} operations{}".format(r["operations"], piped) % r["rounds"],
                secs, "definite {:,}, 503 {:,}, indeterminate {:,}; {}".format(r["definite"], r["nothing"],
                                                                             r["indeterminate"], r["verdict"]))
    return (t, "", secs, json.dumps({k: v for k, v in r.items() if k not in ("test", "build", "date")}))


def render(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            rows += [json.loads(line) for line in f if line.strip()]
    table = []
    for r in rows:
        name, load, secs, result = describe(r)
        table.append([name, r.get("build", ""), load, secs, result, r.get("date", "")])
    return md_table(["test", "build", "load", "duration", "result", "date"], table)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--render", action="store_true", help="(the default; kept for older command lines)")
    ap.add_argument("jsonl", nargs="+", help="files of recorded results")
    args = ap.parse_args()
    sys.stdout.write(render(args.jsonl))
    return 0


if __name__ == "__main__":
    sys.exit(main())
