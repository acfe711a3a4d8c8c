# SPDX-License-Identifier: MIT
"""What an artifact needs beside it to run, measured one way for every target: bytes of the artifact plus every
shared library it loads that a slim Debian image lacks, and for a JVM artifact the JRE it runs on (the files of
Debian's openjdk-17-jre-headless and of the libraries the `java` launcher and libjvm load)."""
import os
import subprocess

JRE_PACKAGE = "openjdk-17-jre-headless"


def _package_of(path):
    out = subprocess.run(["dpkg", "-S", "*/" + os.path.basename(path)], capture_output=True, text=True).stdout
    return out.split(":")[0] if out else ""


def _priority(pkg):
    return subprocess.run(["dpkg-query", "-W", "-f=${Priority}", pkg], capture_output=True, text=True).stdout if pkg else ""


def libraries_bytes(binary, skip_packages=()):
    """Bytes of the shared libraries `binary` loads whose package is not Priority: required (a slim image has those)."""
    total = 0
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    for lib in [l.split("=>")[1].split("(")[0].strip() for l in out.splitlines() if "=>" in l and "/" in l]:
        pkg = _package_of(lib)
        if pkg.split(":")[0] not in skip_packages and _priority(pkg) != "required":
            total += os.path.getsize(os.path.realpath(lib))
    return total


def runtime_closure(binary):
    """The binary plus the shared libraries it loads that a slim Debian image lacks."""
    return os.path.getsize(binary) + libraries_bytes(binary)


def jre_bytes():
    """Debian's JRE 17 (every regular file of its package) plus the libraries its launcher and libjvm load that a
    slim image lacks; None when the package is not installed."""
    r = subprocess.run(["dpkg-query", "-L", JRE_PACKAGE], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    files = [p for p in r.stdout.splitlines() if os.path.isfile(p) and not os.path.islink(p)]
    total = sum(os.path.getsize(p) for p in files)
    for exe in [p for p in files if p.endswith("/bin/java") or p.endswith("/libjvm.so")]:
        total += libraries_bytes(exe, skip_packages=(JRE_PACKAGE,))
    return total
