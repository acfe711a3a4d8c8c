# SPDX-License-Identifier: MIT
"""Records a history of preon's CRUD API for the linearizability checker (tests/histories/checker).

N clients (8 by default) work on a small key space (a few fruits created at the start, plus their own creations):
GET /fruits/{id}, PUT /fruits/{id} with a fresh unique name, POST /fruits, DELETE /fruits/{id}. Each operation is
one request on a new connection, recorded with its invocation and completion time (monotonic, ns from the start)
and its outcome: the status, or the transport error (a timeout or a reset: indeterminate; a refused connection:
nothing was sent). Nemesis intervals are recorded too (the visualization shows them). At the end, once the faults
are healed, every row is read back page by page (GET /fruits): each known id is then seen with its name or as
absent, and so is every row a POST of unknown outcome created.

Only the standard library: it runs under Debian's /usr/bin/python3.
"""
import http.client
import json
import os
import random
import socket
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
JSON = {"Content-Type": "application/json"}


class Recorder:
    def __init__(self, port, clients=8, keys=8, timeout=10.0, seed=None, host="127.0.0.1"):
        self.host, self.port, self.clients, self.keys, self.timeout = host, port, clients, keys, timeout
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

    def op(self, client, kind, fid=None):
        """One operation, recorded."""
        name = self.fresh_name() if kind in ("put", "post") else None
        body = json.dumps({"name": name}).encode() if name else None
        path = "/fruits" if kind == "post" else "/fruits/%d" % fid
        method = {"get": "GET", "put": "PUT", "post": "POST", "delete": "DELETE"}[kind]
        status, data, error, call, ret = self.request(method, path, body)
        rec = {"client": client, "op": kind, "id": fid, "name": name, "status": status, "call": call, "return": ret}
        if error:
            rec["error"] = error
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

    def client(self, i):
        rng = random.Random(self.rng.random())
        while not self.stop.is_set():
            with self.lock:
                ids = self.known[-self.keys:]  # the newest few: contention on a small key space
            r = rng.random()
            if r < 0.45:
                rec = self.op(i, "get", rng.choice(ids))
            elif r < 0.75:
                rec = self.op(i, "put", rng.choice(ids))
            elif r < 0.88:
                rec = self.op(i, "post")
            else:
                rec = self.op(i, "delete", rng.choice(ids))
            if rec["status"] in (0, 502, 503, 504):
                time.sleep(0.05)  # as a client told Retry-After would, a little: the history stays readable

    def start(self):
        self.setup()
        self.threads = [threading.Thread(target=self.client, args=(i,), daemon=True) for i in range(self.clients)]
        for t in self.threads:
            t.start()

    def finish(self, within=60):
        """Stops the clients, then reads every row back."""
        self.stop.set()
        for t in self.threads:
            t.join(self.timeout + 5)
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


def counts(recs):
    """Operations, definite, 503, indeterminate, by the checker's rules (for tables)."""
    out = {"operations": 0, "definite": 0, "nothing": 0, "indeterminate": 0}
    for r in recs:
        if "nemesis" in r or r.get("final"):
            continue
        out["operations"] += 1
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
