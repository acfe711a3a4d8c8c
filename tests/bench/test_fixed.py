#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/run.py's `fixed` scenario (bench/scenarios/fixed.py, bench/measure/fixed_load.py) and the C driver's
fixed-load mode: what a step counts as sustained and where a ladder's knee is, on made-up steps; the report and the
headline table from a made-up record (medians of the rounds with their min–max, a failed target, a missing field);
the driver's -only and -write against a server of known behaviour, and its latency taken from the planned send time
(a driver stopped for 300 ms counts the stall in its requests' latency); then the scenario's --quick form against
preon on a private PostgreSQL (seconds), its record rendered again identically. No speed is asserted."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.realpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "bench"))
from measure import fixed_load, ramp_open, record  # noqa: E402
from measure.services import free_port, supervise  # noqa: E402
from scenarios import fixed  # noqa: E402

RATES = [100, 200, 400]


def st(rate, p99=1.0, errors=0, requests=None, achieved=None, lag=0.1, **more):
    n = requests if requests is not None else rate * 5
    out = {"rate": rate, "s": 5, "requests": n, "answers": n - errors, "ok": n - errors, "errors": errors, "ko_by": {},
           "achieved": achieved if achieved is not None else (n - errors) / 5.0, "p50_ms": p99 / 4, "p99_ms": p99,
           "p999_ms": p99 * 1.5, "max_ms": p99 * 2, "lag_p99_ms": lag, "driver_cpu_us": 20.0, "driver_exit": 0,
           "target_cpu_s": 0.1, "pg_cpu_s": 0.05, "target_us": 40.0, "pg_us": 20.0, "peak_rss_kb": 10240}
    out.update(more)
    out["verdict"] = fixed_load.judge(out, 50.0, 10.0)
    return out


class JudgeTest(unittest.TestCase):
    def test_sustained_and_each_reason(self):
        self.assertIsNone(st(100)["verdict"])
        self.assertIsNone(st(100, p99=50.0)["verdict"])  # at the bound is within it
        self.assertEqual(st(100, p99=50.5)["verdict"], "p99 50 ms > 50 ms")
        self.assertIn("2.0 % errors > 1 %", st(100, errors=10)["verdict"])
        self.assertIn("achieved 90/s < 95 % of the offered rate", st(100, achieved=90.0)["verdict"])
        self.assertTrue(st(100, lag=10.5)["verdict"].startswith("the driver fell behind (send lag p99 10.5 ms"))
        self.assertEqual(st(100, requests=0)["verdict"], "no request ended")

    def test_knee(self):
        self.assertEqual(fixed_load.knee([st(100), st(200), st(400, p99=900)], RATES), {"rate": 200, "limit": "target"})
        self.assertEqual(fixed_load.knee([st(100), st(200), st(400)], RATES), {"rate": 400, "limit": "ladder"})
        self.assertEqual(fixed_load.knee([st(100), st(200, lag=30, p99=60)], RATES), {"rate": 100, "limit": "driver"})
        self.assertEqual(fixed_load.knee([st(100, errors=100)], RATES), {"rate": None, "limit": "target"})
        # the refinement between the last rate sustained and the first that failed
        self.assertEqual(fixed_load.knee([st(100), st(200), st(400, p99=900), st(300)], RATES)["rate"], 300)
        self.assertEqual(fixed_load.knee([st(100), st(200), st(400, p99=900), st(300, p99=70)], RATES)["rate"], 200)

    def test_a_write_is_two_requests(self):
        argv = fixed_load.driver_argv("d", "http://127.0.0.1:1", "write", 1000, 5, 2, 64)
        self.assertEqual(argv[argv.index("-r0") + 1], "500")
        self.assertIn("-write", argv)
        argv = fixed_load.driver_argv("d", "http://127.0.0.1:1", "fruits", 1000, 5, 2, 64, db_path="/fruits")
        self.assertEqual((argv[argv.index("-r0") + 1], argv[argv.index("-only") + 1]), ("1000", "/fruits"))
        self.assertEqual(argv[argv.index("-latency-from") + 1], "planned")

    def test_cpu_per_answer(self):
        self.assertEqual(fixed_load.per_answer_us(0.5, 10000), 50.0)
        self.assertIsNone(fixed_load.per_answer_us(None, 10))
        self.assertIsNone(fixed_load.per_answer_us(0.5, 0))


def made_up():
    """A record of two targets over three rounds, and one that failed every round."""
    def rnd(scale, knee_at):
        lad = {req: [st(r, p99=1.0 * scale if r <= knee_at else 900.0, target_us=40.0 * scale, pg_us=20.0)
                     for r in RATES if r <= knee_at * 2] for req in ("hello", "fruits", "write")}
        return {"start_s": 0.5, "accounting": {"target": "cgroup v1 cpuacct", "postgres": "cgroup v1 cpuacct"},
                "warmup": {req: {"s": 1, "conns": 8, "rps": 5000.0 * scale, "non2xx": 0, "socket_errors": 0}
                           for req in lad}, "warmup_peak_rss_kb": 9000,
                "idle": {"s": 1, "target_cpu_pct": 0.5, "pg_cpu_pct": 0.1, "settled_s": 3.0, "quiet": True},
                "ladders": lad, "peak_rss_kb": 10240, "rows_left": 0}
    params = dict(fixed.QUICK, fx_rates=RATES, fx_common=100, fx_rounds=3)
    return {"date": "2026-12-05 00:00:00 UTC", "cpus": 2, "quick": False, "targets": ["a", "b", "c"], "params": params,
            "fixed": {"rows": 3, "pool": "8", "accounting": "cgroup v1 cpuacct",
                      "ceiling": {"responder": "bench/limit/epoll_hello.c, 1 thread, in the target's set",
                                  "steps": [st(r) for r in RATES], "knee": {"rate": 400, "limit": "ladder"}}},
            "scenarios": {"fixed": {"a": {"rounds": [rnd(1.0, 200), rnd(1.2, 200), rnd(0.9, 100)]},
                                    "b": {"rounds": [rnd(2.0, 400) for _ in range(3)]},
                                    "c": {"error": "c exited with 1 at start", "log_tail": "boom\n"}}}}


class RenderTest(unittest.TestCase):
    def test_report_and_headline(self):
        text = "\n".join(fixed.render(record.run_from(made_up())))
        # a's CPU at 100/s: the rounds' 40, 48, 36 → median 40 (36–48); PostgreSQL 20 each; knees 200, 200, 100
        self.assertIn("| a | 40.0 (36.0–48.0) + 20.0 (20.0–20.0) | 1.00 (0.90–1.20) | 200 (100–200) |", text)
        self.assertIn("| b | 80.0 (80.0–80.0) + 20.0 (20.0–20.0) | 2.00 (2.00–2.00) | ≥ 400 |", text)
        self.assertIn("| c | failed |", text)
        self.assertIn("**c: c exited with 1 at start**", text)
        self.assertIn("sustained up to 400 req/s (its top: the ceiling is higher)", text)
        self.assertIn("#### a, the write: POST /fruits + DELETE", text)
        self.assertIn("| 400 | 2 |", text)  # only the rounds that reached it
        self.assertIn("p99 900 ms > 50 ms", text)
        self.assertIn("| a | 5000 (4500–6000) | 5000 (4500–6000) | 5000 (4500–6000) |", text)  # the warm-up

    def test_two_runs_side_by_side(self):
        first, second = made_up(), made_up()
        for r in second["scenarios"]["fixed"]["b"]["rounds"]:
            r["ladders"] = {req: [dict(x, target_us=x["target_us"] * 1.1) for x in steps]
                            for req, steps in r["ladders"].items()}
        text = fixed.agreement_table(record.run_from(first), record.run_from(second))
        # b: 80 + 20 µs in the first run, 88 + 20 in the second
        self.assertIn("| b | 100 → 108 (1.08×) | 100 → 108 (1.08×) | ≥ 400 → ≥ 400 | ≥ 400 → ≥ 400 |", text)
        self.assertIn("| c | - → - (-) |", text)  # it failed both runs
        # another ladder (a shorter one, or another partition's run): CPU per request only, no knees
        short = made_up()
        short["params"] = dict(short["params"], fx_rates=short["params"]["fx_rates"][:1])
        text = fixed.agreement_table(record.run_from(first), record.run_from(short), what="one CPU → two")
        self.assertIn("read: CPU µs/request at 100/s, one CPU → two (ratio)", text)
        self.assertNotIn("knee", text)
        second["params"] = dict(second["params"], fx_common=200)
        with self.assertRaisesRegex(record.RecordError, "at different rates"):
            fixed.agreement_table(record.run_from(first), record.run_from(second))

    def test_a_missing_field_is_named(self):
        results = made_up()
        del results["scenarios"]["fixed"]["b"]["rounds"]
        with self.assertRaisesRegex(record.RecordError, "scenarios.fixed.b.rounds missing"):
            fixed.render(record.run_from(results))

    def test_charts_one_line_per_target(self):
        drawn = []
        fixed.charts(made_up(), lambda name, data, script: drawn.append((name, data, script)))
        self.assertEqual([d[0] for d in drawn], ["fixed-hello-p99", "fixed-fruits-p99", "fixed-write-p99"])
        self.assertEqual(drawn[0][1].count("# "), 2)  # a and b; c has no steps
        self.assertIn("set logscale xy", drawn[0][2])


class DriverTest(unittest.TestCase):
    """The C driver's fixed-load mode against tests/bench/ramp_server.py."""

    @classmethod
    def setUpClass(cls):
        cls.driver = ramp_open.build_driver("c")
        cls.port = free_port()
        cls.server = supervise.spawn([sys.executable, os.path.join(HERE, "ramp_server.py"), "--port", str(cls.port)],
                                     os.devnull, cwd=None)
        supervise.wait_ready(lambda: supervise.tcp_open(cls.port), 10, "ramp_server.py", cls.server, interval=0.05)

    @classmethod
    def tearDownClass(cls):
        supervise.stop(cls.server, 10)

    def run_driver(self, request, rate=100, seconds=2, extra=(), stop_at=None):
        argv = fixed_load.driver_argv(self.driver, "http://127.0.0.1:%d" % self.port, request, rate, seconds, 5, 16)
        p = subprocess.Popen(list(argv) + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if stop_at is not None:  # the driver itself stalls for 300 ms: its sends are late
            time.sleep(stop_at)
            p.send_signal(signal.SIGSTOP)
            time.sleep(0.3)
            p.send_signal(signal.SIGCONT)
        out, err = p.communicate(timeout=60)
        return ramp_open.parse_output(out), err

    def test_one_get_per_arrival(self):
        out, err = self.run_driver("hello")
        s = out["summary"]
        self.assertEqual(out["config"]["only"], "/hello")
        self.assertEqual((s["requests"], s["ok"], s["users_finished_journey"]), (200, 200, 200), err)
        self.assertGreaterEqual(s["max_ms"], s["p999_ms"])
        self.assertGreaterEqual(s["p999_ms"], s["p99_ms"])

    def test_a_write_posts_then_deletes_what_it_created(self):
        out, err = self.run_driver("write")
        s = out["summary"]
        # 100 requests/s: 50 pairs a second; each DELETE needs the id its POST's answer gave (else bad_body, skipped)
        self.assertEqual((s["users_started"], s["requests"], s["ok"], s["skipped_steps"]), (100, 200, 200, 0), err)

    def test_latency_counts_from_the_planned_send_time(self):
        planned, err = self.run_driver("hello", rate=200, seconds=2, stop_at=0.8)
        sent, err2 = self.run_driver("hello", rate=200, seconds=2, stop_at=0.8, extra=("-latency-from", "sent"))
        for s in (planned["summary"], sent["summary"]):
            self.assertGreaterEqual(s["lag_max_ms"], 250, "the stall shows in the driver's send lag")
        # ~60 of 400 requests were planned during the stall: their latency holds it from the planned time on
        self.assertGreaterEqual(planned["summary"]["p99_ms"], 250, err)
        self.assertLess(sent["summary"]["p99_ms"], 250, err2)  # from the actual send, the stall is hidden

    def test_bad_flags_are_refused(self):
        for extra in (["-only", "hello"], ["-only", "/a", "-write", "1"], ["-latency-from", "x"]):
            p = subprocess.run([self.driver, "-url", "http://127.0.0.1:%d" % self.port] + extra, capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(p.returncode, 2, extra)


@unittest.skipUnless(os.geteuid() == 0, "the quick run partitions the CPUs (root)")
class QuickRunTest(unittest.TestCase):
    """run.py --quick --scenario fixed against preon: every request's ladder, the CPU counted by cgroups, the writes
    leaving the table as they found it, the report rendered again identically from results.json."""

    def test_quick_run(self):
        out = tempfile.mkdtemp(prefix="preon-test-fixed-")
        p = subprocess.run([sys.executable, os.path.join(REPO, "bench", "run.py"), "--quick", "--scenario", "fixed",
                            "--target", "preon", "--out", out], capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        with open(os.path.join(out, "results.json")) as f:
            results = json.load(f)
        self.assertEqual(results["partition"]["cpu_accounting"], "cgroup v1 cpuacct"
                         if os.path.isdir("/sys/fs/cgroup/cpuacct") else "cgroup v2 cpu.stat")
        rounds = results["scenarios"]["fixed"]["preon"]["rounds"]
        self.assertEqual(len(rounds), 1)
        r = rounds[0]
        self.assertEqual(sorted(r["ladders"]), ["fruits", "hello", "write"])
        self.assertEqual(r["rows_left"], 0, "every POST's row was deleted by its DELETE")
        first = r["ladders"]["fruits"][0]
        self.assertEqual(first["errors"], 0)
        self.assertGreater(first["target_cpu_s"], 0)
        self.assertGreater(first["pg_cpu_s"], 0, "the read's queries are PostgreSQL's work")
        self.assertLess(r["ladders"]["hello"][0]["pg_cpu_s"], first["pg_cpu_s"])
        self.assertIn("host", results)
        with open(os.path.join(out, "report.md")) as f:
            report = f.read()
        self.assertIn("### fixed: the database path at fixed loads, open loop", report)
        subprocess.run([sys.executable, os.path.join(REPO, "bench", "run.py"), "--render", out], check=True,
                       capture_output=True)
        with open(os.path.join(out, "report.md")) as f:
            self.assertEqual(f.read(), report)


if __name__ == "__main__":
    unittest.main(verbosity=2)
