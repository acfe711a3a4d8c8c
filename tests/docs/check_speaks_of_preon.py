# SPDX-License-Identifier: MIT
"""The tree speaks of preon alone: a reader of a clone has neither the ticket system the work was planned in nor the
people and tools it was done by, so a file says what changed and why — never which ticket asked for it (its number,
"the Nth pass of" one), which working period did it (the word for one, with "this" or "other" before it), or who
did (the assistants and agents of the work). The patterns below are spelt so that this file does not match them.

Every file git tracks is read, except bench/published/: recorded runs are data (a results.json holds what its run
printed, and its report.md is what the renderer of the day wrote from it, checked byte for byte by
tests/bench/test_rerender.py). --self-test shows each pattern catching a made-up line and passing the technical uses
of the same words (a PostgreSQL session, PgBouncer's session mode, the C helpers of a native-image toolchain). Exit 0,
or one line FILE:LINE: TEXT per mention and exit 1."""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXCLUDED = ("bench/published/",)
TICKET = "iss" + "ue"  # spelt in two so that this file does not name what it looks for
SESSION = "sess" + "ion"
AGENT = "sub" + "agent"
HELPER = "hel" + "per"
TRACKER = "track" + "er"
ORDINALS = "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|\\d+(st|nd|rd|th)"
PATTERNS = [
    re.compile(r"\b%ss? ?#?\d+" % TICKET, re.I),                 # the word, then a number (or #number)
    re.compile(r"\bpass(es)? of (an? |the |this )?%s" % TICKET, re.I),
    re.compile(r"\b(this|that|(the )?(%s)) %s\b" % (ORDINALS, SESSION), re.I),  # a working period, not PostgreSQL's
    re.compile(r"\b(other|work|working|earlier|later|previous|next|helper) %ss?\b" % SESSION, re.I),
    re.compile(r"\b%ss'" % SESSION, re.I),                       # the plural's possessive: "… builds"
    re.compile(r"\b%ss?\b" % AGENT, re.I),
    re.compile(r"\b%ss? (did|wrote|built|ran|made|measured|found|report)" % HELPER, re.I),
    re.compile(r"\b(the|a|our|its|project's) %s\b" % TRACKER, re.I),
    re.compile(r"\b(other|another) engineer", re.I),          # who else worked on the machine
]


def mentions(text):
    for n, line in enumerate(text.splitlines(), 1):
        if any(p.search(line) for p in PATTERNS):
            yield n, line.strip()


def self_test():
    caught = ["see %s 29" % TICKET, "%s #12's fix" % TICKET.capitalize(), "the twelfth pass of %s 29" % TICKET,
              "not looked into in th" + "is " + SESSION, "the eleventh " + SESSION + "'s measure",
              "while other %ss built" % SESSION, "three other %ss, load 10" % SESSION, "a work %s" % SESSION,
              "other %ss' builds and benchmarks" % SESSION, "a %s wrote it" % AGENT, "the %s measured" % HELPER,
              "named in the %s" % TRACKER, "while an" + "other engin" + "eer's suite ran"]
    passed = ["a PostgreSQL " + SESSION, "PgBouncer in " + SESSION + " mode", "target_" + SESSION + "_attrs",
              "a lock held by another " + SESSION, "the %s's table" % TICKET, "%ss that remain" % TICKET,
              "preon's front end and C %ss" % HELPER, "the builder's own JNI %s" % HELPER,
              "its active processor count %s" % HELPER]
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
