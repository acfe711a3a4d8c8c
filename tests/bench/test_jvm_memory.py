# SPDX-License-Identifier: MIT
"""bench/peers/jvm-start.sh, the JVM peers' image entry point (~2 s, no container): the memory settings of each
stack's own images as flags — Quarkus's run-java.sh (MaxRAMPercentage 50 and the Parallel collector), Spring Boot's
buildpack (Paketo's memory calculator: heap = limit - direct - metaspace - code cache - thread stacks; no start
when the fixed regions exceed the limit) — and the JVM taking them as they are meant (MaxHeapSize)."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

REPO = os.environ.get("PREON_REPO") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
START = os.path.join(REPO, "bench", "peers", "jvm-start.sh")
MIB = 1048576


class JvmStart(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def flags(self, profile, limit=None, **env):
        """(exit status, stdout, stderr) of jvm-start.sh printing its flags under a memory limit of `limit` bytes
        (None: no limit, the files say "max")."""
        path = os.path.join(self.dir.name, "memory.max")
        with open(path, "w") as f:
            f.write("max\n" if limit is None else "%d\n" % limit)
        meminfo = os.path.join(self.dir.name, "meminfo")
        with open(meminfo, "w") as f:
            f.write("MemTotal: 4194304 kB\nMemAvailable: 2097152 kB\n")
        e = dict(os.environ, JVM_MEMORY=profile, PRINT="1", MEMORY_LIMIT_FILE=path, MEMINFO=meminfo, **env)
        for k in ("JAVA_MAX_MEM_RATIO", "BPL_JVM_THREAD_COUNT", "BPL_JVM_HEAD_ROOM", "CLASS_COUNTS"):
            if k not in env:
                e.pop(k, None)
        r = subprocess.run(["sh", START], capture_output=True, text=True, env=e, timeout=30)
        return r.returncode, r.stdout.split(), r.stderr

    def test_paketo_arithmetic(self):
        # 1 GiB, 26,000 + 14,000 classes (35 % loaded: 14,000), a servlet application's 250 threads
        rc, flags, err = self.flags("paketo", 1024 * MIB, JVM_CLASS_COUNT="26000", APP_CLASS_COUNT="14000",
                                    PAKETO_THREAD_COUNT="250")
        self.assertEqual(rc, 0, err)
        metaspace = 14000000 + 5800 * 14000
        heap = 1024 * MIB - 10 * MIB - metaspace - 240 * MIB - 250 * MIB
        self.assertEqual(flags, ["-XX:MaxDirectMemorySize=10M", "-Xmx%dK" % (heap // 1024),
                                 "-XX:MaxMetaspaceSize=%dK" % (metaspace // 1024), "-XX:ReservedCodeCacheSize=240M",
                                 "-Xss1M", "-XX:ActiveProcessorCount=%d" % len(os.sched_getaffinity(0))])
        # a reactive application's 50 threads leave 200 MiB more heap; BPL_JVM_THREAD_COUNT wins over the image's
        rc, reactive, _ = self.flags("paketo", 1024 * MIB, JVM_CLASS_COUNT="26000", APP_CLASS_COUNT="14000",
                                     PAKETO_THREAD_COUNT="250", BPL_JVM_THREAD_COUNT="50")
        self.assertEqual(reactive[1], "-Xmx%dK" % ((heap + 200 * MIB) // 1024))
        # no limit: MemAvailable, as the calculator falls back to
        rc, unlimited, _ = self.flags("paketo", None, JVM_CLASS_COUNT="26000", APP_CLASS_COUNT="14000")
        self.assertEqual(unlimited[1], "-Xmx%dK" % ((2048 * MIB - 10 * MIB - metaspace - 240 * MIB - 250 * MIB) // 1024))

    def test_paketo_refuses_a_limit_below_the_fixed_regions(self):
        counts = os.path.join(self.dir.name, "class-counts")
        with open(counts, "w") as f:
            f.write("JVM_CLASS_COUNT=26588\nAPP_CLASS_COUNT=17209\n")  # the image's file, as jvm.Dockerfile writes it
        rc, flags, err = self.flags("paketo", 100 * 1000 * 1000, CLASS_COUNTS=counts, PAKETO_THREAD_COUNT="50")
        self.assertEqual((rc, flags), (1, []))
        self.assertIn("fixed memory regions require", err)
        self.assertIn("greater than 97656K available for allocation", err)

    def test_run_java(self):
        rc, flags, _ = self.flags("run-java", 100 * MIB)
        self.assertEqual(rc, 0)
        self.assertEqual(flags, ["-XX:MaxRAMPercentage=50.0", "-XX:+UseParallelGC", "-XX:MinHeapFreeRatio=10",
                                 "-XX:MaxHeapFreeRatio=20", "-XX:GCTimeRatio=4", "-XX:AdaptiveSizePolicyWeight=90",
                                 "-XX:+ExitOnOutOfMemoryError"])
        self.assertEqual(self.flags("run-java", JAVA_MAX_MEM_RATIO="0")[1][0], "-XX:+UseParallelGC")
        self.assertEqual(self.flags("run-java", JAVA_MAX_MEM_RATIO="75.6")[1][0], "-XX:MaxRAMPercentage=76.0")

    def test_none_and_unknown(self):
        self.assertEqual(self.flags("none")[:2], (0, []))
        self.assertEqual(self.flags("g1")[0], 2)

    @unittest.skipUnless(shutil.which("java"), "no java here")
    def test_the_jvm_takes_the_flags(self):
        _, flags, _ = self.flags("paketo", 1024 * MIB, JVM_CLASS_COUNT="26000", APP_CLASS_COUNT="14000")
        _, run_java, _ = self.flags("run-java", 100 * MIB)
        for fl, want in ((flags, int(flags[1][4:-1]) * 1024), (run_java, None)):
            out = subprocess.run(["java"] + fl + ["-XX:+PrintFlagsFinal", "-version"], capture_output=True, text=True,
                                 timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            heap = int(re.search(r"\bMaxHeapSize\s+=\s+(\d+)", out.stdout).group(1))
            if want is not None:
                self.assertLess(abs(heap - want), 4 * MIB)  # the JVM rounds up to its heap alignment
            self.assertRegex(out.stdout, r"\bUse%sGC\s+= true" % ("Parallel" if fl is run_java else "G1|Serial"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
