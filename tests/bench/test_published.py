# SPDX-License-Identifier: MIT
"""The published suite's tables (bench/scenarios/published.py) from recorded results: each in its post's layout,
each with the published figures in columns or rows marked "published (their hardware)", ratios only between
measured targets, a target that could not run reported with why, and how each target took its memory cap."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from measure import Spread, Target, fmt, ratio, record, refdata  # noqa: E402
from measure.rounds import merge, spread  # noqa: E402
import scenarios  # noqa: E402
from scenarios import published  # noqa: E402

WINDOWS = [{"t": 0.0, "users": 1, "responses": 10, "ko_pct": 0.0, "p95_ms": 1.0}]
RAMP = {"total": 1000, "ok": 990, "ko": 10, "ko_pct": 1.0, "rps": 100.0, "p95_ms": 12.5, "p50_ms": 1.0, "max_users": 500,
        "saturation": {"users": 420, "t": 7.0, "reason": "KO 5.0% > 1%"}, "driver_limit": {"users": 450, "t": 7.5},
        "windows": WINDOWS, "boot_s": 0.05,
        "peak_rss_kb": 10240, "cpu_pct": 55.0, "max_threads": 4, "pg_cpu_pct": 30.0,
        "driver": {"procs": 2, "cpu_pct_per_proc": [20.0, 21.0], "loop_lag_p95_ms": 80.0, "bound": True}}
DOWN = {"error": "go exited with 127 at start", "log_tail": "bench/peers/go/run.sh not found\n" * 3}


def results():
    return {"date": "2026-11-30 00:00:00 UTC", "cpus": 2, "quick": True, "targets": ["preon", "go"],
            "params": dict(published.QUICK), "scenarios": {
                "build": {"preon": {"cold_s": 20.0, "warm_s": 1.0, "artifact_bytes": 140000}, "go": DOWN},
                "000": {"preon": {"rps": 20000.0, "p50": 1.0, "p75": 2.0, "p90": 3.0, "p99": 4.0, "requests": 40000,
                                  "non2xx": 0, "socket_errors": 0, "cold": {"rps": 15000.0, "p99": 9.0}}, "go": DOWN},
                "001": {"preon": {"artifact_bytes": 140000, "start_s": 0.06, "rps": 25000.0, "memory_kb": 9000,
                                  "caps": {"32": {"rps": 22000.0, "memory_kb": 9100, "result": "ok",
                                                  "how": "cgroup memory.max 32 MiB"},
                                           "128": {"rps": None, "memory_kb": None, "result": "OOM",
                                                   "how": "cgroup memory.max 128 MiB"}}}, "go": DOWN},
                "003": {"preon": {"starts": 2, "first_hello_ms": 20.0, "first_db_ms": 30.0, "first_db_max_ms": 35.0,
                                  "repeat_hello_ms": 1.5, "repeat_db_ms": 2.5}, "go": DOWN},
                "004": {"preon": RAMP, "go": DOWN}}}


class PublishedRenderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.refs = refdata.load()
        cls.md = {s: "\n".join(scenarios.REGISTRY[s].render(results(), s, cls.refs)) for s in scenarios.names("published")
                  if scenarios.REGISTRY[s].render.__module__ == published.__name__}  # limits and matrix: classic's

    def test_published_column_in_every_table(self):
        for s, md in self.md.items():
            self.assertIn(published.PUBLISHED, md, s)
            self.assertIn("**go: go exited with 127 at start**", md, s)
            self.assertEqual(md.count("bench/peers/go/run.sh not found"), 1, s)  # its log lines, once

    def test_000(self):
        md = self.md["000"]
        self.assertIn("| metric | preon | go | preon / go | published (their hardware): Quarkus JVM | "
                      "published (their hardware): Quarkus native |", md)
        self.assertIn("| requests/s (warm) | 20000 | - | - | 51192.58 req/s | 75119.42 req/s |", md)
        self.assertIn("| requests/s, cold: a fresh start, wrk at once (as the post ran) | 15000 | - | - | - | - |", md)
        self.assertIn("after a 2 s warm-up", md)
        self.assertIn("| latency p99 (ms) | 4.00 | - | - | 28.91 ms | 7.68 ms |", md)

    def test_003(self):
        md = self.md["003"]
        self.assertIn("| start → first 200 on /hello (ms) | 20.0 | - | - | 40 s | 1 s |", md)
        self.assertIn("| start → first 200 on the DB path (ms) | 30.0 | - | - | 10 s | 796 ms |", md)
        self.assertIn("| repeat request on the DB path (ms) | 2.50 | - | - | 5 s | 132 ms |", md)

    def test_001(self):
        md = self.md["001"]
        self.assertIn("published (their hardware): Quarkus RESTEasy Reactive JVM", md)
        self.assertIn("| requests per second (cap 32 MiB) | 22000 | - | - | OOM | 58833.49 req/s |", md)
        self.assertIn("| build time (s) | 20.0 | - | - | 14 s |", md)
        self.assertIn("- preon, cap 128 MiB: cgroup memory.max 128 MiB → OOM", md)
        self.assertIn("- preon, cap 32 MiB: cgroup memory.max 32 MiB\n", md + "\n")

    def test_004(self):
        md = self.md["004"]
        self.assertIn("| TYPE | SOURCE | BUILD TIME (s) |", md)
        self.assertIn("| preon | measured here | 20.0 | 0.14 | 0.050 | 500 | 1000 | 990 | 1.00 | 100.0 | 12.5 | 420 | "
                      "10.0 | 55 | 4 | 30 |", md)
        self.assertIn("| Quarkus Reactive + R2DBC, fast jar | published (their hardware) | 4 | N/A | 0.987 | 10246 | "
                      "828711 | 718773 | 13 | 755.434 | 13686 | 1971 | 1054 | 9 | 25 | 99 |", md)
        self.assertIn("SWAP", md)
        self.assertIn("from 450 users on the driver itself was the bottleneck", md)
        r = dict(RAMP, saturation=None)
        self.assertEqual(published.sat_cell(r), "none before the driver's limit (450)")
        self.assertEqual(published.sat_cell(dict(r, driver_limit=None)), "none")

    def test_build(self):
        self.assertIn("| cold build (s): clean, then the build command | 20.0 | - | - | 4 s | 53 s | 4 s | 180 s |",
                      self.md["build"])

    def test_cap_flags(self):
        """A target's own cap= flags: NAME=value goes to its environment, flags into {cap} or after the command."""
        def base(spec):
            return Target("jvm", ["bash", "run.sh"], {"JAVA_OPTS": "-Xss1m"}, 1, spec=spec)
        t, cg, how = published.capped(base({"cap": "JAVA_OPTS=-Xmx{mib}m"}), 32)
        self.assertEqual((t.env["JAVA_OPTS"], t.argv, cg, how), ("-Xss1m -Xmx32m", ["bash", "run.sh"], None, "JAVA_OPTS=-Xmx32m"))
        t, _, _ = published.capped(base({"cap": "-Xmx{mib}m", "start": "java {cap} -jar q.jar"}), 128)
        self.assertEqual(t.argv, ["sh", "-c", "java -Xmx128m -jar q.jar"])
        self.assertEqual(published.capped(base({"cap": "-Xmx{mib}m", "start": "./q-runner"}), 32)[0].argv,
                         ["sh", "-c", "./q-runner -Xmx32m"])


