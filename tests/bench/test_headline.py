#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/headline.py: the generated tables of README.md and docs/*.md match the runs they were generated from,
and a figure changed by hand is caught."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
HEADLINE = os.path.join(REPO, "bench", "headline.py")


def check(path=None):
    return subprocess.run([sys.executable, HEADLINE, "--check"] + (["--file", path] if path else []),
                          capture_output=True, text=True)


class HeadlineTest(unittest.TestCase):
    def test_readme_and_docs_match_their_records(self):
        r = check()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^\d+ headline tables match their records")
        # README shows one headline table (the database path at fixed loads, every stack); the rest of the generated
        # tables are in docs/
        self.assertEqual(check(os.path.join(REPO, "README.md")).stdout, "1 headline tables match their records\n")

    def test_a_figure_changed_by_hand_is_caught(self):
        with open(os.path.join(REPO, "README.md")) as f:
            text = f.read()
        start = text.index("<!-- headline:fixed ")
        row = text.index("| preon | ", start)  # a row per stack
        end = text.index("\n", row)
        changed = text[:row] + text[row:end].replace("|", "| 1", 2).replace("| 1", "|", 1) + text[end:]
        self.assertNotEqual(changed, text)
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
            f.write(changed)
        try:
            r = check(f.name)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn(" says:   | preon | 1", r.stderr)
            # and the generator puts the recorded figure back
            subprocess.run([sys.executable, HEADLINE, "--file", f.name], check=True, capture_output=True)
            with open(f.name) as g:
                self.assertEqual(g.read(), text)
        finally:
            os.unlink(f.name)


