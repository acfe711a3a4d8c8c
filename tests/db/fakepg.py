# SPDX-License-Identifier: MIT
"""A scripted PostgreSQL: the v3 wire protocol over TCP on 127.0.0.1, for the faults a real server will not
produce on demand. Python 3 standard library only; one thread per connection.

It is not a database. It answers what libpq sends (in pipeline mode or not):
  SSLRequest, GSSENCRequest        -> 'N' (no TLS, no GSS)
  StartupMessage                   -> AuthenticationOk, ParameterStatus (server_version 15.4, UTF8, ...),
                                      BackendKeyData, ReadyForQuery
  Parse -> ParseComplete, Bind -> BindComplete, Describe -> (ParameterDescription +) RowDescription or NoData,
  Execute -> DataRow* CommandComplete, Sync -> ReadyForQuery, Close -> CloseComplete, Flush -> nothing,
  Query ('SHOW transaction_read_only', or any scripted SQL) -> rows, CommandComplete, ReadyForQuery,
  Terminate -> close.
After an ErrorResponse in the extended protocol it discards every message up to the next Sync, as PostgreSQL does.

The script is a dict (FakePG(script); change it while running with server.update(key=value)):
  "statements": {KEY: SPEC}   KEY is a prepared statement's name or its exact SQL. SPEC:
      "columns": ["id", "name"]          RowDescription (default: none, NoData)
      "rows": [["1", "Apple"], ...]      DataRows; a value None is SQL NULL. In a value "$1".."$9" is the
                                         Bind parameter, "$conn" the connection's number (1, 2, ... in accept
                                         order), "$seq" the count of Executes on that connection so far
      "tag": "INSERT 0 1"                CommandComplete (default "SELECT n")
      "faults": [FAULT, ...]             each: {"kind": ..., "times": N (default: always)}; kinds:
          "error"       ErrorResponse instead of the result ("sqlstate", "message"; default 42P01)
          "sync_error"  the result as usual, then an ErrorResponse at the next Sync, before ReadyForQuery: a
                        failed implicit COMMIT (deferred constraint 23505, serialization failure 40001, 40P01)
          "drop"        "rows" DataRows (default 1), then half of the next one, then the connection is closed
          "notice"      a NoticeResponse ("severity" WARNING|NOTICE, "message") before the result
          "delay"       "ms" of silence before the result
          "close_after_sync"  the result as usual; after answering the next Sync, the connection is closed (the
                        client's next writes meet a reset: libpq's first send may still succeed, the next fails)
  "read_only": true           in_hot_standby=on, default_transaction_read_only=on, SHOW transaction_read_only=on
  "report_read_only": false   leave those two out of ParameterStatus (libpq then asks SHOW transaction_read_only)
  "silent": true              accept connections, read and discard everything, never answer
  "byte_at_a_time": true      every reply written one byte per send(), TCP_NODELAY, a short pause between bytes
  "rcvbuf": BYTES             SO_RCVBUF of the listening socket (set at start, inherited by every connection): a small
                              receive window, so that a client's large write fills its socket and waits for writability
  "read_pause_ms": MS         a pause before every read of the socket, which then takes at most 4 KiB: a slow reader
  "idle_fatal": {"after_ms": 300, "sqlstate": "57P01", "message": ..., "times": N}
                              once a connection has been idle (after a ReadyForQuery) that long: a FATAL
                              ErrorResponse, then the connection is closed
What happened is recorded in server.events, tuples (what, connection number, ...): "accept", "startup", "parse",
"execute" (with statement name and parameters), "sync", "query", "fault" (with its kind), "close".

  python3 fakepg.py [PORT]   serves an empty script (every statement answers no rows) until interrupted.
"""
import select
import socket
import struct
import sys
import threading
import time

PROTOCOL_3 = 196608
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102
FATAL_57P01 = "terminating connection due to administrator command"


def msg(kind, payload=b""):
    return kind + struct.pack("!I", len(payload) + 4) + payload


