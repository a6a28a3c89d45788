"""A real MCP server (PyPI `mcp`, its `MCPServer`) for the Swift tests of Parley's MCP client.

Started by scripts/tools/mcp-test-server.sh (which makes the pinned venv); the Swift tests start it
on a free loopback port. One process serves every variant, so a test run pays Python's start once:

    /json            stateful, JSON answers          (json_response=True)
    /sse             stateful, event-stream answers  (json_response=False)
    /stateless-json  no sessions, JSON answers       (stateless_http=True)
    /stateless-sse   no sessions, event-stream answers
    /protected       as /json, but every request needs `Authorization: Bearer TOKEN` (else 401)
    /html            a 200 HTML page, as a misconfigured URL gives

Tools: add (fast), slow (sleeps), fail (raises a ToolError, so the result has isError; with echo it quotes the
request's secrets back, as a careless server does), secret (needs the bearer token), huge (returns
N MiB of text). tools/list is paginated PAGE_SIZE tools at a time.

Every request is appended to EVENTS as one line (method, path, JSON-RPC method, which headers were
present; never a header's value), so a test can see what the client sent.

    mcp_test_server.py --port N --events FILE [--token TOKEN] [--page-size N]
"""

import argparse
import contextlib
import json
import os
import threading
import time

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ListToolsResult

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--events", required=True)
parser.add_argument("--token", default="test-token-5f2a9c77")
parser.add_argument("--page-size", type=int, default=2)
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


VARIANTS = {
    "/json": dict(json_response=True),
    "/sse": dict(json_response=False),
    "/stateless-json": dict(json_response=True, stateless_http=True),
    "/stateless-sse": dict(json_response=False, stateless_http=True),
    "/protected": dict(json_response=True),
}
apps = {path: make_server().streamable_http_app(streamable_http_path=path, **options) for path, options in VARIANTS.items()}


async def respond(send, status, content_type, body):
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", content_type)]})
    await send({"type": "http.response.body", "body": body})


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