class RecordTest(unittest.TestCase):
    """A figure the record lacks fails loudly, naming the key path; a target that failed, and that the record says
    so, is a "-"."""

    def test_a_missing_figure_names_its_key_path(self):
        r = results()
        del r["scenarios"]["001"]["preon"]["caps"]["32"]["rps"]
        with self.assertRaises(record.RecordError) as e:
            published.render_001(record.run_from(r, "x/results.json"), "001", refdata.load())
        self.assertEqual(str(e.exception), "x/results.json: scenarios.001.preon.caps.32.rps missing")
        del r["params"]
        with self.assertRaises(record.RecordError) as e:
            record.run_from(r, "x/results.json")
        self.assertEqual(str(e.exception), "x/results.json: params missing")

    def test_a_failed_target_is_a_dash(self):
        rec = record.run_from(results())
        self.assertEqual((rec.cell("001", "go", "rps"), rec.cell("001", "preon", "rps")), (None, 25000.0))
        self.assertIsNone(rec.cell("rounds", "preon", "rps"))  # a scenario that was not run
        with self.assertRaises(record.RecordError):
            rec.cell("001", "spring", "rps")  # a target the scenario has no record of


class RoundsTest(unittest.TestCase):
    """000 and 001 in rounds: each figure the median of its rounds with their min–max, a ratio of medians, and
    "within noise" where two targets' ranges overlap; outcomes that differ between rounds both said."""

    def rounds(self):
        pre = [{"rps": 30000.0, "p99": 5.0, "cold": {"rps": 20000.0, "p99": 9.0}},
               {"rps": 34000.0, "p99": 4.0, "cold": {"rps": 21000.0, "p99": 8.0}},
               {"rps": 31000.0, "p99": 6.0, "cold": {"rps": 26000.0, "p99": 7.0}}]
        go = [{"rps": 20000.0, "p99": 9.0, "cold": {"rps": 19000.0, "p99": 9.0}},
              {"rps": 22000.0, "p99": 8.0, "cold": {"rps": 25000.0, "p99": 9.5}},
              {"rps": 21000.0, "p99": 7.0, "cold": {"rps": 23000.0, "p99": 8.5}}]
        wrk = {"p50": 1.0, "p75": 2.0, "p90": 3.0, "requests": 1000, "non2xx": 0, "socket_errors": 0}  # the rest
        r = results()
        r["scenarios"]["000"] = {"preon": merge([dict(wrk, **x) for x in pre]), "go": merge([dict(wrk, **x) for x in go])}
        return r

    def test_merge(self):
        m = merge([{"rps": 3.0, "caps": {"32": {"rps": 1.0, "result": "ok"}}, "start_s": 0.5},
                   {"rps": 1.0, "caps": {"32": {"rps": None, "result": "OOM"}}},
                   {"rps": 2.0, "caps": {"32": {"rps": 5.0, "result": "ok"}}}])
        self.assertEqual((m["rps"], m["start_s"], m["caps"]["32"]["rps"], m["caps"]["32"]["result"]),
                         (2.0, 0.5, 3.0, "ok; OOM"))
        self.assertEqual(len(m["rounds"]), 3)
        s = spread(m, "caps", "32", "rps")
        self.assertEqual((float(s), s.lo, s.hi, s.n), (3.0, 1.0, 5.0, 2))
        self.assertEqual(spread({"rps": 7.0}, "rps"), 7.0)  # a record of one run, as recorded before rounds

    def test_cells_and_verdicts(self):
        md = "\n".join(published.render_000(self.rounds(), "000", refdata.load()))
        self.assertIn("median of 3 rounds", md)
        # warm: 30000–34000 against 20000–22000 do not overlap → a plain ratio
        self.assertIn("| requests/s (warm) | 31000 (30000–34000) | 21000 (20000–22000) | 1.48× |", md)
        # cold: 20000–26000 against 19000–25000 overlap → within noise
        self.assertIn("| 21000 (20000–26000) | 23000 (19000–25000) | 0.91× (within noise) |", md)

    def test_ratio(self):
        self.assertEqual(ratio(Spread([1, 2, 3]), Spread([4, 5, 6])), "0.40×")
        self.assertEqual(ratio(Spread([1, 2, 4]), Spread([4, 5, 6])), "0.40× (within noise)")
        self.assertEqual(ratio(Spread([2]), Spread([2])), "1.00×")  # one round: no verdict to give
        self.assertEqual(fmt(Spread([1, 2, 3]), "%.0f"), "2 (1–3)")
        self.assertEqual(fmt(Spread([2]), "%.0f"), "2")


if __name__ == "__main__":
    unittest.main(verbosity=2)
