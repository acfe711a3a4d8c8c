#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The module boundaries of docs/architecture.md, checked from the #include lines (transitively):

  - the observers (src/observe.c) include neither the server nor the service nor the application;
  - the server (src/server.c) runs a service through include/preon/service.h and never includes the application
    (include/preon/app.h);
  - the service (src/handlers/, include/preon/app.h and service.h) reaches neither the server's header nor its
    thread struct (src/thread.h): include/preon/service.h is its only way in;
  - only src/db/ includes libpq-fe.h, only src/config.c yaml.h;
  - no two headers include each other, directly or through others.

  tests/layers.py [REPO]     prints every violation; exit 1 if any
  tests/layers.py --self-test  shows on a made-up tree that each rule catches what it should
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
RULES = [  # (file, headers its include closure must not reach)
    ("src/observe.c", ("preon/server.h", "preon/service.h", "preon/app.h")),
    ("include/preon/observe.h", ("preon/server.h", "preon/service.h", "preon/app.h")),
    ("src/server.c", ("preon/app.h",)),
    ("include/preon/server.h", ("preon/app.h",)),
    ("include/preon/service.h", ("preon/server.h", "thread.h", "preon/app.h")),
    ("include/preon/app.h", ("preon/server.h", "thread.h")),
]
SERVICE_DIR, SERVICE_BANNED = "src/handlers", ("preon/server.h", "thread.h")  # every file of the service
ONLY = {"libpq-fe.h": "src/db/", "yaml.h": "src/config.c"}  # a library's header: who alone may include it


def includes(root, path):
    with open(os.path.join(root, path), errors="replace") as f:
        return INCLUDE.findall(f.read())


def header_path(root, name):
    """include/NAME when it is one of ours, else None (a system or library header)."""
    p = os.path.join("include", name)
    return p if os.path.isfile(os.path.join(root, p)) else None


def closure(root, path):
    """Every header `path` reaches through #include, ours and others', by name."""
    seen, todo = set(), [path]
    while todo:
        for name in includes(root, todo.pop()):
            if name not in seen:
                seen.add(name)
                p = header_path(root, name)
                if p:
                    todo.append(p)
    return seen


def cycle(root, headers):
    """One include cycle among our headers, as a list of names, or None."""
    state = {}

    def visit(name, stack):
        state[name] = "open"
        for dep in includes(root, header_path(root, name)):
            if header_path(root, dep) is None:
                continue
            if state.get(dep) == "open":
                return stack[stack.index(dep):] + [dep] if dep in stack else [name, dep]
            if dep not in state:
                found = visit(dep, stack + [dep])
                if found:
                    return found
        state[name] = "done"
        return None

    for h in headers:
        if h not in state:
            found = visit(h, [h])
            if found:
                return found
    return None


def violations(root):
    out = []
    service = []
    for d, _, files in os.walk(os.path.join(root, SERVICE_DIR)):
        service += [(os.path.relpath(os.path.join(d, f), root), SERVICE_BANNED) for f in files if f.endswith(".c")]
    for path, banned in RULES + sorted(service):
        if os.path.isfile(os.path.join(root, path)):
            reached = closure(root, path)
            out += ["%s reaches %s" % (path, b) for b in banned if b in reached]
    sources = []
    for top in ("src", "include"):
        for d, _, files in os.walk(os.path.join(root, top)):
            sources += [os.path.relpath(os.path.join(d, f), root) for f in files if f.endswith((".c", ".h"))]
    for path in sorted(sources):
        for name in includes(root, path):
            if name in ONLY and not path.startswith(ONLY[name]):
                out.append("%s includes %s (only %s may)" % (path, name, ONLY[name]))
    headers = sorted(os.path.relpath(p, "include") for p in sources if p.startswith("include" + os.sep))
    c = cycle(root, headers)
    if c:
        out.append("include cycle: %s" % " -> ".join(c))
    return out


def self_test():
    """A made-up tree with one violation of each rule: each must be reported, and the clean tree not at all."""
    files = {"include/preon/server.h": '#include "preon/service.h"\n', "include/preon/service.h": "",
             "include/preon/app.h": '#include "preon/service.h"\n', "include/preon/observe.h": "",
             "include/preon/db.h": "", "src/server.c": '#include "preon/server.h"\n',
             "src/observe.c": '#include "preon/observe.h"\n', "src/db/conn.c": "#include <libpq-fe.h>\n",
             "src/config.c": "#include <yaml.h>\n"}
    bad = [("src/observe.c", '#include "preon/db.h"\n#include "preon/app.h"\n', "src/observe.c reaches preon/app.h"),
           ("src/server.c", '#include "preon/app.h"\n', "src/server.c reaches preon/app.h"),
           ("src/body.c", "#include <libpq-fe.h>\n", "src/body.c includes libpq-fe.h"),
           ("src/log.c", "#include <yaml.h>\n", "src/log.c includes yaml.h"),
           ("src/handlers/x.c", '#include "thread.h"\n', "src/handlers/x.c reaches thread.h"),
           ("include/preon/app.h", '#include "preon/server.h"\n', "include/preon/app.h reaches preon/server.h"),
           ("include/preon/db.h", '#include "preon/observe.h"\n', None)]
    with tempfile.TemporaryDirectory() as root:
        def write(path, text):
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        for path, text in files.items():
            write(path, text)
        assert violations(root) == [], violations(root)
        for path, text, expect in bad:
            write(path, text)
            found = violations(root)
            assert any(expect in v for v in found) if expect else found == [], (path, found)
            write(path, files.get(path, ""))
        write("include/preon/observe.h", '#include "preon/db.h"\n')
        write("include/preon/db.h", '#include "preon/observe.h"\n')
        assert any(v.startswith("include cycle: preon/") for v in violations(root)), violations(root)
    print("self-test: every rule caught its violation")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = violations(root)
    for v in found:
        print(v)
    print("%d layering violations" % len(found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
