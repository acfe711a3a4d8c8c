# SPDX-License-Identifier: MIT
"""Many requests at once share each thread's pipeline, and every one gets its own, correct answer."""
import http.client
import json
import socket
import threading

import time

from harness import SLOW, PreonTestCase, hold_lock, main, parallel, psql, read_response, require_env, scrape, value


def expected_list():
    """GET /fruits's first page (100 rows by id, the default page size), from PostgreSQL itself."""
    return json.loads(psql("SELECT coalesce(json_agg(json_build_object('id', id, 'name', name) ORDER BY id), '[]') "
                           "FROM (SELECT id, name FROM fruits ORDER BY id LIMIT 100) AS page"))


class ConcurrencyTest(PreonTestCase):
    preon_settings = {"database_connections_per_thread": 1}

    def test_200_concurrent_keep_alive(self):
        expected = expected_list()
        ids = [int(x) for x in psql("SELECT id FROM fruits ORDER BY id").split()]
        results = []
        barrier = threading.Barrier(50)

        def client(n):
            conn = http.client.HTTPConnection("127.0.0.1", self.preon.port, timeout=20)
            barrier.wait()
            for i in range(4):  # 50 connections x 4 keep-alive requests = 200
                # alternate the list and single rows, so that answers of different shapes interleave
                if (n + i) % 2 == 0:
                    conn.request("GET", "/fruits")
                    r = conn.getresponse()
                    results.append(("list", r.status, json.loads(r.read()), None))
                else:
                    fid = ids[(n + i) % len(ids)]
                    conn.request("GET", "/fruits/%d" % fid)
                    r = conn.getresponse()
                    results.append(("one", r.status, json.loads(r.read()), fid))
            conn.close()

        self.assertEqual(parallel(client, 50), [])
        self.assertEqual(len(results), 200)
        for kind, status, body, fid in results:
            self.assertEqual(status, 200)
            if kind == "list":
                self.assertEqual(body, expected)
            else:
                self.assertEqual(body["id"], fid)

    def test_pipelined_requests_on_one_connection(self):
        # 100 requests in one write: they reach the database together and must come back in order.
        ids = [int(x) for x in psql("SELECT id FROM fruits ORDER BY id").split()]
        order = [ids[i % len(ids)] for i in range(100)]
        req = b"".join(b"GET /fruits/%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in order)
        with socket.create_connection(("127.0.0.1", self.preon.port), timeout=20) as s:
            s.sendall(req)
            f = s.makefile("rb")
            for fid in order:
                status, _, body = read_response(f)
                self.assertEqual(status, 200)
                self.assertEqual(json.loads(body)["id"], fid)


class QueueBoundTest(PreonTestCase):
    """With database.max_queued at its least (500, the largest request) and one thread, a burst of /queries=100 finds
    the queue full: 503 at once, never a hang. The time bound is off, so that only the length bound answers."""
    preon_settings = {"database_max_queued": 500, "server_threads": 1, "database_max_queue_wait_ms": 0}

    def test_queue_full_is_503(self):
        statuses = []
        lock = threading.Lock()

        def burst():
            body = b"".join(b"GET /queries?queries=100 HTTP/1.1\r\nHost: x\r\n\r\n" for _ in range(20))
            with socket.create_connection(("127.0.0.1", self.preon.port), timeout=20) as s:
                s.sendall(body)
                f = s.makefile("rb")
                for _ in range(20):
                    status, headers, data = read_response(f)
                    with lock:
                        statuses.append((status, headers.get("retry-after"), data))

        self.assertEqual(parallel(lambda n: burst(), 10), [])
        self.assertEqual(len(statuses), 200)
        codes = {s for s, _, _ in statuses}
        self.assertTrue(codes <= {200, 503}, codes)
        self.assertIn(503, codes)
        self.assertIn(200, codes)
        # every 503 is counted as backpressure, and nothing else is
        rejected = value(scrape(self.preon), "preon_db_rejected_total", reason="queue_full", pool="primary")
        self.assertEqual(rejected, sum(1 for s, _, _ in statuses if s == 503))
        for status, retry, data in statuses:
            if status == 503:
                self.assertEqual(retry, "1")
                self.assertEqual(json.loads(data), {"error": "database queue is full", "status": 503})


class QueueWaitTest(PreonTestCase):
    """database.max_queue_wait_ms: once the oldest query of the thread's only connection has waited longer than the
    bound (a lock holds it), new requests get 503 + Retry-After at once, before anything is sent; the held request
    still gets its 200, and once the queue has drained requests are let in again."""
    BOUND_MS = 300 * SLOW
    preon_settings = {"server_threads": 1, "database_connections_per_thread": 1,
                      "database_max_queue_wait_ms": BOUND_MS, "server_request_timeout_ms": 60000 * SLOW,
                      "database_query_timeout_ms": 60000 * SLOW}

    def get(self, path):
        conn = http.client.HTTPConnection("127.0.0.1", self.preon.port, timeout=60 * SLOW)
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.getheader("Retry-After"), r.read()

    def test_overload_is_503_until_the_queue_drains(self):
        holder = hold_lock(120)
        held = []
        try:
            t = threading.Thread(target=lambda: held.append(self.get("/fruits")))
            t.start()
            deadline = time.monotonic() + 30 * SLOW
            while psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'preon' AND "
                       "wait_event_type = 'Lock'") != "1":
                self.assertLess(time.monotonic(), deadline, "GET /fruits never waited for the lock")
                time.sleep(0.02)
            # Within the bound a request still queues behind it (answered later); past it, 503 at once.
            time.sleep(2 * self.BOUND_MS / 1000.0)
            rejected = [self.get(p) for p in ("/fruits/1", "/fruits", "/db")]
            self.assertTrue(holder.poll() is None and t.is_alive(), "the lock ended before the 503s were read")
            for status, retry, body in rejected:
                self.assertEqual((status, retry), (503, "1"), body)
                self.assertEqual(json.loads(body),
                                 {"error": "database is overloaded: queries wait too long", "status": 503})
            self.assertEqual(value(scrape(self.preon), "preon_db_rejected_total", reason="queue_wait", pool="primary"), 3)
        finally:
            psql("SELECT pg_cancel_backend(pid) FROM pg_locks WHERE relation = 'fruits'::regclass AND "
                 "mode = 'AccessExclusiveLock' AND granted")
            holder.wait(timeout=60)
        t.join(60 * SLOW)
        self.assertEqual([s for s, _, _ in held], [200])
        self.assertEqual(self.get("/fruits")[0], 200)
        self.assertEqual(value(scrape(self.preon), "preon_db_rejected_total", reason="queue_wait", pool="primary"), 3)


if __name__ == "__main__":
    require_env()
    main()