def cstr(s):
    return s.encode() + b"\0"


def error_fields(severity, sqlstate, message):
    return cstr("S" + severity) + cstr("V" + severity) + cstr("C" + sqlstate) + cstr("M" + message) + b"\0"


def error_response(severity, sqlstate, message):
    return msg(b"E", error_fields(severity, sqlstate, message))


def row_description(columns):
    body = struct.pack("!H", len(columns))
    for name in columns:
        # table oid, column number, type oid (text: 25), type size, type modifier, format (text)
        body += cstr(name) + struct.pack("!IhIhih", 0, 0, 25, -1, -1, 0)
    return msg(b"T", body)


def data_row(values):
    body = struct.pack("!H", len(values))
    for v in values:
        if v is None:
            body += struct.pack("!i", -1)
        else:
            b = v.encode()
            body += struct.pack("!i", len(b)) + b
    return msg(b"D", body)


class Dropped(Exception):
    """The script closed the connection."""


class Conn:
    """One client connection, served on its own thread."""

    def __init__(self, server, sock, number):
        self.server, self.sock, self.number = server, sock, number
        self.buf = b""
        self.stmts = {}  # prepared statement name -> SQL
        self.portals = {}  # portal name -> (statement name, parameters)
        self.executes = 0
        self.skipping = False  # an error happened: discard up to Sync
        self.sync_error = None  # an error owed at the next Sync
        self.close_after_sync = False  # close once the next Sync is answered
        self.idle_since = None

    # --- I/O ---
    def send(self, data):
        if self.server.get("byte_at_a_time"):
            for i in range(len(data)):
                self.sock.sendall(data[i:i + 1])
                time.sleep(0.0002)
        else:
            self.sock.sendall(data)

    def recv_some(self):
        """Reads what is there; None at EOF. Wakes up now and then for idle_fatal and for stop()."""
        while not self.server.stopping:
            fatal = self.server.get("idle_fatal")
            if fatal and self.idle_since is not None and \
                    time.monotonic() - self.idle_since >= fatal.get("after_ms", 300) / 1000 and \
                    self.server.take(fatal):
                self.server.record("fault", self.number, "idle_fatal")
                self.send(error_response("FATAL", fatal.get("sqlstate", "57P01"), fatal.get("message", FATAL_57P01)))
                raise Dropped()
            if not select.select([self.sock], [], [], 0.02)[0]:
                continue
            pause = self.server.get("read_pause_ms")
            if pause:
                time.sleep(pause / 1000)
                return self.sock.recv(4096) or None
            return self.sock.recv(65536) or None
        return None

    def need(self, n):
        while len(self.buf) < n:
            data = self.recv_some()
            if data is None:
                return False
            self.buf += data
        return True

    def take(self, n):
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    # --- protocol ---
    def serve(self):
        self.server.record("accept", self.number)
        if self.server.get("silent"):
            while self.recv_some() is not None:
                pass
            return
        if not self.startup():
            return
        while self.need(5):
            kind = self.take(1)
            (length,) = struct.unpack("!I", self.take(4))
            if not self.need(length - 4):
                return
            body = self.take(length - 4)
            self.idle_since = None
            if not self.handle(kind, body):
                return

    def startup(self):
        while True:
            if not self.need(8):
                return False
            (length, code) = struct.unpack("!II", self.take(8))
            if not self.need(length - 8):
                return False
            body = self.take(length - 8)
            if code in (SSL_REQUEST, GSSENC_REQUEST):
                self.send(b"N")
                continue
            if code != PROTOCOL_3:
                return False  # a CancelRequest, or a protocol we do not speak
            parts = body.split(b"\0")
            params = {k.decode(): v.decode() for k, v in zip(parts[0::2], parts[1::2]) if k}
            self.server.record("startup", self.number, params)
            break
        ro = "on" if self.server.get("read_only") else "off"
        status = [("server_version", "15.4 (fakepg)"), ("server_encoding", "UTF8"), ("client_encoding", "UTF8"),
                  ("integer_datetimes", "on"), ("standard_conforming_strings", "on"), ("DateStyle", "ISO, MDY"),
                  ("IntervalStyle", "postgres"), ("TimeZone", "UTC"), ("is_superuser", "off"),
                  ("session_authorization", params.get("user", "preon")),
                  ("application_name", params.get("application_name", ""))]
        if self.server.get("report_read_only", True):
            status += [("in_hot_standby", ro), ("default_transaction_read_only", ro)]
        out = msg(b"R", struct.pack("!I", 0))
        for k, v in status:
            out += msg(b"S", cstr(k) + cstr(v))
        out += msg(b"K", struct.pack("!II", 10000 + self.number, 12345))
        self.send(out + self.ready())
        return True

    def ready(self):
        self.idle_since = time.monotonic()
        return msg(b"Z", b"I")

    def fail(self, sqlstate, message):
        """An error in the extended protocol: ErrorResponse, then everything is discarded up to Sync."""
        self.send(error_response("ERROR", sqlstate, message))
        self.skipping = True

    def handle(self, kind, body):
        if kind == b"X":
            return False
        if kind == b"S":  # Sync
            self.server.record("sync", self.number)
            out = b""
            if self.sync_error is not None and not self.skipping:
                out += error_response("ERROR", self.sync_error.get("sqlstate", "23505"),
                                      self.sync_error.get("message", "duplicate key value violates unique constraint"))
            self.sync_error, self.skipping = None, False
            self.send(out + self.ready())
            if self.close_after_sync:
                raise Dropped()
            return True
        if self.skipping or kind == b"H":
            return True
        if kind == b"P":  # Parse
            name, rest = body.split(b"\0", 1)
            sql = rest.split(b"\0", 1)[0].decode()
            self.stmts[name.decode()] = sql
            self.server.record("parse", self.number, name.decode())
            self.send(msg(b"1"))
        elif kind == b"B":  # Bind
            portal, stmt, rest = body.split(b"\0", 2)
            (nfmt,) = struct.unpack("!H", rest[:2])
            pos = 2 + 2 * nfmt
            (nparams,) = struct.unpack("!H", rest[pos:pos + 2])
            pos += 2
            params = []
            for _ in range(nparams):
                (n,) = struct.unpack("!i", rest[pos:pos + 4])
                pos += 4
                params.append(None if n < 0 else rest[pos:pos + n].decode())
                pos += max(n, 0)
            self.portals[portal.decode()] = (stmt.decode(), params)
            self.send(msg(b"2"))
        elif kind == b"D":  # Describe
            what, name = body[:1], body[1:].split(b"\0", 1)[0].decode()
            stmt = name if what == b"S" else self.portals.get(name, ("", []))[0]
            spec = self.spec(stmt)
            out = msg(b"t", struct.pack("!H", 0)) if what == b"S" else b""
            out += row_description(spec["columns"]) if spec.get("columns") else msg(b"n")
            self.send(out)
        elif kind == b"E":  # Execute
            portal = body.split(b"\0", 1)[0].decode()
            stmt, params = self.portals.get(portal, ("", []))
            self.executes += 1
            self.server.record("execute", self.number, stmt, params)
            self.result(self.spec(stmt), params, describe=False)
        elif kind == b"C":  # Close
            self.send(msg(b"3"))
        elif kind == b"Q":  # simple Query
            sql = body.split(b"\0", 1)[0].decode()
            self.server.record("query", self.number, sql)
            if sql.strip().rstrip(";").lower() == "show transaction_read_only":
                ro = "on" if self.server.get("read_only") else "off"
                spec = {"columns": ["transaction_read_only"], "rows": [[ro]], "tag": "SHOW"}
            else:
                spec = self.spec(sql)
            self.result(spec, [], describe=True)
            self.skipping = False
            self.send(self.ready())
        return True

    def spec(self, stmt):
        statements = self.server.get("statements") or {}
        return statements.get(stmt) or statements.get(self.stmts.get(stmt, stmt)) or {}

    def result(self, spec, params, describe):
        """A statement's answer, with whatever faults its script holds."""
        rows = [[self.expand(v, params) for v in row] for row in spec.get("rows", [])]
        head = row_description(spec["columns"]) if describe and spec.get("columns") else b""
        for fault in spec.get("faults", []):
            if not self.server.take(fault):
                continue
            kind = fault["kind"]
            self.server.record("fault", self.number, kind)
            if kind == "notice":
                self.send(msg(b"N", error_fields(fault.get("severity", "WARNING"), fault.get("sqlstate", "01000"),
                                                 fault.get("message", "a warning from fakepg"))))
            elif kind == "delay":
                time.sleep(fault.get("ms", 100) / 1000)
            elif kind == "error":
                self.fail(fault.get("sqlstate", "42P01"), fault.get("message", 'relation "fruits" does not exist'))
                return
            elif kind == "sync_error":
                self.sync_error = fault
            elif kind == "close_after_sync":
                self.close_after_sync = True
            elif kind == "drop":
                keep = fault.get("rows", 1)
                out = head + b"".join(data_row(r) for r in rows[:keep])
                nxt = data_row(rows[keep] if keep < len(rows) else ["x" * 40, "y" * 40])
                self.send(out + nxt[:len(nxt) // 2])
                raise Dropped()
        tag = spec.get("tag", "SELECT %d" % len(rows))
        self.send(head + b"".join(data_row(r) for r in rows) + msg(b"C", cstr(tag)))

    def expand(self, v, params):
        if v is None or "$" not in v:
            return v
        v = v.replace("$conn", str(self.number)).replace("$seq", str(self.executes))
        for i in range(len(params), 0, -1):
            v = v.replace("$%d" % i, params[i - 1] if params[i - 1] is not None else "")
        return v


class FakePG:
    """The server: FakePG(script).start() listens on 127.0.0.1 (port 0: any free one, in .port)."""

    def __init__(self, script=None, port=0):
        self.script = dict(script or {})
        self.lock = threading.Lock()
        self.events = []
        self.stopping = False
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if self.script.get("rcvbuf"):
            self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.script["rcvbuf"])
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(64)
        self.listener.settimeout(0.05)
        self.port = self.listener.getsockname()[1]
        self.socks = []
        self.threads = []
        self.count = 0

    def get(self, key, default=None):
        with self.lock:
            return self.script.get(key, default)

    def update(self, **kw):
        with self.lock:
            self.script.update(kw)

    def take(self, fault):
        """Whether a fault fires now; counts down its "times"."""
        with self.lock:
            left = fault.get("times")
            if left is None:
                return True
            if left <= 0:
                return False
            fault["times"] = left - 1
            return True

    def record(self, *event):
        with self.lock:
            self.events.append(event)

    def count_events(self, what):
        with self.lock:
            return sum(1 for e in self.events if e[0] == what)

    def start(self):
        t = threading.Thread(target=self.accept_loop, daemon=True)
        t.start()
        self.threads.append(t)
        return self

    def accept_loop(self):
        while not self.stopping:
            try:
                sock, _ = self.listener.accept()
            except (socket.timeout, OSError):
                continue
            sock.setblocking(True)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                self.count += 1
                number = self.count
                self.socks.append(sock)
            t = threading.Thread(target=self.run_conn, args=(sock, number), daemon=True)
            t.start()
            self.threads.append(t)

    def run_conn(self, sock, number):
        try:
            Conn(self, sock, number).serve()
        except (Dropped, OSError):
            pass
        finally:
            self.record("close", number)
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def stop(self):
        self.stopping = True
        for t in list(self.threads):
            t.join(5)
        self.listener.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


if __name__ == "__main__":
    server = FakePG(port=int(sys.argv[1]) if len(sys.argv) > 1 else 0).start()
    print("fakepg listening on 127.0.0.1:%d" % server.port, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
