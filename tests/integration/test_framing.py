# SPDX-License-Identifier: MIT
"""HTTP/1.1 framing by RFC 9112: the corpus of tests/integration/framing.corpus (malformed requests and the valid
forms beside them), each case on a connection of its own followed by one more request (TAIL), sent to preon directly
and through deploy/stack's HAProxy (scripts/fixtures/templates.py).

Directly, every case must be answered as the corpus says: a malformed request once, 400 (or the status named), and
the connection closed, so that nothing after it is read as a request; a valid one with its normal answer and then
the TAIL's. Through HAProxy the answer may be HAProxy's own (the corpus's third column, Debian's HAProxy 2.6), but
preon and the proxy must never disagree on where a request ends: every request preon's handlers answered (its
metrics) is an answer the client received, so no smuggled request reached preon; and the TAIL's answer is the
TAIL's, not another request's.

The build decides what is expected. PREON_DEPS=source (preon on h2o built from Debian's source with the patches of
scripts/sources/h2o/): the corpus as written. PREON_DEPS=system (Debian's libh2o-evloop as shipped): the corpus
except the cases of its [system-build] section, which must be answered exactly as listed there: what the stock
build lets through, so that the test fails if that changes either way. Without PREON_DEPS the build is told from the
binary (it needs libh2o-evloop.so when it links the shipped library); with it, the two must agree.
PREON_FRAMING_PRINT=1 prints every case's answers on each leg, to write the corpus's columns from.
"""
import codecs
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from harness import BIN, SLOW, Preon, end, free_port, main, require_env, scrape, supervise, templates

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "framing.corpus")
TAIL = b"GET /framing-after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
IDLE = 1.0 * SLOW  # seconds without a byte after which a connection the server keeps open counts as held ("open")
HAPROXY_PAGE = b"<html><body><h1>"  # how HAProxy's own error answers begin (its built-in error pages)
NOT_COUNTED = ("/health/ready", "/health/live", "/metrics")  # routes of HAProxy's checks and of the scrapes
PRINT = os.environ.get("PREON_FRAMING_PRINT") == "1"
ONE = r"(\d{3}h? )*(\d{3}h?|junk|open)"
ANSWERS = re.compile(r"%s( / %s)*" % (ONE, ONE))  # alternatives, where HAProxy's answer depends on timing


class Case:
    """One line of the corpus: expect and haproxy are the answers directly and through HAProxy (source build)."""

    def __init__(self, klass, name, expect, haproxy, data, line):
        self.klass, self.name, self.expect, self.haproxy = klass, name, expect, haproxy
        self.data, self.line = data, line

    def malformed(self):
        return self.expect.split()[0] in ("400", "501")


def load(path=CORPUS):
    """The corpus: ([Case], {name: (direct, haproxy) answers of the stock build}, {class: rule}). Fails on a malformed
    line."""
    macros, cases, system, classes, klass = {}, [], {}, {}, None
    with open(path, encoding="latin-1") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            where = "%s:%d" % (os.path.basename(path), n)
            if line.startswith("@"):
                name, eq, text = line[1:].partition(" = ")
                assert eq and re.fullmatch(r"[A-Z]", name), "%s: a macro is `@X = bytes`" % where
                macros[name] = text
                continue
            m = re.fullmatch(r"\[([a-z0-9-]+)\](.*)", line)
            if m:
                klass = m.group(1)
                classes[klass] = m.group(2).strip()
                continue
            assert klass is not None, "%s: a case before any [class]" % where
            fields = line.split("|", 3)
            name, answers = fields[0].strip(), [" ".join(f.split()) for f in fields[1:3]]
            assert re.fullmatch(r"[a-z0-9-]+", name), "%s: bad name %r" % (where, name)
            assert len(answers) == 2 and all(a == "=" or ANSWERS.fullmatch(a) for a in answers), \
                "%s: bad answers %r" % (where, answers)
            if klass == "system-build":
                assert len(fields) == 3 and name not in system, "%s: `name | direct | haproxy` once a case" % where
                system[name] = answers
                continue
            assert len(fields) == 4 and fields[3].startswith(" "), "%s: not `name | direct | haproxy | request`" % where
            assert answers[0] != "=", "%s: the direct answers are the reference" % where
            text = re.sub(r"\{([A-Z])\}", lambda mm: macros[mm.group(1)], fields[3][1:])
            data = codecs.escape_decode(text.encode("latin-1"))[0]
            assert name not in {c.name for c in cases}, "%s: %s twice" % (where, name)
            cases.append(Case(klass, name, answers[0], answers[0] if answers[1] == "=" else answers[1], data, n))
    by_name = {c.name: c for c in cases}
    unknown = set(system) - set(by_name)
    assert not unknown, "[system-build] names no case: %s" % sorted(unknown)
    system = {n: (by_name[n].expect if d == "=" else d, by_name[n].haproxy if h == "=" else h)
              for n, (d, h) in system.items()}
    return cases, system, classes


