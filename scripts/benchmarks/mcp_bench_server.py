"""Not a load client: the MCP server (PyPI's `mcp`, a server nobody here wrote) `make bench-mcp` measures Parley against.

The MCP server `make bench-mcp` measures Parley against: PyPI's `mcp` (its `MCPServer`, stateful,
JSON answers) at /mcp, with one fast tool, and a log of the server's own time on every request, so
that what Parley adds can be told from what the server spends.

    mcp_bench_server.py --port N --log FILE

Tools: `stamp(n: int)` answers `{"n": n}` at once (the benchmark's calls: the client makes n unique
per call, so a call in Parley's events is found in this log); `pad(text: str)` is never called (a
second tool, so a list is not a single entry).

FILE gets one JSON object per request, written once the app has returned:
  method    the JSON-RPC method ("initialize", "tools/list", "tools/call", "notifications/...")
            or the HTTP method for a body-less request (DELETE)
  tag       the request's `X-Bench` header ("-" without one): the client's name for a session
  session   the MCP session id (the request's, or the one an `initialize` answer gave)
  n         a tools/call's `n` argument
  read_us   microseconds from uvicorn's read of the request's first bytes (its data_received)
            to its answer's last write (stamped just before it): the server's own time, its wait in its
            own event loop before the app ran included (the time the bytes sat in the socket
            before the loop read them is not: no server can see that)
  app_us    the part of read_us from this app being called to the answer's last byte
  (The app may go on after its answer, cleaning up: the client does not wait for that, so
  neither figure counts it.)
  tool_us   for tools/call, microseconds the tool's own function ran
  read_at, answered_at
            the read and the answer on the monotonic clock, in seconds (Python's perf_counter, which
            is CLOCK_MONOTONIC on Linux: the client's clock too)
"""

import argparse
import json
import logging
import os
import threading
import time

import uvicorn
from mcp.server.mcpserver import MCPServer
from uvicorn.protocols.http.h11_impl import H11Protocol

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--log", required=True)
args = parser.parse_args()

log = open(args.log, "a", buffering=1)  # a line at a time: the client reads it as the run goes
tool_us = {}

# The library says so at INFO for every session it opens: not what is measured.
logging.getLogger("mcp").setLevel(logging.WARNING)

server = MCPServer(name="parley-bench", version="1.0")


@server.tool(description="Answers the number it is given, at once.")
def stamp(n: int) -> str:
    began = time.perf_counter_ns()
    text = json.dumps({"n": n})
    tool_us[n] = (time.perf_counter_ns() - began) / 1000
    return text


@server.tool(description="Pads a text (never called here).")
def pad(text: str) -> str:
    return text + " "


mcp_app = server.streamable_http_app(streamable_http_path="/mcp", json_response=True)


class ReadStamped(H11Protocol):
    """uvicorn's h11 protocol, stamping each request's scope with when its first bytes were read
    (the read that made the scope; one request at a time per connection, as Parley sends them)."""

    def data_received(self, data):
        now = time.perf_counter_ns()
        super().data_received(data)
        if self.scope is not None and "bench_read_ns" not in self.scope:
            self.scope["bench_read_ns"] = now


async def app(scope, receive, send):
    if scope["type"] != "http":
        return await mcp_app(scope, receive, send)
    began = time.perf_counter_ns()
    headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    try:
        rpc = json.loads(body) if body else {}
    except ValueError:
        rpc = {}
    answered_session = None
    replayed = False

    async def replay():
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    ended = None

    async def watch(message):
        nonlocal answered_session, ended
        if message["type"] == "http.response.start":
            for name, value in message.get("headers", []):
                if name.decode().lower() == "mcp-session-id":
                    answered_session = value.decode()
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            # Before the write: once the answer is written, Parley wakes and may take this core
            # before this process runs again (two cores, three busy processes).
            ended = time.perf_counter_ns()
        await send(message)

    await mcp_app(scope, replay, watch)
    # The app may go on after its answer (the transport's clean-up): the client does not wait for that.
    ended = ended or time.perf_counter_ns()
    method = rpc.get("method") if isinstance(rpc, dict) else None
    params = (rpc.get("params") or {}) if isinstance(rpc, dict) else {}
    line = {"method": method or scope["method"], "tag": headers.get("x-bench", "-"),
            "session": headers.get("mcp-session-id") or answered_session,
            "read_us": round((ended - scope.get("bench_read_ns", began)) / 1000, 1), "app_us": round((ended - began) / 1000, 1),
            "read_at": scope.get("bench_read_ns", began) / 1e9, "answered_at": ended / 1e9}
    if method == "tools/call":
        n = (params.get("arguments") or {}).get("n")
        line["n"] = n
        line["tool_us"] = tool_us.pop(n, None)
    log.write(json.dumps(line) + "\n")


def orphaned(parent=os.getppid()):
    """Exits once the process that started this one is gone."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


threading.Thread(target=orphaned, daemon=True).start()
uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", lifespan="on", http=ReadStamped)
