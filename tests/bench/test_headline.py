#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/headline.py: the generated tables of README.md and docs/*.md match the runs they were generated from,
and a figure changed by hand is caught."""
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
        # README shows one headline table (the published suite, post 004's row from the open-workload run); the
        # rest of the generated tables are in docs/
        self.assertEqual(check(os.path.join(REPO, "README.md")).stdout, "1 headline tables match their records\n")

    def test_a_figure_changed_by_hand_is_caught(self):
        with open(os.path.join(REPO, "README.md")) as f:
            text = f.read()
        start = text.index("<!-- headline:published ")
        row = text.index("| build, cold (s) |", start)
        end = text.index("\n", row)
        changed = text[:row] + text[row:end].replace("|", "| 1", 2).replace("| 1", "|", 1) + text[end:]
        self.assertNotEqual(changed, text)
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
            f.write(changed)
        try:
            r = check(f.name)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn(" says:   | build, cold (s) | 1", r.stderr)
            # and the generator puts the recorded figure back
            subprocess.run([sys.executable, HEADLINE, "--file", f.name], check=True, capture_output=True)
            with open(f.name) as g:
                self.assertEqual(g.read(), text)
        finally:
            os.unlink(f.name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
