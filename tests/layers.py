#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The module boundaries of docs/architecture.md, checked from the #include lines (transitively). The folders of src/
are the build's layers (base, config, db, server, service; main.c on top), each with its own headers beside its
sources; include/preon/ holds what crosses a boundary:

  - the observers (src/server/observe.c) include neither the server's nor the service's headers;
  - the server (src/server/server.c) runs a service through include/preon/service.h and never includes the service's
    headers (include/preon/app.h, src/service/handlers.h);
  - the service (src/service/) reaches neither the server's header nor its thread struct (src/server/thread.h):
    include/preon/service.h and dbreq.h are its only way in;
  - only src/db/ includes libpq-fe.h, only src/config/ yaml.h;
  - a folder's own headers are included from that folder alone (tests aside);
  - every header of include/preon/ is included from at least two folders of src/ (else it belongs beside its sources);
  - no two headers include each other, directly or through others.

  tests/layers.py [REPO]     prints every violation; exit 1 if any
  tests/layers.py --self-test  shows on a made-up tree that each rule catches what it should
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
SERVICE_PRIVATE = ("handlers.h", "body.h", "params.h", "template.h")
RULES = [  # (file, headers its include closure must not reach)
    ("src/server/observe.c", ("preon/server.h", "preon/service.h", "preon/app.h") + SERVICE_PRIVATE),
    ("src/server/observe.h", ("preon/server.h", "preon/service.h", "preon/app.h") + SERVICE_PRIVATE),
    ("src/server/server.c", ("preon/app.h",) + SERVICE_PRIVATE),
    ("include/preon/server.h", ("preon/app.h",)),
    ("include/preon/service.h", ("preon/server.h", "thread.h", "preon/app.h")),
    ("include/preon/dbreq.h", ("preon/server.h", "thread.h", "preon/app.h")),
    ("include/preon/app.h", ("preon/server.h", "thread.h")),
    ("src/service/handlers.h", ("preon/server.h", "thread.h")),
]
SERVICE_DIR, SERVICE_BANNED = "src/service", ("preon/server.h", "thread.h", "cpus.h", "observe.h", "internal.h")
ONLY = {"libpq-fe.h": "src/db/", "yaml.h": "src/config/"}  # a library's header: who alone may include it
LAYERS = ("src/base", "src/config", "src/db", "src/server", "src/service", "src")  # src: main.c


def layer_of(path):
    """The folder of src/ a file belongs to, or None."""
    d = os.path.dirname(path)
    return d if d in LAYERS else None


def includes(root, path):
    with open(os.path.join(root, path), errors="replace") as f:
        return INCLUDE.findall(f.read())


def header_path(root, name, frm=None):
    """include/NAME when it is one of ours, else NAME beside the including file `frm` (a folder's own header), else
    None (a system or library header)."""
    p = os.path.join("include", name)
    if os.path.isfile(os.path.join(root, p)):
        return p
    if frm is not None:
        p = os.path.normpath(os.path.join(os.path.dirname(frm), name))
        if os.path.isfile(os.path.join(root, p)):
            return p
    return None


def closure(root, path):
    """Every header `path` reaches through #include, ours and others', by name."""
    seen, todo = set(), [path]
    while todo:
        frm = todo.pop()
        for name in includes(root, frm):
            if name not in seen:
                seen.add(name)
                p = header_path(root, name, frm)
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


def sources_of(root):
    out = []
    for top in ("src", "include"):
        for d, _, files in os.walk(os.path.join(root, top)):
            out += [os.path.relpath(os.path.join(d, f), root) for f in files if f.endswith((".c", ".h"))]
    return sorted(out)


def placement(root, sources):
    """A folder's own header included from another folder; a public header only one folder uses."""
    out, users = [], {}
    for path in sources:
        for name in includes(root, path):
            p = header_path(root, name, path)
            if p is not None and not p.startswith("include" + os.sep) and os.path.dirname(p) != os.path.dirname(path):
                out.append("%s includes %s, another folder's own header" % (path, p))
        if layer_of(path):  # what the folder uses, through any of its files' includes
            for name in closure(root, path):
                users.setdefault(os.path.join("include", name), set()).add(layer_of(path))
    for p in sorted(q for q in sources if q.startswith("include" + os.sep) and q.endswith(".h")):
        folders = users.get(p, set())
        if len(folders) < 2:
            out.append("%s is used only in %s: it belongs beside its sources" % (p, ", ".join(sorted(folders)) or "no folder"))
    return out


def violations(root):
    out = []
    service = []
    for d, _, files in os.walk(os.path.join(root, SERVICE_DIR)):
        service += [(os.path.relpath(os.path.join(d, f), root), SERVICE_BANNED) for f in files if f.endswith(".c")]
    for path, banned in RULES + sorted(service):
        if os.path.isfile(os.path.join(root, path)):
            reached = closure(root, path)
            out += ["%s reaches %s" % (path, b) for b in banned if b in reached]
    sources = sources_of(root)
    for path in sources:
        for name in includes(root, path):
            if name in ONLY and not path.startswith(ONLY[name]):
                out.append("%s includes %s (only %s may)" % (path, name, ONLY[name]))
    out += placement(root, sources)
    headers = sorted(os.path.relpath(p, "include") for p in sources if p.startswith("include" + os.sep))
    c = cycle(root, headers)
    if c:
        out.append("include cycle: %s" % " -> ".join(c))
    return out


def self_test():
    """A made-up tree with one violation of each rule: each must be reported, and the clean tree not at all."""
    files = {"include/preon/server.h": '#include "preon/service.h"\n', "include/preon/service.h": "",
             "include/preon/app.h": '#include "preon/service.h"\n', "src/server/observe.h": "",
             "include/preon/db.h": "", "src/server/server.c": '#include "preon/server.h"\n#include "preon/db.h"\n',
             "src/server/observe.c": '#include "observe.h"\n', "src/db/conn.c": "#include <libpq-fe.h>\n",
             "src/config/config.c": "#include <yaml.h>\n", "src/server/thread.h": "",
             "src/main.c": '#include "preon/server.h"\n#include "preon/app.h"\n',
             "src/service/routes.c": '#include "preon/service.h"\n#include "preon/app.h"\n#include "preon/db.h"\n'}
    bad = [("src/server/observe.c", '#include "preon/db.h"\n#include "preon/app.h"\n',
            "src/server/observe.c reaches preon/app.h"),
           ("src/server/server.c", '#include "preon/app.h"\n', "src/server/server.c reaches preon/app.h"),
           ("src/service/body.c", "#include <libpq-fe.h>\n", "src/service/body.c includes libpq-fe.h"),
           ("src/base/log.c", "#include <yaml.h>\n", "src/base/log.c includes yaml.h"),
           ("src/service/x.c", '#include "../server/thread.h"\n', "another folder's own header"),
           ("include/preon/app.h", '#include "preon/server.h"\n', "include/preon/app.h reaches preon/server.h"),
           ("src/main.c", '#include "preon/server.h"\n', "include/preon/app.h is used only in src/service"),
           ("include/preon/db.h", '#include "../../src/server/observe.h"\n', None)]
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
            assert any(expect in v for v in found) if expect else found != [], (path, found)
            if path in files:
                write(path, files[path])
            else:
                os.unlink(os.path.join(root, path))
        write("include/preon/service.h", '#include "preon/db.h"\n')
        write("include/preon/db.h", '#include "preon/service.h"\n')
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
