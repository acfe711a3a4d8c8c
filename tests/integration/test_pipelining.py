# SPDX-License-Identifier: MIT
"""Pipelined HTTP/1 requests (h2o's write path as preon patches it, scripts/sources/h2o/): the answers of one loop pass
leave in one write, in order, byte
for byte; a client that reads slowly gets everything without stalling anyone else; a connection closed with answers
still held delivers them before it ends."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest

from harness import SANITIZED, SLOW, WRAPPER, Preon, PreonTestCase, main, raise_fd_limit, read_until_close, scaled

EXPECTED = {"/plaintext": (200, b"Hello, World!"), "/json": (200, b'{"message":"Hello, World!"}'),
            "/nope": (404, b'{"error":"no such resource","status":404}')}
# About 16 KB per answer (500 World rows from the thread's cache): 400 of them are more than the kernel buffers for
# a socket here (4 MB), so preon's side has to wait for the reader.
BIG = "/cached-queries?count=500"


def request(path, close=False):
    return ("GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (path, "Connection: close\r\n" if close else "")).encode()


def answers(buf):
    """Splits concatenated HTTP/1.1 answers (each with a Content-Length) into (status, body) pairs; a trailing
    incomplete answer is left out."""
    out, at = [], 0
    while True:
        head_end = buf.find(b"\r\n\r\n", at)
        if head_end < 0:
            return out
        head = buf[at:head_end].split(b"\r\n")
        length = [int(l.split(b":")[1]) for l in head[1:] if l.lower().startswith(b"content-length:")][0]
        end = head_end + 4 + length
        if len(buf) < end:
            return out
        out.append((int(head[0].split()[1]), buf[head_end + 4:end]))
        at = end


def slow_socket(port, rcvbuf=4096):
    """A client with a small receive window: what the server writes fills its socket after a few KB."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(60 * SLOW)
    s.connect(("127.0.0.1", port))
    return s


def count_tcp(pid, port):
    """Established TCP connections of process `pid` on its listening `port` (ss)."""
    out = subprocess.run(["ss", "-Htnp", "state", "established", "( sport = :%d )" % port], capture_output=True,
                         text=True).stdout
    return sum(1 for l in out.splitlines() if "pid=%d," % pid in l)


