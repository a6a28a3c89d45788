"""A real MCP server (PyPI `mcp`, its `MCPServer`) for the Swift tests of Parley's MCP client.

Started by scripts/tools/mcp-test-server.sh (which makes the pinned venv); the Swift tests start it
on a free loopback port. One process serves every variant, so a test run pays Python's start once:

    /json            stateful, JSON answers          (json_response=True)
    /sse             stateful, event-stream answers  (json_response=False)
    /stateless-json  no sessions, JSON answers       (stateless_http=True)
    /stateless-sse   no sessions, event-stream answers
    /protected       as /json, but every request needs `Authorization: Bearer TOKEN` (else 401)
    /html            a 200 HTML page, as a misconfigured URL gives
    /calls-401       as /json, but every tools/call is refused 401 (a token that expired after listing)

Tools: add (fast), slow (sleeps), fail (raises a ToolError, so the result has isError; with echo it quotes the
request's secrets back, as a careless server does), secret (needs the bearer token), huge (returns
N MiB of text). tools/list is paginated PAGE_SIZE tools at a time.

An agent's tools, for the end-to-end tests of sessions that run MCP (scripts/tests/mcp-session-test.sh):

    /agent           stateful, event-stream answers: get_weather (a forecast as JSON, at once; read-only)
                     and retired_tool (listed, but unknown when called: a JSON-RPC error -32602)
    /agent-slow      the same, JSON answers, get_weather taking --slow-seconds (3) to answer

get_weather notes "tool get_weather began T call=N" and "tool get_weather ended T call=N" (T: time.time(),
N: the call's number) in EVENTS, so a test can tell what a client received while it ran.

Servers that misbehave, for the same tests (none is an MCP server):

    /hang            reads the request and never answers (until the client goes)
    /endless-sse     initialize and notifications answered; any other request gets an event stream
                     of keep-alive comments and progress notifications that never ends
    /huge-list       as /endless-sse, but tools/list is answered with a JSON tool list of about
                     --huge-list-mb (50) MB, sent chunked (no Content-Length) as fast as it is read

Every request is appended to EVENTS as one line (method, path, JSON-RPC method, which headers were
present; never a header's value), so a test can see what the client sent.

    mcp_test_server.py --port N --events FILE [--token TOKEN] [--page-size N] [--slow-seconds S] [--huge-list-mb N]

The bearer token is --token, else MCP_TEST_TOKEN, else a fixed one the Swift tests know.
"""

import argparse
import contextlib
import itertools
import json
import os
import threading
import time

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import ListToolsResult, Tool, ToolAnnotations

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--events", required=True)
parser.add_argument("--token", default=os.environ.get("MCP_TEST_TOKEN") or "test-token-5f2a9c77", help="(default: MCP_TEST_TOKEN)")
parser.add_argument("--page-size", type=int, default=2)
parser.add_argument("--slow-seconds", type=float, default=3.0, help="how long /agent-slow's get_weather takes")
parser.add_argument("--huge-list-mb", type=float, default=50.0, help="the size of /huge-list's tool list")
args = parser.parse_args()

events = open(args.events, "a", buffering=1)


def note(line):
    events.write(line + "\n")


class PagingServer(MCPServer):
    """MCPServer lists every tool in one page; this one pages them, so pagination is real."""

    async def _handle_list_tools(self, ctx, params):
        tools = await self.list_tools()
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + args.page_size
        return ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)


