# SPDX-License-Identifier: MIT
"""bench/peers/: the posts' stacks (Quarkus, Spring WebFlux, Spring MVC, Go gin; Quarkus native when it builds)
build from their registries, answer /hello, /fruits (with paging and its 400s) and the CRUD with preon's bytes and
status codes, keep answers in request order, hold their pool to POOL_SIZE, answer a database error with a 5xx,
start without a database and end on SIGTERM. A peer whose toolchain cannot be installed here (build.sh exits 77)
is skipped with its reason.

Environment: PREON_BIN, PREON_REPO (tests/CMakeLists.txt); PREON_TEST_PGDIR (scripts/test.sh), or, without it,
a private PostgreSQL started here in a temp folder.
"""
import atexit
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

REPO = os.environ.get("PREON_REPO") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEERS = os.path.join(REPO, "bench", "peers")
ROLE = "peers_test"  # the peers connect as this role, so their backends can be counted
# SIGTERM's exit status after an orderly shutdown: 0, or 143 from a JVM whose shutdown hooks ran (Spring Boot)
OK_EXIT = (0, 143)
START_S = 180  # a JVM peer starts in seconds, but in minutes on a machine shared with other builds
# Every kind of character jansson escapes or keeps as it is: the peers must give preon's bytes for it.
ODD_NAME = 'odd "q" \\ / <b>&amp; \t\n\r\b\f \x01\x1b\x1f\x7f ñ 水果 \u2028 \U0001F34D'


def own_cluster():
    """A private PostgreSQL when the test command has not started one (running this file by hand)."""
    pgdir = tempfile.mkdtemp(prefix="preon-peers-pg.")
    os.chmod(pgdir, 0o755)
    pg_sh = os.path.join(REPO, "scripts", "pg.sh")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run([pg_sh, "init", pgdir, str(port)], check=True, env=dict(os.environ, PREON_PG_EXTRA_CONF="fsync = off"))
    atexit.register(lambda: (subprocess.run([pg_sh, "stop", pgdir, "immediate"]), shutil.rmtree(pgdir, True)))
    return pgdir


if not os.environ.get("PREON_TEST_PGDIR"):
    os.environ["PREON_TEST_PGDIR"] = own_cluster()
os.environ.setdefault("PREON_BIN", os.path.join(REPO, "build", "preon"))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))
from harness import Preon, free_port, pg_url, psql, require_env, supervise  # noqa: E402 - scripts/fixtures' supervisor


def url_as(user, database=None, port=None):
    """The test cluster's URL with another user, database or port."""
    base = pg_url()  # postgresql://postgres@127.0.0.1:PORT/preon
    host_port, db = base.split("@", 1)[1].split("/", 1)
    host = host_port.rsplit(":", 1)[0]
    return "postgresql://%s@%s:%s/%s" % (user, host, port or host_port.rsplit(":", 1)[1], database or db)


