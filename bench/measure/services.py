# SPDX-License-Identifier: MIT
"""What a measurement runs: a private PostgreSQL, the release build, services under test (started, probed and
stopped as process groups) and cgroups that cap them. All traffic goes to 127.0.0.1."""
import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

from .report import log

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # bench/
REPO = os.path.dirname(HERE)
PG_SH = os.path.join(REPO, "scripts", "pg.sh")
sys.path.insert(0, os.path.join(REPO, "scripts"))
from fixtures import supervise, templates  # noqa: E402,F401 - scripts/fixtures: what bench, tests and deploy share
from fixtures.supervise import free_port  # noqa: E402,F401 - measure's own name for it


def get(url, timeout=2):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except Exception:  # noqa: BLE001 - any failure means "not yet"
        return None


def build_preon():
    """Installs what bench needs and builds the release binary; returns its path."""
    subprocess.run([os.path.join(REPO, "scripts", "deps.sh"), "bench"], check=True)
    subprocess.run(["cmake", "-S", REPO, "-B", os.path.join(REPO, "build"), "-DCMAKE_BUILD_TYPE=Release"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", os.path.join(REPO, "build"), "-j2"], check=True, stdout=subprocess.DEVNULL)
    return os.path.join(REPO, "build", "preon")


@contextlib.contextmanager
def private_postgres_dir(extra_conf=""):
    """A PostgreSQL cluster in a temp folder with sql/ loaded (`extra_conf` appended to postgresql.conf); yields
    (its folder, for scripts/pg.sh, and its port), removes it afterwards."""
    pgdir = tempfile.mkdtemp(prefix="preon-bench-pg-")
    os.chmod(pgdir, 0o755)
    port = free_port()
    log("PostgreSQL in %s on port %d" % (pgdir, port))
    subprocess.run([PG_SH, "init", pgdir, str(port)], check=True, env=dict(os.environ, PREON_PG_EXTRA_CONF=extra_conf))
    try:
        yield pgdir, port
    finally:
        subprocess.run([PG_SH, "stop", pgdir], check=False)
        shutil.rmtree(pgdir, ignore_errors=True)


@contextlib.contextmanager
def private_postgres(extra_conf=""):
    """As private_postgres_dir, yielding the port only."""
    with private_postgres_dir(extra_conf) as (_, port):
        yield port


def preon_env(pgport, port, sync="batch"):
    """preon's environment for a bench run; sync=None leaves database.sync at its configured default."""
    env = dict(os.environ, PREON_SERVER_LISTEN="127.0.0.1", PREON_SERVER_PORT=str(port), PREON_LOG_LEVEL="warn",
               PREON_DATABASE_URL="postgresql://postgres@127.0.0.1:%d/preon" % pgport)
    if sync:
        env["PREON_DATABASE_SYNC"] = sync
    return env


class Target:
    """A service under test: a command, its environment and its base URL. Its output goes to a log file, so that
    a failure can be reported with its last lines."""

    def __init__(self, name, argv, env, port=None, db_path="/fruits", binary=None, url=None, hello_path="/hello",
                 spec=None):
        self.name, self.argv, self.env, self.db_path, self.binary = name, argv, env, db_path, binary
        self.hello_path = hello_path
        self.spec = spec  # bench/run.py's target spec it was made from (the published scenarios read it), or None
        self.base_url = url or "http://127.0.0.1:%d" % port
        self.proc = None
        self.log_path = tempfile.mktemp(prefix="bench-%s-" % name.replace("/", "_"), suffix=".log")

    @property
    def url(self):
        return self.base_url

    def log_tail(self, lines=20):
        return supervise.log_tail(self.log_path, lines)

    def spawn(self):
        """Starts the service's command in a session of its own (stop() ends the whole session: a start command
        run through a shell takes its children along), its output to log_path; does not wait for it."""
        self.proc = supervise.spawn(self.argv, self.log_path, env=self.env, cwd=None, session=True)

    def start(self, timeout=180):  # a JVM on a busy shared machine can take a minute
        """Starts the service; returns (seconds to first 200 on /hello (hello_path), seconds to first 200 on the DB
        path)."""
        t0 = time.monotonic()
        self.spawn()
        first_hello = first_db = None
        deadline = t0 + timeout
        while time.monotonic() < deadline and (first_hello is None or first_db is None):
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %d at start" % (self.name, self.proc.returncode))
            if first_hello is None and get(self.url + self.hello_path, 0.5) == 200:
                first_hello = time.monotonic() - t0
            if first_hello is not None and get(self.url + self.db_path, 0.5) == 200:
                first_db = time.monotonic() - t0
        if first_db is None:
            self.stop()
            raise RuntimeError("%s did not become ready within %ds" % (self.name, timeout))
        return first_hello, first_db

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc:
            supervise.stop(self.proc, timeout=15, group=True)
        self.proc = None


V1 = os.path.isdir("/sys/fs/cgroup/memory") and os.path.isdir("/sys/fs/cgroup/cpu")


class Cgroup:
    """A cgroup of its own for one run; removed afterwards."""

    def __init__(self, name, memory_mib=None, cpus=None):
        self.dirs = []
        if V1:
            if memory_mib is not None:
                d = "/sys/fs/cgroup/memory/" + name
                os.makedirs(d, exist_ok=True)
                self.write(d, "memory.limit_in_bytes", memory_mib << 20)
                self.dirs.append(d)
            if cpus is not None:
                d = "/sys/fs/cgroup/cpu/" + name
                os.makedirs(d, exist_ok=True)
                self.write(d, "cpu.cfs_period_us", 100000)
                self.write(d, "cpu.cfs_quota_us", int(cpus * 100000))
                self.dirs.append(d)
        else:
            d = "/sys/fs/cgroup/" + name
            os.makedirs(d, exist_ok=True)
            if memory_mib is not None:
                self.write(d, "memory.max", memory_mib << 20)
                self.write(d, "memory.swap.max", 0)
            if cpus is not None:
                self.write(d, "cpu.max", "%d 100000" % int(cpus * 100000))
            self.dirs.append(d)

    @staticmethod
    def write(d, f, v):
        with open(os.path.join(d, f), "w") as fp:
            fp.write(str(v))

    def wrap(self, argv):
        """A command that joins the cgroup(s) before exec'ing argv, so that every page is charged there."""
        if not self.dirs:
            return list(argv)
        joins = " && ".join("echo $$ > %s/cgroup.procs" % d for d in self.dirs)
        return ["sh", "-c", joins + ' && exec "$@"', "sh", *argv]

    def remove(self):
        for d in self.dirs:
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.1)




def hand_over(script, argv, out=None, dry_run=False):
    """The thin wrappers' last step: this process becomes bench/`script` with `argv` (and --out `out`), or, with
    `dry_run`, prints that command instead."""
    argv = [sys.executable, os.path.join(HERE, script)] + list(argv) + (["--out", out] if out else [])
    if dry_run:
        print(" ".join(shlex.quote(a) for a in argv))
        return 0
    os.execv(argv[0], argv)
