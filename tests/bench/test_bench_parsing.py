# SPDX-License-Identifier: MIT
"""bench/'s parsing of wrk and ab output, its target specs and its report, on recorded outputs."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import subprocess  # noqa: E402

from measure.container import parse_limits  # noqa: E402
from measure import md_table, metric_table, parse_ab, parse_pgbench, parse_wrk  # noqa: E402
from run import parse_target, render  # noqa: E402
from measure import cost_report, cpuprofile, packets, rounds, throughput_report  # noqa: E402
from measure.proc import tree  # noqa: E402

BENCH = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))

WRK = """Running 2s test @ http://127.0.0.1:8080/hello
  2 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   652.34us    1.45ms  24.61ms   91.12%
    Req/Sec    91.02k     6.31k  101.30k    72.50%
  Latency Distribution
     50%   71.00us
     75%  346.00us
     90%    2.10ms
     99%    6.80ms
  362188 requests in 2.00s, 53.19MB read
  Socket errors: connect 0, read 3, write 0, timeout 2
  Non-2xx or 3xx responses: 7
Requests/sec: 181035.21
Transfer/sec:     26.58MB
p95_us=4210
"""

AB = """Server Software:        preon/0.1.0
Concurrency Level:      100
Time taken for tests:   0.332 seconds
Complete requests:      10000
Failed requests:        4
   (Connect: 0, Receive: 0, Length: 4, Exceptions: 0)
