# SPDX-License-Identifier: MIT
"""Another build of preon beside the one measured (the stock build on Debian's shared libraries, an older commit's
build): where it came from, read from its build folder, and the configuration it runs with. A build runs with the
config/preon.yaml of the source tree it was built from: an older build may not know today's keys (server.http2:
auto), and a build of this checkout reads this checkout's."""
import os
import subprocess

from .callgrind import GROUPS
from .services import REPO

# the static archives a PREON_DEPS=source build links, by the group a report names (bench/measure/callgrind.py's)
ARCHIVE_GROUPS = GROUPS + [("libpgcommon", "libpq"), ("libpgport", "libpq")]


def _cache(binary):
    """The CMake cache beside `binary` (its build folder's CMakeCache.txt) as a dict; {} when there is none."""
    out = {}
    try:
        with open(os.path.join(os.path.dirname(os.path.abspath(binary)), "CMakeCache.txt")) as f:
            for line in f:
                key, sep, value = line.rstrip("\n").partition("=")
                if sep and not line.startswith(("//", "#")):
                    out[key.split(":", 1)[0]] = value
    except OSError:
        pass
    return out


def source_of(binary):
    """The source tree `binary` was built from (CMAKE_HOME_DIRECTORY), else this checkout."""
    return _cache(binary).get("CMAKE_HOME_DIRECTORY") or REPO


def config_of(binary):
    """The config/preon.yaml that `binary` runs with: its own source tree's, else this checkout's."""
    path = os.path.join(source_of(binary), "config", "preon.yaml")
    return path if os.path.isfile(path) else os.path.join(REPO, "config", "preon.yaml")


def describe(binary):
    """What a record says of a build: its path, the source tree and commit it was built from, PREON_DEPS (source:
    h2o and libpq from Debian's source packages with preon's patches, linked statically; system: Debian's shared
    libraries as shipped; "" for a build older than the option, which had only the latter) and its size."""
    src = source_of(binary)
    commit = subprocess.run(["git", "-C", src, "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    return {"binary": os.path.abspath(binary), "source": src, "commit": commit or None,
            "deps": _cache(binary).get("PREON_DEPS", ""), "bytes": os.path.getsize(binary)}


def sentence(d):
    """describe()'s record as a sentence for a report."""
    deps = {"source": "PREON_DEPS=source: h2o 2.2.5 and libpq 15 from Debian's source packages with preon's patches, "
                      "static", "system": "PREON_DEPS=system: Debian's shared libh2o-evloop 2.2.5 and libpq5 15 as "
                                          "shipped",
            "": "before PREON_DEPS: Debian's shared libh2o-evloop and libpq5, libc functions interposed"}.get(
        d["deps"], "PREON_DEPS=%s" % d["deps"])
    return "`%s`, commit %s (%s), %d bytes" % (d["binary"], d["commit"] or "?", deps, d["bytes"])


def static_groups(binary):
    """Function name → group ("h2o", "libpq", "jansson", "libssl", "libyaml", "zlib") for the libraries `binary`
    links statically (the archives on its link line, CMakeFiles/preon.dir/link.txt beside it, read with nm), so that
    a profile of the source build tells h2o's and libpq's instructions from preon's own as it does for the stock
    build's shared libraries. preon's own archives (libpreon_*.a, in the build folder) win a name they share with a
    library: callgrind without debug information names a function only by its symbol. {} for a build without such a
    link line (the stock build, an older one)."""
    build = os.path.dirname(os.path.abspath(binary))
    try:
        with open(os.path.join(build, "CMakeFiles", "preon.dir", "link.txt")) as f:
            archives = [a for a in f.read().split() if a.endswith(".a")]
    except OSError:
        return {}
    out, own = {}, set()
    for a in archives:
        path = a if os.path.isabs(a) else os.path.join(build, a)
        group = "preon" if not os.path.isabs(a) else next(
            (g for frag, g in ARCHIVE_GROUPS if frag in os.path.basename(a)), None)
        if group is None:
            continue
        nm = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True)
        for line in nm.stdout.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwW":
                if group == "preon":
                    own.add(parts[2])
                else:
                    out.setdefault(parts[2], group)
    return {k: g for k, g in out.items() if k not in own}