class PipeliningTest(PreonTestCase):
    # a connection closed with answers held keeps them while its peer reads, or for this long without a read: longer
    # than the tests' pauses (10 s under valgrind)
    preon_settings = {"server_threads": 1, "server_idle_timeout_ms": 60000}

    def expect(self, paths, got):
        self.assertEqual(len(got), len(paths), "answers received")
        for i, (path, (status, body)) in enumerate(zip(paths, got)):
            if path == BIG:
                self.assertEqual((status, len(json.loads(body))), (200, 500), "answer %d (%s)" % (i, path))
            else:
                self.assertEqual((status, body), EXPECTED[path], "answer %d (%s)" % (i, path))

    def test_answers_in_order(self):
        """120 requests in one write, the last with Connection: close: 120 answers, each the one its request asked
        for, in order, then the end of the connection."""
        paths = ["/plaintext", "/json", "/nope"] * 40
        with socket.create_connection(("127.0.0.1", self.preon.port), timeout=30 * SLOW) as s:
            s.sendall(b"".join(request(p, close=i == len(paths) - 1) for i, p in enumerate(paths)))
            self.expect(paths, answers(read_until_close(s)))

    def test_slow_reader_gets_everything_and_stalls_no_one(self):
        """800 pipelined requests from a client that reads nothing for a while behind a 4 KB window: about 6 MB of
        answers, more than the kernel buffers, wait on preon's side. Meanwhile another client is answered at once;
        then the slow one reads everything, in order."""
        paths = ["/plaintext", BIG] * 400
        s = slow_socket(self.preon.port)
        try:
            data = b"".join(request(p) for p in paths)
            sender = threading.Thread(target=s.sendall, args=(data,))
            sender.start()
            time.sleep(0.5 * SLOW)
            status, _, body = self.preon.request("GET", "/plaintext", timeout=10 * SLOW)
            self.assertEqual((status, body), (200, b"Hello, World!"))
            buf = b""
            while len(answers(buf)) < len(paths):
                chunk = s.recv(65536)
                self.assertTrue(chunk, "connection ended after %d answers" % len(answers(buf)))
                buf += chunk
            sender.join()
            self.expect(paths, answers(buf))
        finally:
            s.close()

    def test_close_with_answers_held(self):
        """800 pipelined requests (about 6 MB of answers), the last with Connection: close, from a client that reads
        nothing at first: h2o closes the connection while answers still wait for the socket; they are all delivered,
        then the end."""
        paths = [BIG, "/plaintext"] * 400
        s = slow_socket(self.preon.port)
        try:
            data = b"".join(request(p, close=i == len(paths) - 1) for i, p in enumerate(paths))
            sender = threading.Thread(target=s.sendall, args=(data,))
            sender.start()
            time.sleep(0.5 * SLOW)
            buf = read_until_close(s)
            got = answers(buf)
            sender.join()
            self.expect(paths, got)
        finally:
            s.close()

    def test_reader_that_stops_is_dropped(self):
        """The same, but the client never reads: after server.idle_timeout_ms without a byte taken (0.5 s here), the
        connection ends with what is left (the descriptor is not kept for ever), and the server serves on."""
        if os.environ.get("PREON_DEPS") == "system":
            self.skipTest("Debian's h2o 2.2.5 has no timeout for a write (scripts/sources/h2o/03-write-timeout.patch)")
        with Preon(server_threads=1, server_idle_timeout_ms=500).start() as p:
            paths = [BIG, "/plaintext"] * 400
            s = slow_socket(p.port)
            try:
                data = b"".join(request(x, close=i == len(paths) - 1) for i, x in enumerate(paths))
                sender = threading.Thread(target=s.sendall, args=(data,))
                sender.start()
                deadline = time.monotonic() + 60 * SLOW
                time.sleep(0.2)
                while count_tcp(p.proc.pid, p.port) > 0:  # preon's end of it: open until dropped
                    self.assertLess(time.monotonic(), deadline, "the connection was never dropped")
                    time.sleep(0.2)
                try:
                    got = answers(read_until_close(s))
                except ConnectionResetError:
                    got = []
                self.assertLess(len(got), len(paths))
                sender.join()
                self.assertEqual(p.request("GET", "/plaintext")[:3:2], (200, b"Hello, World!"))
            finally:
                s.close()
            self.assertEqual(p.stop(), 0)

    def test_close_with_more_input_delivers_the_answer(self):
        """A request that ends the connection (Connection: close, HTTP/1.0), then another 0.2 s later while the answer
        (about 16 KB) still waits behind a 4 KB window: preon shuts its side down and reads and drops the rest, so the
        whole answer arrives, then the end, not a reset (closing a socket with unread input resets it)."""
        if os.environ.get("PREON_DEPS") == "system":
            self.skipTest("Debian's h2o 2.2.5 closes at once (scripts/sources/h2o/04-graceful-close.patch)")
        for first in (request(BIG, close=True), ("GET %s HTTP/1.0\r\nHost: x\r\n\r\n" % BIG).encode()):
            s = slow_socket(self.preon.port)
            try:
                s.sendall(first)
                time.sleep(0.2)
                s.sendall(request("/plaintext"))
                buf = read_until_close(s)
            finally:
                s.close()
            got = answers(buf)
            self.assertEqual(len(got), 1, "%d bytes, then the end" % len(buf))
            self.assertEqual(got[0][0], 200)
            self.assertEqual(len(json.loads(got[0][1])), 500)

    def test_flood_stays_within_the_limits(self):
        """100 clients, in four waves 0.5 s apart, each pipeline 30,000 /plaintext (the last with Connection: close) and
        never read, against server.max_connections 25: preon holds at most 25 of their sockets (a closed one still being written counts
        until it is really closed), plus, for an instant, the one each thread has just accepted over the limit and is
        closing (a refusal is an accept and a close), and a bounded amount per connection, not their answers (tens of MB)."""
        nclients, limit = scaled(100, 200, 8), scaled(25, 50, 4)
        raise_fd_limit(4096)
        threads = 2
        with Preon(server_threads=threads, server_max_connections=limit).start() as p:
            fds = lambda: len(os.listdir("/proc/%d/fd" % p.proc.pid))  # noqa: E731

            def rss():
                with open("/proc/%d/status" % p.proc.pid) as f:
                    return int([l.split()[1] for l in f if l.startswith("VmRSS")][0])

            base_fds, base_rss = fds(), rss()
            data = request("/plaintext") * 29999 + request("/plaintext", close=True)
            socks, most = [], 0

            def flood(s):
                try:
                    s.sendall(data)
                except OSError:
                    pass  # refused: reset

            senders = []
            for i in range(nclients):
                if i % limit == 0 and i > 0:  # in waves: those of the first have had time to be answered and closed
                    time.sleep(0.5 * SLOW)
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.settimeout(10 * SLOW)
                try:
                    s.connect(("127.0.0.1", p.port))
                except OSError:
                    s.close()
                    continue
                socks.append(s)
                t = threading.Thread(target=flood, args=(s,), daemon=True)
                t.start()
                senders.append(t)
                most = max(most, fds() - base_fds)
            try:
                deadline = time.monotonic() + 2 * SLOW
                while time.monotonic() < deadline:
                    most = max(most, fds() - base_fds)
                    time.sleep(0.1)
                grown = rss() - base_rss
                self.assertLessEqual(most, limit + threads, "descriptors held beyond the connection limit")
                if not SANITIZED and not WRAPPER:
                    self.assertLess(grown, 60 * 1024, "RSS grew by %d KB" % grown)
            finally:
                for s in socks:
                    s.close()
                for t in senders:
                    t.join(timeout=10 * SLOW)
            # once their clients have gone, their places are free again (a moment: their sockets close as they notice)
            deadline = time.monotonic() + 10 * SLOW
            while True:
                try:
                    self.assertEqual(p.request("GET", "/plaintext")[:3:2], (200, b"Hello, World!"))
                    break
                except ConnectionError:
                    self.assertLess(time.monotonic(), deadline, "still refused after the flood's clients left")
                    time.sleep(0.1)

    @unittest.skipIf(shutil.which("strace") is None, "strace is not installed")
    def test_one_write_per_pipelined_batch(self):
        """Ten batches of 16 pipelined requests (TechEmpower's depth), each read whole before the next is sent: counted
        by strace on preon, the 160 answers leave in at most two writes per batch (the first answer of a pass at once,
        the rest at its end), not sixteen."""
        if WRAPPER:
            self.skipTest("under valgrind a batch's requests reach the loop over several passes")
        if os.environ.get("PREON_DEPS") == "system":
            self.skipTest("Debian's h2o 2.2.5 writes each answer on its own (scripts/sources/h2o/02-join-writes.patch)")
        with tempfile.TemporaryDirectory() as tmp, \
                socket.create_connection(("127.0.0.1", self.preon.port), timeout=30) as s:
            out = os.path.join(tmp, "strace.out")
            tracer = subprocess.Popen(["strace", "-f", "-e", "trace=write,writev", "-o", out, "-p",
                                       str(self.preon.proc.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                def writes():
                    with open(out) as f:
                        return sum(1 for l in f if "write(" in l or "writev(" in l)

                deadline = time.monotonic() + 30
                while not (os.path.exists(out) and writes() > 0):  # attached once a /plaintext's write is seen
                    self.assertLess(time.monotonic(), deadline, "strace did not attach")
                    self.assertEqual(self.preon.request("GET", "/plaintext")[0], 200)
                    time.sleep(0.05)
                before = writes()
                for _ in range(10):
                    s.sendall(request("/plaintext") * 16)
                    buf = b""
                    while len(answers(buf)) < 16:
                        buf += s.recv(65536)
                    self.expect(["/plaintext"] * 16, answers(buf))
                time.sleep(0.3)
                n = writes() - before
            finally:
                tracer.terminate()
                tracer.wait(timeout=30)
        self.assertGreaterEqual(n, 10)
        self.assertLessEqual(n, 20, "%d writes for 10 batches of 16 pipelined requests" % n)


if __name__ == "__main__":
    main()
