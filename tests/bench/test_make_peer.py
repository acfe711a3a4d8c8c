#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/run.py's make_peer: a peer's build.sh runs before every run that does not time builds, even when its
artifact exists (build.sh decides whether it is stale; a stale binary once ran without the routes a scenario
needed), and not at all in a run whose build scenario times it; a peer without run.sh becomes a target that fails
with why."""
import os
import shutil
import stat
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = tempfile.mkdtemp(prefix="preon-test-peers-")
os.environ["PREON_BENCH_PEERS"] = PEERS
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import run  # noqa: E402


def script(path, body):
    with open(path, "w") as f:
        f.write("#!/usr/bin/env bash\n" + body + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def tearDownModule():
    shutil.rmtree(PEERS, ignore_errors=True)


class MakePeerTest(unittest.TestCase):
    def setUp(self):
        self.dir = os.path.join(PEERS, "go")
        os.makedirs(os.path.join(self.dir, "build"), exist_ok=True)
        self.marker = os.path.join(self.dir, "built")
        if os.path.exists(self.marker):
            os.unlink(self.marker)
        script(os.path.join(self.dir, "run.sh"), "exec sleep 30")
        script(os.path.join(self.dir, "build.sh"), "echo once >> %s" % self.marker)
        with open(os.path.join(self.dir, "build", "go-peer"), "w") as f:
            f.write("an artifact that exists, maybe stale\n")

    def spec(self):
        return dict(run.peer_spec("go"), name="go")

    def test_build_sh_runs_though_the_artifact_exists(self):
        t = run.make_peer(self.spec(), 5432, None, True)
        self.assertEqual(open(self.marker).read(), "once\n")
        self.assertEqual(t.argv, ["bash", os.path.join(self.dir, "run.sh")])

    def test_not_built_when_the_build_scenario_times_it(self):
        run.make_peer(self.spec(), 5432, None, False)
        self.assertFalse(os.path.exists(self.marker))

    def test_a_peer_without_run_sh_says_why(self):
        os.unlink(os.path.join(self.dir, "run.sh"))
        spec = self.spec()
        t = run.make_peer(spec, 5432, None, True)
        self.assertIn("run.sh not found", spec["missing"])
        self.assertEqual(t.argv[:2], ["sh", "-c"])


class PeerNamesTest(unittest.TestCase):
    """Every folder of bench/peers/ with a run.sh is a target by its name (`--target quarkus-jib` once failed with
    "bad target field"); a name that is no folder's is still refused."""

    def test_every_peer_folder_is_a_target(self):
        real = os.path.join(HERE, "..", "..", "bench", "peers")
        names = sorted(n for n in os.listdir(real) if os.path.isfile(os.path.join(real, n, "run.sh")))
        self.assertIn("quarkus-jib", names)
        self.assertIn("quarkus-native-micro", names)
        for n in names:
            self.assertIn(n, run.PEER_TARGETS, "bench/run.py's PEER_TARGETS does not know %s" % n)
            self.assertEqual(run.parse_target(n)["peer"], n)

    def test_a_folder_of_its_own_with_run_sh(self):
        d = os.path.join(PEERS, "custom")
        os.makedirs(d, exist_ok=True)
        script(os.path.join(d, "run.sh"), "exec sleep 30")
        spec = run.parse_target("custom")
        self.assertEqual((spec["name"], spec["peer"]), ("custom", "custom"))
        self.assertNotIn("artifact", spec)
        with self.assertRaisesRegex(ValueError, "bad target field 'no-such-peer'"):
            run.parse_target("no-such-peer")


if __name__ == "__main__":
    unittest.main(verbosity=2)
