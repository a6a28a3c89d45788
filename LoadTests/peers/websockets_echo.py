"""A websockets (asyncio server) echo server: one of the Python peers Parley's load figures are compared with.

    /echo     WebSocket; every message comes back with the same type (text as text, binary as
              binary) until the client closes.
    /healthz  GET, 200 "ok" (a plain HTTP answer from the process_request hook).
    other     404.

One process, websockets.asyncio.server.serve on asyncio's own event loop (--loop uvloop runs it on
uvloop instead). Keepalive pings are the library's defaults (every 20 s, 20 s to answer); messages
up to 1 MiB. Loopback addresses only.

Run it with scripts/peers.sh (which installs the pinned versions into .venv-peers):
    scripts/peers.sh run websockets 8082
"""

from __future__ import annotations

import argparse
import asyncio
import http
import ipaddress
import os
import resource
import sys

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

NAME = "websockets-echo"
MAX_MESSAGE = 1 << 20  # 1 MiB


async def echo(websocket: ServerConnection) -> None:
    try:
        async for message in websocket:  # str for text, bytes for binary: sent back as they came
            await websocket.send(message)
    except ConnectionClosed:  # the client went away while its echo was being sent
        pass


def route(connection: ServerConnection, request: Request) -> Response | None:
    path = request.path.split("?", 1)[0]
    if path == "/healthz":
        return connection.respond(http.HTTPStatus.OK, "ok")
    if path != "/echo":
        return connection.respond(http.HTTPStatus.NOT_FOUND, "not found\n")
    return None  # go on with the WebSocket handshake


def loopback_host(value: str) -> str:
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an IP address (loopback only: 127.0.0.0/8 or ::1)")
    if not address.is_loopback:
        raise argparse.ArgumentTypeError(f"{value} is not a loopback address (127.0.0.0/8 or ::1 only)")
    return value


def port_number(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number")
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0 to 65535; 0 picks a free one)")
    return port


def raise_nofile_limit() -> None:
    """Raises the open-files soft limit to the hard limit: each connection is a descriptor."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as error:
        print(f"{NAME}: could not raise the open-files limit from {soft} to {hard}: {error}", file=sys.stderr, flush=True)


async def run(host: str, port: int) -> None:
    async with serve(echo, host, port, process_request=route, max_size=MAX_MESSAGE,
                     # asyncio's default listen backlog is 100; Parley's and uvicorn's are larger.
                     backlog=4096) as server:
        bound_host, bound_port = server.sockets[0].getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        print(f"{NAME} listening on http://{shown}:{bound_port}/ (pid {os.getpid()})", flush=True)
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", type=loopback_host, default="127.0.0.1", help="loopback address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=port_number, required=True, help="port to listen on; 0 picks a free one")
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio", help="event loop (default: asyncio)")
    args = parser.parse_args()

    raise_nofile_limit()
    try:
        if args.loop == "uvloop":
            import uvloop

            uvloop.run(run(args.host, args.port))
        else:
            asyncio.run(run(args.host, args.port))
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as error:  # e.g. the port is taken
        print(f"{NAME}: could not listen on {args.host}:{args.port}: {error}", file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
