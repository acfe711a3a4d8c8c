# SPDX-License-Identifier: MIT
"""The API's contract, machine-readable and checked: preon serves docs/openapi.json (OpenAPI 3.1) at GET /openapi,
byte for byte, and Schemathesis (pinned in tests/contract/requirements.txt, installed into a venv under
~/.cache/preon/) drives every documented operation from that served document with generated valid and invalid
inputs, against a private database: every answer must conform to the document (status, content type, headers,
schema), no 5xx while the database is up, schema-invalid input refused and schema-valid input accepted, undocumented
methods 405 with Allow.

Two runs: valid inputs with every check; invalid ones with every check but positive_data_acceptance (Schemathesis
4.32.5 also applies that one to some of the bodies it made invalid, such as {"name": "0", "id": {}}, and then reports
their 400 as "schema-valid request rejected"). Bounded: a fixed number of examples per operation, ~20 s each.
"""
import fcntl
import os
import re
import subprocess
import sys
import tempfile

from harness import REPO, PreonTestCase, main, private_db, psql, require_env

VENV = os.path.join(os.path.expanduser("~"), ".cache", "preon", "schemathesis-4.32.5")
REQUIREMENTS = os.path.join(REPO, "tests", "contract", "requirements.txt")
EXAMPLES = "40"


def schemathesis():
    """The venv's schemathesis, installed once (under a lock: both builds' tests may ask at once)."""
    exe = os.path.join(VENV, "bin", "schemathesis")
    os.makedirs(os.path.dirname(VENV), exist_ok=True)
    with open(VENV + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = os.path.join(VENV, "installed")
        want = open(REQUIREMENTS).read()
        if not os.path.exists(stamp) or open(stamp).read() != want:
            subprocess.run(["/usr/bin/python3", "-m", "venv", "--clear", VENV], check=True)
            subprocess.run([os.path.join(VENV, "bin", "pip"), "install", "-q", "--disable-pip-version-check",
                            "-r", REQUIREMENTS], check=True)
            with open(stamp, "w") as f:
                f.write(want)
    return exe


class ContractTest(PreonTestCase):
    @classmethod
    def setUpClass(cls):
        require_env()
        cls.st = schemathesis()
        super().setUpClass()

    @classmethod
    def db_url(cls):
        return private_db("preon_contract")

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            psql("DROP DATABASE IF EXISTS preon_contract WITH (FORCE)")

    def test_serves_the_document(self):
        status, headers, body = self.preon.request("GET", "/openapi")
        self.assertEqual(status, 200)
        self.assertEqual(headers["content-type"], "application/json")
        with open(os.path.join(REPO, "docs", "openapi.json"), "rb") as f:
            self.assertEqual(body, f.read())

    def run_schemathesis(self, mode, *extra):
        url = "http://127.0.0.1:%d" % self.preon.port
        with tempfile.TemporaryDirectory(prefix="preon-schemathesis-") as tmp:
            p = subprocess.run([self.st, "run", url + "/openapi", "--url", url, "--mode", mode, "--checks", "all",
                                *extra, "--max-examples", EXAMPLES, "--request-timeout", "30", "--no-color",
                                "--generation-database", "none", "--report-dir", tmp],
                               capture_output=True, text=True, cwd=tmp, timeout=600)
        sys.stderr.write(p.stdout[-3000:])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr + "\npreon's log:\n" + self.preon.output()[-5000:])
        tested = re.search(r"Tested: (\d+)", p.stdout)
        self.assertTrue(tested and int(tested.group(1)) >= 13, p.stdout)  # every operation (the document's own aside)

    def test_valid_inputs(self):
        self.run_schemathesis("positive")

    def test_invalid_inputs(self):
        self.run_schemathesis("negative", "--exclude-checks", "positive_data_acceptance")


if __name__ == "__main__":
    main()
