# SPDX-License-Identifier: MIT
"""SQL injection: every value that reaches a statement is a bound parameter. Quotes, semicolons, comments and
`$1` in every parameter (path id, query parameters, JSON body fields, ignored ones too) either get a clear 4xx,
are parsed as the number the endpoint defines, or are stored verbatim; the database is otherwise unchanged."""
import json
import urllib.parse

from harness import PreonTestCase, main, psql

EVIL = [
    "'", "''", '"', "';--", "1; DROP TABLE fruits", "1' OR '1'='1", "1 OR 1=1", "$1", "$1::text", "$2",
    "1); DELETE FROM fruits; --", "\\", "1/*", "*/", "1 UNION SELECT id, name FROM fruits", "%s%n%x",
    "'); TRUNCATE world; --", "1;COMMIT;DROP TABLE fortune", "\\x27", "E'\\\\'", "😀'",
]
JSON = {"Content-Type": "application/json"}


def snapshot():
    """Everything a successful injection could change: the relations, the roles, and every table's rows (for
    world only its ids: /updates legitimately rewrites randomNumber)."""
    tables = psql("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1").split()
    snap = {"relations": psql("SELECT string_agg(relname || ':' || relkind::text, ',' ORDER BY relname) FROM pg_class "
                              "WHERE relnamespace = 'public'::regnamespace"),
            "roles": psql("SELECT string_agg(rolname || rolsuper::text, ',' ORDER BY rolname) FROM pg_roles")}
    for t in tables:
        cols = "t.id" if t == "world" else "t"
        snap[t] = psql('SELECT count(*) || md5(coalesce(string_agg((%s)::text, \'|\' ORDER BY (%s)::text), \'\')) '
                       'FROM "%s" t' % (cols, cols, t))
    return snap


class InjectionTest(PreonTestCase):
    def get(self, path):
        status, headers, body = self.preon.request("GET", path)
        return status, json.loads(body) if headers.get("content-type") == "application/json" else body

    def test_every_parameter(self):
        before = snapshot()
        self.assertIn("fruits", before)
        fid = int(psql("SELECT min(id) FROM fruits"))
        for evil in EVIL:
            q = urllib.parse.quote(evil, safe="")
            # the path id: not a number, so 400 before any query (404 where a decoded "/" leaves no route)
            for method in ("GET", "PUT", "DELETE"):
                status, _, body = self.preon.request(method, "/fruits/" + q, body=b'{"name":"x"}' if method == "PUT"
                                                     else None, headers=JSON)
                self.assertIn(status, (400, 404) if "/" in evil else (400,), (method, evil, body))
                self.assertEqual(json.loads(body)["status"], status)
            # TechEmpower's count parameters: anything not a number means 1
            for path, key in (("/queries", "queries"), ("/updates", "queries"), ("/cached-queries", "count")):
                status, body = self.get("%s?%s=%s" % (path, key, q))
                self.assertEqual(status, 200, (path, evil))
                self.assertEqual(len(body), 1, (path, evil, body))
            # parameters no endpoint takes: ignored
            for path in ("/fruits", "/fruits/%d" % fid, "/db", "/fortunes", "/hello"):
                status, _ = self.get("%s?id=%s&name=%s&%s=1" % (path, q, q, q))
                self.assertEqual(status, 200, (path, evil))
            # the JSON body: stored verbatim, read back verbatim, and a stray "id" is not used (an integer, as the
            # quickstart's clients send it; an id of another type is refused, whatever it holds)
            status, _, body = self.preon.request("POST", "/fruits", json.dumps({"name": evil, "id": evil}).encode(),
                                                 headers=JSON)
            self.assertEqual((status, json.loads(body)["error"]), (400, "field 'id' must be an integer (it is ignored)"))
            status, headers, body = self.preon.request("POST", "/fruits", json.dumps({"name": evil, "id": 1}).encode(),
                                                       headers=JSON)
            self.assertEqual(status, 201, (evil, body))
            new = json.loads(body)["id"]
            self.assertNotEqual(new, 1)
            self.assertEqual(psql("SELECT name FROM fruits WHERE id = %d" % new), evil)
            self.assertEqual(self.get("/fruits/%d" % new), (200, {"id": new, "name": evil}))
            status, _, body = self.preon.request("PUT", "/fruits/%d" % new, json.dumps({"name": evil + evil}).encode(),
                                                 headers=JSON)
            self.assertEqual((status, json.loads(body)), (200, {"id": new, "name": evil + evil}))
            self.assertEqual(psql("SELECT name FROM fruits WHERE id = %d" % new), evil + evil)
            self.assertEqual(self.preon.request("DELETE", "/fruits/%d" % new)[0], 204)
        self.assertEqual(snapshot(), before)


if __name__ == "__main__":
    main()
