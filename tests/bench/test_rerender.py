#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every recorded run under bench/published/ renders again from its results.json into its report.md byte for byte,
with the renderer that wrote it (bench/run.py's scenarios, bench/throughput.py's, bench/cost.py's,
bench/scaleup.py's): a report is the record's, never a hand-edited page. The runs recorded before a renderer changed
its verdicts are listed in OLDER with why; every other folder must match. No load, no database: seconds.

  tests/bench/test_rerender.py            # the test
  tests/bench/test_rerender.py --dump DIR # write each folder's rendering to DIR/<folder with _ for />.md"""
import glob
import os
import sys
import unittest

REPO = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PUBLISHED = os.path.join(REPO, "bench", "published")
sys.path.insert(0, os.path.join(REPO, "bench"))
import run  # noqa: E402
import scaleup  # noqa: E402
import scenarios  # noqa: E402
from measure import cost_report, record, throughput_report  # noqa: E402

# folder → why today's renderer cannot reproduce its report.md: a record judged against the goals of its day keeps
# that verdict, and is listed here with why. Every recorded report was rendered again from its unchanged
# results.json by today's renderers on 2026-12-01 (wording, the CPU-partition sentence, post 004's system names);
# the two listed then (2026-11-30's throughput runs, judged against ≥ 1.5× TFB h2o) left the tree with the history
# that cited them.
OLDER = {}


def chart_lines(results, folder):
    """The image lines run.py appends to a report: each chart the scenarios draw whose PNG the folder holds."""
    names = []
    for fn in scenarios.PLOTS:
        fn(results, lambda name, data, script: names.append(name))
    return "".join("\n![%s.png](%s.png)\n" % (n, n) for n in names if os.path.exists(os.path.join(folder, n + ".png")))


def render(folder):
    """Markdown of `folder`'s results.json, by the renderer its shape names."""
    path = os.path.join(folder, "results.json")
    kind = record.kind(path)
    if kind == "run":
        results = record.load(path).raw
        return run.render(results) + chart_lines(results, folder)
    if kind == "throughput":
        return throughput_report.render(record.load_throughput(path).raw)
    if kind == "cost":
        return cost_report.render(cost_report.load(path))
    return scaleup.render(record.load_json(path))


def folders():
    return sorted(os.path.dirname(p) for p in glob.glob(os.path.join(PUBLISHED, "**", "results.json"), recursive=True))


class Rerender(unittest.TestCase):
    def test_every_recorded_report_renders_again(self):
        seen = set()
        for folder in folders():
            name = os.path.relpath(folder, PUBLISHED)
            seen.add(name)
            with self.subTest(folder=name):
                with open(os.path.join(folder, "report.md")) as f:
                    recorded = f.read()
                new = render(folder)
                if name in OLDER:
                    self.assertNotEqual(new, recorded, "%s renders identically now: take it off OLDER" % name)
                else:
                    self.assertEqual(new, recorded, "%s/report.md is not what its results.json renders" % name)
        self.assertFalse(set(OLDER) - seen, "the lists name folders that are not recorded")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--dump"]:
        os.makedirs(sys.argv[2], exist_ok=True)
        for folder in folders():
            with open(os.path.join(sys.argv[2], os.path.relpath(folder, PUBLISHED).replace("/", "_") + ".md"), "w") as f:
                f.write(render(folder))
        sys.exit(0)
    unittest.main(verbosity=2)
