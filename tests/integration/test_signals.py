# SPDX-License-Identifier: MIT
"""Every signal a supervisor or an operator sends has a meaning or is ignored: SIGHUP reloads what
can change at run time (log.level, log.format, log.access) and loses no request; a bad file is refused with its
FILE:LINE:COL and the running settings stay; SIGUSR1 and SIGUSR2 are ignored; SIGQUIT drains like SIGTERM. Before,
SIGHUP, SIGUSR1 and SIGUSR2 killed preon at once (exit 129, requests in flight reset) and SIGQUIT dumped core."""
import json
import os
import signal
import tempfile
import time
import unittest

from harness import SLOW, Clients, Preon, main, psql, require_env

JSON = {"Content-Type": "application/json"}


class Load(Clients):
    """16 clients, each a GET /fruits then a POST and a DELETE of its own row, until stopped: every answer recorded."""

    def __init__(self, p, n=16):
        super().__init__(n)
        self.p, self.answers, self.errors = p, [], []

    def run(self, i):
        while not self.stop.is_set():
            try:
                got = [self.p.request("GET", "/fruits", timeout=20 * SLOW)[0]]
                status, _, body = self.p.request("POST", "/fruits", json.dumps({"name": "sig-%d" % i}).encode(), JSON,
                                                 timeout=20 * SLOW)
                got.append(status)
                if status == 201:
                    got.append(self.p.request("DELETE", "/fruits/%d" % json.loads(body)["id"], timeout=20 * SLOW)[0])
                with self.lock:
                    self.answers.extend(got)
            except OSError as e:
                with self.lock:
                    self.errors.append(repr(e))


class SignalsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_env()

    def setUp(self):
        fd, self.path = tempfile.mkstemp(prefix="preon-", suffix=".yaml")
        os.close(fd)
        self.addCleanup(os.unlink, self.path)
        # the rows of a client whose DELETE never came (a preon killed by the signal, as before the fix) go too
        self.addCleanup(psql, "DELETE FROM fruits WHERE name LIKE 'sig-%'")
        self.write("log:\n  level: info\n  access: false\n")

    def write(self, text):
        with open(self.path, "w") as f:
            f.write(text)

    def preon(self):
        return Preon(args=["--config", self.path])

    def wait_for(self, p, text, after=0):
        deadline = time.monotonic() + 10 * SLOW
        while text not in p.output()[after:]:
            self.assertIsNone(p.proc.poll(), p.output())
            self.assertLess(time.monotonic(), deadline, p.output()[-3000:])
            time.sleep(0.02)

    def test_sighup_reloads_under_load_and_loses_nothing(self):
        with self.preon().start() as p:
            with Load(p) as load:
                time.sleep(0.5)
                self.write("log:\n  level: info\n  access: true\n")
                for _ in range(3):
                    p.kill(signal.SIGHUP)
                    time.sleep(0.3)
                self.wait_for(p, "SIGHUP: reloaded")
                mark = len(p.output())
                time.sleep(0.5)
            self.assertIsNone(p.proc.poll(), p.output()[-3000:])
            self.assertEqual(load.errors, [])
            self.assertGreater(len(load.answers), 100)
            self.assertLessEqual(set(load.answers), {200, 201, 204}, load.answers)
            self.assertIn("access GET /fruits 200", p.output()[mark:])  # log.access took effect at once
            self.assertNotIn("draining", p.output())
            self.assertEqual(p.stop(), 0)

    def test_bad_file_keeps_the_running_settings(self):
        with self.preon().start() as p:
            self.write("log:\n  level: debug\n  acess: true\n")
            p.kill(signal.SIGHUP)
            self.wait_for(p, "configuration not reloaded")
            self.assertIn("%s:3:3: unknown key 'acess' in section 'log'" % self.path, p.output())
            mark = len(p.output())
            self.assertEqual(p.request("GET", "/fruits")[0], 200)
            time.sleep(0.2)
            self.assertNotIn("access GET", p.output()[mark:])
            # A key that needs a restart is named as such; the log keys beside it still apply.
            self.write("server:\n  max_body_bytes: 1024\nlog:\n  access: true\n")
            p.kill(signal.SIGHUP)
            self.wait_for(p, "server.max_body_bytes changed; they take effect at the next start", mark)
            mark = len(p.output())
            self.assertEqual(p.request("GET", "/fruits")[0], 200)
            self.wait_for(p, "access GET /fruits 200", mark)
            self.assertEqual(p.stop(), 0)

    def test_sigusr_ignored_sigquit_drains(self):
        with self.preon().start() as p:
            for sig in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGPIPE):
                p.kill(sig)
            time.sleep(0.3)
            self.assertIsNone(p.proc.poll(), p.output())
            self.assertEqual(p.request("GET", "/hello")[0], 200)
            p.kill(signal.SIGQUIT)
            self.assertEqual(p.wait(timeout=15 * SLOW), 0)
            self.assertIn("SIGQUIT: draining", p.output())


if __name__ == "__main__":
    main()
