# SPDX-License-Identifier: MIT
"""GET /fruits' paging (docs/api.md, "Paging"): limit and after, their 400s, the Link header of a full page, keyset
order across pages of a few thousand rows (in a database of its own), and the 3-row answer exactly as before."""
import json
import re

from harness import Preon, PreonTestCase, db_psql, main, private_db, require_env

DB = "preon_paging"
ROWS = 3000
LIMIT_ERR = b'{"error":"limit: must be an integer from 1 to 1000","status":400}'
AFTER_ERR = b'{"error":"after: must be an integer from 0 to 2147483647","status":400}'
NEXT = re.compile(r'^</fruits\?after=(\d+)&limit=(\d+)>; rel="next"$')


class SeedTableTest(PreonTestCase):
    """The shared database's 3-row table: GET /fruits answers byte for byte as before paging existed."""

    def test_three_rows_unchanged(self):
        status, headers, body = self.preon.request("GET", "/fruits")
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "application/json")
        self.assertEqual(body, b'[{"id":1,"name":"Kiwi"},{"id":2,"name":"Durian"},{"id":3,"name":"Pomelo"}]')
        self.assertNotIn("link", headers)

    def test_limit_equal_to_rows_links_to_an_empty_page(self):
        status, headers, body = self.preon.request("GET", "/fruits?limit=3")
        self.assertEqual(len(json.loads(body)), 3)
        self.assertEqual(headers["link"], '</fruits?after=3&limit=3>; rel="next"')
        status, headers, body = self.preon.request("GET", "/fruits?after=3&limit=3")
        self.assertEqual((status, body), (200, b"[]"))
        self.assertNotIn("link", headers)


class PagingTest(PreonTestCase):
    """A database of its own (the other tests keep their 3-row table) with ROWS rows, ids not contiguous."""

    @classmethod
    def db_url(cls):
        require_env()
        url = private_db(DB)
        # gaps in the ids (every 7th row deleted) and names that need escaping
        db_psql(DB, "INSERT INTO fruits (name) SELECT 'fruit \"' || g || E'\\\\ \\t é' FROM generate_series(1, %d) g;"
                    "DELETE FROM fruits WHERE id %% 7 = 0" % (ROWS + ROWS // 6))
        return url

    def table(self):
        return json.loads(db_psql(DB, "SELECT json_agg(json_build_object('id', id, 'name', name) ORDER BY id) FROM fruits"))

    def get(self, query):
        return self.preon.request("GET", "/fruits" + query)

    def test_bounds(self):
        table = self.table()
        for limit in (1, 1000):
            status, headers, body = self.get("?limit=%d" % limit)
            self.assertEqual(status, 200)
            self.assertEqual(json.loads(body), table[:limit])
            self.assertEqual(headers["link"], '</fruits?after=%d&limit=%d>; rel="next"' % (table[limit - 1]["id"], limit))
        status, headers, body = self.get("")
        self.assertEqual(json.loads(body), table[:100])  # the default page size
        self.assertEqual(headers["link"], '</fruits?after=%d&limit=100>; rel="next"' % table[99]["id"])
        for limit in (0, 1001):
            self.assertEqual(self.get("?limit=%d" % limit)[::2], (400, LIMIT_ERR))
        status, _, body = self.get("?after=2147483647")
        self.assertEqual((status, body), (200, b"[]"))

    def test_bad_values(self):
        for q in ("?limit=abc", "?limit=", "?limit", "?limit=-1", "?limit=99999999999999999999", "?limit=1.5",
                  "?limit=%2010", "?after=5&limit=x", "?limit=+1"):
            status, headers, body = self.get(q)
            self.assertEqual((status, body), (400, LIMIT_ERR), q)
            self.assertEqual(headers["content-type"], "application/json")
        for q in ("?after=abc", "?after=", "?after=-1", "?after=2147483648", "?after=99999999999999999999",
                  "?limit=5&after=1e3"):
            self.assertEqual(self.get(q)[::2], (400, AFTER_ERR), q)

    def test_other_parameters_are_ignored(self):
        self.assertEqual(self.get("?page=2&limit=4&sort=name")[2], self.get("?limit=4")[2])

    def test_keyset_walk_covers_the_table_in_order(self):
        table = self.table()
        self.assertGreater(len(table), 2500)
        walked, path, pages = [], "/fruits?limit=250", 0
        while True:
            status, headers, body = self.preon.request("GET", path)
            self.assertEqual(status, 200)
            page = json.loads(body)
            walked += page
            pages += 1
            if "link" not in headers:
                self.assertLess(len(page), 250)
                break
            m = NEXT.match(headers["link"])
            self.assertIsNotNone(m, headers["link"])
            self.assertEqual((int(m.group(1)), int(m.group(2))), (page[-1]["id"], 250))
            path = headers["link"][1:headers["link"].index(">")]
        self.assertEqual(walked, table)
        self.assertEqual(pages, len(table) // 250 + 1)

    def test_rows_deleted_behind_the_cursor_do_not_shift_pages(self):
        first = json.loads(self.get("?limit=50")[2])
        second_before = json.loads(self.get("?after=%d&limit=50" % first[-1]["id"])[2])
        db_psql(DB, "DELETE FROM fruits WHERE id = %d" % first[0]["id"])
        second_after = json.loads(self.get("?after=%d&limit=50" % first[-1]["id"])[2])
        self.assertEqual(second_before, second_after)

    def test_row_bytes_are_preons_encoding(self):
        # the page's JSON bytes are preon's row encoding: compact, '"' and '\\' and control characters escaped
        body = self.get("?after=3&limit=1")[2]  # past the 3 seed rows
        self.assertRegex(body, rb'^\[\{"id":\d+,"name":"fruit \\"\d+\\\\ \\t \xc3\xa9"\}\]$')


class PagingBatchSyncTest(SeedTableTest):
    """The 3-row answer once more with one Sync per loop-pass batch."""
    preon_settings = {"database_sync": "batch", "database_connections_per_thread": 2}


if __name__ == "__main__":
    main()
