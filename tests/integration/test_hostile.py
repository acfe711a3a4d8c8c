# SPDX-License-Identifier: MIT
"""Hostile and broken clients: slowloris, oversized headers and request lines, malformed HTTP, half-closed
connections, 10,000 pipelined requests on one connection. Each runs in a child process while this one probes
GET /hello on new connections: every probe is answered (a loop blocked by a hostile client would time it out: 5 s),
every client gets a clear answer or a close, and preon survives. The probe's p99 is recorded, not asserted (tests
never assert speed; docs/reliability.md reports it). PREON_SCALE=long (bench/reliability.py) runs each for longer."""
import json
import multiprocessing
import socket
import time
import unittest

from harness import SLOW, Preon, main, read_response, record, require_env, scaled

DURATION = scaled(3, 30, 3)  # seconds each hostile client keeps at it


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10 * SLOW)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def answer_or_close(s):
    """Reads one answer: its status, or 'closed' if the server closed (or reset) first."""
    try:
        return read_response(s.makefile("rb"))[0]
    except (ConnectionError, OSError):
        return "closed"


def slowloris(port, until):
    """Connections that trickle a request head one byte at a time and never finish it, replaced as preon closes
    them: each must be closed once idle_timeout_ms (1 s here) has passed, not held for as long as the client
    likes. Connections found open well past that count as overdue."""
    n, socks, closed, sent, overdue = scaled(200, 1000, 20), {}, 0, 0, 0
    while time.monotonic() < until:
        while len(socks) < n:
            s = connect(port)
            s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n")
            socks[s] = time.monotonic()
        for s, opened in list(socks.items()):
            try:
                s.send(b"X")  # one more byte of a header that never ends
                sent += 1
            except OSError:
                del socks[s]
                s.close()
                closed += 1
                continue
            if time.monotonic() - opened > 1.0 + 2.0 * SLOW:
                overdue += 1
                del socks[s]
                s.close()
        time.sleep(0.05)
    for s in socks:
        s.close()
    return {"load": "%d connections at a time, each trickling a header byte every 50 ms" % n,
            "closed_by_server": closed, "overdue": overdue, "bytes_trickled": sent}


def repeat(port, until, make_request, load):
    """Sends make_request(i) on a new connection each time until `until`; counts the answers by status."""
    statuses, i = {}, 0
    while time.monotonic() < until:
        with connect(port) as s:
            try:
                s.sendall(make_request(i))
            except OSError:
                pass  # the server may answer and close before the whole request is written
            st = answer_or_close(s)
        statuses[str(st)] = statuses.get(str(st), 0) + 1
        i += 1
    return {"load": load, "requests": i, "statuses": statuses}


def oversized_headers(port, until):
    """100 headers of 1,000 bytes each (h2o allows 100 headers in all), one request per connection."""
    return repeat(port, until, lambda i: b"GET /hello HTTP/1.1\r\nHost: x\r\n" +
                  b"".join(b"X-Fill-%d: %s\r\n" % (n, b"v" * 1000) for n in range(100)) + b"\r\n",
                  "100 headers of 1,000 bytes, a new connection each")


def oversized_request_line(port, until):
    """Request targets of 100 KB (preon's 414, server.max_uri_bytes) and 1 MB (past h2o's own limit on a request
    head: 400), alternating, one per connection."""
    return repeat(port, until, lambda i: b"GET /hello?" + b"q" * (100000 if i % 2 else 1000000) +
                  b" HTTP/1.1\r\nHost: x\r\n\r\n", "request targets of 100 KB and 1 MB in turn, a new connection each")


