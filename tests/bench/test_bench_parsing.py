# SPDX-License-Identifier: MIT
"""bench/'s parsing of wrk and ab output, its target specs and its report, on recorded outputs."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from benchlib import parse_ab, parse_wrk  # noqa: E402
from run import parse_target, render  # noqa: E402

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

    def test_target_specs(self):
        preon = parse_target("preon")
        self.assertEqual((preon["name"], preon["preon"], preon["db-path"]), ("preon", True, "/fruits"))
        self.assertIn("cmake --build", preon["build"])
        for peer, cap in (("go", "GOMEMLIMIT={mib}MiB"), ("jvm", "JAVA_OPTS=-Xmx{mib}m")):
            t = parse_target(peer)
            self.assertEqual((t["name"], t["peer"], t["db-path"], t["cap"]), (peer, peer, "/fruits", cap))
            self.assertTrue(t["build"].endswith("bench/peers/%s/build.sh" % peer), t["build"])
            self.assertTrue(t["artifact"].endswith("bench/peers/%s/build" % peer), t["artifact"])
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

    def test_report(self):
        results = {"date": "2026-11-29 00:00:00 UTC", "cpus": 2, "quick": True, "targets": ["preon", "go"],
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
