# SPDX-License-Identifier: MIT
"""bench/measure/ramp_open.py and the ramp004 driver: the driver's output parsed, the saturation point and the driver's
ceiling on synthetic series, how a failure is told; then both drivers (C and Go; the Go one's unit tests): short runs
against servers of known behaviour on 127.0.0.1, and runs that must fail loudly. No speed is asserted: the run that
must succeed takes a lag bound no machine reaches."""
import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
from measure import ramp_open, record  # noqa: E402
from measure.services import free_port, supervise  # noqa: E402 - scripts/fixtures/supervise.py
from scenarios.open004 import render  # noqa: E402


def win(t, requests=100, p95=10.0, ko=0.0, active=100, rate=10.0, behind=False, rps=None):
    return {"type": "window", "t": t, "requests": requests, "p95_ms": p95, "ko_pct": ko, "active_max": active,
            "rate_planned": rate, "behind": behind, "rps": rps if rps is not None else requests / 10.0}


class ParseTest(unittest.TestCase):
    def test_lines_of_each_kind_and_noise(self):
        text = "\n".join([json.dumps({"type": "config", "r0": 1}), "not json", "{broken",
                          json.dumps(win(0)), json.dumps(win(10, p95=None)), json.dumps({"type": "other"}),
                          json.dumps({"type": "summary", "requests": 200}), ""])
        out = ramp_open.parse_output(text)
        self.assertEqual(out["config"], {"type": "config", "r0": 1})
        self.assertEqual([w["t"] for w in out["windows"]], [0, 10])
        self.assertIsNone(out["windows"][1]["p95_ms"])
        self.assertEqual(out["summary"]["requests"], 200)

    def test_no_summary_when_cut_short(self):
        out = ramp_open.parse_output(json.dumps(win(0)) + "\n")
        self.assertIsNone(out["summary"])
        self.assertEqual(ramp_open.failure_modes(out["summary"], "exited with -9 during the run"),
                         "exited with -9 during the run")


class SaturationTest(unittest.TestCase):
    def test_first_window_over_p95_or_ko(self):
        series = [win(0, p95=5), win(10, p95=999.9, ko=5.0), win(20, p95=1000.1, active=2500, rate=250.5),
                  win(30, ko=40)]
        s = ramp_open.saturation(series)
        self.assertEqual((s["t"], s["users"], s["rate"]), (20, 2500, 250.5))
        self.assertIn("p95 1000 ms > 1000 ms", s["reason"])
        s = ramp_open.saturation([win(0), win(10, ko=5.01, active=7), win(20, p95=2000)])
        self.assertEqual(s["users"], 7)
        self.assertIn("KO 5.0 % > 5 %", s["reason"])

    def test_one_broken_window_alone_is_a_stall_not_saturation(self):
        series = [win(0), win(10, p95=1900), win(20), win(30, p95=1500, active=900), win(40, ko=50)]
        self.assertEqual(ramp_open.saturation(series)["users"], 900)
        self.assertIsNone(ramp_open.saturation(series[:3]))
        self.assertIsNone(ramp_open.saturation([win(0, p95=5000)]))  # the last window has no successor

    def test_boundaries_and_exclusions(self):
        # exactly at the bounds is not broken; too few answers do not count; neither does the drain
        self.assertIsNone(ramp_open.saturation([win(0, p95=1000.0, ko=5.0)]))
        self.assertIsNone(ramp_open.saturation([win(0, requests=ramp_open.MIN_ANSWERS - 1, ko=100)]))
        self.assertIsNone(ramp_open.saturation([win(0), win(10), win(20, ko=90), win(30, ko=90)], arrival_end_s=20))
        self.assertEqual(ramp_open.saturation([win(0), win(10, ko=90), win(20, ko=90)], arrival_end_s=20)["t"], 10)
        self.assertIsNone(ramp_open.saturation([]))

    def test_p95_missing_is_not_broken(self):
        self.assertIsNone(ramp_open.broken(win(0, p95=None, ko=None)))


