# SPDX-License-Identifier: MIT
"""The write path of the build: what preon's patches of h2o and libpq save, counted by strace on the running server
(counts, not speed) — pipelined answers joined into one write per loop pass (writev per pipelined /plaintext), read
interest kept instead of taken away and put back (epoll_ctl per keep-alive /db), a Sync per query queued instead of
sent (sendto per /queries?queries=20). Built from Debian's sources (scripts/sources/), each must save its calls; the
stock build (PREON_DEPS=system: Debian's h2o and libpq as shipped) makes every one of them, as docs/architecture.md
says it does."""
import os
import shutil
import tempfile
import unittest

from harness import WRAPPER, Preon, main, require_env
from measure import fixed_count, syscalls  # bench/measure, on the path through harness

STOCK = os.environ.get("PREON_DEPS") == "system"
# mechanism: (the system call it saves, the load that shows it: path, requests, connections, pipeline depth,
#             at most this many calls per request with the patches, at least this many without)
MECHANISMS = {
    "joined writes": ("writev", ("/plaintext", 1600, 4, 16), 0.35, 0.9),
    "lazy read interest": ("epoll_ctl", ("/db", 400, 4, 1), 0.2, 1.5),
    "queued Syncs": ("sendto", ("/queries?queries=20", 100, 4, 1), 2.0, 15.0),
}


class WritePathTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_env()
        if WRAPPER:
            raise unittest.SkipTest("strace and valgrind do not trace one process together")
        if shutil.which("strace") is None:
            raise SystemExit("strace is missing: scripts/deps.sh test installs it")
        cls.dir = tempfile.mkdtemp(prefix="preon-writepath-")
        cls.calls = {}
        with Preon(server_threads=1, database_connections_per_thread=1).start() as p:
            for name, (syscall, (path, n, conns, depth), _, _) in MECHANISMS.items():
                fixed_count.run("127.0.0.1", p.port, path, 50, conns, depth)  # warm: statements prepared
                trace = syscalls.Trace(syscalls.tids(p.proc.pid), os.path.join(cls.dir, "%s.strace" % syscall))
                try:
                    got = fixed_count.run("127.0.0.1", p.port, path, n, conns, depth)
                finally:
                    calls = trace.stop()
                assert got["statuses"] == {200: n}, got
                cls.calls[name] = calls.get(syscall, 0) / n
            assert p.stop() == 0

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_each_mechanism(self):
        for name, (syscall, _, patched_max, stock_min) in MECHANISMS.items():
            per_request = self.calls[name]
            print("%s: %.2f %s per request (%s build)" % (name, per_request, syscall, "stock" if STOCK else "patched"))
            with self.subTest(name):
                if STOCK:
                    self.assertGreaterEqual(per_request, stock_min, "stock build: %s %.2f %s per request" % (
                        name, per_request, syscall))
                else:
                    self.assertLessEqual(per_request, patched_max, "%s: %.2f %s per request" % (
                        name, per_request, syscall))


if __name__ == "__main__":
    main()
