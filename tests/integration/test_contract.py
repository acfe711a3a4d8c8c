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

Schemathesis does not read text bodies: tests/contract/text_answers.py, a check of our own loaded into every run,
holds each text/* answer (Content-Type with its parameters, body, documented headers) to the document. It is seen to
bite: on documents with a planted change (/hello promising `Hi`, the fortunes page another header row, ...) it fails
both inside Schemathesis and on preon's real answers recorded here, every text response the document gives among
them (h2o's own 413 too), which pass against the document as it is.
"""
import base64
import copy
import fcntl
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile

from harness import REPO, PreonTestCase, main, private_db, psql, require_env

VENV = os.path.join(os.path.expanduser("~"), ".cache", "preon", "schemathesis-4.32.5")
REQUIREMENTS = os.path.join(REPO, "tests", "contract", "requirements.txt")
TEXT_CHECK = os.path.join(REPO, "tests", "contract", "text_answers.py")
HOOKS = os.path.join(REPO, "tests", "contract", "hooks.py")  # the text check and the path-parameter filter
DOCUMENT = os.path.join(REPO, "docs", "openapi.json")
EXAMPLES = "40"


def media(doc, path, method, status):
    """The content map of a response of `doc` (following a $ref to components)."""
    r = doc["paths"][path][method]["responses"][status]
    if "$ref" in r:
        r = doc["components"]["responses"][r["$ref"].rsplit("/", 1)[1]]
    return r["content"]


def hello_says_hi(doc):
    media(doc, "/hello", "get", "200")["text/plain;charset=UTF-8"]["schema"]["const"] = "Hi"


def plaintext_with_charset(doc):
    content = media(doc, "/plaintext", "get", "200")
    content["text/plain;charset=UTF-8"] = content.pop("text/plain")


def fortunes_other_header_row(doc):
    shape = media(doc, "/fortunes", "get", "200")["text/html; charset=utf-8"]["schema"]["allOf"][0]
    shape["pattern"] = shape["pattern"].replace("<th>message</th>", "<th>fortune</th>")


def too_large_without_charset(doc):
    content = media(doc, "/fruits", "post", "413")
    content["text/plain"] = content.pop("text/plain; charset=utf-8")


def server_of_another_name(doc):
    doc["components"]["headers"]["Server"]["schema"]["const"] = "h2o"


# Planted changes to the document, each a promise preon's answers do not keep: (what it does to the document, the
# answers the check must then fail on, and only those). too_large_without_charset is the document as it was before
# the check.
PLANTS = [(hello_says_hi, ["GET /hello 200"]), (plaintext_with_charset, ["GET /plaintext 200"]),
          (fortunes_other_header_row, ["GET /fortunes 200"]), (too_large_without_charset, ["POST /fruits 413"]),
          (server_of_another_name, ["GET /hello 200", "GET /plaintext 200", "GET /fortunes 200"])]


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

    def schemathesis_run(self, location, mode, *extra, examples=EXAMPLES):
        """Schemathesis from `location` (the served document or a file) against preon, every check and ours; returns
        (its process, the text answers our check judged: "METHOD PATH STATUS" lines)."""
        url = "http://127.0.0.1:%d" % self.preon.port
        with tempfile.TemporaryDirectory(prefix="preon-schemathesis-") as tmp:
            checked = os.path.join(tmp, "text-checked")
            env = dict(os.environ, SCHEMATHESIS_HOOKS=HOOKS, PREON_TEXT_CHECKED=checked)
            # a failing run prints its seed; PREON_SCHEMATHESIS_SEED=N runs that one again
            seed = ["--seed", os.environ["PREON_SCHEMATHESIS_SEED"]] if os.environ.get("PREON_SCHEMATHESIS_SEED") else []
            p = subprocess.run([self.st, "run", location, "--url", url, "--mode", mode, "--checks", "all", *seed,
                                *extra, "--max-examples", examples, "--request-timeout", "30", "--no-color",
                                "--generation-database", "none", "--report-dir", tmp],
                               capture_output=True, text=True, cwd=tmp, timeout=600, env=env)
            seen = set()
            if os.path.exists(checked):
                with open(checked) as f:
                    seen = set(f.read().splitlines())
        return p, seen

    def run_schemathesis(self, mode, *extra):
        url = "http://127.0.0.1:%d" % self.preon.port
        p, seen = self.schemathesis_run(url + "/openapi", mode, *extra)
        sys.stderr.write(p.stdout[-3000:])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr + "\npreon's log:\n" + self.preon.output()[-5000:])
        tested = re.search(r"Tested: (\d+)", p.stdout)
        self.assertTrue(tested and int(tested.group(1)) >= 13, p.stdout)  # every operation (the document's own aside)
        return seen

    def test_valid_inputs(self):
        seen = self.run_schemathesis("positive")
        # our check read the text answers of this run (Schemathesis alone never does)
        self.assertLessEqual({"GET /hello 200", "GET /plaintext 200", "GET /fortunes 200"}, seen)

    def test_whole_float_ids_are_not_sent(self):
        # preon answers 400 to /fruits/2.0, as its document says; the hooks drop such draws (hooks.py says why)
        status, _, body = self.preon.request("GET", "/fruits/2.0")
        self.assertEqual((status, json.loads(body)["error"]), (400, "parameter 'id' must be a positive integer"))
        probe = ("import sys; sys.path.insert(0, %r); import hooks; "
                 "print([hooks.decimal_integers(p) for p in ({'id': 2.0}, {'id': 2}, {'id': 2.5}, {}, None)])"
                 % os.path.dirname(HOOKS))
        p = subprocess.run([os.path.join(VENV, "bin", "python"), "-c", probe], capture_output=True, text=True)
        self.assertEqual(p.stdout.strip(), "[False, True, True, True, True]", p.stderr)

    def test_invalid_inputs(self):
        self.run_schemathesis("negative", "--exclude-checks", "positive_data_acceptance")

    def text_answers(self):
        """preon's answers for every text response the document gives, recorded for the check's command line."""
        big = json.dumps({"name": "x" * 70000})  # over server.max_body_bytes (64 KiB): h2o's own 413
        out = []
        for method, path, body in (("GET", "/hello", None), ("GET", "/plaintext", None), ("GET", "/fortunes", None),
                                   ("POST", "/fruits", big)):
            conn = http.client.HTTPConnection("127.0.0.1", self.preon.port, timeout=10)
            try:
                conn.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
                r = conn.getresponse()
                headers = {}
                for k, v in r.getheaders():
                    headers.setdefault(k.lower(), []).append(v)
                out.append({"method": method, "path": path, "status": r.status, "headers": headers,
                            "body_base64": base64.b64encode(r.read()).decode()})
            finally:
                conn.close()
        self.assertEqual([a["status"] for a in out], [200, 200, 200, 413])
        return out

    def check_answers(self, doc, answers):
        with tempfile.TemporaryDirectory(prefix="preon-text-") as tmp:
            paths = [os.path.join(tmp, n) for n in ("doc.json", "answers.json")]
            for path, data in zip(paths, (doc, answers)):
                with open(path, "w") as f:
                    json.dump(data, f)
            p = subprocess.run([os.path.join(VENV, "bin", "python"), TEXT_CHECK, *paths], capture_output=True,
                               text=True, timeout=60)
        self.assertIn(p.returncode, (0, 1), p.stdout + p.stderr)
        return p.returncode, p.stdout

    def test_text_answers_against_the_document(self):
        """Every text response the document gives, preon's real answer held to it by our check: all pass."""
        with open(DOCUMENT) as f:
            doc = json.load(f)
        rc, out = self.check_answers(doc, self.text_answers())
        self.assertEqual(rc, 0, out)
        self.assertEqual(out.count("ok: "), 4, out)

    def test_text_check_bites(self):
        """Each planted change makes the check fail on the answer it concerns, and only there."""
        with open(DOCUMENT) as f:
            doc = json.load(f)
        answers = self.text_answers()
        for plant, wrong in PLANTS:
            with self.subTest(plant=plant.__name__):
                planted = copy.deepcopy(doc)
                plant(planted)
                self.assertNotEqual(planted, doc)
                rc, out = self.check_answers(planted, answers)
                self.assertEqual(rc, 1, out)
                failed = re.findall(r"(?m)^FAILED: (\S+ \S+ \d+): ", out)
                self.assertEqual(failed, wrong, out)

    def test_text_check_bites_inside_schemathesis(self):
        """Schemathesis from a document promising `Hi` for /hello (or another fortunes page) fails on our check
        alone; from the document as it is, the same run passes."""
        with open(DOCUMENT) as f:
            doc = json.load(f)
        for plant, (answer,) in [(None, ["GET /hello 200"]), PLANTS[0], PLANTS[2]]:
            with self.subTest(plant=plant and plant.__name__), tempfile.NamedTemporaryFile("w", suffix=".json") as f:
                planted = copy.deepcopy(doc)
                if plant:
                    plant(planted)
                json.dump(planted, f)
                f.flush()
                p, seen = self.schemathesis_run(f.name, "positive", "--include-path", answer.split()[1],
                                                examples="5")
                self.assertIn(answer, seen, p.stdout)
                if plant is None:
                    self.assertEqual(p.returncode, 0, p.stdout)
                else:
                    self.assertNotEqual(p.returncode, 0, p.stdout)
                    self.assertIn("Custom check failed: `text_answer_conformance`", p.stdout)
                    self.assertEqual(re.findall(r"(?m)^  ❌ (ST\d+ .*)$", p.stdout),
                                     ["ST901 Custom check failed: `text_answer_conformance`: 1"], p.stdout)


if __name__ == "__main__":
    main()
