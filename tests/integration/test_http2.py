# SPDX-License-Identifier: MIT
"""Cleartext HTTP/2 on preon's h2o (its patches: scripts/sources/h2o/): the real endpoints through a prior-knowledge
preface and through the h2c upgrade (Debian's python3-h2, and curl), and the floods one connection can send, each
bounded by a patch or by Debian's own fix:

  - rapid reset (CVE-2023-44487): HEADERS + RST_STREAM pairs, or HEADERS + a frame that makes the server reset the
    stream: GOAWAY(ENHANCE_YOUR_CALM) after at most twice the reset budget, preon starts no more requests than that,
    its CPU time and RSS stay bounded, and ordinary clients (HTTP/2 and HTTP/1.1) are answered during and after;
  - header blocks of one-byte fields (HPACK indexes, HEADERS + CONTINUATION): GOAWAY, RSS bounded;
  - frames of unknown types: ignored, and not a line of preon's log each;
  - PINGs from a client that does not read (2019, Debian's fix): preon stops reading it.

And SIGTERM: GOAWAY, the request in flight answered. The flood clients write raw frames (this file's Wire); the ordinary client is python3-h2. Registered where the build's
h2o carries the patches (tests/CMakeLists.txt); run by hand against another build, the flood tests fail.
"""
import json
import select
import signal
import socket
import struct
import subprocess
import threading
import time
import unittest

import h2.config  # Debian: python3-h2
import h2.connection
import h2.events

from harness import SANITIZED, SLOW, WRAPPER, Preon, PreonTestCase, main, measure, record, require_env, scaled, scrape

BUDGET = 100  # H2O_HTTP2_RESET_BUDGET (scripts/sources/h2o/40-http2-reset-budget.patch)
MAX_FIELDS = 200  # H2O_HPACK_MAX_FIELDS (42-http2-header-field-count.patch)
MAX_BLOCK = 8192 + 4096 * 100  # H2O_MAX_REQLEN: the most bytes h2o buffers for one header block
ENHANCE_YOUR_CALM = 0xB
RSS_BOUND_KB = 32 * 1024  # peak RSS growth allowed over a flood (VmHWM after less VmRSS before)
MEMORY_MEANINGFUL = not SANITIZED and not WRAPPER  # under ASan or valgrind RSS is theirs

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM, END_HEADERS = 0x1, 0x4


def frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + struct.pack(">BBI", ftype, flags, stream) + payload


def get_block(path, extra=b""):
    """An HPACK block for GET `path` (under 127 bytes): :method GET and :scheme http by static index, :path and
    :authority as literals without indexing (so that every block is alike), then `extra` fields."""
    p = path.encode()
    return b"\x82\x86\x04" + bytes([len(p)]) + p + b"\x01\x09localhost" + extra


