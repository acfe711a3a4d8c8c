# SPDX-License-Identifier: MIT
"""bench/measure/cpus.py: the partition's spec parsed (and refused when wrong); where sets can be made (root, 2+
CPUs), a wrapped command and this process land in their sets and the sets are gone afterwards. No load, no
database: a second."""
import glob
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from measure.cpus import Partition, online_cpus, parse_cpus  # noqa: E402

TWO = len(online_cpus()) >= 2


class Parse(unittest.TestCase):
    def test_lists(self):
        self.assertEqual(parse_cpus("0-2,5"), [0, 1, 2, 5])

    def test_off(self):
        p = Partition.parse("off")
        self.assertFalse(p.enabled)
        self.assertEqual(p.wrap("target", ["x"]), ["x"])
        self.assertIn("share every CPU", p.describe())

    @unittest.skipUnless(TWO, "needs 2 CPUs")
    def test_auto_and_explicit(self):
        cpus = online_cpus()
        p = Partition.parse("auto")
        self.assertEqual((p.load, p.target, p.postgres), ([cpus[0]], cpus[1:], cpus[1:]))
        p = Partition.parse("load=%d,target=%d" % (cpus[0], cpus[1]))
        self.assertEqual(p.postgres, [cpus[1]], "postgres defaults to the target's set")
        rec = p.record()
        self.assertEqual((rec["load"], rec["target"]), (str(cpus[0]), str(cpus[1])))

    @unittest.skipUnless(TWO, "needs 2 CPUs")
    def test_a_list_with_commas(self):
        cpus = online_cpus()
        p = Partition.parse("load=%d,%d,target=%d" % (cpus[0], cpus[1], cpus[1]))
        self.assertEqual(p.load, cpus[:2])

    def test_refused(self):
        for bad in ("load=0,banana=1", "load=9999", "nonsense"):
            with self.assertRaises(ValueError, msg=bad):
                Partition.parse(bad)


@unittest.skipUnless(TWO and os.geteuid() == 0, "needs root and 2 CPUs")
class Sets(unittest.TestCase):
    def test_roles_land_in_their_sets(self):
        cpus = online_cpus()
        p = Partition.parse("load=%d,target=%d,quota=0.5" % (cpus[0], cpus[1]))
        with p:
            self.assertEqual(sorted(os.sched_getaffinity(0)), [cpus[0]], "this process runs in the load set")
            out = subprocess.run(p.wrap("target", ["nproc"]), capture_output=True, text=True).stdout.strip()
            self.assertEqual(out, "1", "a wrapped command sees the target's single CPU")
            self.assertEqual(p.detect(("nproc",))["nproc"], 1)
            # the driver's ceiling is measured against a responder on the target's CPUs without the target's quota
            free = p.wrap("target", ["sh", "-c", "nproc; cat /proc/self/cgroup"], capped=False)
            capped = p.wrap("target", ["cat", "/proc/self/cgroup"])
            lines = subprocess.run(free, capture_output=True, text=True).stdout.split("\n")
            self.assertEqual(lines[0], "1", "uncapped, still on the target's CPU")
            self.assertNotEqual(lines[1:], subprocess.run(capped, capture_output=True, text=True).stdout.split("\n"))
            quota = "cpu.max" if p.how.startswith("cgroup v2") else "cpu.cfs_quota_us"
            for line in lines[1:]:
                parts = line.split(":", 2)
                if len(parts) == 3 and (parts[0] == "0" or "cpu" in parts[1].split(",")):
                    path = "/sys/fs/cgroup" + ("" if parts[0] == "0" else "/cpu") + parts[2]
                    q = open(os.path.join(path, quota)).read().split()[0] if os.path.exists(
                        os.path.join(path, quota)) else "max"
                    self.assertIn(q, ("max", "-1"), "no quota where the uncapped responder runs: %s" % line)
            # what the target's set spends is counted whole: a child that has exited is still in the count
            if p.accounting():
                before = p.usage_s("target")
                subprocess.run(p.wrap("target", ["sh", "-c", "sh -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); "
                                                 "done'"]), check=True)
                self.assertGreater(p.usage_s("target") - before, 0.01)
                self.assertIsNotNone(p.usage_s("postgres"))
                self.assertEqual(p.record()["cpu_accounting"], p.accounting())
        self.assertEqual(sorted(os.sched_getaffinity(0)), cpus, "the load set is left afterwards")
        self.assertFalse(glob.glob("/sys/fs/cgroup/*/preon-bench-%d-*" % os.getpid()) +
                         glob.glob("/sys/fs/cgroup/preon-bench-%d-*" % os.getpid()), "the sets are removed")


if __name__ == "__main__":
    unittest.main()