class OverlayTest(unittest.TestCase):
    """One headline table from several recorded runs: a later run's scenarios are laid over the suite's, target by
    target (an image run's NAME-image counting as NAME), and the Docker rows read the smallest container that
    served."""

    def test_docker_rows(self):
        sys.path.insert(0, os.path.join(REPO, "bench"))
        import headline  # noqa: E402
        runs = {"preon": {"memory 8 MiB, cpus 1": {"result": "ok", "rps": 9.0, "warm": {"rps": 10.0}},
                          "memory 16 MiB, cpus 1": {"result": "ok", "rps": 1.0, "warm": {"rps": 2.0}}},
                "go": {"memory 8 MiB, cpus 1": {"result": "OOM-killed"},
                       "memory 16 MiB, cpus 1": {"result": "ok", "rps": 5.0, "warm": {"rps": 6.0}}},
                "jvm": {"memory 8 MiB, cpus 1": {"result": "OOM-killed"}}}
        self.assertEqual(headline.smallest_serving(runs, "preon"), "8 MiB; 10")
        self.assertEqual(headline.smallest_serving(runs, "go"), "16 MiB; 6")
        self.assertEqual(headline.smallest_serving(runs, "jvm"), "none of 8…256 MiB")
        m = {"a": {"x": {"result": "OOM-killed", "warm": {"rps": 0}}}, "b": {"x": {"result": "OOM-killed"}},
             "c": {"x": {"result": "ok", "warm": {"rps": 1234.0}, "load_mem_bytes": 3 * 1048576}}}
        self.assertEqual([headline.matrix_cell(m, n, "x") for n in "abc"],
                         ["OOM-killed under ab", "OOM-killed at start", "1,234; 3.0 MiB"])
        with tempfile.TemporaryDirectory(dir=REPO) as d:
            with open(os.path.join(d, "results.json"), "w") as f:
                f.write('{"date": "2026-12-01", "cpus": 2, "quick": true, "params": {}, "targets": ["preon-image"], '
                        '"scenarios": {"limits": {"preon-image": {"k": 1}}}}')
            out, ramp = headline.overlay({"targets": ["preon"], "scenarios": {"000": {"preon": {}}}},
                                         os.path.relpath(d, REPO))
            self.assertEqual((out["scenarios"]["limits"], "000" in out["scenarios"], ramp), ({"preon": {"k": 1}}, True, None))

    def test_matrix_table_a_row_per_image(self):
        sys.path.insert(0, os.path.join(REPO, "bench"))
        import headline  # noqa: E402
        caps = ["memory 100 MiB, cpus 0.5", "memory 200 MiB, cpus 1", "memory 300 MiB, cpus 2"]
        ok = {"result": "ok", "boot_ms": 210.4, "warm": {"rps": 12345.6}, "load_mem_bytes": 4 * 1048576, "failed": 0}
        matrix = {"preon-image": dict.fromkeys(caps, ok),
                  "jvm-image": {caps[0]: {"result": "OOM-killed", "boot_ms": 3000, "warm": {"rps": 0},
                                          "load_mem_bytes": 98.5 * 1048576, "failed": 20000},
                                caps[1]: dict(ok, failed=7),
                                caps[2]: {"result": "failed to start: jvm-image exited at start "
                                                    "({'exit_code': 1, 'oom_killed': False})"}},
                  "stuck-image": {caps[0]: {"result": "failed: Command '['ab', '-q', '-n', '10000', '-c', '100', "
                                                      "'http://127.0.0.1:1/fruits']' timed out after 300 seconds"},
                                  caps[1]: dict(ok, warm={"rps": 0.0}, failed=20000)}}
        with tempfile.TemporaryDirectory(dir=REPO) as d:
            with open(os.path.join(d, "results.json"), "w") as f:
                json.dump({"date": "2026-12-05", "cpus": 2, "quick": False, "params": {},
                           "targets": ["preon-image", "jvm-image", "stuck-image"], "scenarios": {"matrix": matrix}}, f)
            rows = headline.render_matrix(os.path.join(d, "results.json"), None).splitlines()
        self.assertEqual(rows[2], "| preon | 12,346; 4.0 MiB | 12,346; 4.0 MiB | 12,346; 4.0 MiB | 210 / 210 / 210 |")
        self.assertEqual(rows[3], "| jvm | OOM-killed under ab at 98.5 MiB | 12,346; 4.0 MiB; 7 failed | "
                                  "exited at start (code 1) | 3,000 / 210 / - |")
        self.assertEqual(rows[4], "| stuck | ab unfinished after 300 s | served none (20,000 failed); 4.0 MiB | - | "
                                  "- / 210 / - |")
        self.assertTrue(rows[5].startswith("| post 002's Quarkus JVM (their hardware, MySQL) | RAM under load "), rows[5])

    def test_overlaid_runs_add_targets_and_merge_per_target(self):
        """(a) a target only an overlaid run has (NAME-image as NAME) is a column of its own, after the base's;
        (b) a scenario is merged target by target, not replaced; (c) several ramp004 runs are merged."""
        sys.path.insert(0, os.path.join(REPO, "bench"))
        import headline  # noqa: E402
        base = {"targets": ["preon", "go"], "scenarios": {"000": {"preon": {"rps": 1}, "go": {"rps": 2}},
                                                          "001": {"preon": {"rps": 3}}}}
        runs = {"native": {"targets": ["quarkus-native-image"],
                           "scenarios": {"000": {"quarkus-native-image": {"rps": 4}}}},
                "go-again": {"targets": ["go"], "scenarios": {"001": {"go": {"rps": 5}}}},
                "ramp-a": {"targets": ["preon", "go"], "scenarios": {"ramp004": {"preon": {"a": 1}, "go": {"a": 2}}}},
                "ramp-b": {"targets": ["quarkus-native"], "scenarios": {"ramp004": {"quarkus-native": {"b": 3}}}}}
        with tempfile.TemporaryDirectory(dir=REPO) as d:
            for name, rec in runs.items():
                os.mkdir(os.path.join(d, name))
                with open(os.path.join(d, name, "results.json"), "w") as f:
                    json.dump(dict(rec, date="2026-12-01", cpus=2, quick=True, params={}), f)
            rel = os.path.relpath(d, REPO)
            out, ramp = headline.overlay(base, " ".join(os.path.join(rel, n) for n in runs))
        self.assertEqual(out["targets"], ["preon", "go", "quarkus-native"])
        self.assertEqual(out["scenarios"]["000"], {"preon": {"rps": 1}, "go": {"rps": 2}, "quarkus-native": {"rps": 4}})
        self.assertEqual(out["scenarios"]["001"], {"preon": {"rps": 3}, "go": {"rps": 5}})
        self.assertEqual(ramp, {"preon": {"a": 1}, "go": {"a": 2}, "quarkus-native": {"b": 3}})
        self.assertNotIn("ramp004", out["scenarios"])
        self.assertEqual(base["targets"], ["preon", "go"], "the base's record is left as it was")

    def test_a_target_that_failed_says_why_in_its_cells(self):
        sys.path.insert(0, os.path.join(REPO, "bench"))
        import headline  # noqa: E402
        from measure import record  # noqa: E402
        rec = record.run_from({"date": "2026-12-04", "cpus": 2, "quick": True, "params": {}, "targets": ["a", "b"],
                               "scenarios": {"000": {"a": {"rps": 1.0},
                                                     "b": {"error": "build failed (1): mvn: no such plugin\nmore"}}}})
        self.assertEqual(headline._fig(rec, "000", "a", "rps"), 1.0)
        with self.assertRaises(headline._Dash) as e:
            headline._fig(rec, "000", "b", "rps")
        self.assertEqual(headline._why(e.exception.args[0]), "failed: build failed (1): mvn: no such plugin")
        self.assertEqual(headline._why("x" * 80), "failed: " + "x" * 59 + "…")
        with self.assertRaises(headline._Dash) as e:
            headline._fig(rec, "000", "c", "rps")  # not among the run's targets: a plain dash
        self.assertEqual(e.exception.args, ())

    def test_a_run_of_some_posts_has_their_rows_only(self):
        """A run of 000, 001 without its caps (caps_mib=) and 003 on processes: no capped, 004 or build row, and
        the brief's start row says exec, not docker run."""
        sys.path.insert(0, os.path.join(REPO, "bench"))
        import headline  # noqa: E402
        import run  # noqa: E402
        from measure import refdata  # noqa: E402
        self.assertEqual((run.setting([32, 128], ""), run.setting([32, 128], "64,128"), run.setting(20, "10")),
                         ([], [64, 128], 10))
        one = {"rps": 1000.0, "p99": 2.0, "requests": 1, "non2xx": 0, "socket_errors": 0}
        rec = {"date": "2026-12-04", "cpus": 2, "quick": True, "targets": ["a"],
               "params": {"p000_s": 20, "p001_s": 20, "caps_mib": [], "ramp_users": 10000},
               "scenarios": {"000": {"a": one},
                             "001": {"a": {"rps": 900.0, "memory_kb": 10240, "start_s": 0.02, "artifact_bytes": 1e6,
                                           "caps": {}}},
                             "003": {"a": {"first_db_ms": 21.0, "repeat_db_ms": 1.0}}}}
        with tempfile.TemporaryDirectory(dir=REPO) as d:
            with open(os.path.join(d, "results.json"), "w") as f:
                json.dump(rec, f)
            names, rows = headline.published_rows(os.path.join(d, "results.json"), refdata.load())
            brief = headline.render_brief(os.path.join(d, "results.json"), refdata.load())
        self.assertEqual([r[0].split(":")[0] for r in rows], ["000", "001", "001", "003"])
        self.assertIn("001: wrk -t10 -c50 -d20s", rows[1][0])
        self.assertEqual(brief.splitlines()[0], "| stack | GET /hello, 50 connections, req/s (rounds min–max) | "
                                                "peak memory under load, MB | start to a first DB answer, ms |")
        self.assertEqual(brief.splitlines()[2], "| a | 1,000 | 10.0 | 21 |")

    def test_a_record_that_lacks_a_field_is_named(self):
        sys.path.insert(0, os.path.join(REPO, "bench"))
        import headline  # noqa: E402
        from measure import record  # noqa: E402
        with tempfile.TemporaryDirectory(dir=REPO) as d:
            with open(os.path.join(d, "results.json"), "w") as f:
                json.dump({"date": "2026-12-01", "cpus": 2, "quick": True, "params": {}, "scenarios": {}}, f)
            with self.assertRaises(record.RecordError) as e:
                headline.overlay({"targets": [], "scenarios": {}}, os.path.relpath(d, REPO))
            self.assertIn("results.json: targets missing", str(e.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
