# SPDX-License-Identifier: MIT
"""A real PgBouncer (Debian's 1.18) on a free loopback port in front of a PostgreSQL, for the tests.

PgBouncer refuses to run as root: as root it runs as the `postgres` user (Popen's user=, so that the process we
start, and end by its PID, is PgBouncer itself). Trust authentication, database "preon", an admin console
("pgbouncer" database) for SHOW POOLS / SHOW SERVERS."""
import os
import shutil
import socket
import subprocess
import tempfile
import time

from harness import end

PGBIN = subprocess.run(["sh", "-c", "ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1"], capture_output=True,
                       text=True).stdout.strip()


class PgBouncer:
    def __init__(self, upstream_port, mode, pool_size, port):
        self.port, self.mode = port, mode
        self.dir = tempfile.mkdtemp(prefix="preon-pgbouncer-")
        os.chmod(self.dir, 0o755)
        self.ini = os.path.join(self.dir, "pgbouncer.ini")
        with open(os.path.join(self.dir, "users.txt"), "w") as f:
            f.write('"postgres" ""\n')
        with open(self.ini, "w") as f:
            f.write("""[databases]
preon = host=127.0.0.1 port=%d dbname=preon user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s/users.txt
admin_users = postgres
pool_mode = %s
default_pool_size = %d
max_client_conn = 500
logfile = %s/pgbouncer.log
""" % (upstream_port, port, self.dir, mode, pool_size, self.dir))
        self.proc = None

    def start(self):
        kw = {}
        if os.getuid() == 0:
            subprocess.run(["chown", "-R", "postgres:postgres", self.dir], check=True)
            kw = dict(user="postgres", group="postgres", extra_groups=[])
        self.proc = subprocess.Popen(["pgbouncer", self.ini], cwd="/", stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, **kw)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("pgbouncer exited with %d:\n%s" % (self.proc.returncode, self.log()))
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError("pgbouncer did not listen:\n" + self.log())

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
        try:
            with open(os.path.join(self.dir, "pgbouncer.log"), errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None:
            end(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)