def get(port, path, timeout=10, host="127.0.0.1"):
    """One GET on a new connection: (status, content type, body)."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type"), r.read()
    finally:
        conn.close()


class Peer:
    """bench/peers/NAME/run.sh on a free port, in the foreground of its own process (run.sh execs the service),
    started, waited for and stopped by scripts/fixtures/supervise.py."""

    def __init__(self, name, database_url, host="127.0.0.1", **env):
        self.name, self.port, self.host = name, free_port(), host
        self.env = dict(os.environ, PORT=str(self.port), DATABASE_URL=database_url, POOL_SIZE="3", **env)
        if host != "127.0.0.1":
            self.env["LISTEN"] = host
        self.log = tempfile.NamedTemporaryFile(prefix="peer-%s-" % name, suffix=".log", delete=False)
        self.log.close()  # the supervisor appends to it by name
        self.proc = None

    def start(self):
        """Starts run.sh and waits until /hello answers 200; a peer that exits or does not answer in START_S s is
        killed and fails the test with its output."""
        self.proc = supervise.spawn([os.path.join(PEERS, self.name, "run.sh")], self.log.name, env=self.env,
                                    cwd=tempfile.gettempdir())
        hello = "http://%s:%d/hello" % (self.host, self.port)
        try:
            supervise.wait_ready(lambda: supervise.http_ok(hello, 10), START_S, self.name, self.proc, interval=0.05)
        except supervise.NotReady as e:
            self.kill()
            raise AssertionError("%s:\n%s" % (e, self.output())) from None
        return self

    def output(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def stop(self, timeout=20):
        """SIGTERM; returns the exit status. A peer still running `timeout` s later is killed and fails the test."""
        supervise.send(self.proc, signal.SIGTERM)
        rc = supervise.exited(self.proc, timeout)
        if rc is None:
            self.kill()
            raise AssertionError("%s still running %d s after SIGTERM:\n%s" % (self.name, timeout, self.output()))
        return rc

    def kill(self):
        if self.proc is not None:
            supervise.stop(self.proc, timeout=0, sig=signal.SIGKILL)

    def cleanup(self):
        self.kill()
        os.unlink(self.log.name)


def request(port, method, path, body=None, ctype="application/json"):
    """One request on a new connection: (status, headers as a dict with lower-case names, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": ctype} if body is not None else {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def rows_of(body):
    """The rows of a /fruits body as their JSON bytes: a row's quote characters inside strings are escaped, so
    '},{"id":' only ever separates two rows."""
    inner = body[1:-1]
    if not inner:
        return []
    parts = inner[1:-1].split(b'},{"id":')
    return [b"{" + (p if i == 0 else b'"id":' + p) + b"}" for i, p in enumerate(parts)]


def page(rows, link=None):
    """The answer the paging contract gives for these rows: (status, Content-Type, Link, body)."""
    return 200, "application/json", link, b"[" + b",".join(rows) + b"]"


def backends():
    return int(psql("SELECT count(*) FROM pg_stat_activity WHERE usename = '%s'" % ROLE))


def pipelined(port, paths):
    """Sends GETs of `paths` in one write on one connection; returns the bodies in the order they came back."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"".join(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % p.encode() for p in paths))
        buf, bodies = b"", []
        while len(bodies) < len(paths):
            while b"\r\n\r\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    raise AssertionError("connection closed after %d answers" % len(bodies))
                buf += chunk
            head, buf = buf.split(b"\r\n\r\n", 1)
            length = next(int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:"))
            while len(buf) < length:
                buf += s.recv(65536)
            bodies.append(buf[:length])
            buf = buf[length:]
        return bodies


class PeerTests:
    """Mixed into one TestCase per peer; NAME is the folder under bench/peers/; EVENT_LOOP, for a peer whose users
    answer /hello on an event loop, the pattern of those threads' names (the peer runs with its test-only switch
    PEER_THREAD_HEADER=true, which names the thread that answered in X-Peer-Thread)."""
    NAME = ""
    EVENT_LOOP = None
    ENV = {}  # more of run.sh's environment (an image peer's DOCKER_OPTS)

    @classmethod
    def setUpClass(cls):
        built = subprocess.run([os.path.join(PEERS, cls.NAME, "build.sh")], capture_output=True, text=True,
                               timeout=1200)
        if built.returncode == 77:  # the toolchain cannot be installed or cannot build here: build.sh says why
            raise unittest.SkipTest("SKIP %s: %s" % (cls.NAME, (built.stdout + built.stderr).strip()[-600:]))
        if built.returncode != 0:
            raise AssertionError("%s/build.sh failed:\n%s%s" % (cls.NAME, built.stdout, built.stderr))
        print(built.stdout.strip(), file=sys.stderr)
        cls.start_peer()

    @classmethod
    def start_peer(cls):
        cls.peer = Peer(cls.NAME, url_as(ROLE), **dict(cls.ENV, **({"PEER_THREAD_HEADER": "true"} if cls.EVENT_LOOP
                                                                    else {}))).start()

    @classmethod
    def tearDownClass(cls):
        try:
            rc = cls.peer.stop()
            if rc not in OK_EXIT:
                raise AssertionError("%s exited with %s after SIGTERM:\n%s" % (cls.NAME, rc, cls.peer.output()))
        finally:
            cls.peer.cleanup()

    def test_hello_is_preons(self):
        self.assertEqual(get(self.peer.port, "/hello"), get(PREON.port, "/hello"))
        self.assertEqual(get(self.peer.port, "/hello?x=1")[2], b"Hello")

    def test_hello_runs_on_an_event_loop(self):
        # A handler the stack runs on a worker pool (Quarkus REST: a method returning a plain type without
        # @NonBlocking) costs two thread hand-offs per request; the peers answer /hello as their users would, on
        # the event loop. Concurrent clients, so that a worker pool would show more than one of its threads.
        if not self.EVENT_LOOP:
            self.skipTest("%s has no event loop to check" % self.NAME)
        names, lock = [], threading.Lock()

        def hello():
            for _ in range(5):
                status, headers, _ = request(self.peer.port, "GET", "/hello")
                with lock:
                    names.append((status, headers.get("x-peer-thread")))
        threads = [threading.Thread(target=hello) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len(names), 30)
        for status, name in names:
            self.assertEqual(status, 200)
            self.assertRegex(name or "(no X-Peer-Thread header)", self.EVENT_LOOP)

    def test_fruits_are_preons_bytes(self):
        status, ctype, body = get(self.peer.port, "/fruits")
        self.assertEqual((status, ctype, body), get(PREON.port, "/fruits"))
        table = psql("SELECT json_agg(json_build_object('id', id, 'name', name) ORDER BY id) FROM fruits")
        self.assertEqual(json.loads(body), json.loads(table))  # the table, not merely what preon says
        self.assertIn(ODD_NAME, [f["name"] for f in json.loads(body)])

    def test_paging_is_preons(self):
        rows = rows_of(get(PREON.port, "/fruits")[2])
        self.assertGreaterEqual(len(rows), 4)
        first, second = (json.loads(r)["id"] for r in rows[:2])
        cases = {
            "/fruits?limit=2": page(rows[:2], '</fruits?after=%d&limit=2>; rel="next"' % second),
            "/fruits?after=%d&limit=1000" % first: page(rows[1:]),  # a short page: no Link
            "/fruits?limit=0": (400, "application/json", None,
                                b'{"error":"limit: must be an integer from 1 to 1000","status":400}'),
            "/fruits?after=-1": (400, "application/json", None,
                                 b'{"error":"after: must be an integer from 0 to 2147483647","status":400}'),
        }
        preon_pages = request(PREON.port, "GET", "/fruits?limit=0")[0] == 400  # preon with the paging contract
        for path, want in cases.items():
            status, headers, body = request(self.peer.port, "GET", path)
            got = (status, headers.get("content-type"), headers.get("link"), body)
            self.assertEqual(got, want, path)
            if preon_pages:
                status, headers, body = request(PREON.port, "GET", path)
                self.assertEqual(got, (status, headers.get("content-type"), headers.get("link"), body), path)

    def test_crud_as_preon(self):
        status, headers, body = request(self.peer.port, "POST", "/fruits", b'{"name":"Peer \\"fig\\""}')
        self.assertEqual((status, headers.get("content-type")), (201, "application/json"), body)
        fid = json.loads(body)["id"]
        self.assertEqual(headers.get("location"), "/fruits/%d" % fid)
        self.assertEqual(body, b'{"id":%d,"name":"Peer \\"fig\\""}' % fid)
        self.assertEqual(request(self.peer.port, "GET", "/fruits/%d" % fid)[::2], (200, body))
        self.assertEqual(request(self.peer.port, "PUT", "/fruits/%d" % fid, b'{"name":"Lime","id":7}')[::2],
                         (200, b'{"id":%d,"name":"Lime"}' % fid))
        self.assertEqual(psql("SELECT name FROM fruits WHERE id = %d" % fid), "Lime")
        self.assertEqual(request(self.peer.port, "DELETE", "/fruits/%d" % fid)[::2], (204, b""))
        missing = "/fruits/%d" % fid
        for method, body in (("GET", None), ("PUT", b'{"name":"x"}'), ("DELETE", None)):
            answers = [request(port, method, missing, body) for port in (self.peer.port, PREON.port)]
            self.assertEqual([(s, b) for s, _, b in answers], [(404, b'{"error":"no fruit with that id","status":404}')] * 2,
                             method)
        for method, path, body, ctype in (("GET", "/fruits/abc", None, None), ("DELETE", "/fruits/0", None, None),
                                          ("GET", "/fruits/2147483648", None, None),
                                          ("POST", "/fruits", b'{"name":"Fig"}', "text/plain"),
                                          ("POST", "/fruits", b"", "application/json"),
                                          ("POST", "/fruits", b"[1]", "application/json"),
                                          ("POST", "/fruits", b'{"name":5}', "application/json"),
                                          ("POST", "/fruits", b'{"name":""}', "application/json"),
                                          ("PUT", "/fruits/1", b'{"name":"Fig","color":"red"}', "application/json"),
                                          ("POST", "/fruits", b'{"name":"\xff"}', "application/json"),
                                          ("POST", "/fruits", json.dumps({"name": "x" * 256}).encode(), "application/json")):
            answers = [request(port, method, path, body, ctype or "application/json") for port in (self.peer.port, PREON.port)]
            self.assertEqual([(s, h.get("content-type"), b) for s, h, b in answers][0],
                             [(s, h.get("content-type"), b) for s, h, b in answers][1], (method, path, body))
        status, _, body = request(self.peer.port, "POST", "/fruits", b"{oops", "application/json")
        self.assertEqual(status, 400)
        self.assertTrue(json.loads(body)["error"].startswith("body is not valid JSON: "), body)

    def test_answers_in_request_order(self):
        hello, fruits = get(PREON.port, "/hello")[2], get(PREON.port, "/fruits")[2]
        order = ["/fruits", "/hello", "/fruits", "/hello", "/hello", "/fruits"]
        self.assertEqual(pipelined(self.peer.port, order), [fruits if p == "/fruits" else hello for p in order])

    def test_pool_holds_pool_size(self):
        errors = []

        def hammer():
            for _ in range(10):
                if get(self.peer.port, "/fruits")[0] != 200:
                    errors.append("not 200")
        threads = [threading.Thread(target=hammer) for _ in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertIn(backends(), (1, 2, 3))  # some pools open on demand (Quarkus), none beyond POOL_SIZE

    def test_database_error_is_5xx(self):
        # database "postgres" has no table fruits: the query fails, /hello still answers
        peer = Peer(self.NAME, url_as("postgres", database="postgres"), **self.ENV)
        try:
            peer.start()
            status, _, body = get(peer.port, "/fruits")
            self.assertTrue(500 <= status < 600, (status, body))
            self.assertIn(b"fruits", body)  # the database's message: relation "fruits" does not exist
            status, headers, body = request(peer.port, "GET", "/hello")
            self.assertEqual(body, b"Hello")
            self.assertNotIn("x-peer-thread", headers)  # the test-only switch is off unless set
            self.assertIn(peer.stop(), OK_EXIT)
        finally:
            peer.cleanup()

    def test_starts_without_database(self):
        peer = Peer(self.NAME, url_as("postgres", port=free_port()), **self.ENV)  # nothing listens there
        try:
            peer.start()
            self.assertTrue(500 <= get(peer.port, "/fruits", timeout=30)[0] < 600)
            self.assertIn(peer.stop(), OK_EXIT)
        finally:
            peer.cleanup()

    def test_listen_and_sigterm_with_a_client_connected(self):
        peer = Peer(self.NAME, url_as(ROLE), host="127.0.0.2", **self.ENV).start()  # LISTEN: this address only
        try:
            with self.assertRaises(OSError):
                get(peer.port, "/hello", timeout=2)
            idle = http.client.HTTPConnection(peer.host, peer.port, timeout=10)
            idle.request("GET", "/fruits")
            self.assertEqual(idle.getresponse().read()[:1], b"[")  # a keep-alive connection left open
            t0 = time.monotonic()
            self.assertIn(peer.stop(), OK_EXIT, peer.output())
            self.assertLess(time.monotonic() - t0, 15)
            idle.close()
            with self.assertRaises(OSError):
                get(peer.port, "/hello", timeout=2, host=peer.host)
        finally:
            peer.cleanup()


class GoPeer(PeerTests, unittest.TestCase):
    NAME = "go"


class QuarkusPeer(PeerTests, unittest.TestCase):
    NAME = "quarkus"
    EVENT_LOOP = r"^vert\.x-eventloop-thread-\d+$"


class NativePeerTests(PeerTests):
    """A peer's native executable, build/EXECUTABLE (bench/peers/NAME/build.sh: preon's native-image toolchain,
    minutes and ~6 GB on 2 cores): its build is left to the bench; the test command checks the toolchain on a small
    program (peers.native-toolchain) and this peer's answers once it has been built here."""
    EXECUTABLE = "quarkus-peer-runner"

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(os.path.join(PEERS, cls.NAME, "build", cls.EXECUTABLE)):
            raise unittest.SkipTest("SKIP %s: not built here (bench/peers/%s/build.sh builds it in minutes; the test "
                                    "command leaves that to the bench)" % (cls.NAME, cls.NAME))
        super().setUpClass()


