# SPDX-License-Identifier: MIT
"""What /proc says about a process: resident memory, CPU seconds, threads, descendants, and file sizes of what
it was started from. Every reader returns None (or skips) when the process has gone."""
import os
import subprocess
import tempfile
import time


def rss_kb(pid, field="VmRSS"):
    """A kB figure of /proc/PID/status (VmRSS, VmHWM, Threads …), or None when the process is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def main_pid(t):
    """The service's own process: the start command's shell may have exec'd it, or started it as its child."""
    pid = t.proc.pid
    try:
        children = open("/proc/%d/task/%d/children" % (pid, pid)).read().split()
        return int(children[0]) if children else pid
    except OSError:
        return pid


def cpu_s(pid):
    """User + system CPU seconds of a process (all its threads)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def dir_bytes(path):
    """A file's size, or the total size of the files under a folder (a build folder, say)."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files
               if not os.path.islink(os.path.join(root, f)))


def threads(pid):
    """How many threads a process has, or None when it has gone."""
    try:
        return len(os.listdir("/proc/%d/task" % pid))
    except OSError:
        return None


def tree(pid):
    """pid and all its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, task)) as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def tree_cpu_s(pid):
    """CPU seconds of a process and its living descendants (those that exited are not counted)."""
    total = 0.0
    for p in tree(pid):
        try:
            total += cpu_s(p)
        except OSError:
            pass
    return total


def cpu_share(pid, seconds):
    """CPU seconds per second a process used over the next `seconds` (1.0 = one core busy)."""
    before = cpu_s(pid)
    time.sleep(seconds)
    return round((cpu_s(pid) - before) / seconds, 2)


def stripped_size(path):
    """The size a binary would have after `strip`, or None when it is not a file strip can read."""
    if not os.path.isfile(path):
        return None
    fd, tmp = tempfile.mkstemp()
    os.close(fd)
    try:
        if subprocess.run(["strip", "-o", tmp, path], stderr=subprocess.DEVNULL).returncode != 0:
            return None
        return os.path.getsize(tmp)
    finally:
        os.unlink(tmp)