class CeilingTest(unittest.TestCase):
    def test_busiest_window_before_the_driver_fell_behind(self):
        c = ramp_open.ceiling([win(0, rps=100, active=10), win(10, rps=300, active=30), win(20, rps=200),
                               win(30, rps=900, behind=True), win(40, rps=1000)])
        self.assertEqual((c["rps"], c["users"], c["reached"]), (300, 30, True))

    def test_never_behind_means_a_lower_bound(self):
        c = ramp_open.ceiling([win(0, rps=100), win(10, rps=50)])
        self.assertEqual((c["rps"], c["reached"]), (100, False))
        self.assertEqual(ramp_open.ceiling([win(0, behind=True)])["rps"], 0)


class FailureModesTest(unittest.TestCase):
    def test_causes_in_words(self):
        s = {"ko_by": {"timeout": 7, "http_503": 3, "refused": 2}, "retry_after_503": 3}
        self.assertEqual(ramp_open.failure_modes(s, None),
                         "timeouts 7, refused connections 2, 503 3, of the 503s 3 with Retry-After; stayed up")
        self.assertEqual(ramp_open.failure_modes({"ko_by": {}}, "exited with 139 during the run"),
                         "no KO; exited with 139 during the run")


class RenderTest(unittest.TestCase):
    def test_report_has_the_posts_columns_and_rows(self):
        summary = {"max_active": 4065, "requests": 1000, "ok": 900, "ko_pct": 10.0, "rps": 100.0, "p95_ms": 1500.0,
                   "p50_ms": 3.0, "p99_ms": 2000.0, "users_started": 500, "users_finished_journey": 450,
                   "skipped_steps": 4, "lag_p50_ms": 0.5, "lag_p99_ms": 20.0, "lag_max_ms": 90.0, "behind": [],
                   "ko_by": {"timeout": 100}}
        results = {"date": "2026-12-01", "cpus": 2, "quick": True, "targets": ["preon"], "params": dict(ramp_open_params()),
                   "ramp004": {"database": {"rows": 1709634, "table_bytes": 153608192, "total_bytes": 191881216},
                               "ceiling": {"rps": 2800.0, "users": 2600, "reached": True, "lag_p50_ms": 0.6,
                                           "lag_p99_run_ms": 40.0, "lag_max_ms": 120.0}},
                   "scenarios": {"ramp004": {"preon": {
                       "driver_exit": 0, "argv": "-r0 5", "loadavg_before": [1.0, 1.0, 1.0],
                       "loadavg_after": [2.0, 1.5, 1.0],
                       "summary": summary, "windows": [win(0), win(40, p95=1321, active=4065, rate=252.5), win(50, p95=1500)], "peak_rss_kb": 56000, "cpu_pct": 80.0,
                       "max_threads": 4, "pg_cpu_pct": 95.0, "failed_how": "timeouts 100; stayed up",
                       "saturation": {"t": 40, "users": 4065, "rate": 252.5, "reason": "p95 1321 ms > 1000 ms"}}}}}
        text = "\n".join(render(record.run_from(results)))
        self.assertIn("| preon | measured here | 4065 | 1000 | 900 | 10.00 | 100.0 | 1500.0 | 4065 @ 252/s | 54.7 | 80 | 4 | 95 |",
                      text)
        self.assertIn("| Quarkus Reactive + R2DBC, native executable | published (their hardware) | 10232 | 768017 |",
                      text)
        self.assertIn("2800 req/s at 2600 active users (beyond it the driver fell behind)", text)
        self.assertIn("how it failed: timeouts 100; stayed up", text)
        self.assertNotIn("DRIVER FELL BEHIND", text)
        self.assertIn("#### preon, per 10-s window", text)
        self.assertIn("| 0 | 10.0 | 100 | 10.0 |", text)
        results["scenarios"]["ramp004"]["preon"]["summary"]["behind"] = ["window at 10 s: send lag p99 300 ms > 100 ms"]
        self.assertIn("DRIVER FELL BEHIND (window at 10 s", "\n".join(render(record.run_from(results))))
        del results["scenarios"]["ramp004"]["preon"]["summary"]["p99_ms"]
        with self.assertRaisesRegex(record.RecordError, "scenarios.ramp004.preon.summary.p99_ms missing"):
            render(record.run_from(results))


