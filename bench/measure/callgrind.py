# SPDX-License-Identifier: MIT
"""User-space instructions per request, from valgrind's callgrind: a server run whole under callgrind
(valgrind execs the binary itself), a warm-up, then a fixed count of requests (measure.fixed_count), then SIGTERM;
two such runs of N1 and N2 requests, and (Ir₂ − Ir₁) / (N2 − N1) is the cost of one request with start-up, warm-up
and shutdown cancelled out. callgrind_annotate of each run, per function (inclusive and self), differenced the same
way, points at where a difference is; the self costs grouped by object (h2o, libpq, jansson, libc, …) add up to the
total. Counts are of instructions executed, so they repeat for the same binary and input whatever the machine's
load; they need nothing but valgrind."""
import os
import re
import subprocess

from . import fixed_count
from .services import get, supervise

_LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.+?)(?:\s+\[(.+)\])?\s*$")
# objects → the group a report names; the first matching fragment wins
GROUPS = [("libh2o", "h2o"), ("libpq", "libpq"), ("libjansson", "jansson"), ("libssl", "libssl"),
          ("libcrypto", "libssl"), ("libc.so", "libc"), ("libm.so", "libc"), ("ld-linux", "ld.so"),
          ("libyajl", "yajl"), ("mustache", "mustache"), ("libyaml", "libyaml"), ("vgpreload", "valgrind"),
          ("libz.", "zlib")]
# in a binary that links h2o statically (TechEmpower's h2o-app), h2o's own functions by name
H2O_STATIC = re.compile(r"^(h2o_|phr_|yoml_|ptls_|quicly_|on_read|on_write|on_accept|handle_incoming_request|"
                        r"flatten_headers|finalostream_|proceed_|run_pending|evloop_|update_now|wreq_|on_upgrade|"
                        r"init_request|close_connection|set_timeout|reqread_|on_head|on_connect|cleanup_connection)")


# the start routines of threads that wake on a timer rather than on requests
TIME_DRIVEN = re.compile(r":(writer_main) \[")


def group_of(obj, func, main_binary, statics=None):
    """The report's group of a function (its object's basename; in `main_binary`, "preon" or, for a binary that
    links h2o in, "h2o" for h2o's functions and "app" for the rest; in a preon that links its libraries statically,
    the library's group by `statics`, function name → group: bench/measure/preon_build.py's static_groups)."""
    obj = "" if obj in (None, "?") else obj
    if not obj and func.startswith("./"):
        return "libc"  # glibc's own source paths (./stdio-common/…): callgrind_annotate left the object out
    if (obj and os.path.realpath(obj) == os.path.realpath(main_binary)) or (not obj and func.startswith("/")):
        # the main binary's, or a function callgrind_annotate printed without its object but with a source path
        # (TFB h2o's, built with -g): preon's or, in a binary that links h2o, h2o's or the app's by name and path
        name = func.rpartition(":")[2]
        if os.path.basename(main_binary) == "preon":
            return (statics or {}).get(name, "preon")
        path = func.rpartition(":")[0]
        return "h2o" if H2O_STATIC.match(name) or any(d in path for d in ("/h2o/", "/lib/", "/deps/")) else "app"
    for frag, name in GROUPS:  # after the main binary: TFB's h2o-app-stocklibpq is not libpq
        if frag in os.path.basename(obj):
            return name
    return os.path.basename(obj) or "?"


def totals(out_file):
    """The run's instruction total (the "totals:" line of a callgrind output file)."""
    with open(out_file) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    raise RuntimeError("%s has no totals line" % out_file)


def annotate(out_file, inclusive):
    """callgrind_annotate's table of `out_file`: {"file:function [object]": Ir}, every function (threshold 100)."""
    argv = ["callgrind_annotate", "--threshold=100", "--auto=no", "--inclusive=%s" % ("yes" if inclusive else "no"),
            out_file]
    text = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    out = {}
    started = False
    for line in text.splitlines():
        if "file:function" in line:
            started = True
            continue
        if started and not line.strip() and out:
            break  # the function table ends; what follows (source annotation, "=> callee" lines) is not a function
        m = _LINE.match(line) if started else None
        if m and m.group(2) != "PROGRAM TOTALS":
            key = "%s [%s]" % (m.group(2), m.group(3) or "?")
            out[key] = out.get(key, 0) + int(m.group(1).replace(",", ""))
    return out


def run(argv, env, port, ready_path, path, n, warmup, conns, depth, out_file, log_file, timeout=900):
    """One whole run under callgrind: start, `warmup` requests, `n` requests, SIGTERM, the output written.
    Returns {"ir": total, "statuses": answers of the counted requests by status}."""
    vg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=%s" % out_file, "--dump-instr=no",
          "--collect-jumps=no"] + list(argv)
    proc = supervise.spawn(vg, log_file, env=env, cwd=None, session=True)
    try:
        supervise.wait_ready(lambda: get("http://127.0.0.1:%d%s" % (port, ready_path), 1) == 200, 180,
                             "%s under valgrind (log %s)" % (argv[0], log_file), proc, interval=0.2)
        if warmup:
            fixed_count.run("127.0.0.1", port, path, warmup, conns, depth, timeout)
        got = fixed_count.run("127.0.0.1", port, path, n, conns, depth, timeout)
    finally:
        supervise.stop(proc, timeout=120, group=True)
    return {"ir": totals(out_file), "statuses": got["statuses"]}


def per_request(small, large, n_small, n_large, main_binary, top=15, statics=None):
    """Two runs' callgrind files → the cost of one request: total, self cost by group (`statics` as group_of takes
    it), and the top functions by inclusive and by self cost (Ir per request, differences of the two runs), and the
    part spent in threads that wake on a timer (TIME_DRIVEN)."""
    d = float(n_large - n_small)
    i_small = annotate(small, True)
    incl = {k: (v - i_small.get(k, 0)) / d for k, v in annotate(large, True).items()}
    s_small = annotate(small, False)
    own = {k: (v - s_small.get(k, 0)) / d for k, v in annotate(large, False).items()}
    groups = {}
    for k, v in own.items():
        func, _, obj = k.rpartition(" [")
        g = group_of(obj.rstrip("]"), func, main_binary, statics)
        groups[g] = groups.get(g, 0.0) + v
    pick = lambda table: [{"function": k, "ir": round(v, 1)} for k, v in  # noqa: E731
                          sorted(table.items(), key=lambda kv: -kv[1])[:top] if v > 0.5]
    return {"ir_per_request": (totals(large) - totals(small)) / d,
            "time_driven": round(sum(v for k, v in incl.items() if TIME_DRIVEN.search(k)), 1),
            "by_group": {g: round(v, 1) for g, v in sorted(groups.items(), key=lambda kv: -kv[1]) if abs(v) >= 0.5},
            "top_inclusive": pick(incl), "top_self": pick(own)}
