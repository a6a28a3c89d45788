"""A FastAPI WebSocket echo and voice server: one of the Python peers Parley's load figures are compared with.

    /echo     WebSocket; every message comes back with the same type (text as text, binary as
              binary) until the client closes.
    /ws       WebSocket; Parley's voice-turn path (peer_voice.py): session.created, then each binary
              message is a 20 ms Opus packet, decoded at 16 kHz, through voice activity detection,
              each turn answered with a canned reply a word at a time, in Parley's events.
    /metrics  GET, the voice path's figures under Parley's names (Prometheus text), which is what
              `parley-load voice` reads: frames processed and rejected, and their lag behind real time.
    /healthz  GET, 200 "ok".

One uvicorn process (no workers) on uvloop and httptools, as uvicorn[standard] runs in production;
WebSockets by uvicorn's "websockets-sansio" protocol, the one its "auto" choice picks when the
websockets package is installed. Keepalive pings are uvicorn's defaults (every 20 s, 20 s to answer);
messages up to 1 MiB. Loopback addresses only.

Run it with scripts/benchmarks/peers.sh (which installs the pinned versions into .venv-peers):
    scripts/benchmarks/peers.sh run fastapi 8081
"""

from __future__ import annotations

import argparse
import os
import sys

import uvicorn
from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from fastapi.responses import PlainTextResponse, Response

from peer_common import MAX_MESSAGE, listening_line, loopback_host, port_number, raise_nofile_limit
from peer_voice import METRICS, METRICS_CONTENT_TYPE, VoiceSession, libopus_warning

NAME = "fastapi-echo"

app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)


@app.get("/healthz", response_class=PlainTextResponse)
async def healthz() -> str:
    return "ok"


@app.websocket("/echo")
async def echo(websocket: WebSocket) -> None:
    await websocket.accept()
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text is not None:
                await websocket.send_text(text)
            else:
                await websocket.send_bytes(message["bytes"])
    except WebSocketDisconnect:  # the client went away while its echo was being sent
        return


@app.get("/metrics")
async def metrics() -> Response:
    # A Response rather than PlainTextResponse: the exposition format's version is in its type.
    return Response(METRICS.render(), media_type=METRICS_CONTENT_TYPE)


@app.websocket("/ws")
async def voice(websocket: WebSocket) -> None:
    await websocket.accept()
    session = VoiceSession(websocket.send_text)
    try:
        await session.open()
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            data = message.get("bytes")
            if data is not None:
                await session.binary(data)
            else:
                await session.text(message["text"])
    except WebSocketDisconnect:  # the client went away while an event was being sent
        return
    finally:
        session.close()  # its reply task, codec and place in parley_sessions_open


class Server(uvicorn.Server):
    """uvicorn's server, printing the listening line once its socket listens."""

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            METRICS.mark_startup()
            print(listening_line(NAME, host, port, os.getpid()), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", type=loopback_host, default="127.0.0.1", help="loopback address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=port_number, required=True, help="port to listen on; 0 picks a free one")
    parser.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug", "trace"],
                        help="uvicorn's log level (default: warning; info logs every connection)")
    args = parser.parse_args()

    raise_nofile_limit(NAME)
    if (problem := libopus_warning()) is not None:
        print(f"{NAME}: /ws will reject every packet: {problem}", file=sys.stderr, flush=True)
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        loop="uvloop",
        http="httptools",
        ws="websockets-sansio",
        ws_max_size=MAX_MESSAGE,
        log_level=args.log_level,
        access_log=False,  # no log line per connection: it would cost as much as the echo
        backlog=4096,  # the same listen backlog as Parley's, so connection bursts meet the same queue
    )
    Server(config).run()


if __name__ == "__main__":
    main()
