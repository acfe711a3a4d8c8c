# SPDX-License-Identifier: MIT
"""An HTTP/1.1 server on 127.0.0.1 with known behaviour for the ramp driver's test: /hello and /fruits answer
200 while at most N connections are open; past N every request is answered 503 (--mode fail) or 300 ms late
(--mode slow). Also stands in for a peer service in tests (PORT from the environment, /hello and /fruits).

  ramp_server.py --port P --max-users N --mode fail|slow
"""
import argparse
import asyncio
import os

BODY = {b"/hello": b"hello", b"/fruits": b'[{"id":1,"name":"Cherry"},{"id":2,"name":"Apple"}]'}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=int(os.environ.get("PORT", "0")))
    ap.add_argument("--max-users", type=int, default=1 << 30)
    ap.add_argument("--mode", choices=("fail", "slow"), default="fail")
    a = ap.parse_args()
    open_conns = 0

    async def serve(reader, writer):
        nonlocal open_conns
        open_conns += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1]
                body, status = BODY.get(path), b"200 OK"
                if body is None:
                    body, status = b"no", b"404 Not Found"
                elif open_conns > a.max_users:
                    if a.mode == "fail":
                        body, status = b"busy", b"503 Service Unavailable"
                    else:
                        await asyncio.sleep(0.3)
                writer.write(b"HTTP/1.1 %s\r\nContent-Length: %d\r\n\r\n%s" % (status, len(body), body))
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
