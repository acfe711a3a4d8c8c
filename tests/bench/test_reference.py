# SPDX-License-Identifier: MIT
"""bench/reference/: the published figures as data. Schema, every post present, figures that must be there (the
tables the reports print beside measured ones), the contradictions of post 004 noted, and a loader that leaves
other files of the folder alone."""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from measure import refdata  # noqa: E402


class ReferenceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.recs = refdata.load()

    def one(self, post, metric, system, **kw):
        rs = refdata.find(self.recs, post, metric, system, **kw)
        self.assertEqual(len(rs), 1, (post, metric, system, kw, rs))
        return rs[0]

    def test_schema(self):
        self.assertEqual(refdata.validate(self.recs), [])
        for r in self.recs:
            for k in refdata.FIELDS:
                self.assertIn(k, r)

    def test_every_post(self):
        counts = {p: sum(1 for r in self.recs if r["post"] == p) for p in refdata.POSTS}
        self.assertEqual(set(counts), {"000", "001", "002", "003", "004"})
        for p, n in counts.items():
            self.assertGreater(n, 10, p)
        # the tables: 001 has 2 × 9 × 4 cells and 9 × 2 Docker cells, 004 chapter 6 has 18 rows × 14 figures
        self.assertEqual(sum(1 for r in self.recs if r["post"] == "001" and r.get("table") in ("JVM table", "native table")), 72)
        self.assertEqual(sum(1 for r in self.recs if r["post"] == "001" and r.get("table") == "docker table (1 cpu)"), 18)
        self.assertEqual(sum(1 for r in self.recs if r["post"] == "004" and r.get("table") == "chapter 6"), 18 * 14)

    def test_known_figures(self):
        self.assertEqual(self.one("000", "requests_per_s", "Quarkus native")["value"], 75119.42)
        self.assertEqual(self.one("000", "latency_p99", "Quarkus JVM")["value"], 28.91)
        self.assertEqual(self.one("001", "requests_per_s", "Quarkus RESTEasy Reactive JVM")["value"], 356713.09)
        oom = self.one("001", "requests_per_s", "Spring MVC JVM", condition="-Xmx32m")
        self.assertEqual((oom["value"], oom["outcome"]), (None, "OOM"))
        self.assertEqual(self.one("001", "build_time", "Spring WebFlux native")["value"], 97)  # "1m 37s"
        image = self.one("001", "image_size", "quarkus-reactive", condition="1 cpu")  # the docker table's own column name
        self.assertEqual(image["value"], 80.5)
        sat = self.one("004", "saturation_point", "Quarkus Reactive + R2DBC, fast jar", table="chapter 6")
        self.assertEqual(sat["value"], 1971)
        self.assertIn("i5-10400", self.one("001", "startup_time", "Spring MVC JVM")["hardware"])
        self.assertIn("wrk -t 10 -c50 -d60s", self.one("001", "startup_time", "Spring MVC JVM")["command"])
        self.assertEqual(refdata.value(self.recs, "001", "requests_per_s", "Spring MVC JVM", "-Xmx32m"), "OOM")
        self.assertEqual(refdata.value(self.recs, "000", "requests_per_s", "Quarkus JVM"), "51192.58 req/s")
        self.assertEqual(refdata.value(self.recs, "001", "artifact_size", "Spring MVC JVM"), "22 MB")

    def test_004_swap_noted(self):
        """Chapter 3 and chapter 6 of post 004 give JIB/distroless's and DOCKER's RPS the other way round."""
        def rps(system, table):
            label = "R2DBC" if table == "chapter 6" else "PG client"  # chapter 6 labels the Quarkus rows "REACTIVE + R2DBC"
            return self.one("004", "requests_per_s", "Quarkus Reactive + %s, %s" % (label, system), table=table)
        self.assertEqual(rps("JIB with distroless", "chapter 3")["value"], rps("docker", "chapter 6")["value"])
        self.assertEqual(rps("docker", "chapter 3")["value"], rps("JIB with distroless", "chapter 6")["value"])
        self.assertNotEqual(rps("docker", "chapter 3")["value"], rps("docker", "chapter 6")["value"])
        for system in ("JIB with distroless", "docker"):
            for table in ("chapter 3", "chapter 6"):
                self.assertIn("SWAP", rps(system, table)["note"])
        # every inconsistent OK/total/KO row of chapter 6 carries a note
        rows = {}
        for r in self.recs:
            if r["post"] == "004" and r.get("table") == "chapter 6":
                rows.setdefault(r["system"], {})[r["metric"]] = r
        flagged = 0
        for system, m in rows.items():
            if m["requests_total"]["value"] is None:
                continue
            ko = 100.0 * (1 - m["requests_ok"]["value"] / m["requests_total"]["value"])
            if abs(ko - m["ko"]["value"]) > 1.0:
                self.assertTrue(m["ko"]["note"], system)
                flagged += 1
        self.assertEqual(flagged, 3)

    def test_002_contradiction_noted(self):
        notes = [r["note"] for r in self.recs if r["post"] == "002" and r["metric"] == "stress_memory"]
        self.assertGreaterEqual(sum("contradiction" in n for n in notes), 4)

    def test_loader_leaves_other_files_alone(self):
        d = tempfile.mkdtemp()
        try:
            for name in os.listdir(refdata.DIR):
                shutil.copy(os.path.join(refdata.DIR, name), d)
            with open(os.path.join(d, "docker-experiments.json"), "w") as f:
                json.dump({"tables": [{"rows": [1, 2]}]}, f)
            with open(os.path.join(d, "README.md"), "w") as f:
                f.write("notes\n")
            self.assertEqual(len(refdata.load(d)), len(self.recs))
        finally:
            shutil.rmtree(d)

    def test_validation_finds_defects(self):
        bad = [dict(self.recs[0]), dict(self.recs[1]), dict(self.recs[2])]
        bad[0]["value"] = "12"
        bad[1]["value"], bad[1]["note"] = None, ""
        del bad[2]["unit"]
        problems = refdata.validate(bad)
        self.assertTrue(any("not a number" in p for p in problems), problems)
        self.assertTrue(any("no value and no note" in p for p in problems), problems)
        self.assertTrue(any("unit missing" in p for p in problems), problems)
        self.assertTrue(any("post 004 has no records" in p for p in problems), problems)


if __name__ == "__main__":
    unittest.main(verbosity=2)
