# SPDX-License-Identifier: MIT
"""No tracked file speaks of the project's tracker: a reader of a clone has no tracker, so a file says what changed
and why, never which ticket or work session asked for it (a ticket's number, "the Nth pass of" a ticket, "this
session"; the patterns below, spelt so that this file does not match them).

Every file git tracks is read, except bench/published/: recorded runs are data (a results.json holds what its run
printed, and its report.md is what the renderer of the day wrote from it, checked byte for byte by
tests/bench/test_rerender.py). --self-test shows each pattern catching a made-up line and passing a PostgreSQL
session. Exit 0, or one line FILE:LINE: TEXT per mention and exit 1."""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXCLUDED = ("bench/published/",)
TICKET = "iss" + "ue"  # spelt in two so that this file does not name what it looks for
ORDINALS = "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|\\d+(st|nd|rd|th)"
PATTERNS = [
    re.compile(r"\b%ss? ?#?\d+" % TICKET, re.I),                 # the word, then a number (or #number)
    re.compile(r"\bpass(es)? of (an? |the |this )?%s" % TICKET, re.I),
    re.compile(r"\b(this|that|(the )?(%s)) session\b" % ORDINALS, re.I),  # a work session, not PostgreSQL's
]


def mentions(text):
    for n, line in enumerate(text.splitlines(), 1):
        if any(p.search(line) for p in PATTERNS):
            yield n, line.strip()


def self_test():
    caught = ["see %s 29" % TICKET, "%s #12's fix" % TICKET.capitalize(), "the twelfth pass of %s 29" % TICKET,
              "not looked into in th" + "is session", "the eleventh sess" + "ion's measure"]
    passed = ["a PostgreSQL session", "PgBouncer in session mode", "target_session_attrs", "a lock held by another session",
              "the issue's table", "issues that remain"]
    bad = [t for t in caught if not list(mentions(t))] + [t for t in passed if list(mentions(t))]
    for t in bad:
        print("self-test: wrong verdict on %r" % t)
    return 1 if bad else 0


def main():
    if self_test():
        return 1
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    found = 0
    for rel in filter(None, files.split("\0")):
        path = os.path.join(REPO, rel)
        if rel.startswith(EXCLUDED) or not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data:
            continue  # binary (charts)
        for n, line in mentions(data.decode("utf-8", "replace")):
            print("%s:%d: %s" % (rel, n, line[:160]))
            found += 1
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
