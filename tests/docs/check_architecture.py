# SPDX-License-Identifier: MIT
"""Every file, function, type, field, configuration key and test docs/architecture.md names in backticks exists.

A page that explains the code by naming it goes stale when a name changes and nothing fails. This reads each
backticked span and checks what it can classify:
  - a path (has a '/', or ends in .c .h .py .sh .md .yaml .sql): the file or folder exists; a bare file name
    (`conn.c`) exists somewhere in the tree;
  - preon's identifiers (`preon_*`, `PREON_*`, with or without `()`): defined or declared in src/, include/ or tests/;
  - `type.field` (type ending in _t): the struct has that member;
  - `section.key` of a configuration section: a row of src/config/config.c's table (or one of its renamed keys);
  - `kind.name` of a ctest: the test exists in tests/CMakeLists.txt.
Spans it cannot classify (`query`, `send()`, code fragments) are left alone. --self-test feeds it made-up names.
Exit 0 when every name resolves; else one line per missing name, exit 1.
"""
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG_SECTIONS = ("server", "database", "log", "health", "metrics", "modules")
CTEST_KINDS = ("unit", "integration", "layers", "format", "bench", "valgrind", "db", "fuzz", "build", "fixtures",
               "image", "peers", "docs")
FILE_ENDINGS = (".c", ".h", ".py", ".sh", ".md", ".yaml", ".sql", ".txt", ".mustache")


class Tree:
    def __init__(self, root):
        self.root = root
        files = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True).stdout.split()
        self.files = [f for f in files if os.path.exists(os.path.join(root, f))]
        self.basenames = {os.path.basename(f) for f in self.files}
        self.code = "\n".join(self.read(f) for f in self.files
                              if (f.startswith(("src/", "include/", "tests/")) and f.endswith((".c", ".h")))
                              or os.path.basename(f) == "CMakeLists.txt")  # targets (preon_db) are names too
        self.config = self.read("src/config/config.c")
        self.ctests = self.read("tests/CMakeLists.txt")

    def read(self, rel):
        try:
            with open(os.path.join(self.root, rel), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def path_exists(self, p):
        if os.path.exists(os.path.join(self.root, p)):
            return True
        return "/" not in p and p in self.basenames

    def identifier_exists(self, name):
        return re.search(r"\b%s\b" % re.escape(name), self.code) is not None

    def field_exists(self, typ, field):
        # the body of the struct whose definition ends "} typ;", found by matching its braces backwards
        for m in re.finditer(r"\}\s*%s\s*;" % re.escape(typ), self.code):
            depth, i = 0, m.start()
            while i >= 0:
                depth += {"}": 1, "{": -1}.get(self.code[i], 0)
                if depth == 0:
                    break
                i -= 1
            body = self.code[i:m.start()]
            if re.search(r"[\s*]%s\s*(\[[^\]]*\])?\s*;" % re.escape(field), body) or \
                    re.search(r"\(\s*\*\s*%s\s*\)" % re.escape(field), body):
                return True
        return False

    def config_key_exists(self, section, key):
        return ('{"%s", "%s",' % (section, key)) in self.config or ('{"%s", "%s", "' % (section, key)) in self.config

    def ctest_exists(self, kind, name):
        if kind in ("integration", "valgrind"):
            return os.path.exists(os.path.join(self.root, "tests", "integration", "test_%s.py" % name))
        if kind == "unit":
            return os.path.exists(os.path.join(self.root, "tests", "unit", "test_%s.c" % name))
        return ("NAME %s.%s" % (kind, name)) in self.ctests


def check_span(tree, span):
    """None when `span` resolves or is not a name this check classifies; else why it does not."""
    s = span.strip()
    if not s or " " in s or any(c in s for c in "{}=<>…,'\""):
        return None
    bare = s[:-2] if s.endswith("()") else s
    if re.fullmatch(r"(preon|PREON)_\w+", bare):
        return None if tree.identifier_exists(bare) else "no such identifier: %s" % bare
    m = re.fullmatch(r"(\w+_t)\.(\w+)", s)
    if m:
        if not tree.identifier_exists(m.group(1)):
            return "no such type: %s" % m.group(1)
        return None if tree.field_exists(*m.groups()) else "no field %s in %s" % (m.group(2), m.group(1))
    m = re.fullmatch(r"([a-z]+)\.([a-z0-9_]+)", s)
    if m and m.group(1) in CONFIG_SECTIONS and not s.endswith(FILE_ENDINGS):
        return None if tree.config_key_exists(*m.groups()) else "no configuration key %s" % s
    if m and m.group(1) in CTEST_KINDS and not s.endswith(FILE_ENDINGS):
        return None if tree.ctest_exists(*m.groups()) else "no ctest %s" % s
    if "/" in s or s.endswith(FILE_ENDINGS):
        if s.startswith("/") or "*" in s or "…" in s:
            return None  # an endpoint or a pattern, not a file
        return None if tree.path_exists(s) else "no such file: %s" % s
    return None


def spans(text):
    """The inline code spans, outside the fenced blocks."""
    return re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))


def check_diagrams(tree, text):
    """In the fenced blocks (the request paths): preon's identifiers, the paths, and each line's "FILE  NAME" pair,
    the name (a function or variable) standing in that file."""
    missing = []
    for block in re.findall(r"```(.*?)```", text, flags=re.S):
        for name in re.findall(r"\b(?:preon|PREON)_\w+", block):
            why = check_span(tree, name)
            if why:
                missing.append(why)
        for path in re.findall(r"\b(?:src|include|tests|bench|scripts)/[\w./-]*\w", block):
            if not tree.path_exists(path):
                missing.append("no such file: %s" % path)
        for path, name in re.findall(r"^\s*((?:src|include)/\S+\.[ch])\s+([a-z_]\w*)\b", block, flags=re.M):
            if tree.path_exists(path) and not re.search(r"\b%s\b" % name, tree.read(path)):
                missing.append("%s does not name %s" % (path, name))
    return missing


def check(tree, text):
    return [why for why in (check_span(tree, s) for s in spans(text)) if why] + check_diagrams(tree, text)


def self_test(tree):
    made_up = ["`preon_db_pool_finish_query`", "`preon_dbreq_ops_t.techempower`", "`src/db/nothing.c`",
               "`database.no_such_key`", "`integration.nothing`", "`nothing_here.h`",
               "```\n  src/db/pool.c  no_such_function: ...\n```", "```\n  then preon_db_pool_finish_query\n```"]
    for name in made_up:
        if not check(tree, name):
            print("self-test: %s was not caught" % name)
            return 1
    real = ["`preon_db_owner_t.done`", "`preon_dbreq_ops_t.syncs`", "`src/db/pool.c`", "`database.sync`",
            "`integration.lazyread`", "`internal.h`", "`preon_dbreq_ops_t.on_result`", "`/fruits`", "`query`"]
    for name in real:
        if check(tree, name):
            print("self-test: %s was refused: %s" % (name, check(tree, name)))
            return 1
    return 0


def main():
    tree = Tree(REPO)
    if self_test(tree):
        return 1
    missing = check(tree, tree.read("docs/architecture.md"))
    for why in missing:
        print("docs/architecture.md: %s" % why)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