MALFORMED = [
    b"\x00\x01\x02\x03 garbage\r\n\r\n",
    b"GET\r\n\r\n",
    b"GET /hello HTTP/9.9\r\nHost: x\r\n\r\n",
    b"GET /hello HTTP/1.1\r\nNo colon here\r\n\r\n",
    b"GET /hello HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
    b"POST /fruits HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"POST /fruits HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
    b"GET /fruits/1 HTTP/1.1\r\nHost: x\r\n\x7f\xff: \xfe\r\n\r\n",
    b"\r\n\r\n\r\n\r\n",
    b"G\xe9T /hello HTTP/1.1\r\n\r\n",
]


def malformed(port, until):
    """The MALFORMED requests in turn, one per connection."""
    return repeat(port, until, lambda i: MALFORMED[i % len(MALFORMED)],
                  "%d kinds of malformed request in turn (garbage, bad version, bad header, bad framing...), a new "
                  "connection each" % len(MALFORMED))


def half_closed(port, until):
    """A request, then the client shuts down its sending side: the answer must still come."""
    statuses, i = {}, 0
    while time.monotonic() < until:
        with connect(port) as s:
            s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % (b"/hello" if i % 2 else b"/fruits"))
            s.shutdown(socket.SHUT_WR)
            st = answer_or_close(s)
        statuses[str(st)] = statuses.get(str(st), 0) + 1
        i += 1
    return {"load": "GET /fruits or /hello, then shutdown(SHUT_WR), a new connection each", "requests": i,
            "statuses": statuses}


def pipelined(port, until):
    """10,000 requests in one write on one connection (hello and database reads alternating): all answered, in
    order. Repeated until `until`."""
    n, rounds, statuses = scaled(10000, 10000, 1000), 0, {}
    while rounds == 0 or time.monotonic() < until:
        paths = [b"/hello" if i % 2 else b"/fruits/%d" % (1 + i % 3) for i in range(n)]
        with connect(port) as s:
            s.sendall(b"".join(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % p for p in paths))
            f = s.makefile("rb")
            for i, path in enumerate(paths):
                status, _, body = read_response(f)
                statuses[str(status)] = statuses.get(str(status), 0) + 1
                if status == 200 and path != b"/hello" and json.loads(body)["id"] != 1 + i % 3:
                    raise AssertionError("answer %d out of order" % i)
        rounds += 1
    return {"load": "{:,} requests (/hello and /fruits/{{id}}) in one write on one connection, again and again".format(n),
            "requests": n * rounds, "statuses": statuses}


def open_connections(port):
    """preon_http_connections from preon's /metrics (this request's own connection included)."""
    with connect(port) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        body = read_response(s.makefile("rb"))[2].decode()
    return int(next(line.split()[1] for line in body.splitlines() if line.startswith("preon_http_connections ")))