class HeadroomTest(unittest.TestCase):
    """A record whose ceiling names its driver (since 2026-12-02): the report gives the driver's CPU per request and
    the headroom over the busiest target window, and a ceiling under 2× that window makes the run not count."""

    def results(self, ceiling_rps, busiest_rps):
        summary = {"max_active": 100, "requests": 1000, "ok": 1000, "ko_pct": 0.0, "rps": 100.0, "p95_ms": 5.0,
                   "p50_ms": 1.0, "p99_ms": 9.0, "users_started": 50, "users_finished_journey": 50, "skipped_steps": 0,
                   "lag_p50_ms": 0.1, "lag_p99_ms": 2.0, "lag_max_ms": 9.0, "behind": [], "ko_by": {}}
        ceiling = {"rps": ceiling_rps, "users": 900, "reached": False, "lag_p50_ms": 0.1, "lag_p99_run_ms": 3.0,
                   "lag_max_ms": 9.0, "driver": "c", "cpu_s": 10.0, "cpu_us_per_request": 25.0, "requests": 400000,
                   "responder": "the target's CPUs without its quota"}
        return {"date": "2026-12-02", "cpus": 2, "quick": True, "targets": ["preon"], "params": dict(ramp_open_params()),
                "ramp004": {"database": {"rows": 10, "table_bytes": 1e6, "total_bytes": 2e6}, "ceiling": ceiling,
                            "ceiling_compared": dict(ceiling, driver="go", cpu_us_per_request=128.0, reached=True)},
                "scenarios": {"ramp004": {"preon": {
                    "driver_exit": 0, "argv": "-r0 5", "loadavg_before": [1.0] * 3, "loadavg_after": [1.0] * 3,
                    "driver": "c", "driver_cpu_s": 5.0, "driver_cpu_us_per_request": 31.5, "summary": summary,
                    "windows": [win(0, rps=busiest_rps / 2), win(10, rps=busiest_rps, p95=1500), win(20, p95=1500)],
                    "peak_rss_kb": 9000, "cpu_pct": 50.0, "max_threads": 3, "pg_cpu_pct": 40.0,
                    "failed_how": "no KO; stayed up"}}}}

    def test_enough_headroom(self):
        from scenarios.open004 import driver_failures
        results = self.results(20000.0, 5000.0)
        text = "\n".join(render(record.run_from(results)))
        self.assertIn("C on epoll, one thread (bench/ramp004/cdriver)", text)
        self.assertIn("CPU 25.0 µs per request", text)
        self.assertIn("4.0× the busiest 10-s window of any target (preon, 5000 req/s) or more", text)
        self.assertIn("the rule is ≥ 2×: it holds", text)
        self.assertIn("in each target's saturation window, beside the driver's ceiling of 20000: preon 5000", text)
        self.assertIn("compared in the same partition, Go net/http (bench/ramp004/driver)", text)
        self.assertIn("CPU 128.0 µs per request", text)
        self.assertIn("max 9.0 ms, CPU 31.5 µs per request", text)
        self.assertEqual(driver_failures(results), [])

    def test_too_little_headroom_does_not_count(self):
        from scenarios.open004 import driver_failures
        results = self.results(6000.0, 5000.0)
        self.assertIn("IT DOES NOT HOLD", "\n".join(render(record.run_from(results))))
        self.assertEqual([n for n, _ in driver_failures(results)], ["the driver's ceiling"])


def ramp_open_params():
    from scenarios import open004
    return open004.QUICK


