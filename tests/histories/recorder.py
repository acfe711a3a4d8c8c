# SPDX-License-Identifier: MIT
"""Records a history of preon's CRUD API for the linearizability checker (tests/histories/checker).

N clients (8 by default) work on a small key space (a few fruits created at the start, plus their own creations):
GET /fruits/{id}, PUT /fruits/{id} with a fresh unique name, POST /fruits, DELETE /fruits/{id}. A one-per-connection
client sends each operation as one request on a new connection; a pipelined client (the last `pipelined` of the N)
keeps one keep-alive connection and writes 2-6 operations at once before reading any answer, reads and writes mixed,
and now and then closes the connection with answers still pending. Each operation is recorded with its invocation
and completion time (monotonic, ns from the start) and its outcome: the status, or the transport error (a timeout, a
reset, a close with its answer pending: indeterminate; a refused connection: nothing was sent). The operations of
one pipelined write are invoked together, when the write starts, and each completes when its own answer has been
read: they overlap in time, as they are in flight together, and the checker may order them any way their intervals
allow (each carries its place in the write, "slot", so that Porcupine draws it on a row of its own). Nemesis
intervals are recorded too (the visualization shows them). At the end, once the faults are healed, every row is read
back page by page (GET /fruits): each known id is then seen with its name or as absent, and so is every row a POST of
unknown outcome created.

Only the standard library: it runs under Debian's /usr/bin/python3.
"""
import http.client
import json
import os
import random
import select
import socket
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
JSON = {"Content-Type": "application/json"}
ABANDONED = "closed by the client with its answer pending"


