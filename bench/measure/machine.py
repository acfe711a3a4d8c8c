# SPDX-License-Identifier: MIT
"""What a record says of the machine and the runtimes it measured, so that two records are only compared knowing
whether they ran on the same kind of machine and software: the CPU model (machines sold under one name differ
up to 2.6x), and each runtime's version as the run found it (preon's commit, the JVM the JVM peers run on, the
native executable's builder configuration, Go, PostgreSQL, the stacks' pinned versions)."""
import glob
import os
import platform
import re
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PEERS = os.path.join(REPO, "bench", "peers")


def cpu_model():
    """/proc/cpuinfo's first "model name" (x86) with its family, model, stepping and cache size (a VM's name can be
    as bare as "Intel(R) Xeon(R) Processor"), else lscpu's "Model name"; None when neither says."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor's block
                key, _, value = line.partition(":")
                info[key.strip()] = value.strip()
    except OSError:
        pass
    if info.get("model name"):
        more = ", ".join("%s %s" % (k, info[k]) for k in ("cpu family", "model", "stepping", "cache size") if k in info)
        return "%s (%s)" % (info["model name"], more) if more else info["model name"]
    m = re.search(r"^Model name:\s*(.+)$", _out(["lscpu"]), re.M)
    return m.group(1).strip() if m else None


def _out(argv, stderr=False):
    """A command's output (stdout, or stderr where the tool prints its version there); "" when it cannot run."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (p.stderr if stderr else p.stdout).strip()


def _first(text):
    return text.splitlines()[0] if text else None


def _pom(path, pattern):
    try:
        with open(os.path.join(PEERS, path)) as f:
            m = re.search(pattern, f.read(), re.S)
    except OSError:
        return None
    return m.group(1) if m else None


def runtimes():
    """Each runtime's version, as found on this machine at the run's start (a missing one is left out)."""
    found = {
        "preon": _out(["git", "-C", REPO, "describe", "--always", "--dirty", "--abbrev=12"]),
        "jvm (java on PATH: the JVM peers)": _first(_out(["java", "-version"], stderr=True)),
        "jvm build": (re.findall(r"\(build ([^)]+)\)", _out(["java", "-version"], stderr=True)) or [None])[0],
        "go peer (the binary's Go)": _out(["go", "version", os.path.join(PEERS, "go", "build", "go-peer")]).split(": ")[-1]
        if os.path.exists(os.path.join(PEERS, "go", "build", "go-peer")) else None,
        "postgresql": _out(["pg_config", "--version"]),
        "quarkus (BOM)": _pom("quarkus/pom.xml", r"<quarkus\.version>([^<]+)<"),
        "spring boot (parent)": _pom("spring-mvc/pom.xml", r"spring-boot-starter-parent</artifactId>\s*<version>([^<]+)<"),
    }
    # each native peer's build as its builder stated it: Java version, optimization level, target machine, GC
    for native_build in sorted(glob.glob(os.path.join(PEERS, "*", "build", "native-image-build.txt"))):
        with open(native_build) as f:
            found["%s build" % os.path.basename(os.path.dirname(os.path.dirname(native_build)))] = "; ".join(
                line.strip() for line in f if line.strip())
    return {k: v for k, v in found.items() if v}


def host():
    """The host beyond its CPU model (since 2026-12-05): its caches as lscpu gives them, its memory (MemTotal, kB),
    the kernel's release (which names the build: 6.18.44-fc-v1252 and -v1272 are two builds) and version string. Two
    records are compared as "one noisier than the other" only where these agree."""
    caches = re.findall(r"^(L\w+) cache:\s*(.+)$", _out(["lscpu"]), re.M)
    mem = None
    try:
        with open("/proc/meminfo") as f:
            mem = int(next(line for line in f if line.startswith("MemTotal:")).split()[1])
    except (OSError, StopIteration, ValueError):
        pass
    return {"caches": ", ".join("%s %s" % (k, v.strip()) for k, v in caches) or None, "memory_kb": mem,
            "kernel_release": platform.release(), "kernel_version": platform.version()}


def host_sentence(cpu, h):
    """One sentence naming a record's host: its CPU model, caches, memory and kernel build."""
    return "%s; caches %s; memory %s GiB; kernel %s (%s)" % (
        cpu or "CPU model not recorded", h.get("caches") or "?",
        "%.1f" % (h["memory_kb"] / 1048576.0) if h.get("memory_kb") else "?", h.get("kernel_release") or "?",
        h.get("kernel_version") or "?")


def header():
    """The fields measure.results_header adds: cpu_model, runtimes, host."""
    return {"cpu_model": cpu_model(), "runtimes": runtimes(), "host": host()}