class Wire:
    """A raw HTTP/2 connection (prior knowledge) for the floods: sends bytes as given, parses what comes back into
    frames, keeps the GOAWAY (last stream id, error code, debug text) and notices the close."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10 * SLOW)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(PREFACE + frame(SETTINGS, 0, 0))
        self.buf, self.goaway, self.counts = b"", None, {}
        self.closed = self.reset = False  # the server closed; it did with our bytes unread (the kernel reset)
        self.ended = set()  # streams whose answer ended (END_STREAM)
        self.data = {}  # stream -> the DATA it got

    def send(self, data):
        """Sends all of `data`; False once the server has closed (what it sent before can still be read)."""
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def poll(self, timeout=0.0):
        """Reads and parses what has come, waiting up to `timeout` s for something."""
        while not self.closed and select.select([self.sock], [], [], timeout)[0]:
            try:
                data = self.sock.recv(1 << 20)
            except OSError:
                data, self.reset = b"", True
            if not data:
                self.closed = True
                break
            self.buf += data
            timeout = 0.0
            while len(self.buf) >= 9:
                length = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) < 9 + length:
                    break
                ftype, flags, stream = self.buf[3], self.buf[4], int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
                payload, self.buf = self.buf[9:9 + length], self.buf[9 + length:]
                self.counts[ftype] = self.counts.get(ftype, 0) + 1
                if ftype == GOAWAY:
                    self.goaway = (int.from_bytes(payload[:4], "big") & 0x7FFFFFFF, int.from_bytes(payload[4:8], "big"),
                                   payload[8:].decode(errors="replace"))
                if ftype == DATA:
                    self.data[stream] = self.data.get(stream, b"") + payload
                if ftype in (HEADERS, DATA) and flags & END_STREAM:
                    self.ended.add(stream)

    def finish(self, timeout):
        """Reads until the server closes, or `timeout` s."""
        deadline = time.monotonic() + timeout
        while not self.closed and time.monotonic() < deadline:
            self.poll(0.05)
        self.sock.close()


def flood(port, second, path="/fruits", max_pairs=3000, batch=100):
    """One connection sending, for streams 1, 3, 5, ..., HEADERS(GET path, END_STREAM) and then second(stream), in
    batches, until the server ends the connection or max_pairs. Returns (pairs sent, the Wire)."""
    w, block, sent = Wire(port), get_block(path), 0
    while sent < max_pairs and w.goaway is None and not w.closed:
        n = min(batch, max_pairs - sent)
        if not w.send(b"".join(frame(HEADERS, END_STREAM | END_HEADERS, 2 * i + 1, block) + second(2 * i + 1)
                               for i in range(sent, sent + n))):
            break
        sent += n
        w.poll()
    w.finish(2.0 * SLOW)
    return sent, w


def assert_calmed(test, w, reason, what):
    """The server ended the connection `w`: GOAWAY(ENHANCE_YOUR_CALM, reason), then the close. Where h2o closes with the
    client's bytes unread at once (h2o's own close, without the graceful close of scripts/sources/h2o/) the kernel
    resets the connection instead of ending it, and the GOAWAY in flight may be lost with it."""
    test.assertTrue(w.closed, "%s: not closed (GOAWAY %s, frames back %s)" % (what, w.goaway, w.counts))
    if w.goaway is None:
        test.assertTrue(w.reset, "%s: closed without a GOAWAY" % what)
    else:
        test.assertEqual(w.goaway[1:], (ENHANCE_YOUR_CALM, reason), what)


def rst(stream):
    return frame(RST_STREAM, 0, stream, struct.pack(">I", 8))  # CANCEL


def zero_window_update(stream):
    """A WINDOW_UPDATE of 0 on the stream: a stream error (RFC 9113 6.9) the server answers by resetting it."""
    return frame(WINDOW_UPDATE, 0, stream, struct.pack(">I", 0))


class H2:
    """An ordinary HTTP/2 client on one connection (Debian's python3-h2): prior knowledge, or the h2c upgrade of a GET
    of `upgrade` (whose answer is then stream 1's)."""

    def __init__(self, port, upgrade=None):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10 * SLOW)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.streams = {}  # id -> {"headers", "body", "ended", "reset"}
        if upgrade is None:
            self.conn.initiate_connection()
            self.sock.sendall(self.conn.data_to_send())
            return
        settings = self.conn.initiate_upgrade_connection()
        self.sock.sendall(b"GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                          b"Upgrade: h2c\r\nHTTP2-Settings: %s\r\n\r\n" % (upgrade.encode(), settings))
        head = b""
        while b"\r\n\r\n" not in head:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed before the 101: %r" % head)
            head += data
        head, rest = head.split(b"\r\n\r\n", 1)
        self.status_line = head.split(b"\r\n")[0].decode()
        self.streams[1] = {"headers": None, "body": b"", "ended": False, "reset": False}
        self.sock.sendall(self.conn.data_to_send())
        self._feed(rest)

    def _feed(self, data):
        for ev in self.conn.receive_data(data):
            s = self.streams.get(getattr(ev, "stream_id", 0))
            if isinstance(ev, h2.events.ResponseReceived):
                s["headers"] = dict(ev.headers)
            elif isinstance(ev, h2.events.DataReceived):
                s["body"] += ev.data
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                s["ended"] = True
            elif isinstance(ev, h2.events.StreamReset):
                s["reset"] = s["ended"] = True
            elif isinstance(ev, h2.events.ConnectionTerminated):
                raise ConnectionError("GOAWAY from the server: %s" % ev)
        self.sock.sendall(self.conn.data_to_send())

    def send(self, method, path, body=None, headers=()):
        """Starts a request; returns its stream id."""
        sid = self.conn.get_next_available_stream_id()
        hdrs = [(":method", method), (":scheme", "http"), (":authority", "localhost"), (":path", path), *headers]
        if body is not None:
            hdrs.append(("content-length", str(len(body))))
        self.conn.send_headers(sid, hdrs, end_stream=body is None)
        if body is not None:
            self.conn.send_data(sid, body, end_stream=True)
        self.streams[sid] = {"headers": None, "body": b"", "ended": False, "reset": False}
        self.sock.sendall(self.conn.data_to_send())
        return sid

    def answer(self, sid):
        """Waits for the answer of stream `sid`: (status, headers, body)."""
        while not self.streams[sid]["ended"]:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed before stream %d ended" % sid)
            self._feed(data)
        s = self.streams.pop(sid)
        if s["reset"]:
            raise ConnectionError("stream %d reset" % sid)
        return int(s["headers"][":status"]), s["headers"], s["body"]

    def request(self, method, path, body=None, headers=()):
        return self.answer(self.send(method, path, body, headers))

    def close(self):
        self.sock.close()


def curl(*args):
    """curl's answer: (status, HTTP version, body)."""
    r = subprocess.run(["curl", "-sS", "--max-time", str(10 * SLOW), "-w", "\n%{http_code} %{http_version}", *args],
                       capture_output=True, text=True, timeout=30 * SLOW)
    body, _, last = r.stdout.rpartition("\n")
    status, version = last.split()
    return int(status), version, body


class Http2EndpointsTest(PreonTestCase):
    """The default configuration (server.http2: auto, on with these patches): the service over HTTP/2."""

    def test_prior_knowledge(self):
        c = H2(self.preon.port)
        try:
            status, headers, body = c.request("GET", "/hello")
            self.assertEqual((status, body), (200, b"Hello"))
            self.assertEqual(headers["content-length"], "5")
            status, headers, body = c.request("GET", "/fruits")  # from the database
            self.assertEqual(status, 200)
            self.assertEqual(headers["content-type"], "application/json")
            self.assertEqual(json.loads(body), self.preon.json("GET", "/fruits")[2])
            status, _, body = c.request("GET", "/fruits/1")
            self.assertEqual((status, json.loads(body)["id"]), (200, 1))
            status, _, body = c.request("GET", "/nope")
            self.assertEqual((status, json.loads(body)), (404, {"error": "no such resource", "status": 404}))
            status, _, body = c.request("POST", "/fruits", b'{"name": "Carambola"}', [("content-type", "application/json")])
            self.assertEqual(status, 201, body)
            created = json.loads(body)
            self.assertEqual(created["name"], "Carambola")
            self.assertEqual(json.loads(c.request("GET", "/fruits/%d" % created["id"])[2]), created)
            self.assertEqual(c.request("DELETE", "/fruits/%d" % created["id"])[0], 204)
            self.assertEqual(c.request("GET", "/fruits/%d" % created["id"])[0], 404)
        finally:
            c.close()

    def test_streams_at_once(self):
        """Fifty requests in flight on one connection, to the database and not: each gets its own answer."""
        c = H2(self.preon.port)
        try:
            paths = ["/fruits/%d" % (1 + i % 3) for i in range(40)] + ["/queries?queries=5"] * 5 + ["/hello"] * 5
            sids = [c.send("GET", p) for p in paths]
            for sid, path in zip(sids, paths):
                status, _, body = c.answer(sid)
                self.assertEqual(status, 200, path)
                if path.startswith("/fruits/"):
                    self.assertEqual(json.loads(body)["id"], int(path.rsplit("/", 1)[1]))
                elif path.startswith("/queries"):
                    self.assertEqual(len(json.loads(body)), 5)
        finally:
            c.close()

    def test_h2c_upgrade(self):
        c = H2(self.preon.port, upgrade="/fruits")
        try:
            self.assertTrue(c.status_line.startswith("HTTP/1.1 101 "), c.status_line)
            status, _, body = c.answer(1)  # the upgraded request's answer, on stream 1
            self.assertEqual(status, 200)
            self.assertEqual(json.loads(body), self.preon.json("GET", "/fruits")[2])
            self.assertEqual(c.request("GET", "/hello")[::2], (200, b"Hello"))
        finally:
            c.close()

    def test_curl(self):
        """Another client: curl (libnghttp2), with prior knowledge and with the upgrade; HTTP/1.1 beside them."""
        url = "http://127.0.0.1:%d/fruits" % self.preon.port
        expected = self.preon.json("GET", "/fruits")[2]
        for args in (["--http2-prior-knowledge"], ["--http2"], ["--http1.1"]):
            status, version, body = curl(*args, url)
            self.assertEqual((status, version), (200, "1.1" if args == ["--http1.1"] else "2"), args)
            self.assertEqual(json.loads(body), expected)


class DrainTest(unittest.TestCase):
    """SIGTERM with an HTTP/2 request in flight: GOAWAY at once, the request answered, preon exits 0. (Raw frames:
    python3-h2 takes no frame after a GOAWAY, though the streams it leaves open go on, RFC 9113 6.8.)"""

    def test_sigterm_sends_goaway(self):
        require_env()
        with Preon(server_http2="true").start() as p:
            self.sigterm_with_a_request_in_flight(p)

    def sigterm_with_a_request_in_flight(self, p):
        w = Wire(p.port)
        try:
            w.send(frame(HEADERS, END_STREAM | END_HEADERS, 1, get_block("/queries?queries=20")))
            p.kill(signal.SIGTERM)
            deadline = time.monotonic() + 10 * SLOW
            while (w.goaway is None or 1 not in w.ended) and not w.closed and time.monotonic() < deadline:
                w.poll(0.05)
            self.assertEqual(w.goaway and w.goaway[1], 0, "no GOAWAY(NO_ERROR) after SIGTERM: %s" % (w.goaway,))
            self.assertGreaterEqual(w.goaway[0], 1)
            self.assertIn(1, w.ended, "the request in flight was not answered")
            self.assertEqual(len(json.loads(w.data[1])), 20)
        finally:
            w.sock.close()
        self.assertEqual(p.wait(), 0)


class OrdinaryClients(threading.Thread):
    """GET /fruits every 20 ms over one HTTP/2 connection (a new one if it ends) and over a new HTTP/1.1 connection,
    until stopped; keeps (monotonic time, protocol, status or error)."""

    def __init__(self, preon):
        super().__init__()
        self.preon, self.stop, self.results = preon, threading.Event(), []

    def run(self):
        c = None
        while not self.stop.is_set():
            try:
                c = c or H2(self.preon.port)
                self.results.append((time.monotonic(), "h2", c.request("GET", "/fruits")[0]))
            except (OSError, ConnectionError) as e:
                self.results.append((time.monotonic(), "h2", repr(e)))
                c = None
            try:
                self.results.append((time.monotonic(), "h1", self.preon.request("GET", "/fruits")[0]))
            except OSError as e:
                self.results.append((time.monotonic(), "h1", repr(e)))
            time.sleep(0.02)
        if c is not None:
            c.close()


def started_requests(preon):
    """Requests preon has started (every one it routed is counted when h2o disposes of it, answered or not)."""
    return sum(v for (name, _), v in scrape(preon).items() if name == "preon_http_requests_total")


class RapidResetTest(PreonTestCase):
    """Streams opened and reset without end over one connection, then again over new ones."""
    preon_settings = {"server_http2": "true"}

    def test_rapid_reset_flood(self):
        """An attacker floods over one connection, and over a new one each time preon ends the last, for a second."""
        duration, min_conns, max_conns = scaled(1.0, 10.0, 3.0), 3, 2000
        pid = self.preon.proc.pid
        for _ in range(20):  # warm: the allocator's and h2o's first buffers are not the flood's
            self.preon.request("GET", "/fruits")
        rss0, cpu0, started0 = measure.rss_kb(pid), measure.cpu_s(pid), started_requests(self.preon)
        ordinary = OrdinaryClients(self.preon)
        ordinary.start()
        try:
            time.sleep(0.2)
            t0, results = time.monotonic(), []
            while len(results) < max_conns and (len(results) < min_conns or time.monotonic() < t0 + duration):
                results.append(flood(self.preon.port, rst))
            t1, conns = time.monotonic(), len(results)
            time.sleep(0.3)  # answers after the flood
        finally:
            ordinary.stop.set()
            ordinary.join()
        cpu = measure.cpu_s(pid) - cpu0
        rss1 = measure.rss_kb(pid, "VmHWM")
        ordinary_n = len([r for r in ordinary.results if isinstance(r[2], int)])
        started = started_requests(self.preon) - started0 - ordinary_n - 1  # less the scrape itself
        opened = [(w.goaway[0] + 1) // 2 if w.goaway else None for _, w in results]
        known = [n for n in opened if n is not None]
        figures = dict(connections=conns, pairs_sent=sum(s for s, _ in results),
                       streams_opened=(min(known), max(known)) if known else None, no_goaway=opened.count(None),
                       requests_started=started, cpu_s=round(cpu, 3), rss_kb=rss0, peak_rss_kb=rss1, seconds=round(t1 - t0, 2),
                       ordinary=ordinary_n)
        print("rapid reset:", figures)
        record("http2.rapid_reset", **figures)
        for i, (sent, w) in enumerate(results):
            assert_calmed(self, w, "too many streams reset", "connection %d: %d pairs sent" % (i, sent))
            if w.goaway is not None:
                # a client may abandon as many streams as it may have open, and one more for each answered one
                self.assertGreater(opened[i], BUDGET, w.goaway)
                self.assertLessEqual(opened[i], 2 * BUDGET + 1, w.goaway)
        self.assertGreater(len(known), conns // 2, "most connections saw their GOAWAY")
        self.assertLessEqual(started, conns * (2 * BUDGET + 1), figures)
        self.assertLess(cpu, 2.0 * SLOW, figures)
        if MEMORY_MEANINGFUL:
            self.assertLess(rss1 - rss0, RSS_BOUND_KB, figures)
        bad = [r for r in ordinary.results if r[2] != 200]
        self.assertEqual(bad, [], "ordinary clients not answered 200")
        for proto in ("h1", "h2"):
            self.assertTrue(any(p == proto and t0 < t < t1 for t, p, _ in ordinary.results), "none during (%s)" % proto)
            self.assertTrue(any(p == proto and t > t1 for t, p, _ in ordinary.results), "none after (%s)" % proto)

    def test_stream_errors_count(self):
        """The server's own resets count too: a WINDOW_UPDATE of 0 makes it reset the stream it names."""
        started0 = started_requests(self.preon)
        for i in range(3):
            sent, w = flood(self.preon.port, zero_window_update)
            assert_calmed(self, w, "too many streams reset", "connection %d: %d pairs sent" % (i, sent))
        self.assertLessEqual(started_requests(self.preon) - started0 - 1, 3 * (2 * BUDGET + 1))

    def test_answered_streams_give_back(self):
        """A client that resets one stream for each one it lets be answered never runs out, far past the budget."""
        w, sid = Wire(self.preon.port), 1
        try:
            for _ in range(3 * BUDGET):
                self.assertTrue(w.send(frame(HEADERS, END_STREAM | END_HEADERS, sid, get_block("/hello"))))
                deadline = time.monotonic() + 10 * SLOW
                while sid not in w.ended and not w.closed and time.monotonic() < deadline:
                    w.poll(0.05)
                self.assertIn(sid, w.ended, "stream %d not answered (GOAWAY %s)" % (sid, w.goaway))
                self.assertTrue(w.send(frame(HEADERS, END_STREAM | END_HEADERS, sid + 2, get_block("/fruits")) + rst(sid + 2)))
                sid += 4
            w.poll(0.2)
            self.assertIsNone(w.goaway)
            self.assertFalse(w.closed)
        finally:
            w.sock.close()


class HeaderBlockTest(PreonTestCase):
    """Header blocks of many fields, each field one byte."""
    preon_settings = {"server_http2": "true"}

    def block_request(self, stream, block):
        """HEADERS + CONTINUATION frames of at most 16 kB carrying `block` for GET on `stream`."""
        chunks = [block[i:i + 16384] for i in range(0, len(block), 16384)]
        out = frame(HEADERS, END_STREAM | (END_HEADERS if len(chunks) == 1 else 0), stream, chunks[0])
        for i, chunk in enumerate(chunks[1:], 2):
            out += frame(CONTINUATION, END_HEADERS if i == len(chunks) else 0, stream, chunk)
        return out

    def test_fields_up_to_the_bound(self):
        """200 fields (the 4 pseudo-header fields and 196 cookies, as a browser may send them) are answered; 201 end
        the connection."""
        # literal fields without indexing of name "cookie" (static index 32: 0x0f, then 32 - 15)
        cookies = b"".join(b"\x0f\x11\x06c%03d=v" % i for i in range(MAX_FIELDS - 4))
        w = Wire(self.preon.port)
        w.send(self.block_request(1, get_block("/hello", cookies)))
        deadline = time.monotonic() + 10 * SLOW
        while 1 not in w.ended and not w.closed and time.monotonic() < deadline:
            w.poll(0.05)
        self.assertIn(1, w.ended, "200 fields not answered: GOAWAY %s" % (w.goaway,))
        w.sock.close()
        w = Wire(self.preon.port)
        w.send(self.block_request(1, get_block("/hello", cookies + b"\x90")))  # one more: accept-encoding (static 16)
        w.finish(2.0 * SLOW)
        self.assertEqual(w.goaway and w.goaway[1:], (ENHANCE_YOUR_CALM, "too many header fields"))
        self.assertTrue(w.closed)

    def test_one_byte_fields_flood(self):
        pid, streams = self.preon.proc.pid, 5
        rss0 = measure.rss_kb(pid)
        w = Wire(self.preon.port)
        head = get_block("/hello")
        data = b"".join(self.block_request(2 * i + 1, head + b"\x90" * (MAX_BLOCK - len(head))) for i in range(streams))
        w.send(data)
        w.finish(5.0 * SLOW)
        rss1 = measure.rss_kb(pid, "VmHWM")
        print("one-byte fields: %d streams of %d bytes, GOAWAY %s, RSS %d kB, peak %d kB" % (streams, MAX_BLOCK, w.goaway, rss0, rss1))
        if MEMORY_MEANINGFUL:
            self.assertLess(rss1 - rss0, RSS_BOUND_KB, "peak RSS grew by %d kB" % (rss1 - rss0))
        assert_calmed(self, w, "too many header fields", "%d streams of one-byte fields" % streams)
        self.assertEqual(self.preon.request("GET", "/hello")[0], 200)


class FrameFloodTest(PreonTestCase):
    """Frames that cost the server nothing to answer, or that it must ignore. The idle timeout is long: when it ends
    a connection, preon's close reads and drops whatever the client still sends, which would look like reading."""
    preon_settings = {"server_http2": "true", "server_idle_timeout_ms": "60000"}

    def test_unknown_frames_ignored_quietly(self):
        n = 20000
        with open(self.preon.log.name, "rb") as f:
            before = len(f.read())
        w = Wire(self.preon.port)
        w.send(b"".join(frame(0x20 + i % 0xC0, 0, 0) for i in range(n)) +
               frame(HEADERS, END_STREAM | END_HEADERS, 1, get_block("/hello")))
        deadline = time.monotonic() + 10 * SLOW
        while 1 not in w.ended and not w.closed and time.monotonic() < deadline:
            w.poll(0.05)
        w.sock.close()
        self.assertIn(1, w.ended, "not answered after the unknown frames (RFC 9113 5.5: they are ignored)")
        time.sleep(0.1)
        with open(self.preon.log.name, "rb") as f:
            grew = f.read()[before:]
        self.assertLess(len(grew), 2048, "preon's log grew by %d bytes for %d unknown frames: %r" % (len(grew), n, grew[:200]))

    def test_ping_flood_not_read(self):
        """A client that sends PINGs and never reads their ACKs: preon stops reading it once its unsent output passes
        512 kB (Debian's fix for CVE-2019-9512/9515), so the client cannot send them all; ordinary clients are answered
        meanwhile. Its RSS is printed, not bounded here: h2o parses all that one wake-up read before it stops reading,
        and its event loop reads until the socket is empty, which a client that keeps pace can stretch to many MB."""
        pid, total = self.preon.proc.pid, 32 << 20
        rss0 = measure.rss_kb(pid)
        w = Wire(self.preon.port)
        w.sock.settimeout(1.0 * SLOW)
        chunk, sent = frame(PING, 0, 0, b"12345678") * 4096, 0
        try:
            while sent < total:
                sent += w.sock.send(chunk)
        except socket.timeout:
            pass
        rss1 = measure.rss_kb(pid, "VmHWM")
        self.assertEqual(self.preon.request("GET", "/fruits")[0], 200)
        w.sock.close()
        print("ping flood: %d of %d bytes sent before preon stopped reading; RSS %d kB, peak %d kB" % (sent, total, rss0, rss1))
        record("http2.ping_flood", sent=sent, offered=total, rss_kb=rss0, peak_rss_kb=rss1)
        self.assertLess(sent, total, "preon read every PING of a client that read no ACK")


if __name__ == "__main__":
    main()