class Recorder:
    def __init__(self, port, clients=8, keys=8, timeout=10.0, seed=None, host="127.0.0.1", pipelined=0):
        self.host, self.port, self.clients, self.keys, self.timeout = host, port, clients, keys, timeout
        self.pipelined = pipelined  # the last `pipelined` clients pipeline on keep-alive connections
        self.t0 = time.monotonic_ns()
        self.prefix = "h%d-%d-" % (os.getpid(), time.time_ns() % 10**9)
        self.lock = threading.Lock()
        self.records, self.known = [], []  # the history; ids a 201 named
        self.counter = 0
        self.stop = threading.Event()
        self.rng = random.Random(seed)
        self.threads = []

    def now(self):
        return time.monotonic_ns() - self.t0

    def fresh_name(self):
        with self.lock:
            self.counter += 1
            return "%s%d" % (self.prefix, self.counter)

    def request(self, method, path, body=None):
        """(status, body, error, call, return): status 0 with an error when there was no answer; return None when
        the outcome is unknown."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        call = self.now()
        try:
            try:
                conn.connect()
            except OSError as e:  # refused or unreachable: nothing was sent
                return 0, None, "refused: %s" % e.__class__.__name__, call, self.now()
            try:
                conn.request(method, path, body=body, headers=JSON if body is not None else {})
                r = conn.getresponse()
                data = r.read()
                return r.status, data, "", call, self.now()
            except (OSError, http.client.HTTPException) as e:  # timeout, reset, closed: unknown
                return 0, None, e.__class__.__name__, call, None
        finally:
            conn.close()

    def add(self, rec):
        with self.lock:
            self.records.append(rec)

    def prepare(self, client, kind, fid=None):
        """An operation about to be sent: (its record, method, path, body)."""
        name = self.fresh_name() if kind in ("put", "post") else None
        body = json.dumps({"name": name}).encode() if name else None
        path = "/fruits" if kind == "post" else "/fruits/%d" % fid
        method = {"get": "GET", "put": "PUT", "post": "POST", "delete": "DELETE"}[kind]
        return {"client": client, "op": kind, "id": fid, "name": name}, method, path, body

    def op(self, client, kind, fid=None):
        """One operation on a connection of its own, recorded."""
        rec, method, path, body = self.prepare(client, kind, fid)
        return self.complete(rec, *self.request(method, path, body))

    def complete(self, rec, status, data, error, call, ret):
        """Fills in an operation's outcome and records it."""
        rec.update(status=status, call=call)
        rec["return"] = ret
        if error:
            rec["error"] = error
        kind = rec["op"]
        if status in (502, 504):
            rec["return"] = None  # unknown: open to the end
        try:
            if kind == "post" and status == 201:
                rec["id"] = json.loads(data)["id"]
                with self.lock:
                    self.known.append(rec["id"])
            elif kind == "get" and status == 200:
                rec["name"] = json.loads(data)["name"]
        except (ValueError, KeyError, TypeError):
            rec["error"] = "unparsable answer: %r" % data[:200]
            rec["status"] = -1  # invalid
        self.add(rec)
        return rec

    def setup(self):
        """Creates the starting fruits (recorded too), retrying until `keys` exist."""
        deadline = time.monotonic() + 60
        while len(self.known) < self.keys:
            if time.monotonic() > deadline:
                raise AssertionError("could not create the starting fruits: %r" % self.records[-3:])
            if self.op(-1 % self.clients, "post")["status"] != 201:
                time.sleep(0.1)

    def choose(self, rng):
        """(kind, id) of the next operation."""
        with self.lock:
            ids = self.known[-self.keys:]  # the newest few: contention on a small key space
        r = rng.random()
        if r < 0.45:
            return "get", rng.choice(ids)
        if r < 0.75:
            return "put", rng.choice(ids)
        if r < 0.88:
            return "post", None
        return "delete", rng.choice(ids)

    def client(self, i):
        rng = random.Random(self.rng.random())
        while not self.stop.is_set():
            rec = self.op(i, *self.choose(rng))
            if rec["status"] in (0, 502, 503, 504):
                time.sleep(0.05)  # as a client told Retry-After would, a little: the history stays readable

    def pipelined_client(self, i):
        """Writes 2-6 operations at once on a keep-alive connection, then reads their answers in order; one write in
        eight is followed by a close with answers still pending (those operations' outcomes are unknown)."""
        rng = random.Random(self.rng.random())
        conn = None
        while not self.stop.is_set():
            batch = [self.prepare(i, *self.choose(rng)) for _ in range(rng.randint(2, 6))]
            for slot, (rec, _, _, _) in enumerate(batch):
                rec["slot"] = slot
            wire = b"".join(http_request(method, path, body, self.host) for _, method, path, body in batch)
            keep = rng.randrange(len(batch)) if rng.random() < 0.125 else len(batch)  # answers read before a close
            call = self.now()
            if conn is not None and select.select([conn], [], [], 0)[0]:
                reader.close()  # the server closed it while idle (a restart): no request of this write went out on it
                conn.close()
                conn = None
            if conn is None:
                try:
                    conn = socket.create_connection((self.host, self.port), timeout=self.timeout)
                except OSError as e:  # refused or unreachable: nothing was sent
                    for rec, _, _, _ in batch:
                        self.complete(rec, 0, None, "refused: %s" % e.__class__.__name__, call, self.now())
                    time.sleep(0.05)
                    continue
                reader = conn.makefile("rb")
            try:
                conn.sendall(wire)
            except OSError as e:  # some of it may have gone out: unknown
                keep, failure = 0, e.__class__.__name__
            else:
                failure = ABANDONED
            trouble = False
            for n, (rec, _, _, _) in enumerate(batch):
                if n >= keep:
                    self.complete(rec, 0, None, failure, call, None)
                    continue
                try:
                    status, headers, data = read_answer(reader)
                except (OSError, ValueError) as e:  # a timeout, a reset, a close: this and the rest unknown
                    keep, failure = n, e.__class__.__name__
                    self.complete(rec, 0, None, failure, call, None)
                    continue
                rec = self.complete(rec, status, data, "", call, self.now())
                trouble |= rec["status"] in (0, 502, 503, 504)
                if headers.get("connection", "").lower() == "close":
                    keep, failure = n + 1, "the server closed with its answer pending"
            if keep < len(batch):
                reader.close()
                conn.close()
                conn = None
            if trouble or keep < len(batch):
                time.sleep(0.05)
        if conn is not None:
            reader.close()
            conn.close()

    def start(self):
        self.setup()
        first_pipelined = self.clients - self.pipelined
        self.threads = [threading.Thread(target=self.pipelined_client if i >= first_pipelined else self.client,
                                         args=(i,), daemon=True) for i in range(self.clients)]
        for t in self.threads:
            t.start()

    def finish(self, within=60):
        """Stops the clients, then reads every row back."""
        self.stop.set()
        for t in self.threads:
            t.join(7 * self.timeout + 5)  # a pipelined write of 6 waits for each answer up to the timeout
            if t.is_alive():  # its operations would come after the final read, their names read without a writer
                raise AssertionError("a client did not stop")
        self.final_read(within)

    def nemesis(self, name, start, end):
        self.add({"nemesis": name, "call": start, "end": end})

    def final_read(self, within):
        """Reads the table page by page; each page is one snapshot of the ids it covers."""
        deadline, after, known = time.monotonic() + within, 0, set(self.known)
        while True:
            status, data, error, call, ret = self.request("GET", "/fruits?after=%d&limit=1000" % after)
            if status != 200:
                if time.monotonic() > deadline:
                    raise AssertionError("the final read did not succeed: %s %s" % (status, error))
                time.sleep(0.2)
                continue
            rows = json.loads(data)
            top = rows[-1]["id"] if len(rows) == 1000 else 2**31
            seen = set()
            for row in rows:
                if row["name"].startswith(self.prefix):
                    seen.add(row["id"])
                    self.add({"client": self.clients, "op": "get", "id": row["id"], "name": row["name"],
                              "status": 200, "call": call, "return": ret, "final": True})
            for fid in sorted(known):
                if after < fid <= top and fid not in seen:
                    self.add({"client": self.clients, "op": "get", "id": fid, "name": None, "status": 404,
                              "call": call, "return": ret, "final": True})
            if len(rows) < 1000:
                return
            after = top

    def write(self, path):
        with self.lock:
            recs = sorted(self.records, key=lambda r: r["call"])
        with open(path, "w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
        return recs


def http_request(method, path, body, host):
    """One HTTP/1.1 request on a keep-alive connection, as bytes."""
    head = "%s %s HTTP/1.1\r\nHost: %s\r\n" % (method, path, host)
    if body is not None:
        head += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
    return (head + "\r\n").encode() + (body or b"")


def read_answer(f):
    """Reads one HTTP/1.1 answer from a buffered file: (status, headers with lower-case names, body). Raises
    ConnectionError when the connection ends first, ValueError on an answer it cannot frame."""
    line = f.readline(65537)
    if not line:
        raise ConnectionError("closed before the answer")
    parts = line.split()
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise ValueError("not an HTTP/1 status line: %r" % line[:100])
    status, headers = int(parts[1]), {}
    while True:
        line = f.readline(65537)
        if not line:
            raise ConnectionError("closed in the answer's head")
        line = line.rstrip(b"\r\n")
        if not line:
            break
        k, _, v = line.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    if status in (204, 304) or 100 <= status < 200:
        return status, headers, b""
    if "content-length" not in headers:
        raise ValueError("an answer without Content-Length: %d %r" % (status, headers))
    n = int(headers["content-length"])
    body = f.read(n)
    if len(body) != n:
        raise ConnectionError("closed in the answer's body")
    return status, headers, body


def counts(recs):
    """Operations, definite, 503, indeterminate, by the checker's rules (for tables)."""
    out = {"operations": 0, "definite": 0, "nothing": 0, "indeterminate": 0, "pipelined": 0, "abandoned": 0}
    for r in recs:
        if "nemesis" in r or r.get("final"):
            continue
        out["operations"] += 1
        out["pipelined"] += "slot" in r
        out["abandoned"] += r.get("error") == ABANDONED
        s = r["status"]
        if s == 503 or (s == 0 and r.get("error", "").startswith("refused")):
            out["nothing"] += 1
        elif s in (0, 502, 504):
            out["indeterminate"] += 1
        else:
            out["definite"] += 1
    return out


def check(checker, history, report, timeout="2m"):
    """Runs the checker; returns (exit status, report text)."""
    p = subprocess.run([checker, "-history", history, "-report", report, "-timeout", timeout],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
