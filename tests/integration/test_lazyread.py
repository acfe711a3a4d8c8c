# SPDX-License-Identifier: MIT
"""Lazy read interest (scripts/sources/h2o/01-epoll-lazy-read.patch): a connection whose answer waits on the database stays registered for
reading, so a keep-alive /db request costs no epoll_ctl (h2o 2.2.5 alone makes two: counted by strace); and what
only the deferral can get wrong still works: a client that sends its next requests before the answers (pipelined
requests to the database), and a client that closes while its answer waits."""
import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from harness import SLOW, WRAPPER, PreonTestCase, main
from test_pipelining import answers, count_tcp, request


class LazyReadTest(PreonTestCase):
    preon_settings = {"server_threads": 1}

    @unittest.skipIf(shutil.which("strace") is None, "strace is not installed")
    def test_keep_alive_db_requests_make_no_epoll_ctl(self):
        if WRAPPER:
            self.skipTest("strace on valgrind's process counts valgrind's own calls")
        n = 20
        conn = http.client.HTTPConnection("127.0.0.1", self.preon.port, timeout=30 * SLOW)
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "strace.out")
            tracer = subprocess.Popen(["strace", "-f", "-e", "trace=epoll_ctl,read", "-o", out, "-p",
                                       str(self.preon.proc.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                def lines(call):
                    with open(out) as f:
                        return sum(1 for l in f if call + "(" in l)

                def get(path):
                    conn.request("GET", path)
                    r = conn.getresponse()
                    return r.status, r.read()

                deadline = time.monotonic() + 30
                while not (os.path.exists(out) and lines("read") > 0):  # attached once a request's read is seen
                    self.assertLess(time.monotonic(), deadline, "strace did not attach")
                    self.assertEqual(get("/db")[0], 200)
                    time.sleep(0.05)
                before = lines("epoll_ctl")
                for _ in range(n):
                    status, body = get("/db")
                    self.assertEqual(status, 200, body)
                    self.assertEqual(sorted(json.loads(body)), ["id", "randomNumber"])
                time.sleep(0.3)
                calls = lines("epoll_ctl") - before
            finally:
                tracer.terminate()
                tracer.wait(timeout=30)
                conn.close()
        # h2o alone: one to stop reading, one to start again, per request (2 * n)
        self.assertLessEqual(calls, 2, "%d epoll_ctl calls for %d keep-alive /db requests" % (calls, n))

    def test_requests_sent_before_the_answers(self):
        """Sixteen pipelined requests that wait on the database, then more on the same connection: every answer, in
        order. h2o reads the first and stops; the rest are readable while it does not read them."""
        paths = ["/db", "/queries?queries=3", "/fortunes", "/json"] * 4
        with socket.create_connection(("127.0.0.1", self.preon.port), timeout=30 * SLOW) as s:
            for _ in range(3):
                s.sendall(b"".join(request(p) for p in paths))
                buf = b""
                while len(answers(buf)) < len(paths):
                    chunk = s.recv(65536)
                    self.assertTrue(chunk, "connection closed after %d answers" % len(answers(buf)))
                    buf += chunk
                got = answers(buf)
                self.assertEqual([st for st, _ in got], [200] * len(paths))
                for path, (_, body) in zip(paths, got):
                    if path == "/db":
                        self.assertEqual(sorted(json.loads(body)), ["id", "randomNumber"])
                    elif path.startswith("/queries"):
                        self.assertEqual(len(json.loads(body)), 3)
                    elif path == "/fortunes":
                        self.assertIn(b"Additional fortune added at request time.", body)
                    else:
                        self.assertEqual(body, b'{"message":"Hello, World!"}')

    def test_client_that_closes_while_its_answer_waits(self):
        """Clients that send a database request and close at once: their connections end (the close is seen though
        h2o was not reading), and the server goes on answering."""
        port, pid = self.preon.port, self.preon.proc.pid
        for _ in range(20):
            with socket.create_connection(("127.0.0.1", port), timeout=30 * SLOW) as s:
                s.sendall(request("/queries?queries=20") + request("/db"))
        deadline = time.monotonic() + 30 * SLOW
        while count_tcp(pid, port) != 0:
            self.assertLess(time.monotonic(), deadline, "connections left open: %d" % count_tcp(pid, port))
            time.sleep(0.05)
        status, _, body = self.preon.request("GET", "/db")
        self.assertEqual(status, 200, body)


if __name__ == "__main__":
    main()
