# SPDX-License-Identifier: MIT
"""server.interpose turns the interposed calls' mechanisms off together (false) or one at a time (without-writes,
without-epoll, without-send), so that a fault can be narrowed down to one of them. Each mode is checked by what each
mechanism saves, counted by strace on the running server (counts, not speed): joined pipelined answers (writev per
pipelined /plaintext), read interest kept instead of taken away and put back (epoll_ctl per /db), libpq's writes
gathered per batch (sendto per /queries?queries=20). A mechanism must save its calls in every mode that keeps it,
and in none that leaves it out."""
import os
import shutil
import tempfile
import unittest

from harness import WRAPPER, Preon, main, require_env
from measure import fixed_count, syscalls  # bench/measure, on the path through harness

MODES = ("true", "without-writes", "without-epoll", "without-send", "false")
# mechanism: (the mode that leaves it out alone, the system call it saves, the load that shows it)
MECHANISMS = {
    "writes": ("without-writes", "writev", ("/plaintext", 1600, 4, 16)),
    "epoll": ("without-epoll", "epoll_ctl", ("/db", 400, 4, 1)),
    "send": ("without-send", "sendto", ("/queries?queries=20", 100, 4, 1)),
}


class InterposeModesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_env()
        if WRAPPER:
            raise unittest.SkipTest("strace and valgrind do not trace one process together")
        if shutil.which("strace") is None:
            raise SystemExit("strace is missing: scripts/deps.sh test installs it")
        cls.dir = tempfile.mkdtemp(prefix="preon-interpose-")
        cls.calls = {mode: cls.count(mode) for mode in MODES}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def count(cls, mode):
        """{mechanism: calls of its system call per request} for preon with server.interpose `mode`."""
        out = {}
        with Preon(server_threads=1, database_connections_per_thread=1, server_interpose=mode).start() as p:
            for name, (_, syscall, (path, n, conns, depth)) in MECHANISMS.items():
                fixed_count.run("127.0.0.1", p.port, path, 50, conns, depth)  # warm: statements prepared
                trace = syscalls.Trace(syscalls.tids(p.proc.pid),
                                               os.path.join(cls.dir, "%s-%s.strace" % (mode, name)))
                try:
                    got = fixed_count.run("127.0.0.1", p.port, path, n, conns, depth)
                finally:
                    calls = trace.stop()
                assert got["statuses"] == {200: n}, got
                out[name] = calls.get(syscall, 0) / n
            assert p.stop() == 0
        return out

    def test_each_mode_turns_off_exactly_its_mechanisms(self):
        for name, (alone, syscall, _) in MECHANISMS.items():
            on = [self.calls[m][name] for m in MODES if m not in (alone, "false")]
            off = [self.calls[alone][name], self.calls["false"][name]]
            # With the mechanism, its calls are at most two thirds of what they are without it (the records of
            # docs/benchmarks.md: a fifth to a half); the margin is for what a loaded machine moves.
            self.assertLess(max(on), min(off) * 2 / 3, "%s (%s per request) by mode: %s" % (
                name, syscall, {m: round(self.calls[m][name], 2) for m in MODES}))


if __name__ == "__main__":
    main()