class DriverTest(unittest.TestCase):
    """The C driver built from bench/ramp004/cdriver and run briefly on 127.0.0.1, against servers of known
    behaviour (tests/bench/ramp_server.py): one with Content-Length bodies, one with chunked bodies, one that sheds
    every request with 503 + Retry-After."""
    kind = "c"

    @classmethod
    def setUpClass(cls):
        cls.driver = ramp_open.build_driver(cls.kind)
        cls.servers, cls.ports = [], {}
        for name, extra in (("plain", []), ("chunked", ["--chunked"]), ("shed", ["--max-users", "0"])):
            port = free_port()
            cls.servers.append(supervise.spawn([sys.executable, os.path.join(HERE, "ramp_server.py"), "--port",
                                                str(port)] + extra, os.devnull, cwd=None))
            supervise.wait_ready(lambda: supervise.tcp_open(port), 10, "ramp_server.py", cls.servers[-1], interval=0.05)
            cls.ports[name] = port

    @classmethod
    def tearDownClass(cls):
        for s in cls.servers:
            supervise.stop(s, 10)

    def drive(self, *extra, server="plain", hello="/hello"):
        argv = ramp_open.driver_argv(self.driver, "http://127.0.0.1:%d" % self.ports[server], 20, 20, 1, 0.01, 5, 1,
                                     drain=30, hello=hello) + list(extra)
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        return p.returncode, ramp_open.parse_output(p.stdout), p.stderr

    def test_a_run_reports_every_request(self):
        rc, out, err = self.drive("-lag-bound", "1e9")
        self.assertEqual(rc, 0, err)
        s = out["summary"]
        self.assertEqual(out["config"]["users_planned"], 20)
        self.assertEqual(s["users_started"], 20)
        self.assertEqual(s["users_finished_journey"], 20)
        self.assertEqual(s["requests"], 20 * 14)  # the journey's 14 steps, every one a GET /hello here
        self.assertEqual((s["ok"], s["ko"], s["verdict"]), (280, 0, "ok"))
        self.assertEqual(sum(w["requests"] for w in out["windows"]), s["requests"])
        self.assertEqual(sum(w["arrivals"] for w in out["windows"]), 20)
        self.assertGreaterEqual(s["lag_max_ms"], s["lag_p99_ms"])
        self.assertGreaterEqual(s["lag_p99_ms"], s["lag_p50_ms"])
        self.assertNotIn("DRIVER FELL BEHIND", err)

    def test_the_journey_with_its_writes_and_pages(self):
        for server in ("plain", "chunked"):
            with self.subTest(server=server):
                rc, out, err = self.drive("-lag-bound", "1e9", server=server, hello=None)
                self.assertEqual(rc, 0, err)
                s = out["summary"]
                # every POST's id was read back (else bad_body, and the steps on its row skipped), 204s included
                self.assertEqual((s["requests"], s["ok"], s["skipped_steps"], s["ko_by"]), (280, 280, 0, {}), err)

    def test_a_shed_request_is_a_503_with_retry_after(self):
        rc, out, err = self.drive("-lag-bound", "1e9", server="shed")
        s = out["summary"]
        self.assertEqual((s["requests"], s["ok"], s["ko_by"].get("http_503")), (280, 0, 280), err)
        self.assertEqual(s["retry_after_503"], 280)

    def test_a_refused_connection_is_told(self):
        port = free_port()  # nothing listens there
        argv = ramp_open.driver_argv(self.driver, "http://127.0.0.1:%d" % port, 5, 5, 1, 0.01, 5, 1, drain=30,
                                     hello="/hello") + ["-lag-bound", "1e9"]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        s = ramp_open.parse_output(p.stdout)["summary"]
        self.assertEqual((s["requests"], s["ko_by"].get("refused")), (5 * 14, 5 * 14), p.stderr)

    def test_users_it_could_not_start_fail_the_run(self):
        rc, out, err = self.drive("-max-active", "1", "-think", "0.5")
        self.assertEqual(rc, 3)
        self.assertIn("DRIVER FELL BEHIND", err)
        self.assertGreater(out["summary"]["users_not_started"], 0)
        self.assertEqual(out["summary"]["verdict"], "driver fell behind")

    def test_lag_over_the_bound_fails_the_run(self):
        rc, out, err = self.drive("-lag-bound", "-1")
        self.assertEqual(rc, 3)
        self.assertIn("send lag p99", err)

    def test_its_cpu_time_is_measured(self):
        rc, out = ramp_open.run(ramp_open.driver_argv(self.driver, "http://127.0.0.1:%d" % self.ports["plain"], 20, 20,
                                                      1, 0.01, 5, 1, drain=30, hello="/hello") + ["-lag-bound", "1e9"],
                                60)
        self.assertEqual(rc, 0)
        self.assertGreater(out["cpu_s"], 0)
        self.assertGreater(ramp_open.cpu_us_per_request(out), 0)


class GoDriverTest(DriverTest):
    """The same, with the Go driver (bench/ramp004/driver), and its unit tests."""
    kind = "go"

    def test_go_unit_tests(self):
        env = dict(os.environ, GOPROXY="off", GOFLAGS="-mod=mod", GOCACHE=os.path.join(ramp_open.OUT_DIR, "gocache"))
        p = subprocess.run([ramp_open.go_binary(), "test", "."], cwd=ramp_open.DRIVER_SRC, env=env, capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