class QuarkusNativePeer(NativePeerTests, unittest.TestCase):
    NAME = "quarkus-native"
    EVENT_LOOP = QuarkusPeer.EVENT_LOOP


class SpringWebfluxPeer(PeerTests, unittest.TestCase):
    NAME = "spring-webflux"
    EVENT_LOOP = r"^reactor-http-(epoll|nio)-\d+$"


class SpringMvcPeer(PeerTests, unittest.TestCase):
    NAME = "spring-mvc"


# The posts' other rows: a packaging (uber-jar), another server (Undertow), another programming model (RESTEasy
# classic and JDBC, reactive routes) of the same stacks.
class QuarkusClassicPeer(PeerTests, unittest.TestCase):
    NAME = "quarkus-classic"  # blocking by design: every request on a worker thread


class QuarkusRoutesPeer(PeerTests, unittest.TestCase):
    NAME = "quarkus-routes"
    EVENT_LOOP = QuarkusPeer.EVENT_LOOP


class QuarkusUberPeer(PeerTests, unittest.TestCase):
    NAME = "quarkus-uber"
    EVENT_LOOP = QuarkusPeer.EVENT_LOOP


class SpringMvcUndertowPeer(PeerTests, unittest.TestCase):
    NAME = "spring-mvc-undertow"