def make_server():
    server = PagingServer(name="parley-test", version="1.0")

    @server.tool(description="Adds two numbers.")
    def add(a: float, b: float) -> str:
        return str(a + b)

    @server.tool(description="Sleeps for some seconds, then says so.")
    async def slow(ctx: Context, seconds: float) -> str:
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            note("tool slow cancelled x-test=%s " % (ctx.headers or {}).get("x-test", "-"))
            raise
        return f"slept {seconds} s"

    @server.tool(description="Always fails.")
    def fail(ctx: Context, echo: bool = False) -> str:
        headers = ctx.headers or {}
        said = ""
        if echo:
            said = " (you sent %s, x-secret %s, session %s)" % (
                headers.get("authorization"), headers.get("x-secret"), headers.get("mcp-session-id"))
        raise ToolError("the tool failed on purpose" + said)

    @server.tool(description="Tells the secret to a caller with the bearer token.")
    def secret(ctx: Context) -> str:
        if (ctx.headers or {}).get("authorization") != "Bearer " + args.token:
            raise ToolError("no valid bearer token")
        return "the secret is 42"

    @server.tool(description="Returns a long text.")
    def huge(megabytes: float) -> str:
        return "x" * int(megabytes * 1024 * 1024)

    return server


class AgentServer(PagingServer):
    """An agent's tools. It also lists `retired_tool`, which it no longer has: calling it is answered
    with the JSON-RPC error the MCP specification gives for an unknown tool (-32602), as a server
    whose tools changed after a client listed them answers."""

    async def list_tools(self):
        return await super().list_tools() + [Tool(name="retired_tool", description="A tool this server no longer has.",
                                                  input_schema={"type": "object", "properties": {}})]

    async def _handle_call_tool(self, ctx, params):
        if params.name == "retired_tool":
            raise MCPError(code=-32602, message=f"Unknown tool: {params.name}")
        return await super()._handle_call_tool(ctx, params)


calls = itertools.count(1)


def make_agent(seconds):
    server = AgentServer(name="parley-test-agent", version="1.0")

    @server.tool(description="The weather forecast for a city.", annotations=ToolAnnotations(read_only_hint=True))
    async def get_weather(city: str) -> str:
        call = next(calls)
        note("tool get_weather began %.3f call=%d city=%s" % (time.time(), call, city.replace(" ", "_")[:40]))
        if seconds:
            await anyio.sleep(seconds)
        note("tool get_weather ended %.3f call=%d" % (time.time(), call))
        return json.dumps({"city": city, "temperature_c": 21, "sky": "sunny"})

    return server


VARIANTS = {
    "/json": dict(json_response=True),
    "/sse": dict(json_response=False),
    "/stateless-json": dict(json_response=True, stateless_http=True),
    "/stateless-sse": dict(json_response=False, stateless_http=True),
    "/protected": dict(json_response=True),
    "/calls-401": dict(json_response=True),
}
apps = {path: make_server().streamable_http_app(streamable_http_path=path, **options) for path, options in VARIANTS.items()}
apps["/agent"] = make_agent(0).streamable_http_app(streamable_http_path="/agent", json_response=False)
apps["/agent-slow"] = make_agent(args.slow_seconds).streamable_http_app(streamable_http_path="/agent-slow", json_response=True)


async def respond(send, status, content_type, body):
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", content_type)]})
    await send({"type": "http.response.body", "body": body})


# --- servers that misbehave ---------------------------------------------------------------------

