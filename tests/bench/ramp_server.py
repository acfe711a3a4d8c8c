# SPDX-License-Identifier: MIT
"""An HTTP/1.1 server on 127.0.0.1 with known behaviour for the ramp drivers' tests: /hello answers 200, and
/fruits speaks the ramp004 journey (a list with a Link to the next page, POST answering the created row's id, GET,
PUT, DELETE of a row), while at most N connections are open; past N every request is answered 503 with Retry-After
(--mode fail) or 300 ms late (--mode slow). --chunked sends every body in two chunks. Also stands in for a peer
service in tests (PORT from the environment, /hello and /fruits).

  ramp_server.py --port P --max-users N --mode fail|slow [--chunked]
"""
import argparse
import asyncio
import itertools
import json
import os

HELLO = b"hello"
LIST = b'[{"id":1,"name":"Cherry"},{"id":2,"name":"Apple"}]'


def answer(method, path, ids):
    """(status, body, extra header lines) of a request."""
    if path == b"/hello":
        return b"200 OK", HELLO, b""
    if path == b"/fruits" and method == b"POST":
        return b"201 Created", json.dumps({"id": next(ids), "name": "x"}).encode(), b""
    if path == b"/fruits" or path.startswith(b"/fruits?"):
        return b"200 OK", LIST, b'Link: </fruits?after=2&limit=20>; rel="next"\r\n'
    if path.startswith(b"/fruits/") and path[8:].isdigit():
        if method == b"DELETE":
            return b"204 No Content", b"", b""
        return b"200 OK", b'{"id":%s,"name":"Cherry"}' % path[8:], b""
    return b"404 Not Found", b"no", b""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=int(os.environ.get("PORT", "0")))
    ap.add_argument("--max-users", type=int, default=1 << 30)
    ap.add_argument("--mode", choices=("fail", "slow"), default="fail")
    ap.add_argument("--chunked", action="store_true")
    a = ap.parse_args()
    open_conns = 0
    ids = itertools.count(1000)

    async def serve(reader, writer):
        nonlocal open_conns
        open_conns += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                method, path = head.split(b" ", 2)[:2]
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if length:
                    await reader.readexactly(length)
                status, body, extra = answer(method, path, ids)
                if status.startswith(b"200") and open_conns > a.max_users:
                    if a.mode == "fail":
                        status, body, extra = b"503 Service Unavailable", b"busy", b"Retry-After: 1\r\n"
                    else:
                        await asyncio.sleep(0.3)
                if status.startswith(b"204"):
                    writer.write(b"HTTP/1.1 %s\r\n%s\r\n" % (status, extra))
                elif a.chunked:
                    half = len(body) // 2
                    writer.write(b"HTTP/1.1 %s\r\nTransfer-Encoding: chunked\r\n%s\r\n%x\r\n%s\r\n%x;x=y\r\n%s\r\n"
                                 b"0\r\n\r\n" % (status, extra, half, body[:half], len(body) - half, body[half:]))
                else:
                    writer.write(b"HTTP/1.1 %s\r\nContent-Length: %d\r\n%s\r\n%s" % (status, len(body), extra, body))
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            open_conns -= 1
            writer.close()

    async def run():
        server = await asyncio.start_server(serve, "127.0.0.1", a.port, backlog=4096)
        async with server:
            await server.serve_forever()

    asyncio.run(run())


if __name__ == "__main__":
    main()
