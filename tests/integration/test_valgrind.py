# SPDX-License-Identifier: MIT
"""The release binary under valgrind memcheck: every kind of request, a database error, then SIGTERM. Zero
memcheck errors and zero definite leaks, including after the shutdown."""
import json
import os
import re
import shutil
import unittest

from harness import REPO, Preon, main, psql, require_env

VALGRIND = ["valgrind", "--error-exitcode=99", "--leak-check=full", "--errors-for-leak-kinds=definite",
            "--show-leak-kinds=definite", "--suppressions=" + os.path.join(REPO, "tests", "valgrind.supp")]


class ValgrindTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_env()
        if shutil.which("valgrind") is None:
            raise AssertionError("valgrind is not installed (scripts/deps.sh test installs it)")

    def test_memcheck_clean(self):
        with Preon(wrapper=VALGRIND, server_threads=2, log_access="true", log_format="json").start() as p:
            for path in ("/hello", "/fruits", "/fruits/1", "/fruits/999999", "/fruits/abc", "/nope", "/json",
                         "/plaintext", "/db", "/queries?queries=5", "/updates?queries=3", "/fortunes",
                         "/cached-queries?count=4", "/health/live", "/health/ready", "/metrics"):
                self.assertLess(p.request("GET", path, timeout=30)[0], 500, path)
            status, _, body = p.request("POST", "/fruits", body=json.dumps({"name": "Valgrind"}).encode(),
                                        headers={"Content-Type": "application/json"}, timeout=30)
            self.assertEqual(status, 201)
            fid = json.loads(body)["id"]
            self.assertEqual(p.request("PUT", "/fruits/%d" % fid, body=b'{"name":"V2"}',
                                       headers={"Content-Type": "application/json"}, timeout=30)[0], 200)
            self.assertEqual(p.request("DELETE", "/fruits/%d" % fid, timeout=30)[0], 204)
            self.assertEqual(p.request("POST", "/fruits", body=b"[", headers={"Content-Type": "application/json"},
                                       timeout=30)[0], 400)
            # a database error on the write path (409), with its result and error strings freed
            psql("ALTER TABLE fruits ADD CONSTRAINT valgrind_no_x CHECK (name <> 'X')")
            try:
                self.assertEqual(p.request("POST", "/fruits", body=b'{"name":"X"}',
                                           headers={"Content-Type": "application/json"}, timeout=30)[0], 409)
            finally:
                psql("ALTER TABLE fruits DROP CONSTRAINT valgrind_no_x")
            rc = p.stop(timeout=120)
            out = p.output()
            self.assertEqual(rc, 0, out[-3000:])
            summary = re.search(r"ERROR SUMMARY: (\d+) errors", out)
            self.assertIsNotNone(summary, out[-3000:])
            self.assertEqual(summary.group(1), "0", out[-5000:])
            self.assertNotRegex(out, r"definitely lost: [1-9]")


if __name__ == "__main__":
    main()
