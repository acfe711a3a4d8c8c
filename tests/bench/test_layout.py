# SPDX-License-Identifier: MIT
"""bench/'s front door: its top holds only scripts a user runs (each with a __main__, executable, listed in
bench/README.md) besides README.md and folders; run.py's scenarios come from one registry, which its --scenario
list, --suite help and report follow. No load, no database: about a second."""
import os
import re
import subprocess
import sys
import unittest

BENCH = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
sys.path.insert(0, BENCH)
import scenarios  # noqa: E402
from run import SCENARIOS, SUITES, render  # noqa: E402


class TopLevel(unittest.TestCase):
    def test_only_scripts_at_the_top(self):
        with open(os.path.join(BENCH, "README.md")) as f:
            listed = set(re.findall(r"^\| `([a-z0-9_]+\.py)` \|", f.read(), re.M))
        scripts = set()
        for name in sorted(os.listdir(BENCH)):
            path = os.path.join(BENCH, name)
            if os.path.isdir(path) or name == "README.md":
                continue
            self.assertTrue(name.endswith(".py"), "%s: only scripts (and README.md) belong at bench/'s top" % name)
            with open(path) as f:
                text = f.read()
            self.assertIn('if __name__ == "__main__":', text, "%s is a library: it belongs in a package" % name)
            self.assertTrue(text.startswith("#!/usr/bin/env python3\n") and os.access(path, os.X_OK),
                            "%s: a script starts with #!/usr/bin/env python3 and is executable" % name)
            scripts.add(name)
        self.assertEqual(scripts, listed, "bench/README.md lists every script at the top, and only those")

    def test_no_lua_at_the_top(self):
        self.assertTrue(os.path.isfile(os.path.join(BENCH, "wrk", "percentiles.lua")))
        self.assertFalse([n for n in os.listdir(BENCH) if n.endswith(".lua")])


class Registry(unittest.TestCase):
    def test_run_lists_the_registry(self):
        self.assertEqual(SCENARIOS, list(scenarios.REGISTRY))
        self.assertEqual(SUITES["all"], SCENARIOS)
        self.assertEqual(SUITES["published"], ["limits", "matrix", "build", "000", "001", "003", "004"])
        self.assertEqual(SUITES["classic"], ["hello", "hello-latency", "db", "startup", "footprint", "limits",
                                             "matrix", "c10k"])
        out = subprocess.run([sys.executable, os.path.join(BENCH, "run.py"), "--help"], capture_output=True,
                             text=True, check=True).stdout
        flat = " ".join(out.split())
        self.assertIn("from: " + ", ".join(SCENARIOS), flat)
        self.assertIn("published: limits, matrix, build, 000, 001, 003, 004", flat)

    def test_every_scenario_renders_its_section(self):
        """A target that failed in every scenario: each registered renderer still gives its section and the
        error (the renderer runs, whatever module registered it)."""
        params = dict(scenarios.QUICK)
        failed = {"error": "x exited with 127 at start", "log_tail": "no such file\n"}
        # what a scenario records for the run itself before any target runs: ramp004's table and driver's ceiling
        before = {"ramp004": {"ramp004": {
            "database": {"rows": 1, "max_id": 1, "table_bytes": 8192, "total_bytes": 16384, "seconds": 0.1},
            "ceiling": {"rps": 100.0, "users": 10, "rate": 5.0, "reached": False, "lag_p50_ms": 0.1,
                        "lag_p99_run_ms": 1.0, "lag_max_ms": 2.0}}},
                  "fixed": {"fixed": {"rows": 3, "accounting": "/proc process trees", "ceiling": {
                      "responder": "bench/limit/epoll_hello.c", "steps": [], "knee": {"rate": None, "limit": "target"}}}}}
        for name in SCENARIOS:
            results = dict({"date": "2026-12-01 00:00:00 UTC", "cpus": 2, "quick": True, "params": params,
                            "targets": ["x"], "scenarios": {name: {"x": dict(failed)}}}, **before.get(name, {}))
            md = render(results)
            self.assertIn("x exited with 127 at start", md, name)
            self.assertIn("\n### ", md, name)

    def test_a_name_registers_once(self):
        with self.assertRaises(ValueError):
            scenarios.scenario("hello", render)(lambda runner, i: None)
        self.assertEqual(set(scenarios.FULL), set(scenarios.QUICK))


if __name__ == "__main__":
    unittest.main(verbosity=2)