class QuarkusClassicNativePeer(NativePeerTests, unittest.TestCase):
    NAME = "quarkus-classic-native"


class ImagePeerTests(PeerTests):
    """A peer that is a container image (bench/peers/NAME/build.sh builds it, run.sh runs it with docker run
    --network host): checked as it is once it has been built here and a Docker daemon answers; the test command
    neither builds nor rebuilds it (the native one takes minutes and GBs)."""
    IMAGE = ""

    @classmethod
    def setUpClass(cls):
        try:
            found = subprocess.run(["docker", "image", "inspect", cls.IMAGE], capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise unittest.SkipTest("SKIP %s: no docker here (%s)" % (cls.NAME, e))
        if found.returncode != 0:
            raise unittest.SkipTest("SKIP %s: image %s not built here, or no Docker daemon answers (bench/peers/%s/"
                                    "build.sh builds it)" % (cls.NAME, cls.IMAGE, cls.NAME))
        cls.start_peer()


class QuarkusJibPeer(ImagePeerTests, unittest.TestCase):
    NAME, IMAGE = "quarkus-jib", "preon-peer-quarkus-jib"
    EVENT_LOOP = QuarkusPeer.EVENT_LOOP


class QuarkusNativeMicroPeer(ImagePeerTests, unittest.TestCase):
    NAME, IMAGE = "quarkus-native-micro", "preon-peer-quarkus-native-micro"
    EVENT_LOOP = QuarkusPeer.EVENT_LOOP


class QuarkusNativeMicroUnconfinedPeer(QuarkusNativeMicroPeer):
    ENV = {"DOCKER_OPTS": "--security-opt seccomp=unconfined"}  # post 004's last row


# Spring Boot's own native route (mvn -Pnative native:compile: AOT, then native-maven-plugin) with the same toolchain.
class SpringWebfluxNativePeer(NativePeerTests, unittest.TestCase):
    NAME = "spring-webflux-native"
    EXECUTABLE = "spring-webflux-peer"
    EVENT_LOOP = SpringWebfluxPeer.EVENT_LOOP


class SpringMvcNativePeer(NativePeerTests, unittest.TestCase):
    NAME = "spring-mvc-native"
    EXECUTABLE = "spring-mvc-peer"


PREON = None


def setUpModule():
    global PREON
    require_env()
    psql("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '%s') THEN CREATE ROLE %s LOGIN; END IF; END $$;"
         " GRANT SELECT, INSERT, UPDATE, DELETE ON fruits TO %s; GRANT USAGE ON SEQUENCE fruits_id_seq TO %s"
         % (ROLE, ROLE, ROLE, ROLE))
    psql("INSERT INTO fruits(name) VALUES ($q$%s$q$)" % ODD_NAME)
    PREON = Preon().start()


def tearDownModule():
    try:
        psql("DELETE FROM fruits WHERE name = $q$%s$q$" % ODD_NAME)
        if PREON is not None:
            PREON.stop()
            PREON.cleanup()
    finally:
        psql("REVOKE ALL ON fruits FROM %s; REVOKE ALL ON SEQUENCE fruits_id_seq FROM %s; DROP ROLE IF EXISTS %s"
             % (ROLE, ROLE, ROLE))


if __name__ == "__main__":
    unittest.main(verbosity=2)
