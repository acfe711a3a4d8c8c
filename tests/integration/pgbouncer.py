# SPDX-License-Identifier: MIT
"""A real PgBouncer (Debian's 1.18) on a free loopback port in front of a PostgreSQL, for the tests.

PgBouncer refuses to run as root: as root it runs as the `postgres` user (the supervisor's as_user, so that the
process we start, and end by its PID, is PgBouncer itself). Trust authentication, database "preon", an admin
console ("pgbouncer" database) for SHOW POOLS / SHOW SERVERS; its ini from scripts/fixtures/templates.py, as
deploy/stack/'s."""
import os
import shutil
import subprocess
import tempfile

from harness import end, supervise, templates

PGBIN = templates.pg_bin()


class PgBouncer:
    def __init__(self, upstream_port, mode, pool_size, port):
        self.port, self.mode = port, mode
        self.dir = tempfile.mkdtemp(prefix="preon-pgbouncer-")
        os.chmod(self.dir, 0o755)
        self.ini = templates.write_pgbouncer(self.dir, port, upstream_port, mode, pool_size, 500)
        self.proc = None

    def start(self):
        if os.getuid() == 0:
            subprocess.run(["chown", "-R", "postgres:postgres", self.dir], check=True)
        self.proc = supervise.spawn(["pgbouncer", self.ini], os.devnull, user="postgres")
        try:
            supervise.wait_ready(lambda: supervise.tcp_open(self.port), 10, "pgbouncer", self.proc, interval=0.05)
        except supervise.NotReady as e:
            raise AssertionError("%s:\n%s" % (e, self.log()))
        return self

    def url(self):
        return "postgresql://postgres@127.0.0.1:%d/preon" % self.port

    def show(self, what):
        """SHOW `what` on the admin console: a list of dicts."""
        out = subprocess.run([os.path.join(PGBIN, "psql"), "-X", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                              "-d", "pgbouncer", "-A", "-F", "\t", "-P", "footer=off", "-c", "SHOW %s" % what],
                             check=True, capture_output=True, text=True, cwd="/").stdout.splitlines()
        head = out[0].split("\t")
        return [dict(zip(head, line.split("\t"))) for line in out[1:]]

    def log(self):
        return supervise.log_tail(os.path.join(self.dir, "pgbouncer.log"), 10 ** 6)[-4000:]

    def stop(self):
        if self.proc is not None:
            end(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)