def build_deps():
    """"system" or "source": PREON_DEPS (set by tests/CMakeLists.txt), checked against the binary itself."""
    out = subprocess.run(["readelf", "-d", BIN], capture_output=True, text=True, check=True).stdout
    linked = "system" if re.search(r"NEEDED.*\[libh2o-evloop\.so", out) else "source"
    deps = os.environ.get("PREON_DEPS", linked)
    assert deps in ("system", "source"), "PREON_DEPS=%s: system or source" % deps
    assert deps == linked, "PREON_DEPS=%s, but %s is linked with the %s h2o" % (deps, BIN, linked)
    return deps


def answers(buf):
    """The answers in the bytes a server sent: [(status, headers, body)]; ("junk", {}, rest) for bytes that are
    not an answer."""
    out = []
    while buf:
        head, sep, rest = buf.partition(b"\r\n\r\n")
        m = re.match(rb"HTTP/1\.[01] (\d{3}) ", head)
        if not sep or not m:
            out.append(("junk", {}, buf))
            break
        status, headers = int(m.group(1)), {}
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            headers[k.strip().lower().decode("latin-1")] = v.strip().decode("latin-1")
        if status < 200 or status in (204, 304):
            body = b""
        elif "content-length" in headers:
            n = int(headers["content-length"])
            body, rest = rest[:n], rest[n:]
        else:  # neither preon, h2o nor HAProxy answer these requests without a length: to the close
            body, rest = rest, b""
        out.append((status, headers, body))
        buf = rest
    return out


def exchange(port, data):
    """Sends data + TAIL on a new connection and reads until the server closes it (or IDLE passes without a byte).
    Returns (answers, held): held is True when the connection was still open."""
    with socket.create_connection(("127.0.0.1", port), timeout=IDLE) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            s.sendall(data + TAIL)
        except OSError:
            pass  # closed before it took everything: what it answered is still to be read
        buf, held = b"", False
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                held = True
                break
            except ConnectionResetError:
                break
            if not chunk:
                break
            buf += chunk
    return answers(buf), held


def outcome(got, held):
    """The corpus's notation: the statuses in order, `h` after one HAProxy made, `open` if the server held on."""
    words = ["junk" if st == "junk" else "%d%s" % (st, "h" if body.startswith(HAPROXY_PAGE) else "")
             for st, _, body in got]
    return " ".join(words + (["open"] if held else []))


class FramingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_env()
        cls.cases, cls.system, cls.classes = load()
        cls.deps = build_deps()
        cls.haproxy, cls.hadir = None, None
        # HTTP/2 off, as by default (h2-preface); a held connection outlives IDLE, so that it shows as "open"
        cls.preon = Preon(server_http2="false",
                          server_idle_timeout_ms=int(max(10, 3 * IDLE) * 1000)).start(probe="/hello")
        try:
            cls.start_haproxy()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def start_haproxy(cls):
        """deploy/stack's HAProxy (its head and its preon frontends and backends) with this preon as its replica."""
        cls.hadir = tempfile.mkdtemp(prefix="preon-framing-haproxy-")
        cls.haport, noretry = free_port(), free_port()
        cfg = os.path.join(cls.hadir, "haproxy.cfg")
        lines = templates.haproxy_head(os.path.join(cls.hadir, "stats.sock"), "tcp", "30m", "30m")
        lines += templates.haproxy_preon(cls.haport, noretry, [("preon1", cls.preon.port)])
        with open(cfg, "w") as f:
            f.write("\n".join(lines) + "\n")
        log = os.path.join(cls.hadir, "haproxy.log")
        cls.haproxy = supervise.spawn(["haproxy", "-db", "-f", cfg], log)

        def ready():
            try:
                got, _ = exchange(cls.haport, b"")
                return [a[0] for a in got] == [404] and got[0][1].get("server") == "preon"
            except OSError:
                return False
        supervise.wait_ready(ready, 10 * SLOW, "haproxy", cls.haproxy, log)

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.haproxy is not None:
                end(cls.haproxy)
            if cls.hadir:
                shutil.rmtree(cls.hadir, ignore_errors=True)
            rc = cls.preon.stop()
            if rc != 0:
                raise AssertionError("preon exited with %s after SIGTERM:\n%s" % (rc, cls.preon.output()))
        finally:
            cls.preon.cleanup()

    def expected(self, case):
        """(direct, through HAProxy): the answers this build must give."""
        if self.deps == "system" and case.name in self.system:
            return self.system[case.name]
        return case.expect, case.haproxy

    def handled(self):
        """How many requests preon's handlers have answered, HAProxy's checks and the scrapes left out."""
        return sum(v for (name, labels), v in scrape(self.preon).items()
                   if name == "preon_http_requests_total" and dict(labels)["route"] not in NOT_COUNTED)

    def check(self, leg, seen):
        """Fails listing every case answered otherwise than expected on this leg (0 direct, 1 through HAProxy)."""
        wrong = ["  %-27s line %-4d expected %-12s got %s" % (c.name, c.line, self.expected(c)[leg], seen[c.name])
                 for c in self.cases if seen[c.name] not in self.expected(c)[leg].split(" / ")]
        if PRINT:
            print("\n".join("%-26s| %s" % (c.name, seen[c.name]) for c in self.cases))
        self.assertFalse(wrong, "\n%s build, %s:\n%s" % (self.deps, ("directly", "through HAProxy")[leg],
                                                         "\n".join(wrong)))

    def test_corpus(self):
        """Every class has malformed cases and the valid forms beside them; the stock build's list is not empty."""
        for klass in self.classes:
            kinds = {c.malformed() for c in self.cases if c.klass == klass}
            if klass not in ("system-build", "expect", "connection"):
                self.assertEqual(kinds, {True, False}, "class %s needs malformed and valid cases" % klass)
        self.assertGreaterEqual(len(self.cases), 150)
        self.assertTrue(self.system)

    def test_direct(self):
        """Each case straight to preon, answered as the corpus says (on the stock build: as [system-build] says)."""
        seen = {c.name: outcome(*exchange(self.preon.port, c.data)) for c in self.cases}
        lets_through = [c.name for c in self.cases if seen[c.name] != c.expect]
        print("\n%s build: %d cases, %d answered otherwise than RFC 9112 asks%s %s" %
              (self.deps, len(self.cases), len(lets_through), ":" if lets_through else "", " ".join(lets_through)))
        self.check(0, seen)

    def test_haproxy(self):
        """Each case through HAProxy: every request preon's handlers answered reached the client as an answer (none
        was smuggled past the proxy), and the answers are the corpus's."""
        seen, smuggled = {}, []
        for case in self.cases:
            before = self.handled()
            got, held = exchange(self.haport, case.data)
            from_preon = sum(1 for st, h, _ in got if st != "junk" and h.get("server") == "preon")
            deadline = time.monotonic() + 0.5 * SLOW
            while True:  # preon counts an answer as it sends it: give a late one the time to show
                n = self.handled() - before
                if n == from_preon or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            seen[case.name] = outcome(got, held)
            if n != from_preon:
                smuggled.append("  %-27s line %-4d preon answered %d requests, the client got %d of them (%s)" %
                                (case.name, case.line, n, from_preon, seen[case.name]))
        self.assertFalse(smuggled, "\nthrough HAProxy (%s build), preon and HAProxy disagree:\n%s" %
                         (self.deps, "\n".join(smuggled)))
        self.check(1, seen)


if __name__ == "__main__":
    main()
