# SPDX-License-Identifier: MIT
"""Overload: a million mixed requests at 256 connections, 10,000 connections at once, and more connections than
open files. Every request gets an answer (200, or 503 counted as backpressure), nothing crashes, memory stays
flat. Quick form here; PREON_SCALE=long (bench/reliability.py) runs the long form."""
import errno
import selectors
import socket
import threading
import time
import unittest

from harness import (SANITIZED, SLOW, WRAPPER, Preon, main, measure, raise_fd_limit, record, require_env, scaled,
                     scrape, value, wrk_mix)


class SoakTest(unittest.TestCase):
    def test_mixed_soak(self):
        total = scaled(1000000, 10000000, 20000)
        with Preon().start() as p:
            samples = []  # (seconds since start, RSS KiB) every 100 ms
            stop = threading.Event()

            def sample():
                start = time.monotonic()
                while not stop.wait(0.1):
                    t, rss = time.monotonic() - start, measure.rss_kb(p.proc.pid)
                    if rss is not None:  # None: preon has gone, which the test reports below
                        samples.append((t, rss))

            sampler = threading.Thread(target=sample)
            sampler.start()
            t0 = time.monotonic()
            try:
                res = wrk_mix(p.port, total, ["/hello", "/fruits"], conns=256, bound_s=scaled(600, 1800, 600),
                              timeout_s=10 * SLOW)
            finally:
                stop.set()
                sampler.join()
            elapsed = time.monotonic() - t0
            m = scrape(p)  # a 503 here is backpressure: the queue full, or its time bound (a busy machine)
            rejected = sum(value(m, "preon_db_rejected_total", reason=r, pool="primary") for r in ("queue_full", "queue_wait"))
            self.assertIsNone(p.proc.poll(), "preon died:\n" + p.output()[-3000:])
            half = samples[len(samples) // 2:] if samples else [(0, 0)]
            first = samples[:len(samples) // 2] or half
            growth = max(r for _, r in half) - max(r for _, r in first)
            record("soak", requests=res["responses"], conns=256, seconds=round(elapsed, 1), statuses=res["statuses"],
                   socket_errors=res["socket_errors"], backpressure_503=int(rejected),
                   rss_first_half_max_kib=max(r for _, r in first), rss_second_half_max_kib=max(r for _, r in half),
                   rss_growth_second_half_kib=growth)
            out = res["output"]
            self.assertGreaterEqual(res["responses"] or 0, total, out)
            self.assertEqual(res["errors"], {"connect": 0, "read": 0, "write": 0, "timeout": 0}, out)
            self.assertLessEqual(set(res["statuses"]), {200, 503}, out)
            self.assertEqual(res["statuses"].get(503, 0), rejected, "503s not counted as backpressure")
            self.assertGreater(res["statuses"].get(200, 0), total // 2, out)
            if not SANITIZED and not WRAPPER:  # the sanitizers' quarantine grows by design; LeakSanitizer checks
                # No growth across the second half: a leak of even 2 bytes a request would show here.
                self.assertLessEqual(growth, 1024, "RSS grew by %d KiB in the second half: %s" % (growth, samples))
            self.assertEqual(p.stop(timeout=60 * SLOW), 0)


class ConnectionsTest(unittest.TestCase):
    """Many connections at once, each opened before any sends: every one answered, or refused cleanly."""

    def storm(self, p, n, path="/hello", keep=None, within=60):
        """Opens n connections to p, then sends one request on each, then reads. Returns a dict of outcomes:
        'status N' for a whole answer, 'refused' for a connection closed or reset before any byte of an answer
        (or not accepted at all), 'broken' for anything else (a partial answer, no answer `within` seconds).
        Answered connections are closed, or appended to the list `keep` if one is given."""
        sel = selectors.DefaultSelector()
        socks, outcomes, bufs = [], {}, {}
        deadline = time.monotonic() + within * SLOW

        def outcome(kind):
            outcomes[kind] = outcomes.get(kind, 0) + 1

        for _ in range(n):
            s = socket.socket()
            s.setblocking(False)
            err = s.connect_ex(("127.0.0.1", p.port))
            if err not in (0, errno.EINPROGRESS):
                s.close()
                outcome("refused")
                continue
            socks.append(s)
            sel.register(s, selectors.EVENT_WRITE)
        # all connected (or failed) before any request goes out: n connections are open at once
        pending = set(socks)
        while pending and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=1):
                s = key.fileobj
                sel.unregister(s)
                pending.discard(s)
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    s.close()
                    socks.remove(s)
                    outcome("refused")
        self.assertEqual(pending, set(), "connections still not established after the deadline")
        req = ("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode()
        for s in list(socks):
            try:
                s.send(req)
                bufs[s] = b""
                sel.register(s, selectors.EVENT_READ)
            except OSError:
                s.close()
                socks.remove(s)
                outcome("refused")
        while bufs and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=1):
                s = key.fileobj
                try:
                    data = s.recv(65536)
                except OSError:
                    data = None
                if data:
                    bufs[s] += data
                    head, sep, body = bufs[s].partition(b"\r\n\r\n")
                    if not sep:
                        continue
                    length = [int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:")]
                    if not length or len(body) < length[0]:
                        continue
                    outcome("status %d" % int(head.split()[1]))
                else:
                    outcome("refused" if not bufs[s] else "broken")
                sel.unregister(s)
                if data and keep is not None:
                    keep.append(s)
                else:
                    s.close()
                del bufs[s]
        for s in bufs:  # no whole answer by the deadline
            outcome("broken")
            s.close()
        sel.close()
        return outcomes

    def assert_refused_cleanly(self, p, outcomes, counted):
        """Every connection got a whole answer or was refused at once, each refusal was counted, and preon serves
        new connections again once the storm is gone."""
        self.assertEqual(set(outcomes), {"status 200", "refused"}, outcomes)
        self.assertEqual(outcomes["refused"], counted)
        self.assertEqual(self.storm(p, 10), {"status 200": 10})

    def test_10k_concurrent_connections(self):
        n = scaled(10000, 10000, 1000)
        raise_fd_limit(n + 1024)
        # Connections, not the queue: every one must be answered 200. The queue's time bound would rightly refuse
        # what a slow build cannot serve within a second of 10,000 arriving at once (test_shedding.py tests that).
        with Preon(database_max_queue_wait_ms=0).start() as p:
            for path in ["/hello", "/fruits"] * scaled(1, 5, 1):
                start = time.monotonic()
                outcomes = self.storm(p, n, path)
                record("10k-connections", path=path, conns=n, seconds=round(time.monotonic() - start, 1),
                       outcomes=outcomes)
                self.assertEqual(outcomes, {"status 200": n}, path)
            self.assertEqual(value(scrape(p), "preon_http_connections_refused_total"), 0)
            self.assertEqual(p.stop(timeout=60 * SLOW), 0)

    def test_more_connections_than_allowed(self):
        # server.max_connections below the storm: the rest are refused at once (and counted), not left hanging
        # The answered connections stay open until the storm is over: closed, they would make room, and a server
        # slower than the client (a sanitized build on a busy machine) would then accept and serve the rest from
        # its backlog, refusing none (seen once in CI: 3000 answered, 0 refused). The idle timeout outlasts it.
        n, limit = scaled(3000, 10000, 300), scaled(1000, 5000, 100)
        raise_fd_limit(n + 1024)
        with Preon(server_max_connections=limit, server_idle_timeout_ms=600000).start() as p:
            held = []
            try:
                start = time.monotonic()
                outcomes = self.storm(p, n, keep=held)
                for s in held:
                    s.close()
                held = []
                time.sleep(0.2)
                refused = value(scrape(p), "preon_http_connections_refused_total")
                record("max-connections", conns=n, max_connections=limit, outcomes=outcomes,
                       counted_refused=int(refused), seconds=round(time.monotonic() - start, 1))
                # all that fit in the limit, give or take the start-up probes' connections still closing
                self.assertLessEqual(outcomes.get("status 200", 0), limit)
                self.assertGreaterEqual(outcomes.get("status 200", 0), limit - 4)
                self.assert_refused_cleanly(p, outcomes, refused)
                self.assertEqual(p.stop(timeout=60 * SLOW), 0)
            finally:
                for s in held:
                    s.close()

    def test_out_of_file_descriptors(self):
        # An open files limit below the connections: preon takes as many as the limit leaves room for, refuses
        # the rest at once (rather than leaving them in the backlog, or spinning on a listener it cannot accept
        # from), and serves new connections once descriptors are free again.
        n, nofile = scaled(2000, 10000, 600), scaled(1000, 5000, 300)
        raise_fd_limit(n + 1024)
        with Preon(wrapper=["prlimit", "--nofile=%d" % nofile, "--", *WRAPPER]).start() as p:
            held = []
            try:
                start = time.monotonic()
                outcomes = self.storm(p, n, keep=held, within=10)  # the answered ones stay open
                cpu0 = measure.cpu_s(p.proc.pid)
                time.sleep(1)
                idle_cpu = measure.cpu_s(p.proc.pid) - cpu0
                for s in held:
                    s.close()
                held = []
                time.sleep(0.2)
                refused = value(scrape(p), "preon_http_connections_refused_total")
                record("out-of-descriptors", conns=n, nofile=nofile, outcomes=outcomes, counted_refused=int(refused),
                       cpu_while_full_s=round(idle_cpu, 3), seconds=round(time.monotonic() - start, 1))
                self.assertGreater(outcomes.get("status 200", 0), nofile // 2)
                self.assertLess(idle_cpu, 0.2 * SLOW, "preon spins while out of descriptors")
                self.assertRegex(p.output(), r"open files limit \(\d+\) allows \d+ client connections")
                self.assert_refused_cleanly(p, outcomes, refused)
                self.assertEqual(p.stop(timeout=60 * SLOW), 0)
            finally:
                for s in held:
                    s.close()


if __name__ == "__main__":
    require_env()
    main()
