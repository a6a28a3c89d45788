"""A websockets (asyncio server) echo and voice server: one of the Python peers Parley's load figures are compared with.

    /echo     WebSocket; every message comes back with the same type (text as text, binary as
              binary) until the client closes.
    /ws       WebSocket; Parley's voice-turn path (peer_voice.py): session.created, then each binary
              message is a 20 ms Opus packet, decoded at 16 kHz, through voice activity detection,
              each turn answered with a canned reply a word at a time, in Parley's events.
    /metrics  GET, the voice path's figures under Parley's names (Prometheus text), which is what
              `parley-load voice` reads: frames processed and rejected, and their lag behind real time.
    /healthz  GET, 200 "ok".
    other     404.

/healthz and /metrics are plain HTTP answers from the process_request hook.

One process, websockets.asyncio.server.serve on asyncio's own event loop (--loop uvloop runs it on
uvloop instead). Keepalive pings are the library's defaults (every 20 s, 20 s to answer); messages
up to 1 MiB. Loopback addresses only.

Run it with scripts/benchmarks/peers.sh (which installs the pinned versions into .venv-peers):
    scripts/benchmarks/peers.sh run websockets 8082
"""

from __future__ import annotations

import argparse
import asyncio
import http
import os
import sys

from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from peer_common import MAX_MESSAGE, listening_line, loopback_host, port_number, raise_nofile_limit
from peer_voice import METRICS, METRICS_CONTENT_TYPE, VoiceSession, libopus_warning

NAME = "websockets-echo"


async def echo(websocket: ServerConnection) -> None:
    try:
        async for message in websocket:  # str for text, bytes for binary: sent back as they came
            await websocket.send(message)
    except ConnectionClosed:  # the client went away while its echo was being sent
        pass


async def voice(websocket: ServerConnection) -> None:
    session = VoiceSession(websocket.send)
    try:
        await session.open()
        async for message in websocket:  # bytes: an Opus packet; str: a client event
            if isinstance(message, bytes):
                await session.binary(message)
            else:
                await session.text(message)
    except ConnectionClosed:  # the client went away while an event was being sent
        pass
    finally:
        session.close()  # its reply task, codec and place in parley_sessions_open


async def handler(websocket: ServerConnection) -> None:
    # route() let only /echo and /ws through to the handshake.
    if websocket.request.path.split("?", 1)[0] == "/ws":
        await voice(websocket)
    else:
        await echo(websocket)


def route(connection: ServerConnection, request: Request) -> Response | None:
    path = request.path.split("?", 1)[0]
    if path == "/healthz":
        return connection.respond(http.HTTPStatus.OK, "ok")
    if path == "/metrics":
        response = connection.respond(http.HTTPStatus.OK, METRICS.render())
        # respond() says text/plain; the exposition format's version belongs in the type.
        del response.headers["Content-Type"]
        response.headers["Content-Type"] = METRICS_CONTENT_TYPE
        return response
    if path != "/echo" and path != "/ws":
        return connection.respond(http.HTTPStatus.NOT_FOUND, "not found\n")
    return None  # go on with the WebSocket handshake


async def run(host: str, port: int) -> None:
    async with serve(handler, host, port, process_request=route, max_size=MAX_MESSAGE,
                     # asyncio's default listen backlog is 100; Parley's and uvicorn's are larger.
                     backlog=4096) as server:
        bound_host, bound_port = server.sockets[0].getsockname()[:2]
        METRICS.mark_startup()
        print(listening_line(NAME, bound_host, bound_port, os.getpid()), flush=True)
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", type=loopback_host, default="127.0.0.1", help="loopback address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=port_number, required=True, help="port to listen on; 0 picks a free one")
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio", help="event loop (default: asyncio)")
    args = parser.parse_args()

    raise_nofile_limit(NAME)
    if (problem := libopus_warning()) is not None:
        print(f"{NAME}: /ws will reject every packet: {problem}", file=sys.stderr, flush=True)
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
