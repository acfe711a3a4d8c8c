# SPDX-License-Identifier: MIT
"""bench/peers/quarkus-native/toolchain/: from its jars (Maven, checked against jars.sha256) and Temurin 25,
install.sh assembles a native-image that compiles a small Java program (native/Probe.java) into an executable
that runs: its processor count follows the affinity mask, its clocks agree with the host's, its time zone is
TZ's, it reads a file, echoes over loopback NIO, exits with System.exit's status, and runs its shutdown hook
on SIGTERM (exit 143). About 2 min of build and ~3 GB on 2 cores, so the Quarkus build itself is left to the
bench (bench/peers/quarkus-native/build.sh).

Environment: PREON_REPO (tests/CMakeLists.txt).
"""
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

REPO = os.environ.get("PREON_REPO") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLCHAIN = os.path.join(REPO, "bench", "peers", "quarkus-native", "toolchain")
HOME = os.path.join(REPO, "bench", "peers", "quarkus-native", "build", "toolchain", "home")
PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native", "Probe.java")


def lines(out):
    """'key value' lines as a dict."""
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


class NativeToolchain(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        installed = subprocess.run([os.path.join(TOOLCHAIN, "install.sh")], capture_output=True, text=True, timeout=900)
        if installed.returncode == 77:  # no JDK 25 with JVMCI on this machine: install.sh says so
            raise unittest.SkipTest("SKIP native toolchain: " + installed.stderr.strip())
        if installed.returncode != 0:
            raise AssertionError("install.sh failed:\n" + installed.stdout + installed.stderr)
        cls.dir = tempfile.mkdtemp(prefix="preon-native-")
        subprocess.run([os.path.join(HOME, "bin", "javac"), "-d", cls.dir, PROBE], check=True, timeout=120)
        built = subprocess.run([os.path.join(HOME, "bin", "native-image"), "-cp", cls.dir, "Probe", "probe"],
                               cwd=cls.dir, capture_output=True, text=True, timeout=1200)
        if built.returncode != 0:
            raise AssertionError("native-image failed:\n" + built.stdout[-4000:] + built.stderr[-4000:])
        cls.exe = os.path.join(cls.dir, "probe")
        cls.data = os.path.join(cls.dir, "data.txt")
        with open(cls.data, "w", encoding="utf-8") as f:
            f.write("fruits\n")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, True)

    def probe(self, *prefix, **env):
        p = subprocess.run(list(prefix) + [self.exe, self.data], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, **env))
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)  # System.exit(3)
        return lines(p.stdout)

    def test_version_is_one_quarkus_parses(self):
        out = subprocess.run([os.path.join(HOME, "bin", "native-image"), "--version"], capture_output=True,
                             text=True, check=True).stdout.splitlines()
        self.assertEqual(len(out), 3)
        self.assertRegex(out[0], r"^native-image 25\.0\.2 \d{4}-\d\d-\d\d$")
        self.assertRegex(out[1], r"Runtime Environment GraalVM CE 25\.0\.2\+preon-assembled \(build 25[.\d]*\+\d+")

    def test_links_to_the_toolchain_libraries_beside_it(self):
        ldd = subprocess.run(["ldd", self.exe], capture_output=True, text=True, check=True).stdout
        for lib in ("libjvm.so", "libjava.so", "libnio.so"):
            self.assertIn(os.path.join(self.dir, "lib", lib), ldd)

    def test_runs(self):
        got = self.probe(TZ="Europe/Paris")
        self.assertEqual(int(got["processors"]), len(os.sched_getaffinity(0)))
        self.assertLess(abs(int(got["millis"]) / 1000 - time.time()), 30)
        self.assertGreaterEqual(int(got["slept_ms"]), 50)
        self.assertEqual(got["zone"], "Europe/Paris")
        self.assertEqual(got["file"], "fruits")
        self.assertEqual(got["echo"], "ping")
        self.assertGreater(int(got["maxheap"]), 0)

    def test_processor_count_follows_the_affinity_mask(self):
        if not shutil.which("taskset"):
            self.skipTest("no taskset")
        self.assertEqual(self.probe("taskset", "-c", "0")["processors"], "1")

    def test_sigterm_runs_the_shutdown_hook(self):
        p = subprocess.Popen([self.exe, "wait"], stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(p.stdout.readline().strip(), "waiting")
            p.send_signal(signal.SIGTERM)
            out, _ = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
        self.assertIn("hook ran", out)
        self.assertEqual(p.returncode, 143)


if __name__ == "__main__":
    unittest.main(verbosity=2)