Non-2xx responses:      4
Requests per second:    30096.32 [#/sec] (mean)
Time per request:       3.323 [ms] (mean)
Time per request:       0.033 [ms] (mean, across all concurrent requests)

Percentage of the requests served within a certain time (ms)
  50%      3
  99%      6
 100%      7 (longest request)
"""


class ParsingTest(unittest.TestCase):
    def test_wrk(self):
        r = parse_wrk(WRK)
        self.assertAlmostEqual(r["rps"], 181035.21)
        self.assertAlmostEqual(r["p50"], 0.071)
        self.assertAlmostEqual(r["p75"], 0.346)
        self.assertAlmostEqual(r["p90"], 2.10)
        self.assertAlmostEqual(r["p99"], 6.80)
        self.assertAlmostEqual(r["p95"], 4.21)
        self.assertEqual(r["requests"], 362188)
        self.assertEqual(r["socket_errors"], 5)
        self.assertEqual(r["non2xx"], 7)
        self.assertAlmostEqual(r["ok_rps"], (362188 - 7) / 2.0)

    def test_wrk_failed_run(self):
        r = parse_wrk("unable to connect to 127.0.0.1:1 Connection refused\n")
        self.assertEqual((r["rps"], r["p99"], r["requests"], r["non2xx"]), (0.0, None, 0, 0))

    def test_ab(self):
        r = parse_ab(AB)
        self.assertAlmostEqual(r["rps"], 30096.32)
        self.assertAlmostEqual(r["mean_ms"], 3.323)
        self.assertEqual((r["max_ms"], r["complete"], r["failed"], r["non2xx"]), (7, 10000, 4, 4))

    def test_every_peer_target_has_its_folder(self):
        # a name --target takes is a bench/peers/ folder with its one-command build and its run script
        import run  # noqa: E402 - bench/run.py, which parse_target comes from
        for name in run.PEER_TARGETS:
            for script in ("build.sh", "run.sh"):
                path = os.path.join(run.PEERS, name, script)
                self.assertTrue(os.access(path, os.X_OK), path)

    def test_target_specs(self):
        preon = parse_target("preon")
        self.assertEqual((preon["name"], preon["preon"], preon["db-path"]), ("preon", True, "/fruits"))
        self.assertIn("cmake --build", preon["build"])
        artifacts = {"go": "go-peer", "quarkus": "quarkus-app", "spring-webflux": "spring-webflux-peer.jar",
                     "spring-mvc": "spring-mvc-peer.jar", "quarkus-native": "quarkus-peer-runner"}
        for peer, cap in (("go", "GOMEMLIMIT={mib}MiB"), ("quarkus", "JAVA_OPTS=-Xmx{mib}m"),
                          ("spring-webflux", "JAVA_OPTS=-Xmx{mib}m"), ("spring-mvc", "JAVA_OPTS=-Xmx{mib}m"),
                          ("quarkus-native", "NATIVE_OPTS=-Xmx{mib}m")):
            t = parse_target(peer)
            self.assertEqual((t["name"], t["peer"], t["db-path"], t["cap"]), (peer, peer, "/fruits", cap))
            self.assertTrue(t["build"].endswith("bench/peers/%s/build.sh" % peer), t["build"])
            self.assertTrue(t["artifact"].endswith("bench/peers/%s/build/%s" % (peer, artifacts[peer])),
                        t["artifact"])
        t = parse_target("name=q,start='java {cap} -jar q.jar',url=http://127.0.0.1:9,build='gradle build',cap=-Xmx{mib}m,"
                         "artifact=build/q.jar,clean='rm -rf build'")
        self.assertEqual((t["build"], t["cap"], t["artifact"], t["clean"]), ("gradle build", "-Xmx{mib}m", "build/q.jar", "rm -rf build"))
        t = parse_target("name=quarkus-native,start='./app-runner -Dx=1,2',url=http://127.0.0.1:8081,db-path=/fruits")
        self.assertEqual(t, {"name": "quarkus-native", "start": "./app-runner -Dx=1,2", "url": "http://127.0.0.1:8081",
                             "db-path": "/fruits"})
        self.assertEqual(parse_target("name=go,start=./go,url=http://127.0.0.1:9")["db-path"], "/fruits")
        self.assertEqual(parse_target("name=go,start='sh run.sh',url=http://h:1,binary=/tmp/go")["binary"], "/tmp/go")
        for bad in ("name=x", "name=x,start=y", "name=x,start=y,url=z,color=red", "oops"):
            with self.assertRaises(ValueError):
                parse_target(bad)

    def test_preon_target_with_settings(self):
        t = parse_target("preon,name=preon-quiet,env='PREON_METRICS_ENABLED=false PREON_LOG_ACCESS=false'")
        self.assertTrue(t["preon"])
        self.assertEqual(t["name"], "preon-quiet")
        self.assertEqual(t["env"], "PREON_METRICS_ENABLED=false PREON_LOG_ACCESS=false")
        self.assertNotIn("start", t)
        self.assertEqual(parse_target("preon,env='PREON_DATABASE_SYNC=request'")["name"], "preon")
        with self.assertRaises(ValueError):
            parse_target("preon,colour=blue")

    def test_image_target_with_env_and_docker_run_flags(self):
        from run import make_target
        t = make_target(parse_target("name=q,image=preon-peer-quarkus-native-micro,env='JVM_MEMORY=none',"
                                     "run-args='--security-opt seccomp=unconfined'"), None, 5432)
        flags = t.flags()
        self.assertIn("JVM_MEMORY=none", flags)
        self.assertEqual(flags[-2:], ["--security-opt", "seccomp=unconfined"])
        self.assertEqual(t.limited(mem_mib=100).flags()[-2:], ["--security-opt", "seccomp=unconfined"])
        self.assertNotIn("--security-opt", make_target(parse_target("name=q,image=i"), None, 5432).flags())

    def test_limits_with_an_uncapped_row(self):
        self.assertEqual(parse_limits("none;mem=2m;cpus=0.5"), [{"mem_mib": None, "cpus": None},
                                                                 {"mem_mib": 2, "cpus": None},
                                                                 {"mem_mib": None, "cpus": 0.5}])
        with self.assertRaises(ValueError):
            parse_limits("none=3")

    def test_reliability_records_rendered(self):
        import json
        import tempfile
        import reliability
        rec = {"test": "postgres-killed", "build": "release", "date": "2026-11-30", "seconds": 15.5, "rounds": 3,
               "clients": 16, "statuses": {"200": 59184, "503": 35687}, "recovery_s": [0.47, 0.38]}
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write(json.dumps(rec) + "\n")
        try:
            lines = reliability.render([f.name]).splitlines()
        finally:
            os.unlink(f.name)
        self.assertEqual(lines[0], "| test | build | load | duration | result | date |")
        self.assertEqual(lines[2], "| PostgreSQL killed | release | 3 × kill -m immediate + restart, 16 clients | 15.5 s | "
                                   "200: 59,184, 503: 35,687; back to 100% 200 after 0.47 / 0.38 s | 2026-11-30 |")

    def test_tables(self):
        self.assertEqual(md_table(["a", "b"], [[1, None], ["x|y", "z"]]),
                         "| a | b |\n|---|---|\n| 1 | - |\n| x\\|y | z |\n")
        t = metric_table(["p", "q"], [("rps", [200, 100], "%.0f", True), ("none", [None, None], "%d", True),
                                      ("errors", [0, 3], "%d", False)], ["published"])
        self.assertEqual(t.splitlines(), ["| metric | p | q | p / q | published |", "|---|---|---|---|---|",
                                          "| rps | 200 | 100 | 2.00× |", "| errors | 0 | 3 | - |"])

    def test_report(self):
        results = {"date": "2026-11-29 00:00:00 UTC", "cpus": 2, "quick": True, "params": {}, "targets": ["preon", "go"],
                   "scenarios": {
                       "hello": {"preon": parse_wrk(WRK), "go": dict(parse_wrk(WRK), rps=90517.6)},
                       "db": {"preon": {"cold": parse_ab(AB), "warm": parse_ab(AB)},
                              "go": {"error": "go exited with 3 at start", "log_tail": "boom\n"}},
                       "startup": {"preon": {"hello_ms": 7.5, "db_ms": 10.4}, "go": {"hello_ms": 15.0, "db_ms": 20.8}}}}
        md = render(results)
        self.assertIn("| metric | preon | go | preon / go |", md)
        self.assertIn("| requests/s | 181035 | 90518 | 2.00× |", md)
        self.assertIn("| non-2xx answers (503 = backpressure) | 7 | 7 | - |", md)
        self.assertIn("| exec (docker run) → first 200 on /hello (ms) | 7.5 | 15.0 | 0.50× |", md)
        self.assertIn("| warm requests/s | 30096 | - | - |", md)
        self.assertIn("**go: go exited with 3 at start**", md)
        self.assertIn("      boom", md)  # the failed target's last log lines


PGBENCH = """pipeline mode: on
number of clients: 2
number of threads: 2
duration: 5 s
number of transactions actually processed: 77190
number of failed transactions: 0 (0.000%)
latency average = 0.129 ms
initial connection time = 3.021 ms
tps = 15438.046251 (without initial connection time)
"""


def medians(**by):
    """{test: {target: rps}} → the medians bench/throughput.py records."""
    return {k: {n: {"rps": v, "per_round": [v], "p99": 1.0, "c1_p50": 0.1, "c1_p99": 0.2, "errors": 0}
                for n, v in t.items()} for k, t in by.items()}


class ThroughputReportTest(unittest.TestCase):
    def test_pgbench(self):
        self.assertEqual(parse_pgbench(PGBENCH), {"tps": 15438.046251, "transactions": 77190, "failed": 0})
        self.assertEqual(parse_pgbench("connection to server failed\n")["tps"], 0.0)

    def test_rates(self):
        self.assertEqual([throughput_report.rate(v) for v in (1370000, 126040, 30140, 6871, 961, None)],
                         ["1.37M", "126.0k", "30.1k", "6.87k", "961", "–"])

    def test_table(self):
        plain = medians(plaintext={"preon": 126000, "tfb-h2o": 136800, "bare": 136500},
                        db={"preon": 45000, "tfb-h2o": 27100, "pgbench": 247000},
                        fruits={"preon": 50000, "go-gin": 16000, "pgbench": 277000},
                        hello={"preon": 120000, "go-gin": 60000, "bare": 130000})
        results = {"date": "2026-11-30 20:00:00 UTC", "cpus": 2, "command": "bench/throughput.py", "postgres": "x",
                   "args": {"duration": 5, "c1_duration": 2, "rounds": 3}, "loadavg_start": [1, 1, 1],
                   "loadavg_end": [2, 2, 2],
                   "status": {"preon": "ok", "tfb-h2o": "ok", "go-gin": "ok", "bare": "ok", "pgbench": "ok"},
                   "variants": {"plain": {"medians": plain, "peak_rss_kb": {"preon": 10240}},
                                "pgss": {"medians": medians(db={"preon": 36000, "tfb-h2o": 20000}),
                                         "peak_rss_kb": {}, "pgss_statements": 9}}}
        md = throughput_report.render(results)
        self.assertIn("| /plaintext (c50) | 126.0k | 136.8k | 0.92× | bare epoll responder: 136.5k (preon at 0.92×) "
                      "| ≥ 1.0× TFB h2o: missed (0.92×) |", md)
        self.assertIn("| /db (c64) | 45.0k | 27.1k | 1.66× | pgbench, 16 per Sync: 247.0k queries/s (preon at 0.18×) "
                      "| ≥ 1.0× TFB h2o: met (1.66×); ≥ 0.6× pgbench, 1 query per transaction: – |", md)
        self.assertIn("| /fruits (c100) vs go-gin | 50.0k | gin 16.0k | 3.12× gin | pgbench, 16 per Sync: 277.0k "
                      "queries/s (preon at 0.18×); preon's /hello: 120.0k (0.42×) | ≥ 3× gin: met (3.12×) |", md)
        self.assertIn("| /hello (c50) vs go-gin | 120.0k | gin 60.0k | 2.00× gin | bare epoll responder: 130.0k "
                      "(preon at 0.92×) | ≥ 0.9× bare responder: met (0.92×) |", md)
        # a test without figures says why: not measured, so neither met nor missed
        self.assertIn("| /json (c64) | – | – | – |  | ≥ 1.0× TFB h2o: – |", md)
        plain["json"] = {"preon": dict(plain["db"]["preon"], rps=99960), "tfb-h2o": dict(plain["db"]["preon"], rps=1e5)}
        self.assertIn("| /json (c64) | 100.0k | 100.0k | 1.00× |  | ≥ 1.0× TFB h2o: missed (0.9996×) |",
                      throughput_report.render(results))
        # the pg_stat_statements table: its own medians, /fruits' /hello from the plain run
        self.assertIn("## Database rows with pg_stat_statements loaded (9 statements tracked)", md)
        self.assertIn("| /db (c64) | 36.0k | 20.0k | 1.80× | pgbench, 16 per Sync: – |", md)
        self.assertIn("preon with pg_stat_statements / without: db 0.80×", md)
        self.assertIn("| plain | 10.0 | – | – | – |", md)
        results["status"]["tfb-h2o"] = "not built"
        del plain["plaintext"]["tfb-h2o"]
        self.assertIn("| /plaintext (c50) | 126.0k | not built | – |", throughput_report.render(results))


class CpuProfileTest(unittest.TestCase):
    # perf script -F pid,ip -G: the server 4100 (and a thread's sample under its pid), PostgreSQL 200 and 201,
    # the idle task, a kworker; kernel addresses from 0xffff800000000000 on
    PERF_SCRIPT = """ 4100  ffffffff815fc5ad
 4100  7f1c2a3b4c5d
 4100  55d0c0ffee00
   201  ffffffff81bb1bf2
   200  5610aa000123
     0  ffffffff8226fbb9
    57  ffffffff81e83068
garbage line
"""

    def test_samples_go_to_whose_they_are(self):
        got = cpuprofile.classify(self.PERF_SCRIPT, {4100}, {200, 201})
        self.assertEqual(got, {"server_user": 2, "server_kernel": 1, "postgres_user": 1, "postgres_kernel": 1,
                               "other": 1, "idle": 1})

    @staticmethod
    def one_run(server_user, server_kernel, postgres, rps):
        us = {"server_user": server_user, "server_kernel": server_kernel, "postgres_user": postgres,
              "postgres_kernel": 0.0, "other": 0.0, "idle": 0.0}
        return {"requests": 1000, "rps": rps, "seconds": 4.0, "busy": 0.99, "samples": {}, "us_per_request": us}

    def test_report_medians_ratio_and_ceiling(self):
        r = self.one_run
        prof = {"status": "ok", "freq": 999, "duration": 4, "rounds": 3, "errors": {},
                "partition": {"sentence": "load generator on CPU 0, target on CPU 1"},
                "servers": {"preon": {"db": [r(2, 8, 10, 50e3), r(2, 8, 9, 51e3), r(3, 8, 10, 49e3)]},
                            "tfb-h2o": {"db": [r(2, 9, 10, 48e3), r(2, 9, 10, 47e3), r(2, 9, 11, 48e3)]}}}
        text = "\n".join(cost_report.profile_section(prof))
        # preon: medians 2 + 8 | 10 + 0 | 0, totals 20, 19, 21; TFB h2o: totals 21, 21, 22 (ranges overlap)
        self.assertIn("| /db | 2.0 + 8.0 \\| 10.0 + 0.0 \\| 0.0 = **20.0 (19.0–21.0)** (50000 (49000–51000)/s, "
                      "CPU 99% busy, 0% stolen) | 2.0 + 9.0 \\| 10.0 + 0.0 \\| 0.0 = **21.0 (21.0–22.0)**", text)
        # ratio of the totals within noise; preon's code 2 of 20; the ceiling 21 / (20 - 2)
        self.assertIn("| 0.95× (within noise) | preon 10%, TFB h2o 10% | 1.17× |", text)
        self.assertIn("3 rounds", text)
        self.assertEqual(cost_report.profile_section({"status": "perf is not installed"})[-2],
                         "Not measured: perf is not installed.")

    def test_packets_per_request(self):
        self.assertEqual(packets.parse("# started on Fri Dec  4\n\n564236,,net:net_dev_xmit,3244007755,100.00,,\n"),
                         564236)
        self.assertIsNone(packets.parse("<not counted>,,net:net_dev_xmit,0,0.00,,\n"))
        self.assertIsNone(packets.parse(""))

        def run(server, postgres):
            g = self.one_run(2, 8, 10, 8e3)
            g["packets_per_request"] = {"server": server, "postgres": postgres}
            return g
        prof = {"status": "ok", "freq": 999, "duration": 4, "rounds": 3, "errors": {},
                "partition": {"sentence": "load generator on CPU 0, target on CPU 1"},
                "servers": {"preon": {"queries": [run(1.3, 15.1), run(1.4, 19.0), run(1.3, 18.7)]},
                            "tfb-h2o": {"queries": [run(1.5, 6.6), run(1.5, None), run(1.6, 9.4)]}}}
        text = "\n".join(cost_report.profile_section(prof))
        # a round perf could not count leaves its server's column empty rather than a median of the others
        self.assertIn("| /queries=20 | 1.3 (1.3–1.4) | 18.7 (15.1–19.0) | 1.5 (1.5–1.6) | - |", text)
        for g in prof["servers"]["preon"]["queries"] + prof["servers"]["tfb-h2o"]["queries"]:
            del g["packets_per_request"]  # records made before packets were counted: no table
        self.assertNotIn("Packets sent per request", "\n".join(cost_report.profile_section(prof)))

    def test_throughput_round_by_round(self):
        # medians alone overlap (preon 96-110 against 90-104); divided round by round, every round is above 1.05
        tp = {"out": "throughput", "partition": {"sentence": "load generator on CPU 0"}, "duration": 4, "rounds": 3,
              "tfb_h2o": "/tmp/anchors/tfb-h2o", "status": {},
              "per_round": {"db": {"preon": [110.0, 96.0, 104.0], "tfb-h2o": [104.0, 90.0, 98.0],
                                   "tfb-h2o-m2": [100.0, 80.0, 90.0]}}}
        row = [line for line in cost_report.throughput_section(tp) if line.startswith("| /db")][0]
        self.assertIn("| 1.06× (within noise) | 1.06× (1.06–1.07) |", row)
        self.assertIn("(-m1)", row)
        self.assertEqual(cost_report.paired([1.0], [1.0]), "-")
        self.assertEqual(cost_report.paired([2.0, 3.0, 0.0], [1.0, 3.0, 5.0]), "1.50× (1.00–2.00)")

    def test_other_builds_beside_preon(self):
        # throughput.py's table of preon's other builds: ranges apart give a plain ratio, overlapping ranges "within
        # noise"; the round-by-round ratio beside; a run without them has no such table
        build = {"binary": "/b/preon", "commit": "abc", "deps": "system", "bytes": 1}
        med = {"db": {"preon": {"per_round": [110.0, 100.0, 105.0]}, "preon-stock": {"per_round": [80.0, 85.0, 90.0]}},
               "json": {"preon": {"per_round": [100.0, 90.0, 95.0]}, "preon-stock": {"per_round": [96.0, 99.0, 91.0]}}}
        res = {"status": {"preon": "ok", "preon-stock": "ok", "preon-previous": "not run"},
               "builds": {"preon": dict(build, deps="source"), "preon-stock": build},
               "variants": {"plain": {"medians": med}}}
        text = "\n".join(throughput_report.builds_rows(res))
        self.assertIn("| /db (c64) | 105 (100–110) | 85 (80–90) | 1.24× | 1.18× (1.17–1.38) |", text)
        self.assertIn("| /json (c64) | 95 (90–100) | 96 (91–99) | 0.99× (within noise) | 1.04× (0.91–1.04) |", text)
        self.assertIn("PREON_DEPS=system: Debian's shared", text)
        self.assertNotIn("previous build", text)
        res["status"]["preon-stock"] = "not built (/b/preon)"
        self.assertEqual(throughput_report.builds_rows(res), [])

    def test_the_same_server_twice(self):
        # the twin's column: preon-twin where it ran, else the preon-cN of the choice shipped preon recorded
        tp = {"out": "throughput", "partition": {"sentence": "load generator on CPU 0"}, "duration": 4, "rounds": 3,
              "tfb_h2o": "/tmp/anchors/tfb-h2o", "status": {},
              "shipped": {"status": "ok", "connections_per_thread": 2, "why": "auto: 2 per thread for 1 thread"},
              "per_round": {"db": {"preon": [110.0, 96.0, 104.0], "preon-c2": [100.0, 120.0, 104.0],
                                   "preon-c4": [1.0, 1.0, 1.0], "tfb-h2o": [104.0, 90.0, 98.0]}}}
        text = "\n".join(cost_report.throughput_section(tp))
        self.assertIn("chose 2 connections per thread (--check-config: auto: 2 per thread for 1 thread)", text)
        self.assertIn("| the same server twice: shipped / cpt=2, medians; round by round |", text)
        self.assertIn("| 1.06× (within noise) | 1.06× (1.06–1.07) | 1.00× (within noise); 1.00× (0.80–1.10) |", text)
        tp["per_round"]["db"]["preon-twin"] = [55.0, 48.0, 52.0]
        text = "\n".join(cost_report.throughput_section(tp))
        self.assertIn("| 1.06× (within noise) | 1.06× (1.06–1.07) | 2.00×; 2.00× (2.00–2.00) |", text)
        del tp["per_round"]["db"]["preon-twin"]
        tp["shipped"] = {"status": "--check-config (exit 2): bad"}  # nothing to pair with: no column
        self.assertNotIn("same server twice", "\n".join(cost_report.throughput_section(tp)))
        # throughput.py's own report: a table of the pair where preon-twin ran, nothing where it did not
        results = {"status": {"preon": "ok", "preon-twin": "ok"},
                   "variants": {"plain": {"medians": {"db": {
                       "preon": {"rps": 104.0, "per_round": [110.0, 96.0, 104.0]},
                       "preon-twin": {"rps": 104.0, "per_round": [100.0, 120.0, 104.0]}}}}}}
        self.assertIn("| /db (c64) | 104 | 104 | 1.00× | 0.80–1.10 |", "\n".join(throughput_report.twin_rows(results)))
        results["status"]["preon-twin"] = "not run"
        self.assertEqual(throughput_report.twin_rows(results), [])

    def test_round_order(self):
        names = ["preon", "preon-twin", "tfb-h2o"]
        self.assertEqual([rounds.order(names, r, "rotated") for r in range(3)],
                         [names, names[1:] + names[:1], names[2:] + names[:2]])
        alt = [rounds.order(names, r, "alternating") for r in range(6)]
        self.assertEqual(alt[:3], [names, names[::-1], ["preon-twin", "tfb-h2o", "preon"]])
        for a, b in (("preon", "preon-twin"), ("preon-twin", "tfb-h2o"), ("preon", "tfb-h2o")):
            # every pair runs both ways round, as often one as the other; rotated, one pair never swaps
            self.assertEqual(sum(o.index(a) < o.index(b) for o in alt), 3, (a, b, alt))
            self.assertEqual(sorted(o.index(a) for o in alt), sorted(o.index(b) for o in alt))  # each place as often
        self.assertEqual([rounds.order(["a", "b"], r, "alternating") for r in range(4)],
                         [["a", "b"], ["b", "a"], ["b", "a"], ["a", "b"]])
        self.assertEqual(rounds.order([], 0, "alternating"), [])
        with self.assertRaises(ValueError):
            rounds.order(names, 0, "shuffled")
        # the reports say which order ran; a record from before the choice says "rotated", as it always did
        tp = {"out": "throughput", "partition": {"sentence": "CPU 0"}, "duration": 4, "rounds": 4, "tfb_h2o": "x",
              "status": {}, "per_round": {}}
        self.assertIn("4 rounds with the order of the targets rotated; answers",
                      "\n".join(cost_report.throughput_section(tp)))
        tp["order"] = "alternating"
        self.assertIn("4 rounds with the order of the targets rotated every two rounds and run backwards every other "
                      "round; answers", "\n".join(cost_report.throughput_section(tp)))
        prof = {"status": "ok", "freq": 999, "duration": 3, "rounds": 2, "servers": {}, "order": "alternating"}
        self.assertIn("2 rounds with the servers' order rotated every two rounds and run backwards every other round, "
                      "CPU partition", "\n".join(cost_report.profile_section(prof)))

    def test_postgres_count_beside_the_servers(self):
        def server(ir, pg_ir, backends, errors=None):
            count = cost_report.Count(n1=10, n2=50, ir1=0, ir2=0, ir_per_request=ir, time_driven=0, statuses={},
                                      by_group={}, top_inclusive=[], top_self=[])
            pg = cost_report.PgCount(n1=5, n2=25, ir1=1000, ir2=1000 + 20 * pg_ir, backends=backends,
                                     ir_per_request=pg_ir, statuses={200: 24, 503: 1} if errors else {"200": 25})
            return cost_report.ServerRun(status="ok", argv=[], build="", counts={"db": count, "fortunes": count},
                                         syscalls={}, errors=errors or {}, pg_counts={"db": pg})
        res = cost_report.CostResults(header={}, settings={}, throughput=None,
                                      servers={"preon": server(15000.0, 43000.0, 2, {"fortunes postgres": "boom"}),
                                               "tfb-h2o": server(16000.0, 42000.0, 1)})
        lines = cost_report.postgres_section(res)
        db = [line for line in lines if line.startswith("| /db ")][0]
        self.assertEqual(db, "| /db | 5 / 25 | 43000 | 42000 | 1.02× | 58000 | 58000 | 1.00× | 2 / 1 | 1 / 0 |")
        self.assertFalse([line for line in lines if line.startswith("| /fortunes ")])  # no count: no row
        self.assertEqual(cost_report._pg_cell(res.servers["preon"], "fortunes", cost_report._pg, "%.0f"),
                         "failed (results.json: errors)")
        # a record made before the count existed loads with none, and its report has no such section
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "results.json")
            old = res.to_json()
            for s in old["servers"].values():
                del s["pg_counts"]
            with open(path, "w") as f:
                json.dump(dict(old, header={"date": "d", "cpus": 2, "loadavg_start": [0], "loadavg_end": [0],
                                            "command": "c"},
                               settings={"postgres": "p", "conns": 8, "warmup": 1, "strace_n": 1, "strace_n_db": 1}),
                          f)
            back = cost_report.load(path)
            self.assertEqual(back.servers["preon"].pg_counts, {})
            self.assertNotIn("PostgreSQL's instructions", cost_report.render(back))

    def test_a_record_keeps_no_recipe_of_the_anchor(self):
        note = ("TFB h2o anchor build: flags\nBuilt on a day\n\nPins:\n  h2o/h2o abc\n\nComponents and flags\n"
                "  h2o: cmake -DCMAKE_BUILD_TYPE=Release\n\nlibpq backport\n--- fe-exec.c.orig\n+static int x;\n\n"
                "sha256\n  0123  bin/h2o-app\n")
        got = cost_report.build_summary(note)
        self.assertIn("Pins:\n  h2o/h2o abc", got)
        self.assertIn("0123  bin/h2o-app", got)
        self.assertTrue(got.startswith("TFB h2o anchor build: flags\nBuilt on a day"))
        for recipe in ("cmake", "fe-exec.c", "static int"):
            self.assertNotIn(recipe, got)

    def test_family_holds_the_process_and_its_children(self):  # what the profile counts as a server's own
        child = subprocess.Popen(["sleep", "30"])
        try:
            fam = set(tree(os.getpid()))
            self.assertIn(os.getpid(), fam)
            self.assertIn(child.pid, fam)
            self.assertNotIn(1, fam)
        finally:
            child.kill()
            child.wait()


if __name__ == "__main__":
    unittest.main(verbosity=2)
