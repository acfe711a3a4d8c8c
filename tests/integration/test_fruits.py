# SPDX-License-Identifier: MIT
"""/fruits and /fruits/{id} read the real table through the pipelined pool, in both Sync modes."""
import json

from harness import PreonTestCase, main, psql


def table_as_json():
    """The whole table by id, as GET /fruits?limit=1000 answers it while it has fewer rows than that."""
    return json.loads(psql("SELECT coalesce(json_agg(json_build_object('id', id, 'name', name) ORDER BY id), '[]') FROM fruits"))


class FruitsTest(PreonTestCase):
    def test_list_is_the_table_after_an_insert(self):
        name = 'Test "fruit" \\ ñ 水果 \t'
        new_id = int(psql("INSERT INTO fruits(name) VALUES ($q$%s$q$) RETURNING id" % name))
        try:
            status, headers, body = self.preon.request("GET", "/fruits?limit=1000")
            self.assertEqual(status, 200)
            self.assertEqual(headers["content-type"], "application/json")
            self.assertEqual(int(headers["content-length"]), len(body))
            got = json.loads(body)
            self.assertEqual(got, table_as_json())
            self.assertIn({"id": new_id, "name": name}, got)
            self.assertEqual([f["id"] for f in got], sorted(f["id"] for f in got))
            # compact encoding, as the published services answer
            self.assertTrue(body.startswith(b'[{"id":'), body[:20])
        finally:
            psql("DELETE FROM fruits WHERE id = %d" % new_id)
        status, _, got = self.preon.json("GET", "/fruits?limit=1000")
        self.assertNotIn(new_id, [f["id"] for f in got])

    def test_seed_rows(self):
        status, _, got = self.preon.json("GET", "/fruits")
        self.assertEqual(status, 200)
        names = [f["name"] for f in got]
        for seed in ("Kiwi", "Durian", "Pomelo"):
            self.assertIn(seed, names)

    def test_one_found(self):
        row = psql("SELECT id || '|' || name FROM fruits ORDER BY id LIMIT 1").split("|", 1)
        status, headers, body = self.preon.request("GET", "/fruits/" + row[0])
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(json.loads(body), {"id": int(row[0]), "name": row[1]})

    def test_one_missing(self):
        missing = int(psql("SELECT coalesce(max(id), 0) + 1000 FROM fruits"))
        status, headers, got = self.preon.json("GET", "/fruits/%d" % missing)
        self.assertEqual(status, 404)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(got["status"], 404)
        self.assertIn("error", got)

    def test_one_malformed(self):
        for bad in ("0", "-1", "2147483648", "abc", "", "1abc", "%20", "1.5", "99999999999999999999"):
            status, headers, got = self.preon.json("GET", "/fruits/" + bad)
            self.assertEqual(status, 400, bad)
            self.assertEqual(got["status"], 400)
            self.assertIn("'id'", got["error"], bad)

    def test_head_fruits(self):
        status, headers, body = self.preon.request("HEAD", "/fruits")
        self.assertEqual(status, 200)
        self.assertEqual(body, b"")
        _, _, full = self.preon.request("GET", "/fruits")
        self.assertEqual(int(headers["content-length"]), len(full))


class FruitsBatchSyncTest(FruitsTest):
    """The same behaviour with one Sync per loop-pass batch (database.sync: batch)."""
    preon_settings = {"database_sync": "batch", "database_connections_per_thread": 2}


if __name__ == "__main__":
    main()
