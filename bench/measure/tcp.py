# SPDX-License-Identifier: MIT
"""The machine's TCP congestion control (net.ipv4.tcp_congestion_control), recorded in every results header, and
set for one run with --congestion-control.

Why it is recorded: on loopback it decides whether PostgreSQL's many small sends are sent one packet each. A
backend flushes its socket at every Sync (ReadyForQuery), twenty times per /queries=20 request. Under BBR a
sender whose congestion window is full holds those bytes and sends them together; under CUBIC on loopback the
window never fills and each flush is a packet. Which servers and connection counts fill the window under BBR
depends on how often the client's ACKs come, so the same two servers can change places from one setting to the
other (CHANGELOG.md, 0.5.0, 2026-12-03: PostgreSQL's packets and the /queries=20 ratio under both)."""
import os

PATH = "/proc/sys/net/ipv4/tcp_congestion_control"
AVAILABLE = "/proc/sys/net/ipv4/tcp_available_congestion_control"


def current():
    """The congestion control new TCP sockets get, or None where it cannot be read."""
    try:
        with open(PATH) as f:
            return f.read().strip() or None
    except OSError:
        return None


def available():
    """The congestion controls the kernel has loaded (others may load on demand when set)."""
    try:
        with open(AVAILABLE) as f:
            return f.read().split()
    except OSError:
        return []


class CongestionControl:
    """`with CongestionControl(name):` new TCP sockets use `name` inside, the machine's setting again after (also on
    an error). name None: nothing changes. Setting it needs root and applies to the whole machine (the connections
    opened meanwhile, the run's own and any other): an option for a machine that runs the benchmark alone."""

    def __init__(self, name):
        self.name, self.before = name, None

    def __enter__(self):
        """Sets it (once: entering again after a first enter changes nothing); RuntimeError when it cannot."""
        if self.name is None or self.before is not None:
            return self
        self.before = current()
        if self.before is None:
            raise RuntimeError("cannot read %s" % PATH)
        try:
            with open(PATH, "w") as f:
                f.write(self.name)
        except OSError as e:
            raise RuntimeError("cannot set the TCP congestion control to %r (%s; available: %s)" % (
                self.name, e.strerror or e, " ".join(available()) or "?")) from None
        return self

    def __exit__(self, *exc):
        if self.before is not None and current() != self.before:
            with open(PATH, "w") as f:
                f.write(self.before)
        return False