async def until_gone(receive):
    """Waits until the client disconnects (the request's body has been read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def answer_json(send, rpc, result):
    body = json.dumps({"jsonrpc": "2.0", "id": rpc.get("id"), "result": result}).encode()
    await respond(send, 200, b"application/json", body)


async def misbehave(path, rpc, receive, send):
    """/endless-sse and /huge-list: initialize (no session) and notifications are answered as an MCP
    server answers them; then the request the variant is about is not."""
    method = rpc.get("method")
    if method == "initialize":
        return await answer_json(send, rpc, {"protocolVersion": (rpc.get("params") or {}).get("protocolVersion", "2025-06-18"),
                                             "capabilities": {"tools": {}}, "serverInfo": {"name": "misbehaving", "version": "1.0"}})
    if "id" not in rpc:
        return await respond(send, 202, b"application/json", b"")
    gone = anyio.Event()

    async def watch():
        await until_gone(receive)
        gone.set()

    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        if path == "/huge-list" and method == "tools/list":
            await huge_list(rpc, send, gone)
        else:
            await endless(send, gone)
        group.cancel_scope.cancel()


async def endless(send, gone):
    """An event stream that never ends: comments and progress notifications, never the response."""
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]})
    step = 0
    while not gone.is_set():
        step += 1
        progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": step, "progress": step}}
        await send({"type": "http.response.body", "body": b": keep-alive\n\nevent: message\ndata: " + json.dumps(progress).encode() + b"\n\n",
                    "more_body": True})
        with anyio.move_on_after(0.25):
            await gone.wait()
    note("endless-sse client gone after %d events" % step)


async def huge_list(rpc, send, gone):
    """A tools/list answer of about --huge-list-mb MB: valid JSON, sent in chunks as fast as the
    client reads, without a Content-Length, so only a client that counts what it reads stops it."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    tool = json.dumps({"name": "t", "description": "d" * 65000, "inputSchema": {"type": "object"}}).encode()
    count = max(1, int(args.huge_list_mb * 1024 * 1024 / (len(tool) + 1)))
    sent = 0
    await send({"type": "http.response.body", "body": b'{"jsonrpc": "2.0", "id": %s, "result": {"tools": [' % json.dumps(rpc.get("id")).encode(),
                "more_body": True})
    for i in range(count):
        if gone.is_set():
            return note("huge-list client gone after %d bytes" % sent)
        piece = (b"," if i else b"") + tool.replace(b'"t"', b'"t%d"' % i, 1)
        await send({"type": "http.response.body", "body": piece, "more_body": True})
        sent += len(piece)
        await anyio.sleep(0)  # lets the watcher see a client that went
    await send({"type": "http.response.body", "body": b"]}}", "more_body": False})
    note("huge-list sent whole: %d bytes" % sent)


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        await receive()
        async with contextlib.AsyncExitStack() as stack:
            for sub in apps.values():
                await stack.enter_async_context(sub.router.lifespan_context(sub))
            await send({"type": "lifespan.startup.complete"})
            await receive()
        await send({"type": "lifespan.shutdown.complete"})
        return
    path = scope["path"]
    headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
    # The whole body first, to note its JSON-RPC method; then handed on as it came.
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
    params = rpc.get("params") or {}
    note(" ".join([
        scope["method"], path, str(rpc.get("method") or rpc.get("result") and "result" or "-"),
        "session=" + ("yes" if "mcp-session-id" in headers else "no"),
        "version=" + headers.get("mcp-protocol-version", "-"),
        "auth=" + ("yes" if "authorization" in headers else "no"),
        "x-test=" + headers.get("x-test", "-"),
        "request=" + str(params.get("requestId", "-")) if isinstance(params, dict) else "request=-",
    ]))
    if path == "/html":
        return await respond(send, 200, b"text/html", b"<!doctype html><title>Welcome</title><p>Hello</p>")
    if path == "/hang":
        await until_gone(receive)
        return note("hang client gone")
    if path in ("/endless-sse", "/huge-list"):
        return await misbehave(path, rpc, receive, send)
    if path == "/calls-401" and rpc.get("method") == "tools/call":
        return await respond(send, 401, b"application/json",
                             json.dumps({"error": "invalid_token", "error_description": "the token has expired"}).encode())
    sub = apps.get(path)
    if sub is None:
        return await respond(send, 404, b"text/plain", b"no such path")
    if path == "/protected" and headers.get("authorization") != "Bearer " + args.token:
        return await respond(send, 401, b"application/json",
                             json.dumps({"error": "invalid_token", "error_description": "a bearer token is required"}).encode())
    replayed = False

    async def replay():
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    await sub(scope, replay, send)


def orphaned(parent=os.getppid()):
    """Exits once the process that started this one is gone: a test run that ends (or crashes)
    without stopping its server leaves nothing behind."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


threading.Thread(target=orphaned, daemon=True).start()
uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", lifespan="on")