def never_reads(port, until):
    """Clients that pipeline thousands of requests and never read an answer: their answers back up into the
    socket buffers. preon must not buffer without bound nor keep such connections forever: each is closed once it
    has stalled for a while (h2o closes them some seconds after server.idle_timeout_ms: ~4.5 s at 1 s, ~8 s at
    4 s, measured). The clients keep their sockets open and unread; preon's own connection count must drop."""
    n, socks, start, peak = scaled(50, 200, 10), [], time.monotonic(), 0
    for i in range(n):
        s = connect(port)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.setblocking(False)
        try:
            s.send(b"GET /fruits HTTP/1.1\r\nHost: x\r\n\r\n" * 10000)
        except OSError:
            pass
        socks.append(s)
        # the most held at once, sampled while they are opened too: under valgrind writing them all took long
        # enough for the first to be closed as stalled before a single scrape at the end (CI, 2026-12-03: 4 of 10)
        if (i + 1) % max(1, n // 10) == 0:
            peak = max(peak, open_connections(port))
    peak = max(peak, open_connections(port))
    # wait until preon holds none of them any more (the probe's and this scrape's own may remain)
    deadline, left = max(until, start + 30 * SLOW), peak
    while time.monotonic() < deadline:
        left = open_connections(port)
        if left <= 3:
            break
        time.sleep(0.25)
    closed_after = time.monotonic() - start
    time.sleep(max(0.0, until - time.monotonic()))
    for s in socks:
        s.close()
    return {"load": "%d connections each writing 10,000 pipelined GET /fruits and reading nothing" % n,
            "connections_at_peak": peak, "connections_left": left, "all_closed_after_s": round(closed_after, 1)}


def run_child(fn, port, until, queue):
    try:
        queue.put(fn(port, until))
    except Exception as e:  # noqa: BLE001 - handed to the test, which fails on it
        queue.put({"error": repr(e)})


class HostileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_env()
        cls.preon = Preon(server_idle_timeout_ms=1000).start()

    @classmethod
    def tearDownClass(cls):
        try:
            rc = cls.preon.stop(timeout=60 * SLOW)
            if rc != 0:
                raise AssertionError("preon exited with %s:\n%s" % (rc, cls.preon.output()[-3000:]))
        finally:
            cls.preon.cleanup()

    def under(self, name, fn):
        """Runs fn in a child process for DURATION while probing /hello here; returns fn's result."""
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        start = time.monotonic()
        child = ctx.Process(target=run_child, args=(fn, self.preon.port, start + DURATION, queue))
        child.start()
        latencies, failures = [], []
        while child.is_alive() or not latencies:
            t = time.monotonic()
            try:
                status, _, body = self.preon.request("GET", "/hello", timeout=5 * SLOW)
                if (status, body) != (200, b"Hello"):
                    failures.append(status)
            except OSError as e:
                failures.append(repr(e))
            latencies.append((time.monotonic() - t) * 1000)
            time.sleep(0.01)
            if time.monotonic() - start > DURATION + 120 * SLOW:
                child.kill()
                self.fail("%s did not finish" % name)
        result = queue.get(timeout=10)
        child.join()
        result.setdefault("load", " ".join((fn.__doc__ or name).split()))
        latencies.sort()
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
        result.update(probe_requests=len(latencies), probe_p99_ms=round(p99, 2), probe_failures=len(failures))
        record("hostile-" + name, seconds=round(time.monotonic() - start, 1), **result)
        self.assertNotIn("error", result, result)
        self.assertEqual(failures, [], result)
        self.assertIsNone(self.preon.proc.poll(), "preon died:\n" + self.preon.output()[-3000:])
        return result

    def test_slowloris(self):
        r = self.under("slowloris", slowloris)
        # every trickling connection was closed by preon once its head took longer than idle_timeout_ms
        self.assertGreater(r["closed_by_server"], 0, r)
        self.assertEqual(r["overdue"], 0, r)

    def test_oversized_headers(self):
        r = self.under("oversized-headers", oversized_headers)
        self.assertGreater(r["requests"], 0)
        self.assertLessEqual(set(r["statuses"]), {"400", "closed"}, r)

    def test_oversized_request_line(self):
        r = self.under("oversized-request-line", oversized_request_line)
        self.assertGreater(r["requests"], 0)
        self.assertEqual(set(r["statuses"]) - {"closed"}, {"400", "414"}, r)

    def test_malformed(self):
        r = self.under("malformed", malformed)
        self.assertGreater(r["requests"], len(MALFORMED))
        self.assertLessEqual(set(r["statuses"]), {"400", "405", "closed"}, r)

    def test_half_closed(self):
        r = self.under("half-closed", half_closed)
        self.assertEqual(set(r["statuses"]), {"200"}, r)

    def test_never_reads(self):
        r = self.under("never-reads", never_reads)
        # they were held (the first may already be closed while the last are still being written)
        self.assertGreaterEqual(r["connections_at_peak"], scaled(50, 200, 10) // 2, r)
        self.assertLessEqual(r["connections_left"], 3, r)

    def test_pipelined_10k(self):
        r = self.under("pipelined", pipelined)
        self.assertEqual(set(r["statuses"]), {"200"}, r)


if __name__ == "__main__":
    main()
