# SPDX-License-Identifier: MIT
"""bench/measure/ramp.py, the ramp-of-users driver (python3 bench/measure/ramp.py its command line), against tests/bench/ramp_server.py,
a server whose breaking point is known: past N open connections it answers 503 (fail) or 300 ms late (slow). The
driver must count the KOs, find the saturation point near N, and report none below it (a p95 margin of 200 ms and 4
broken windows in a row keep a busy machine's noise from reading as a break, the slow server adds 300 ms, and the
driver's own lag is not set aside here: that part is tested on recorded samples). About 20 s."""
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
from measure.ramp import _parse, analyse, run_ramp  # noqa: E402
from measure.services import free_port, supervise  # noqa: E402 - scripts/fixtures/supervise.py

N = 100


class Server:
    def __init__(self, mode, max_users=N):
        self.port = free_port()
        self.proc = supervise.spawn([sys.executable, os.path.join(HERE, "ramp_server.py"), "--port", str(self.port),
                                     "--max-users", str(max_users), "--mode", mode], os.devnull, cwd=None)
        supervise.wait_ready(lambda: supervise.tcp_open(self.port, timeout=0.2), 10, "ramp_server.py", self.proc,
                             interval=0.05)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        supervise.stop(self.proc, 10)


class RampTest(unittest.TestCase):
    def check_common(self, r, users):
        self.assertEqual(r["total"], r["ok"] + r["ko"])
        self.assertEqual(sum(w["responses"] for w in r["windows"]), r["total"])
        self.assertEqual(max(w["users"] for w in r["windows"]), users)
        # each user asks about every think time (0.1 s): the offered load must have been sent
        self.assertGreater(r["total"], users * 3 * 0.5 * 5)

    def test_failing_past_n(self):
        with Server("fail") as s:
            r = run_ramp(s.port, ["/fruits"], 2 * N, ramp=4, hold=1, think=0.1, timeout=3, procs=2,
                         p95_margin=200, lag_bound=1e9, sustain=4)
        self.check_common(r, 2 * N)
        self.assertGreater(r["ko_pct"], 30)  # past N every request fails, and the second half of the run is past N
        self.assertIsNotNone(r["saturation"], r)
        self.assertTrue(0.75 * N <= r["saturation"]["users"] <= 1.3 * N, r["saturation"])
        self.assertIn("KO", r["saturation"]["reason"])
        early = [w for w in r["windows"] if w["users"] < 0.8 * N]
        self.assertTrue(early and all(w["ko_pct"] == 0 for w in early))

    def test_slowing_past_n(self):
        with Server("slow") as s:
            r = run_ramp(s.port, ["/fruits", "/hello"], 2 * N, ramp=4, hold=1, think=0.1, timeout=3, procs=2,
                         p95_margin=200, lag_bound=1e9, sustain=4)
        self.assertEqual(r["ko"], 0)
        self.assertIsNotNone(r["saturation"], r)
        self.assertTrue(0.75 * N <= r["saturation"]["users"] <= 1.3 * N, r["saturation"])
        self.assertIn("p95", r["saturation"]["reason"])
        self.assertGreaterEqual(r["p95_ms"], 300)

    def test_below_n(self):
        with Server("fail") as s:  # with asyncio's own loop (the others take uvloop when it is installed)
            r = run_ramp(s.port, ["/fruits"], N // 2, ramp=2, hold=1, think=0.1, timeout=3, procs=2, p95_margin=200,
                         lag_bound=1e9, loop="asyncio")
        self.check_common(r, N // 2)
        self.assertEqual((r["ko"], r["saturation"]), (0, None))

    def test_refused(self):
        """Nothing listening: every request is KO, and the driver still ends on time."""
        t0 = time.monotonic()
        r = run_ramp(free_port(), ["/hello"], 20, ramp=1, hold=1, think=0.1, timeout=1, procs=1, loop="asyncio")
        self.assertLess(time.monotonic() - t0, 10)
        self.assertGreater(r["total"], 20)
        self.assertEqual(r["ok"], 0)
        self.assertEqual(r["ko_pct"], 100.0)

    def test_driver_lag_is_not_saturation(self):
        """Windows in which the driver's own loop lagged are the driver's limit, not the server's saturation."""
        cfg = {"users": 100, "ramp": 10.0, "hold": 0.0, "timeout": 1.0, "ko_break": 1.0, "p95_factor": 10.0,
               "p95_margin": 50.0, "sustain": 3, "min_samples": 5, "lag_bound": 50.0}
        done_t = [i / 100.0 for i in range(1000)]  # 100 answers a second for 10 s
        lat = [1.0 if t < 5 else 500.0 for t in done_t]  # slow from t = 5 s (users 51+)
        ok = [1] * len(done_t)
        lag_t = [i / 10.0 for i in range(100)]
        quiet = analyse(cfg, done_t, lat, ok, 1.0, lag_t, [1.0] * 100)
        self.assertEqual(quiet[3]["users"], 51)
        self.assertIsNone(quiet[4])
        lagging = analyse(cfg, done_t, lat, ok, 1.0, lag_t, [1.0 if t < 5 else 400.0 for t in lag_t])
        self.assertIsNone(lagging[3])
        self.assertEqual(lagging[4]["users"], 51)
        self.assertEqual(lagging[0][6]["driver_lag_ms"], 400.0)

    def test_parse(self):
        self.assertIsNone(_parse(bytearray(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel")))
        self.assertEqual(_parse(bytearray(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")), (200, True, 43))
        chunked = b"HTTP/1.1 503 X\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        self.assertIsNone(_parse(bytearray(chunked[:-2])))
        self.assertEqual(_parse(bytearray(chunked)), (503, False, len(chunked)))


if __name__ == "__main__":
    unittest.main(verbosity=2)
