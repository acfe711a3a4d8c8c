# SPDX-License-Identifier: MIT
"""A Schemathesis check of preon's own: every text answer held to the document.

Schemathesis 4.32.5 validates JSON bodies against their schemas but never reads a text/* body: with the document
changed so that GET /hello must answer `Hi`, it still passed against preon's `Hello`. This check, loaded through
SCHEMATHESIS_HOOKS (tests/integration/test_contract.py sets it for every run), takes each answer whose Content-Type is
text/*, finds the response the document gives for its status (the code, its NXX range, or default) and holds it to it:

- the Content-Type is one of that response's media types, parameters included (`text/plain;charset=UTF-8` is not
  `text/plain`; names and the charset compare without case, as RFC 9110 says);
- the body, decoded in its charset (UTF-8 when none is named), conforms to that media type's schema (OpenAPI 3.1:
  JSON Schema 2020-12, with the document's own $refs): a `const` is an exact value, a `pattern` a shape; an
  `example` given beside a schema must conform to it too, so that the document cannot show what it does not promise;
- every header the response documents is there when required, and conforms to its schema when present.

It reads the document Schemathesis runs from (served at /openapi, or a file with a planted change), so that the
promise checked is the one under test.
"""
import base64
import json
import os
import re
import sys

import jsonschema_rs
import schemathesis

TOKEN = re.compile(r"\s*([^;=\s]+)\s*=\s*(\"(?:[^\"\\]|\\.)*\"|[^;\s]*)\s*")


def resolve(doc, node):
    """`node` with its local $ref followed (repeatedly): the document's own components only."""
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise AssertionError("the check follows only local references, not %r" % ref)
        node = doc
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def media_type(value):
    """(type/subtype, {parameter: value}) with the type, the parameter names and the charset in lower case."""
    main, _, rest = value.partition(";")
    params = {}
    for part in rest.split(";") if rest.strip() else []:
        m = TOKEN.fullmatch(part)
        if m is None:
            raise AssertionError("malformed media type parameter %r in %r" % (part, value))
        name, v = m.group(1).lower(), m.group(2)
        if v.startswith('"'):
            v = re.sub(r"\\(.)", r"\1", v[1:-1])
        params[name] = v.lower() if name == "charset" else v
    return main.strip().lower(), params


def documented(doc, operation, status):
    """The response object the document gives `operation` for `status`, or None (not documented)."""
    responses = {str(k).upper(): v for k, v in (operation.get("responses") or {}).items()}
    for key in (str(status), "%dXX" % (status // 100), "DEFAULT"):
        if key in responses:
            return resolve(doc, responses[key])
    return None


def conforms(doc, schema, instance):
    """The errors of `instance` against `schema`, whose $refs point into `doc` (JSON Schema 2020-12)."""
    root = {"allOf": [schema], "components": doc.get("components", {})}
    return [e.message for e in jsonschema_rs.Draft202012Validator(root).iter_errors(instance)]


def check_text_answer(doc, operation, status, headers, content):
    """Raises AssertionError saying how a text answer (`headers`: lower-case names, lists of values; `content`:
    bytes) breaks what the document promises `operation` for `status`. Returns whether the answer was a text one
    the document gives (False: not text, or an undocumented status, which Schemathesis's status_code_conformance
    judges)."""
    ctype = (headers.get("content-type") or [None])[0]
    if ctype is None or not media_type(ctype)[0].startswith("text/"):
        return False
    spec = documented(doc, operation, status)
    if spec is None:
        return False
    where = "the %d answer" % status
    content_types = spec.get("content") or {}
    actual = media_type(ctype)
    matches = [k for k in content_types if media_type(k) == actual]
    if not matches:
        raise AssertionError("%s is %r, which the document does not give (it gives %s)" %
                             (where, ctype, ", ".join(repr(k) for k in content_types) or "no body"))
    media = resolve(doc, content_types[matches[0]])
    charset = actual[1].get("charset", "utf-8")
    try:
        body = content.decode(charset)
    except (LookupError, UnicodeDecodeError) as e:
        raise AssertionError("%s is not text in its charset %r: %s" % (where, charset, e)) from None
    schema = media.get("schema")
    if schema is not None:
        errors = conforms(doc, schema, body)
        if errors:
            raise AssertionError("%s's body does not conform to the document's schema for %r: %s\nbody: %r" %
                                 (where, matches[0], errors[0], body[:500]))
        if "example" in media and conforms(doc, schema, media["example"]):
            raise AssertionError("the document's example for %r does not conform to its own schema" % matches[0])
    for name, header in (spec.get("headers") or {}).items():
        header = resolve(doc, header)
        values = headers.get(name.lower())
        if not values:
            if header.get("required"):
                raise AssertionError("%s lacks the header %s, which the document requires" % (where, name))
            continue
        if "schema" in header:
            errors = conforms(doc, header["schema"], values[0])
            if errors:
                raise AssertionError("%s's header %s: %r does not conform to the document: %s" %
                                     (where, name, values[0], errors[0]))
    return True


@schemathesis.check
def text_answer_conformance(ctx, response, case):
    """Each text/* answer's Content-Type, body and documented headers, held to the document."""
    doc = case.operation.schema.raw_schema
    operation = resolve(doc, case.operation.definition.raw)
    ctype = (response.headers.get("content-type") or [""])[0]
    if os.environ.get("PREON_TEXT_CHECKED") and media_type(ctype)[0].startswith("text/"):
        with open(os.environ["PREON_TEXT_CHECKED"], "a") as f:  # the test's proof that the check saw its answers
            f.write("%s %s %d\n" % (case.operation.method.upper(), case.operation.path, response.status_code))
    check_text_answer(doc, operation, response.status_code, response.headers, response.content)
    return True


def main():
    """python text_answers.py DOCUMENT ANSWERS: checks recorded answers (a JSON list of {"method", "path", "status",
    "headers": {name: [values]}, "body_base64"}) against DOCUMENT; prints a verdict per answer, exits 1 if any
    fails."""
    doc = json.load(open(sys.argv[1]))
    failed = 0
    for a in json.load(open(sys.argv[2])):
        operation = resolve(doc, resolve(doc, doc["paths"][a["path"]])[a["method"].lower()])
        headers = {k.lower(): v for k, v in a["headers"].items()}
        try:
            check_text_answer(doc, operation, a["status"], headers, base64.b64decode(a["body_base64"]))
            print("ok: %s %s %d" % (a["method"], a["path"], a["status"]))
        except AssertionError as e:
            failed += 1
            print("FAILED: %s %s %d: %s" % (a["method"], a["path"], a["status"], e))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
