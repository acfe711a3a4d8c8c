# SPDX-License-Identifier: MIT
"""bench/scaleup.py: the figures taken from the probe (p95, buckets, recovery) and HAProxy's `show stat` parsed on
fixed data; then one quick round for preon against a private PostgreSQL, through a real HAProxy: the report has
preon's row with a finite start → first 2xx, and nothing it started is left running; then (root, 2 CPUs, cgroup v1
cpuset) one more under --partition auto: each replica, read while it ran, in the target cpuset and in its own cpu
cgroup under its cap, HAProxy in the load set, PostgreSQL in the postgres set, the partition recorded and in the
report, every cgroup gone afterwards. No speed is asserted."""
import glob
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "bench"))
from measure import scaleup as su  # noqa: E402
from measure.cpus import Partition, cpus_text, mechanism, online_cpus  # noqa: E402
from measure.services import supervise, templates  # noqa: E402 - scripts/fixtures

STAT = """# pxname,svname,qcur,status,hrsp_2xx,
spike,FRONTEND,,OPEN,120,
replicas,r1,0,UP,60,
replicas,r2,0,UP 1/2,59,
replicas,r3,0,DOWN,,
replicas,BACKEND,0,UP,119,
"""


class FiguresTest(unittest.TestCase):
    def test_show_stat(self):
        s = su.parse_stat(STAT)
        self.assertEqual(sorted(s), ["r1", "r2", "r3"])
        self.assertTrue(su.is_up(s["r1"]) and su.is_up(s["r2"]))
        self.assertFalse(su.is_up(s["r3"]) or su.is_up({}) or su.is_up(None))
        self.assertEqual((su.hrsp_2xx(s["r1"]), su.hrsp_2xx(s["r3"])), (60, 0))
        self.assertEqual(su.parse_stat("Unknown command\n"), {})

    def test_p95_nearest_rank(self):
        self.assertEqual(su.p95(range(1, 101)), 95)
        self.assertEqual(su.p95([7]), 7)
        self.assertEqual(su.p95(range(1, 21)), 19)
        self.assertIsNone(su.p95([]))

    def test_buckets_by_send_time(self):
        samples = [(10.0 + k / 20, 0.001 * (1 + k // 20), 200) for k in range(60)]  # 1, 2, 3 ms in 3 seconds
        self.assertEqual(su.buckets_ms(samples, 10.0, 13.0), [1.0, 2.0, 3.0])
        self.assertEqual(su.buckets_ms(samples, 10.0, 12.5), [1.0, 2.0])  # the partial bucket is left out
        self.assertEqual(su.window_p95_ms(samples, 11.0, 12.0), 2.0)
        self.assertIsNone(su.window_p95_ms(samples, 20.0, 21.0))

    def test_recovery_is_for_good(self):
        self.assertEqual(su.recovery_s([30, 20, 14, 10, 12], 10), 2.0)  # bound 15
        self.assertEqual(su.recovery_s([30, 14, 16, 10, 12], 10), 3.0)  # a relapse restarts it
        self.assertEqual(su.recovery_s([10, None, 12], 10), 0.0)  # an empty bucket breaks nothing
        self.assertIsNone(su.recovery_s([30, 10, 15], 10))  # exactly at the bound is above it
        self.assertIsNone(su.recovery_s([], 10))
        self.assertIsNone(su.recovery_s([1, 2], None))

    def test_spread(self):
        self.assertEqual(su.spread([3, None, 1, 2]), {"median": 2, "min": 1, "max": 3, "n": 3})
        self.assertEqual(su.spread([1, 2])["median"], 1.5)
        self.assertIsNone(su.spread([None]))

    def test_haproxy_config(self):
        cfg = templates.haproxy_spike(8000, "/x/s.sock", list(zip(su.SERVERS, [1, 2, 3])))
        for line in ("stats socket /x/s.sock mode 600 level admin", "option httpchk GET /fruits/1",
                     "default-server inter 200 fall 2 rise 1", "retry-on conn-failure", "retries 2",
                     "timeout connect 1s", "timeout server 10s", "server r3 127.0.0.1:3 check"):
            self.assertIn(line, cfg)


def alive(pid, start):
    return supervise.start_time(pid) == start


def quick_round(test, *extra):
    """One quick round for preon (bench/scaleup.py with `extra` arguments): its results and report.md."""
    out = tempfile.mkdtemp(prefix="preon-test-scaleup-")
    p = subprocess.Popen([sys.executable, os.path.join(REPO, "bench", "scaleup.py"), "--quick", "--rounds", "1",
                          "--target", "preon", "--out", out, *extra], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        _, err = p.communicate(timeout=70)
    except subprocess.TimeoutExpired:
        p.terminate()  # it stops what it started, then exits
        _, err = p.communicate(timeout=25)
        test.fail("bench/scaleup.py took over 70 s: " + err[-3000:])
    test.assertEqual(p.returncode, 0, err[-3000:])
    with open(os.path.join(out, "results.json")) as f:
        results = json.load(f)
    with open(os.path.join(out, "report.md")) as f:
        return results, f.read()


class QuickRunTest(unittest.TestCase):
    def test_preon_one_round(self):
        results, report = quick_round(self)
        r = results["runs"]["preon"][0]
        self.assertNotIn("error", r, r.get("log_tail"))
        self.assertTrue(math.isfinite(r["start_to_first_2xx_s"]) and r["start_to_first_2xx_s"] > 0)
        self.assertTrue(r["start_to_up_s"] is not None and r["start_to_up_s"] <= r["start_to_first_2xx_s"] + 0.1)
        self.assertGreater(r["requests"], 0)
        self.assertGreater(r["probe_requests"], 0)
        row = [line for line in report.splitlines() if line.startswith("| preon |")]
        self.assertEqual(len(row), 1, report)
        first_2xx = row[0].split("|")[3].strip().split()[0]
        self.assertTrue(math.isfinite(float(first_2xx)), row[0])
        self.assertIn("Quarkus JVM | pod_startup_time", report)
        # HAProxy and the three replicas: started, recorded, all gone
        self.assertGreaterEqual(len(r["pids"]), 4, r["pids"])
        self.assertEqual([p for p in r["pids"] if alive(*p)], [])
        # the default is no partition, and the report says so
        self.assertFalse(results["partition"]["enabled"])
        self.assertIn("CPU partition: none: the load generator, the target and PostgreSQL share every CPU", report)

    @unittest.skipUnless(os.geteuid() == 0 and len(online_cpus()) >= 2 and mechanism() == "cgroup v1 cpuset",
                         "needs root, 2 CPUs and cgroup v1 cpusets")
    def test_preon_partition_auto(self):
        want = Partition.parse("auto")
        results, report = quick_round(self, "--partition", "auto")
        r = results["runs"]["preon"][0]
        self.assertNotIn("error", r, r.get("log_tail"))
        part = results["partition"]
        self.assertEqual((part["enabled"], part["mechanism"], part["load"], part["target"], part["postgres"]),
                         (True, "cgroup v1 cpuset", cpus_text(want.load), cpus_text(want.target),
                          cpus_text(want.postgres)))
        self.assertEqual(part["detected"]["nproc"], len(want.target), "nproc in a replica's set")
        self.assertIn("\nCPU partition: %s; in a replica's set and cap nproc %d" % (
            part["sentence"], len(want.target)), report)
        # each replica, read while it ran: in the target cpuset (its tasks list it, its affinity is the set) and,
        # at once, in a cpu cgroup of its own capped at 0.4 CPU
        place = r["placement"]
        tag = re.fullmatch(r"/(preon-bench-\d+)-target", place["r1"]["cgroups"]["cpuset"])
        self.assertTrue(tag, place["r1"])
        pid = tag.group(1).rsplit("-", 1)[1]
        for k, name in enumerate(su.SERVERS, 1):
            self.assertEqual(place[name]["cgroups"]["cpuset"], "/%s-target" % tag.group(1), place[name])
            self.assertTrue(place[name]["in_cpuset_tasks"], place[name])
            self.assertEqual(place[name]["affinity"], cpus_text(want.target), place[name])
            self.assertEqual(place[name]["cgroups"]["cpu"], "/preon-scaleup-%s-r%d" % (pid, k), place[name])
            self.assertEqual(place[name]["cpu_quota_us"], 40000, place[name])
        for role in ("load", "postgres"):
            who = place["haproxy" if role == "load" else "postgres"]
            self.assertEqual(who["cgroups"]["cpuset"], "/%s-%s" % (tag.group(1), role), who)
            self.assertTrue(who["in_cpuset_tasks"], who)
            self.assertEqual(who["affinity"], cpus_text(getattr(want, role)), who)
        self.assertEqual([p for p in r["pids"] if alive(*p)], [])
        self.assertEqual(glob.glob("/sys/fs/cgroup/*/preon-bench-%s-*" % pid) +
                         glob.glob("/sys/fs/cgroup/*/preon-scaleup-%s-*" % pid), [], "every cgroup removed")


if __name__ == "__main__":
    unittest.main(verbosity=2)
