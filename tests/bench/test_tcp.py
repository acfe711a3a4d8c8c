# SPDX-License-Identifier: MIT
"""bench/measure/tcp.py: the congestion control read as the kernel has it, recorded in every results header, set
for a block and put back after it (also when the block fails), refused by name when the kernel has no such one.
Setting needs root and a second congestion control; it changes the machine's setting for milliseconds."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from measure import tcp  # noqa: E402
from measure.report import results_header  # noqa: E402

READABLE = os.path.exists(tcp.PATH)


@unittest.skipUnless(READABLE, "no %s here" % tcp.PATH)
class Read(unittest.TestCase):
    def test_current_is_the_kernels(self):
        with open(tcp.PATH) as f:
            self.assertEqual(tcp.current(), f.read().strip())

    def test_in_every_header(self):
        self.assertEqual(results_header()["tcp_congestion_control"], tcp.current())

    def test_none_changes_nothing(self):
        before = tcp.current()
        with tcp.CongestionControl(None):
            self.assertEqual(tcp.current(), before)
        self.assertEqual(tcp.current(), before)


def other():
    """An available congestion control other than the current one, or None."""
    now = tcp.current()
    return next((n for n in tcp.available() if n != now), None)


@unittest.skipUnless(READABLE and os.geteuid() == 0 and other(), "needs root and a second congestion control")
class Set(unittest.TestCase):
    def test_set_inside_and_put_back(self):
        before, name = tcp.current(), other()
        cc = tcp.CongestionControl(name)
        with cc:
            self.assertEqual(tcp.current(), name)
            with cc:  # entered again: still the one set, and the first exit still knows what to put back
                pass
        self.assertEqual(tcp.current(), before)

    def test_put_back_when_the_block_fails(self):
        before = tcp.current()
        with self.assertRaises(ZeroDivisionError):
            with tcp.CongestionControl(other()):
                1 / 0
        self.assertEqual(tcp.current(), before)

    def test_unknown_name_refused(self):
        before = tcp.current()
        with self.assertRaises(RuntimeError) as e:
            with tcp.CongestionControl("no-such-congestion-control"):
                self.fail("entered")
        self.assertIn("no-such-congestion-control", str(e.exception))
        self.assertIn(before, str(e.exception), "the message names what is available")
        self.assertEqual(tcp.current(), before)


if __name__ == "__main__":
    unittest.main()
