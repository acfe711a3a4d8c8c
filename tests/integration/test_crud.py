# SPDX-License-Identifier: MIT
"""POST/PUT/DELETE /fruits, compatible with Quarkus's reactive SQL client quickstart, checked against the table."""
import json
import socket
import threading
import uuid

from harness import PreonTestCase, main, parallel, psql, read_response

JSON = {"Content-Type": "application/json"}


def row(fid):
    out = psql("SELECT name FROM fruits WHERE id = %d" % fid)
    return out if out != "" else None


class CrudTest(PreonTestCase):
    preon_settings = {"server_max_body_bytes": 4096}

    @classmethod
    def setUpClass(cls):
        cls.last_id_before = int(psql("SELECT coalesce(max(id), 0) FROM fruits"))
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        # the rows these tests created go again: later tests (and the other builds' runs) see the seed table
        try:
            psql("DELETE FROM fruits WHERE id > %d" % cls.last_id_before)
        finally:
            super().tearDownClass()

    def send(self, method, path, body=None, headers=JSON):
        data = json.dumps(body, ensure_ascii=False).encode() if isinstance(body, (dict, list)) else body
        status, h, raw = self.preon.request(method, path, body=data, headers=headers)
        return status, h, (json.loads(raw) if raw and h.get("content-type") == "application/json" else raw)

    def create(self, name):
        status, headers, body = self.send("POST", "/fruits", {"name": name})
        self.assertEqual(status, 201, body)
        return body["id"]

    def test_create(self):
        status, headers, body = self.send("POST", "/fruits", {"name": "Banana"})
        self.assertEqual(status, 201)
        self.assertEqual(headers["location"], "/fruits/%d" % body["id"])
        self.assertEqual(body, {"id": body["id"], "name": "Banana"})
        self.assertEqual(row(body["id"]), "Banana")
        self.assertEqual(self.preon.json("GET", headers["location"])[2], body)

    def test_create_ignores_id_and_accepts_charset(self):
        status, _, body = self.send("POST", "/fruits", {"id": 1, "name": "Mango"},
                                    headers={"Content-Type": "application/json; charset=UTF-8"})
        self.assertEqual(status, 201)
        self.assertNotEqual(body["id"], 1)
        self.assertEqual(row(body["id"]), "Mango")

    def test_injection_is_stored_verbatim(self):
        evil = "'); DROP TABLE fruits; --"
        fid = self.create(evil)
        self.assertEqual(row(fid), evil)
        self.assertEqual(psql("SELECT to_regclass('fruits') IS NOT NULL"), "t")
        for name in ("$1", "a'b\"c;d", "\\x00 \\\\ %s %n"):
            self.assertEqual(row(self.create(name)), name)

    def test_update(self):
        fid = self.create("Lemon")
        status, _, body = self.send("PUT", "/fruits/%d" % fid, {"name": "Lime"})
        self.assertEqual((status, body), (200, {"id": fid, "name": "Lime"}))
        self.assertEqual(row(fid), "Lime")
        missing = int(psql("SELECT coalesce(max(id), 0) + 1000 FROM fruits"))
        status, _, body = self.send("PUT", "/fruits/%d" % missing, {"name": "Ghost"})
        self.assertEqual(status, 404)
        self.assertEqual(body["status"], 404)
        self.assertIsNone(row(missing))
        status, _, body = self.send("PUT", "/fruits/abc", {"name": "x"})
        self.assertEqual(status, 400)
        self.assertIn("'id'", body["error"])

    def test_delete(self):
        fid = self.create("Plum")
        status, headers, body = self.send("DELETE", "/fruits/%d" % fid, headers={})
        self.assertEqual((status, body), (204, b""))
        self.assertNotIn("content-length", headers)
        self.assertIsNone(row(fid))
        status, _, body = self.send("DELETE", "/fruits/%d" % fid, headers={})
        self.assertEqual(status, 404)
        self.assertEqual(body["status"], 404)
        self.assertEqual(self.send("DELETE", "/fruits/0", headers={})[0], 400)

    def test_validation(self):
        long_ok = "é" * 255
        self.assertEqual(row(self.create(long_ok)), long_ok)
        cases = [
            (b"not json", "not valid JSON"),
            (b"[1,2]", "must be a JSON object"),
            (b"{}", "'name' is missing"),
            (b'{"name": 5}', "'name' must be a string"),
            (b'{"name": ""}', "'name' must not be empty"),
            (json.dumps({"name": "x" * 256}).encode(), "longer than 255 characters"),
            (b'{"name": "Fig", "color": "purple"}', "unknown field 'color'"),
            (b'{"name": "\xff\xfe"}', "not valid UTF-8"),
            (b'{"name": "a\\u0000b"}', "not valid JSON"),
            (b"", "body is empty"),
        ]
        before = psql("SELECT count(*) FROM fruits")
        for method, path in (("POST", "/fruits"), ("PUT", "/fruits/1")):
            for data, why in cases:
                status, headers, body = self.send(method, path, data)
                self.assertEqual(status, 400, (method, data))
                self.assertEqual(headers["content-type"], "application/json")
                self.assertIn(why, body["error"], data)
        self.assertEqual(psql("SELECT count(*) FROM fruits"), before)

    def test_content_type(self):
        for headers in ({}, {"Content-Type": "text/plain"}, {"Content-Type": "application/xml"}):
            status, _, body = self.send("POST", "/fruits", b'{"name":"Pear"}', headers=headers)
            self.assertEqual(status, 415, headers)
            self.assertEqual(body["status"], 415)
        status, _, _ = self.send("PUT", "/fruits/1", b'{"name":"Pear"}', headers={"Content-Type": "text/plain"})
        self.assertEqual(status, 415)

    def test_body_too_large(self):
        status, _, _ = self.send("POST", "/fruits", json.dumps({"name": "x" * 5000}).encode())
        self.assertEqual(status, 413)
        # the server is still fine afterwards
        self.assertEqual(self.send("POST", "/fruits", {"name": "After"})[0], 201)

    def test_conflict_is_409_and_neighbours_succeed(self):
        psql("ALTER TABLE fruits ADD CONSTRAINT test_no_forbidden CHECK (name <> 'Forbidden')")
        try:
            status, _, body = self.send("POST", "/fruits", {"name": "Forbidden"})
            self.assertEqual(status, 409)
            self.assertIn("test_no_forbidden", body["error"])
            fid = self.create("Allowed")
            status, _, body = self.send("PUT", "/fruits/%d" % fid, {"name": "Forbidden"})
            self.assertEqual(status, 409)
            self.assertEqual(row(fid), "Allowed")
            self.mixed_pipeline()
        finally:
            psql("ALTER TABLE fruits DROP CONSTRAINT test_no_forbidden")

    def mixed_pipeline(self):
        """Concurrent GET/POST/DELETE; every fifth POST violates the CHECK. With one thread and one database
        connection they all share one pipeline: only the violating ones fail."""
        victims = [self.create("Victim %d" % i) for i in range(20)]
        results, lock = [], threading.Lock()

        def client(n):
            reqs = []
            for i in range(5):
                k = n * 5 + i
                if k % 3 == 0:
                    reqs.append(("GET", "/fruits/%d" % victims[0], None))
                elif k % 3 == 1:
                    name = "Forbidden" if k % 5 == 0 else "Mixed %d" % k
                    reqs.append(("POST", "/fruits", json.dumps({"name": name}).encode()))
                else:
                    reqs.append(("DELETE", "/fruits/%d" % victims[1 + (k % 19)], None))
            raw = b"".join(b"%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                           % (m.encode(), p.encode(), len(b or b""), b or b"") for m, p, b in reqs)
            with socket.create_connection(("127.0.0.1", self.preon.port), timeout=20) as s:
                s.sendall(raw)  # pipelined: they reach the database together
                f = s.makefile("rb")
                for m, p, b in reqs:
                    status, _, body = read_response(f)
                    with lock:
                        results.append((m, b, status, body))

        self.assertEqual(parallel(client, 12), [])
        self.assertEqual(len(results), 60)
        for method, body, status, resp in results:
            if method == "GET":
                self.assertEqual(status, 200, resp)
            elif method == "POST":
                forbidden = json.loads(body)["name"] == "Forbidden"
                self.assertEqual(status, 409 if forbidden else 201, resp)
                if not forbidden:
                    self.assertEqual(row(json.loads(resp)["id"]), json.loads(body)["name"])
            else:
                self.assertIn(status, (204, 404), resp)  # a victim deleted by an earlier request is 404
        deleted = [s for m, _, s, _ in results if m == "DELETE" and s == 204]
        self.assertTrue(deleted)

    def test_200_concurrent_posts(self):
        ids, lock = [], threading.Lock()
        tag = "Concurrent %s" % uuid.uuid4().hex[:8]

        def client(n):
            for i in range(10):
                status, _, body = self.send("POST", "/fruits", {"name": "%s %d-%d" % (tag, n, i)})
                with lock:
                    ids.append((status, body["id"], body["name"]))

        self.assertEqual(parallel(client, 20), [])
        self.assertEqual(len(ids), 200)
        self.assertTrue(all(s == 201 for s, _, _ in ids))
        self.assertEqual(len({i for _, i, _ in ids}), 200)
        self.assertEqual(psql("SELECT count(DISTINCT id) FROM fruits WHERE name LIKE '%s %%'" % tag), "200")
        for _, fid, name in ids[:20]:
            self.assertEqual(row(fid), name)


class CrudOneConnectionTest(CrudTest):
    """Everything on one thread and one database connection, so the writes share a pipeline."""
    preon_settings = {"server_max_body_bytes": 4096, "server_threads": 1, "database_connections_per_thread": 1}


class CrudBatchSyncTest(CrudTest):
    """Batch Syncs for reads; writes keep a Sync of their own."""
    preon_settings = {"server_max_body_bytes": 4096, "server_threads": 1, "database_sync": "batch"}


if __name__ == "__main__":
    main()
