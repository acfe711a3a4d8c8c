# SPDX-License-Identifier: MIT
"""A fixed-count HTTP/1.1 client: exactly `n` GETs of one path over `conns` keep-alive connections, `depth` of them
pipelined per connection (wrk has no request count and ab no pipelining). The instruction counts of bench/cost.py
divide by the number of requests, so it must be exact: every answer is read to its end (Content-Length or chunked)
and counted by status. Speed does not matter here: the server it drives runs under valgrind."""
import selectors
import socket
import time


class _Conn:
    def __init__(self, addr, request):
        self.sock = socket.create_connection(addr)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.request, self.buf, self.pending = request, b"", 0


def _one_response(buf):
    """(status, bytes used) of the first complete response in `buf`, or None while it is incomplete."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = buf[:end].decode("latin-1").split("\r\n")
    status = int(head[0].split()[1])
    fields = {}
    for line in head[1:]:
        k, _, v = line.partition(":")
        fields[k.strip().lower()] = v.strip()
    body = end + 4
    if "content-length" in fields:
        stop = body + int(fields["content-length"])
        return (status, stop) if len(buf) >= stop else None
    if fields.get("transfer-encoding", "").lower() == "chunked":
        pos = body
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return None
            size = int(buf[pos:eol].split(b";")[0], 16)
            pos = eol + 2 + size + 2
            if len(buf) < pos:
                return None
            if size == 0:
                return status, pos
    return status, body  # no body (e.g. 204)


def run(host, port, path, n, conns=8, depth=1, timeout=600):
    """Sends exactly `n` requests for `path`; returns {"requests": n, "statuses": {code: count}, "seconds": s}.
    Raises RuntimeError when the server closes a connection or the run exceeds `timeout` seconds."""
    request = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: preon-bench\r\nAccept: */*\r\n\r\n" % (
        path, host, port)).encode()
    sel = selectors.DefaultSelector()
    left = n
    statuses = {}
    t0 = time.monotonic()
    pool = [_Conn((host, port), request) for _ in range(min(conns, n))]

    def send(c):
        nonlocal left
        k = min(depth, left)
        if k:
            c.sock.sendall(request * k)  # small: the socket buffer takes it whole
            c.pending, left = k, left - k

    for c in pool:
        send(c)
        sel.register(c.sock, selectors.EVENT_READ, c)
    done = 0
    try:
        while done < n:
            if time.monotonic() - t0 > timeout:
                raise RuntimeError("fixed-count client: %d of %d answers after %ds" % (done, n, timeout))
            for key, _ in sel.select(timeout=5):
                c = key.data
                data = c.sock.recv(1 << 16)
                if not data:
                    raise RuntimeError("fixed-count client: the server closed a connection after %d answers" % done)
                c.buf += data
                while c.pending:
                    got = _one_response(c.buf)
                    if got is None:
                        break
                    status, used = got
                    statuses[status] = statuses.get(status, 0) + 1
                    c.buf, c.pending, done = c.buf[used:], c.pending - 1, done + 1
                if not c.pending:
                    send(c)
    finally:
        sel.close()
        for c in pool:
            c.sock.close()
    return {"requests": n, "statuses": statuses, "seconds": time.monotonic() - t0}
