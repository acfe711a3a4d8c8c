# SPDX-License-Identifier: MIT
"""/hello byte for byte, HEAD, 404, 405 with Allow, Server and Date on every answer; HTTP/2 on or off as server.http2 says."""
import email.utils
import json
import socket

from harness import HTTP2_BOUNDED, PreonTestCase, main, read_until_close


def whole(buf):
    """Whether buf holds a whole answer framed by Content-Length."""
    head, sep, body = buf.partition(b"\r\n\r\n")
    length = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
    return bool(sep and length) and len(body) >= length[0]


def raw(port, data, until_close=False):
    """Sends raw bytes and returns what comes back (one answer, or all of them until the server closes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        if until_close:
            s.shutdown(socket.SHUT_WR)
            return read_until_close(s)
        buf = b""
        while not whole(buf):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return buf


def parse(resp):
    head, _, body = resp.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for l in lines[1:]:
        k, _, v = l.partition(":")
        headers.setdefault(k.strip().lower(), []).append(v.strip())
    return lines[0], headers, body


class HttpTest(PreonTestCase):
    def assert_common_headers(self, headers):
        self.assertIn("server", headers)
        self.assertTrue(headers["server"][0].startswith("preon"))
        self.assertIn("date", headers)
        self.assertIsNotNone(email.utils.parsedate_to_datetime(headers["date"][0]))

    def test_hello_exact(self):
        status, headers, body = parse(raw(self.preon.port, b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"))
        self.assertEqual(status, "HTTP/1.1 200 OK")
        self.assertEqual(body, b"Hello")
        self.assertEqual(headers["content-type"], ["text/plain;charset=UTF-8"])
        self.assertEqual(headers["content-length"], ["5"])
        self.assertNotIn("transfer-encoding", headers)
        self.assert_common_headers(headers)

    def test_hello_query_string_ignored(self):
        status, _, body = self.preon.request("GET", "/hello?name=x")
        self.assertEqual((status, body), (200, b"Hello"))

    def test_head_hello(self):
        status, headers, body = parse(raw(self.preon.port, b"HEAD /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                                          until_close=True))
        self.assertEqual(status, "HTTP/1.1 200 OK")
        self.assertEqual(body, b"")
        self.assertEqual(headers["content-length"], ["5"])
        self.assert_common_headers(headers)

    def test_unknown_path_404_json(self):
        for path in ("/", "/nope", "/hello/", "/fruits/1/2", "/HELLO"):
            status, headers, body = self.preon.request("GET", path)
            self.assertEqual(status, 404, path)
            self.assertEqual(headers["content-type"], "application/json")
            self.assertEqual(json.loads(body), {"error": "no such resource", "status": 404})

    def test_method_not_allowed(self):
        for method, path, allow in (("POST", "/hello", "GET, HEAD"), ("DELETE", "/hello", "GET, HEAD"),
                                    ("PUT", "/fruits", "GET, HEAD, POST"), ("PATCH", "/fruits/1", "GET, HEAD, PUT, DELETE"),
                                    ("OPTIONS", "/hello", "GET, HEAD"), ("POST", "/json", "GET, HEAD"),
                                    ("DELETE", "/metrics", "GET, HEAD"), ("POST", "/health/ready", "GET, HEAD"),
                                    ("PUT", "/health/live", "GET, HEAD")):
            status, headers, body = self.preon.request(method, path)
            self.assertEqual(status, 405, (method, path))
            self.assertEqual(headers["allow"], allow)
            self.assertEqual(json.loads(body)["status"], 405)

    def test_server_and_date_on_errors(self):
        _, headers, _ = parse(raw(self.preon.port, b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"))
        self.assert_common_headers(headers)
        _, headers, _ = parse(raw(self.preon.port, b"POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"))
        self.assert_common_headers(headers)

    def test_keep_alive_and_pipelining(self):
        # Three requests in one write on one connection: three answers, in order.
        resp = raw(self.preon.port, b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n" * 2 +
                   b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", until_close=True)
        self.assertEqual(resp.count(b"HTTP/1.1 200 OK"), 2)
        self.assertEqual(resp.count(b"HTTP/1.1 404 Not Found"), 1)
        self.assertLess(resp.index(b"200 OK"), resp.index(b"404 Not Found"))

    def test_http2_by_default(self):
        """server.http2: auto, the default: on where h2o bounds rapid reset (preon's patches), else off."""
        if HTTP2_BOUNDED:
            assert_http2_on(self)
        else:
            assert_http2_off(self)

    def test_malformed_request_gets_400(self):
        resp = raw(self.preon.port, b"GARBAGE\r\n\r\n", until_close=True)
        self.assertTrue(resp.startswith(b"HTTP/1.1 400"), resp[:80])


UPGRADE = (b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
           b"HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
PREFACE_AND_SETTINGS = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def head_of(port, request):
    """The bytes that come back for `request` up to the end of an HTTP/1 head, or the first 9 (an HTTP/2 frame's)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        buf = b""
        while b"\r\n\r\n" not in buf and not (buf[:1] == b"\x00" and len(buf) >= 9):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    return buf


def assert_http2_on(test):
    buf = head_of(test.preon.port, UPGRADE)
    test.assertTrue(buf.startswith(b"HTTP/1.1 101 "), buf[:80])
    test.assertIn(b"upgrade: h2c", buf.lower())
    buf = head_of(test.preon.port, PREFACE_AND_SETTINGS)
    test.assertEqual(buf[3:5], b"\x04\x00", "the server's first frame is not its SETTINGS: %r" % buf[:80])


def assert_http2_off(test):
    status, headers, _ = parse(raw(test.preon.port, UPGRADE))
    test.assertEqual(status, "HTTP/1.1 200 OK")
    test.assertNotIn("upgrade", headers)
    resp = raw(test.preon.port, PREFACE_AND_SETTINGS, until_close=True)
    test.assertTrue(resp.startswith(b"HTTP/1.1 400"), resp[:80])


class Http2OffTest(PreonTestCase):
    """server.http2: false: HTTP/1.1 alone (the upgrade ignored, a prior-knowledge preface a malformed request)."""
    preon_settings = {"server_http2": "false"}

    def test_http2_off(self):
        assert_http2_off(self)


class Http2OnTest(PreonTestCase):
    """server.http2: true: HTTP/2 on, also with Debian's binary h2o (which warns at start-up)."""
    preon_settings = {"server_http2": "true"}

    def test_http2_on(self):
        assert_http2_on(self)
        if not HTTP2_BOUNDED:
            self.assertIn("does not bound HTTP/2 rapid reset", self.preon.output())


if __name__ == "__main__":
    main()
