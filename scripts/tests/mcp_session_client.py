#!/usr/bin/env python3
"""Sessions that use MCP tools through Parley, driven by the official `openai` Python SDK's realtime
client against `parley serve` (the built-in agent) and a real MCP server (scripts/tests/
mcp_test_server.py, PyPI's `mcp`). Run by scripts/tests/mcp-session-test.sh, which starts both:

    .venv-sdk/bin/python scripts/tests/mcp_session_client.py --base-url http://127.0.0.1:PORT/v1 \\
        --mcp http://127.0.0.1:MCP_PORT --closed-port N --allow-base-url http://127.0.0.1:PORT2/v1 \\
        --speech a.pcm,b.pcm,c.pcm

Each scenario is a session of its own, and they run at once:

  listing     four transports (JSON and event-stream answers, with and without MCP sessions) listed
              and called; an unchanged session.update lists nothing again; no response follows a
              call by itself, and the next one reads its output
  speech      the built-in agent chooses get_weather from speech (pcm16, espeak-ng in several voices
              and speeds; at least 2 of them must be understood)
  approvals   one call approved (it runs, its item is done, then the model answers in the same
              response), one declined (the model is told), a replayed and an unknown approval
              refused; require_approval {never: {read_only: true}}
  errors      tool_execution_error (a tool that fails, quoting back the request's secrets), http_error
              (a 401 on the call; a 401 on the list), protocol_error (an unknown tool), the bearer
              token's tool answering with `authorization`, tool_choice set by session.update
  timeout     protocol_error for a call that outlives --mcp-call-timeout
  function filler
              a client's function that runs long on a spoken session: the filler, out of band
  bad         an unreachable server, one that hangs, HTML, an endless event stream, a 50 MB tool list,
              a connector_id: each a clear failure, and the session answers afterwards
  allowlist   (against a second server run with --mcp-allow naming only /json) another URL refused
              with mcp_server_not_allowed, in session.update and in response.create

Every server event is validated against the SDK's pydantic model for its type (as
realtime_sdk_client.py does), every previous_item_id must name an item the session announced, and
no event may hold the authorization token or a header's value (they come from MCP_TOKEN and
MCP_HEADER_SECRET in the environment, never the command line).

One line per check; the last line is `mcp: N passed, M failed`. Exit status 0 only if none failed.
Every wait is bounded (`--timeout` seconds each).
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
from typing import Any, Callable

import openai
import pydantic
from openai import AsyncOpenAI
from openai.types.realtime.realtime_server_event import RealtimeServerEvent

from checks import Abort, Checks  # scripts/tests/checks.py, beside this file
from realtime_sdk_client import models_by_type, short

MODELS = models_by_type(RealtimeServerEvent)
# The names of the tools of every variant of mcp_test_server.py but the agent's, in listing order.
TEST_TOOLS = ["add", "slow", "fail", "secret", "huge"]
CALL_ORDER = ["response.created", "response.output_item.added", "conversation.item.added", "response.mcp_call_arguments.delta",
              "response.mcp_call_arguments.done", "response.mcp_call.in_progress", "response.mcp_call.completed",
              "response.output_item.done", "conversation.item.done", "response.done"]


class Session:
    """One SDK connection: bounded waits, every event validated and kept (raw) for the secrets check."""

    def __init__(self, name: str, conn: Any, checks: Checks, timeout: float, secrets: list[str]) -> None:
        self.name = name
        self.conn = conn
        self.checks = checks
        self.timeout = timeout
        self.secrets = secrets
        self.received = 0
        self.shape_errors: list[str] = []
        self.leaks: list[str] = []
        # Items announced (conversation.item.added), and previous_item_ids naming none of them.
        self.items: set[str] = set()
        self.unknown_previous: set[str] = set()

    def check(self, label: str, ok: bool, detail: str = "") -> bool:
        return self.checks.check(f"{self.name}: {label}", ok, detail)

    async def next_event(self, waiting_for: str, timeout: float | None = None) -> dict[str, Any]:
        try:
            raw = await asyncio.wait_for(self.conn.recv_bytes(), timeout or self.timeout)
        except asyncio.TimeoutError:
            raise Abort(f"no event within {timeout or self.timeout:g} s while waiting for {waiting_for}") from None
        except Exception as error:  # websockets.ConnectionClosed and friends
            raise Abort(f"connection failed while waiting for {waiting_for}: {type(error).__name__}: {error}") from None
        self.received += 1
        text = raw.decode("utf-8", "replace")
        if any(secret in text for secret in self.secrets):
            masked = text
            for secret in self.secrets:
                masked = masked.replace(secret, "<THE SECRET>")
            self.leaks.append(short(masked, 200))
        try:
            data = json.loads(raw)
        except ValueError as error:
            raise Abort(f"server sent a message that is not JSON ({error}): {short(text)}") from None
        self.conn.parse_event(raw)  # what recv() would give; it must not raise
        kind = data.get("type")
        if kind == "conversation.item.added":
            previous = data.get("previous_item_id")
            if previous is not None and previous not in self.items:
                self.unknown_previous.add(previous)
            self.items.add((data.get("item") or {}).get("id"))
        model = MODELS.get(kind) if isinstance(kind, str) else None
        if model is None:
            self.shape_errors.append(f"{kind!r}: not an event type this SDK knows; event: {short(data)}")
        else:
            try:
                model.model_validate(data)
            except pydantic.ValidationError as error:
                problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']} (got {short(e.get('input'), 80)})" for e in error.errors()[:6])
                self.shape_errors.append(f"{kind}: {problems}")
        return data

    async def until(self, done: Callable[[dict[str, Any]], bool], what: str, *, errors_ok: bool = False,
                    timeout: float | None = None) -> list[dict[str, Any]]:
        """Events up to and including the first for which `done` holds; an `error` aborts unless
        `errors_ok`. `timeout` bounds the whole wait (default: `self.timeout` per event)."""
        seen: list[dict[str, Any]] = []
        deadline = asyncio.get_running_loop().time() + timeout if timeout else None
        while True:
            left = None if deadline is None else deadline - asyncio.get_running_loop().time()
            if left is not None and left <= 0:
                raise Abort(f"{what}: not within {timeout:g} s (last: {kinds(seen[-3:])})")
            data = await self.next_event(what, left)
            seen.append(data)
            if data.get("type") == "error" and not errors_ok and not done(data):
                raise Abort(f"error while waiting for {what}: {short(data)}")
            if done(data):
                return seen

    async def expect(self, kind: str, **options: Any) -> dict[str, Any]:
        return (await self.until(lambda d: d.get("type") == kind, kind, **options))[-1]

    async def quiet(self, what: str) -> list[dict[str, Any]]:
        """Proves nothing else was coming: input_audio_buffer.clear is answered by `cleared`, and
        whatever the server sent before it is returned (a bounded way to see "no event")."""
        await self.conn.input_audio_buffer.clear()
        return (await self.until(lambda d: d.get("type") == "input_audio_buffer.cleared", what, errors_ok=True))[:-1]

    async def say(self, text: str) -> None:
        await self.conn.conversation.item.create(item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        await self.until(lambda d: d.get("type") == "conversation.item.done" and (d.get("item") or {}).get("role") == "user", "the user item")

    async def respond(self, response: dict[str, Any] | None = None, *, what: str = "the response") -> list[dict[str, Any]]:
        if response is None:
            await self.conn.response.create()
        else:
            await self.conn.response.create(response=response)
        return await self.until(lambda d: d.get("type") == "response.done", what)

    async def update(self, session: dict[str, Any]) -> dict[str, Any]:
        await self.conn.session.update(session={"type": "realtime", **session})
        return await self.expect("session.updated")

    async def listed(self, labels: list[str], *, failing: tuple[str, ...] = ()) -> dict[str, Any]:
        """Reads the listing of `labels` (each: conversation.item.added, mcp_list_tools.in_progress,
        then completed + conversation.item.done, or failed + an `error`); returns label -> outcome."""
        outcome: dict[str, Any] = {}
        item_label: dict[str, str] = {}
        progress: set[str] = set()
        errors: dict[str, dict[str, Any]] = {}

        def finished() -> bool:
            return len(outcome) == len(labels) and all(isinstance(o, dict) or (o == "failed" and label in errors) for label, o in outcome.items())

        while not finished():
            data = await self.next_event(f"the tools of {labels}")
            kind = data.get("type")
            item = data.get("item") or {}
            if kind == "conversation.item.added" and item.get("type") == "mcp_list_tools":
                item_label[item["id"]] = item.get("server_label")
                self.check(f"{item.get('server_label')}: mcp_list_tools item added, no tools yet", item.get("tools") == [], short(item))
            elif kind == "mcp_list_tools.in_progress":
                progress.add(data.get("item_id"))
            elif kind == "mcp_list_tools.completed":
                outcome.setdefault(item_label.get(data.get("item_id"), "?"), "completed-pending")
            elif kind == "conversation.item.done" and item.get("type") == "mcp_list_tools":
                label = item_label.get(item.get("id"), "?")
                if outcome.get(label) != "completed-pending":
                    raise Abort(f"conversation.item.done for {label}'s list before mcp_list_tools.completed")
                outcome[label] = item
            elif kind == "mcp_list_tools.failed":
                outcome[item_label.get(data.get("item_id"), "?")] = "failed"
            elif kind == "error" and (data.get("error") or {}).get("code") == "mcp_list_tools_failed":
                message = (data.get("error") or {}).get("message") or ""
                label = next((l for l in labels if f"'{l}'" in message), "?")
                errors[label] = data["error"]
            else:
                raise Abort(f"unexpected event while the tools of {labels} were listed: {short(data)}")
        self.check(f"listed {', '.join(labels)}: each item announced and in progress before its outcome",
                   set(item_label.values()) == set(labels) and progress == set(item_label), f"items {item_label}, in progress {len(progress)}")
        for label in labels:
            if label in failing:
                self.check(f"{label}: mcp_list_tools.failed and an error mcp_list_tools_failed", outcome.get(label) == "failed" and label in errors,
                           short(errors.get(label)))
            else:
                self.check(f"{label}: mcp_list_tools.completed, then the item with its tools", isinstance(outcome.get(label), dict),
                           f"got {short(outcome.get(label))}")
        return {"outcome": outcome, "errors": errors}


def kinds(events: list[dict[str, Any]]) -> list[str]:
    """Event types, runs of the same delta type counted once."""
    out: list[str] = []
    for event in events:
        kind = event.get("type")
        if not (kind.endswith(".delta") and out and out[-1] == kind):
            out.append(kind)
    return out


def output_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return ((events[-1].get("response") or {}).get("output") or []) if events else []


def calls_in(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [item for item in output_of(events) if item.get("type") == "mcp_call"]


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e.get("delta", "") for e in events if e.get("type") in ("response.output_text.delta", "response.output_audio_transcript.delta"))


def mcp(label: str, url: str, **more: Any) -> dict[str, Any]:
    return {"type": "mcp", "server_label": label, "server_url": url, **more}


def forced(label: str, name: str) -> dict[str, Any]:
    return {"tool_choice": {"type": "mcp", "server_label": label, "name": name}}


async def answers_later(s: Session) -> None:
    """The session goes on: a question is answered."""
    await s.say("what is 12 times 7")
    events = await s.respond(what="a later answer")
    s.check("the session goes on: a later response answers", (events[-1].get("response") or {}).get("status") == "completed"
            and "84" in text_of(events), repr(text_of(events)[:80]))


# --- the scenarios ----------------------------------------------------------------------------------

async def listing(s: Session, a: argparse.Namespace) -> None:
    variants = {"json": "/json", "sse": "/sse", "stateless_json": "/stateless-json", "stateless_sse": "/stateless-sse"}
    tools = [mcp(label, a.mcp + path, require_approval="never") for label, path in variants.items()]
    updated = await s.update({"output_modalities": ["text"], "tools": tools})
    echoed = (updated.get("session") or {}).get("tools") or []
    s.check("session.updated echoes the four MCP entries", [t.get("server_label") for t in echoed] == list(variants), short(echoed))
    result = await s.listed(list(variants))
    for label, item in result["outcome"].items():
        if not isinstance(item, dict):
            continue
        listed = item.get("tools") or []
        s.check(f"{label}: lists {TEST_TOOLS}, each with a description and an input_schema object",
                [t.get("name") for t in listed] == TEST_TOOLS and all(isinstance(t.get("description"), str) and isinstance(t.get("input_schema"), dict)
                                                                      for t in listed), short([t.get("name") for t in listed]))

    # The same session.update again: nothing is listed again.
    await s.update({"output_modalities": ["text"], "tools": tools})
    between = await s.quiet("after an unchanged session.update")
    s.check("an unchanged session.update lists nothing again", not between, short(kinds(between)))

    # A call over each transport, forced by response.create's tool_choice.
    for label in variants:
        await s.say("add 2 and 2")
        events = await s.respond(forced(label, "add"), what=f"the call of {label}'s add")
        calls = calls_in(events)
        call = calls[0] if calls else {}
        s.check(f"{label}: a call forced by tool_choice runs: mcp_call add, output 4.0",
                len(calls) == 1 and call.get("server_label") == label and call.get("name") == "add" and call.get("output") == "4.0"
                and call.get("error") is None, short(call))
        if label == "json":
            order = kinds(events)
            s.check("the call's events in order", order == CALL_ORDER, " ".join(order) if order == CALL_ORDER else f"got {order}")
            deltas = "".join(e.get("delta", "") for e in events if e.get("type") == "response.mcp_call_arguments.delta")
            done = next((e for e in events if e.get("type") == "response.mcp_call_arguments.done"), {})
            s.check("the arguments' deltas join to response.mcp_call_arguments.done's", deltas and deltas == done.get("arguments") == call.get("arguments"),
                    repr(deltas))
            # On /v1/realtime no response follows a call by itself: the client asks for it.
            between = await s.quiet("after the call's response")
            s.check("no response follows the call by itself", not any(e.get("type", "").startswith("response.") for e in between), short(kinds(between)))
            answer = await s.respond(what="the answer to the call's output")
            s.check("the next response reads the call's output", "4" in text_of(answer) and "add" in text_of(answer), repr(text_of(answer)))


async def speech(s: Session, a: argparse.Namespace, audio: bytes, results: list[bool]) -> None:
    await s.update({"output_modalities": ["text"], "tools": [mcp("agent", a.mcp + "/agent", require_approval="never")]})
    await s.listed(["agent"])
    chunk = 960  # 20 ms of 24 kHz pcm16
    spoken = audio + b"\x00" * (24000 * 2 * 3 // 2)  # and 1.5 s of silence, for server VAD to end the turn
    loop = asyncio.get_running_loop()
    started = loop.time()
    for i, start in enumerate(range(0, len(spoken), chunk)):
        await s.conn.input_audio_buffer.append(audio=base64.b64encode(spoken[start:start + chunk]).decode("ascii"))
        await asyncio.sleep(max(0.0, started + (i + 1) * 0.02 - loop.time()))
    # The turn, its transcript, and the response it started (one that calls a tool, or says something).
    events = await s.until(lambda d: d.get("type") == "response.done", "the spoken turn's response", timeout=s.timeout * 3)
    heard = next((e.get("transcript") for e in events if e.get("type") == "conversation.item.input_audio_transcription.completed"), None)
    calls = calls_in(events)
    call = calls[0] if calls else {}
    chose = call.get("name") == "get_weather" and call.get("server_label") == "agent" and call.get("error") is None and "21" in (call.get("output") or "")
    results.append(chose)
    s.checks.note(f"{s.name}: heard {heard!r}; the agent {'called ' + call.get('name', '') + ' ' + call.get('arguments', '') if calls else 'called nothing'}")
    if chose:
        answer = await s.respond(what="the answer to the forecast")
        s.check("the answer reads the forecast", "21 degrees" in text_of(answer), repr(text_of(answer)))


async def approvals(s: Session, a: argparse.Namespace) -> None:
    # require_approval left out: every call asks (the echo says "always").
    updated = await s.update({"output_modalities": ["text"], "tools": [mcp("tools", a.mcp + "/json")]})
    rule = ((updated.get("session") or {}).get("tools") or [{}])[0].get("require_approval")
    s.check("require_approval defaults to always", rule == "always", repr(rule))
    await s.listed(["tools"])

    async def ask(question: str) -> dict[str, Any]:
        await s.say(question)
        events = await s.respond(forced("tools", "add"), what="the approval request")
        output = output_of(events)
        request = output[0] if output else {}
        s.check(f"'{question}': the response's output is an mcp_approval_request, no call made",
                len(output) == 1 and request.get("type") == "mcp_approval_request" and request.get("name") == "add" and request.get("server_label") == "tools"
                and not any(e.get("type", "").startswith("response.mcp_call") for e in events), short(output))
        return request

    request = await ask("add 3 and 3")
    # Approved, with an id and previous_item_id of the client's choosing: a response starts by itself,
    # runs the call, and the model answers in it.
    await s.conn.conversation.item.create(previous_item_id=request.get("id"), item={
        "type": "mcp_approval_response", "id": "appr_yes_1", "approval_request_id": request.get("id"), "approve": True})
    events = await s.until(lambda d: d.get("type") == "response.done", "the approved call's response")
    added = next((e for e in events if e.get("type") == "conversation.item.added"), {})
    s.check("the approval is added to the conversation as given", (added.get("item") or {}).get("id") == "appr_yes_1"
            and (added.get("item") or {}).get("type") == "mcp_approval_response", short(added))
    s.check("a response starts by itself", "response.created" in kinds(events), short(kinds(events)))
    calls = calls_in(events)
    call = calls[0] if calls else {}
    s.check("the approved call runs once: mcp_call with its approval_request_id, output 6.0",
            len(calls) == 1 and call.get("approval_request_id") == request.get("id") and call.get("output") == "6.0"
            and "response.mcp_call.completed" in kinds(events), short(call))
    s.check("the model answers with it in the same response", "6" in text_of(events), repr(text_of(events)))
    finished = [(e.get("output_index"), (e.get("item") or {}).get("type")) for e in events if e.get("type") == "response.output_item.done"]
    s.check("the call's item is done before the answer's", finished == [(0, "mcp_call"), (1, "message")], f"output_item.done: {finished}")

    # Declined: the model is told.
    request2 = await ask("add 5 and 5")
    await s.conn.conversation.item.create(item={"type": "mcp_approval_response", "approval_request_id": request2.get("id"),
                                                "approve": False, "reason": "not today"})
    events = await s.until(lambda d: d.get("type") == "response.done", "the declined call's response")
    s.check("declined: no call runs, and the model is told", not calls_in(events) and "declined" in text_of(events)
            and "not today" in text_of(events), repr(text_of(events)))

    # A second answer to the first request, and an answer to no request: refused.
    await s.conn.conversation.item.create(item={"type": "mcp_approval_response", "approval_request_id": request.get("id"), "approve": True},
                                          event_id="evt_replayed")
    error = await s.expect("error", errors_ok=True)
    s.check("a replayed approval is refused (already answered)", "already answered" in ((error.get("error") or {}).get("message") or "")
            and (error.get("error") or {}).get("event_id") == "evt_replayed", short(error))
    await s.conn.conversation.item.create(item={"type": "mcp_approval_response", "approval_request_id": "item_never_asked", "approve": True},
                                          event_id="evt_unknown")
    error = await s.expect("error", errors_ok=True)
    s.check("an approval of an unknown request is refused", "item_never_asked" in ((error.get("error") or {}).get("message") or ""), short(error))
    between = await s.quiet("after the refused approvals")
    s.check("neither starts a response", not any(e.get("type", "").startswith("response.") for e in between), short(kinds(between)))

    # require_approval as an object: the tools the server marks read-only run without asking.
    await s.update({"tools": [mcp("agent", a.mcp + "/agent", require_approval={"never": {"read_only": True}})]})
    await s.listed(["agent"])
    await s.say("what's the weather in Paris")
    events = await s.respond(what="a read-only tool's call")
    s.check("require_approval {never: {read_only: true}}: get_weather (read-only) runs unasked",
            [(c.get("name"), c.get("approval_request_id")) for c in calls_in(events)] == [("get_weather", None)], short(output_of(events)))
    await s.say("use the retired tool")
    events = await s.respond(forced("agent", "retired_tool"), what="a tool not marked read-only")
    s.check("and retired_tool (not read-only) asks", [item.get("type") for item in output_of(events)] == ["mcp_approval_request"], short(output_of(events)))
    await answers_later(s)


async def errors(s: Session, a: argparse.Namespace) -> None:
    tools = [
        mcp("keyed", a.mcp + "/json", require_approval="never", authorization="Bearer " + a.token, headers={"X-Secret": a.header_secret}),
        mcp("expiring", a.mcp + "/calls-401", require_approval="never"),
        mcp("agent", a.mcp + "/agent", require_approval="never"),
        mcp("locked", a.mcp + "/protected", require_approval="never"),
        mcp("vault", a.mcp + "/protected", require_approval="never", authorization="Bearer " + a.token),
    ]
    updated = await s.update({"output_modalities": ["text"], "tools": tools})
    keyed = ((updated.get("session") or {}).get("tools") or [{}])[0]
    s.check("session.updated echoes authorization and header values as [redacted]",
            keyed.get("authorization") == "[redacted]" and keyed.get("headers") == {"X-Secret": "[redacted]"}, short(keyed))
    result = await s.listed(["keyed", "expiring", "agent", "locked", "vault"], failing=("locked",))
    locked = (result["errors"].get("locked") or {}).get("message") or ""
    s.check("locked (no token): the list's error says 401", "401" in locked, locked)

    async def call(label: str, name: str, question: str) -> dict[str, Any]:
        await s.say(question)
        events = await s.respond(forced(label, name), what=f"the call of {label}'s {name}")
        calls = calls_in(events)
        return {"call": calls[0] if calls else {}, "events": events}

    failed = await call("keyed", "fail", "fail please")
    error = failed["call"].get("error") or {}
    s.check("a tool that fails: mcp_call.failed, tool_execution_error", "response.mcp_call.failed" in kinds(failed["events"])
            and error.get("type") == "tool_execution_error" and "failed on purpose" in (error.get("message") or ""), short(error))
    s.check("the secrets it quoted back are [redacted]", "you sent [redacted], x-secret [redacted]" in (error.get("message") or ""), error.get("message", ""))

    expired = await call("expiring", "add", "add 1 and 1")
    error = expired["call"].get("error") or {}
    s.check("a call refused 401: http_error, code 401", error.get("type") == "http_error" and error.get("code") == 401, short(error))

    retired = await call("agent", "retired_tool", "use the retired tool")
    error = retired["call"].get("error") or {}
    s.check("an unknown tool: protocol_error, code -32602", error.get("type") == "protocol_error" and error.get("code") == -32602
            and "Unknown tool" in (error.get("message") or ""), short(error))

    # The bearer token's tool, chosen by the session's tool_choice.
    updated = await s.update({"tool_choice": {"type": "mcp", "server_label": "vault", "name": "secret"}})
    s.check("session.update sets tool_choice to an MCP tool", (updated.get("session") or {}).get("tool_choice") == {"type": "mcp", "server_label": "vault", "name": "secret"},
            short((updated.get("session") or {}).get("tool_choice")))
    between = await s.quiet("after a session.update of tool_choice alone")
    s.check("a session.update without tools lists nothing", not between, short(kinds(between)))
    await s.say("tell me the secret")
    events = await s.respond(what="the session's tool_choice")
    calls = calls_in(events)
    s.check("with authorization, the bearer-token tool answers", len(calls) == 1 and calls[0].get("server_label") == "vault"
            and calls[0].get("output") == "the secret is 42", short(calls))
    await s.update({"tool_choice": "auto"})
    await answers_later(s)


async def timeout(s: Session, a: argparse.Namespace) -> None:
    await s.update({"output_modalities": ["text"], "tools": [mcp("sleepy", a.mcp + "/sse", require_approval="never")]})
    await s.listed(["sleepy"])
    await s.say("sleep for 30 seconds")
    await s.conn.response.create(response=forced("sleepy", "slow"))
    events = await s.until(lambda d: d.get("type") == "response.done", "the call that times out", timeout=s.timeout * 2)
    calls = calls_in(events)
    error = (calls[0].get("error") if calls else None) or {}
    s.check("a call past --mcp-call-timeout: mcp_call.failed, protocol_error -32001", "response.mcp_call.failed" in kinds(events)
            and error.get("type") == "protocol_error" and error.get("code") == -32001 and "within" in (error.get("message") or ""), short(error))
    await answers_later(s)


STOCK_TOOL = {"type": "function", "name": "get_stock_price", "description": "The price of a company's shares.",
              "parameters": {"type": "object", "properties": {"company": {"type": "string"}}, "required": ["company"]}}


async def function_filler(s: Session, a: argparse.Namespace) -> None:
    """A client's function that takes its time, on a spoken session: the server says the filler as a
    response of its own, out of band (metadata {"parley": "filler"}, in no conversation)."""
    await s.update({"output_modalities": ["audio"], "tools": [STOCK_TOOL]})
    await s.say("what is the stock price of Acme")
    events = await s.respond(what="the function call")
    call = next((item for item in output_of(events) if item.get("type") == "function_call"), {})
    s.check("the agent calls the client's function", call.get("name") == "get_stock_price", short(output_of(events)))
    # The client's function "runs": nothing is sent until the filler has been said.
    events = await s.until(lambda d: d.get("type") == "response.done", "the filler", timeout=s.timeout * 2)
    response = events[-1].get("response") or {}
    said = "".join(e.get("delta", "") for e in events if e.get("type") == "response.output_audio_transcript.delta")
    s.check("a function running past --tool-filler-after: the filler, out of band", response.get("metadata") == {"parley": "filler"}
            and response.get("conversation_id") is None and "moment" in said, f"metadata {response.get('metadata')}, said {said!r}")
    s.check("the filler is spoken", any(e.get("type") == "response.output_audio.delta" for e in events), short(kinds(events)))
    s.check("and is not in the conversation", not any(e.get("type") == "conversation.item.added" for e in events), short(kinds(events)))
    await s.conn.conversation.item.create(item={"type": "function_call_output", "call_id": call.get("call_id"), "output": json.dumps({"price": 42})})
    await s.expect("conversation.item.done")
    answer = await s.respond(what="the answer with the function's output")
    transcript = "".join(e.get("delta", "") for e in answer if e.get("type") == "response.output_audio_transcript.delta")
    s.check("then the answer reads the output", "42" in transcript, repr(transcript))


async def bad(s: Session, a: argparse.Namespace) -> None:
    servers = {
        "unreachable": f"http://127.0.0.1:{a.closed_port}/mcp",
        "hangs": a.mcp + "/hang",
        "html": a.mcp + "/html",
        "endless": a.mcp + "/endless-sse",
        "huge": a.mcp + "/huge-list",
    }
    await s.update({"output_modalities": ["text"], "tools": [mcp(label, url) for label, url in servers.items()]})
    result = await s.listed(list(servers), failing=tuple(servers))
    said = {label: (error.get("message") or "") for label, error in result["errors"].items()}
    reasons = {
        "unreachable": "could not be reached",
        "hangs": "did not answer",
        "html": "not an MCP server",
        "endless": "did not answer",
        "huge": "larger than the limit",
    }
    for label, reason in reasons.items():
        s.check(f"{label}: the error says why ({reason!r})", reason in said.get(label, ""), said.get(label, ""))
    await answers_later(s)
    # A hosted connector: refused, and the session keeps its settings.
    await s.conn.session.update(session={"type": "realtime", "tools": [{"type": "mcp", "server_label": "drive", "connector_id": "connector_googledrive"}]},
                                event_id="evt_connector")
    error = await s.expect("error", errors_ok=True)
    detail = error.get("error") or {}
    s.check("a connector_id is refused with an error naming it", detail.get("type") == "invalid_request_error" and "connector_id" in (detail.get("param") or "")
            and detail.get("event_id") == "evt_connector", short(detail))
    await answers_later(s)


async def allowlist(s: Session, a: argparse.Namespace) -> None:
    await s.conn.session.update(session={"type": "realtime", "output_modalities": ["text"],
                                         "tools": [mcp("other", a.mcp + "/sse", require_approval="never")]}, event_id="evt_not_allowed")
    error = await s.expect("error", errors_ok=True)
    detail = error.get("error") or {}
    s.check("a URL outside --mcp-allow is refused: mcp_server_not_allowed", detail.get("code") == "mcp_server_not_allowed"
            and detail.get("param") == "session.tools[0].server_url" and detail.get("event_id") == "evt_not_allowed", short(detail))
    updated = await s.update({"output_modalities": ["text"], "tools": [mcp("allowed", a.mcp + "/json", require_approval="never")]})
    s.check("one inside it is taken", [t.get("server_label") for t in (updated.get("session") or {}).get("tools") or []] == ["allowed"])
    await s.listed(["allowed"])
    await s.say("add 2 and 2")
    await s.conn.response.create(response={"tools": [mcp("other", a.mcp + "/sse")], "tool_choice": "auto"}, event_id="evt_response_not_allowed")
    error = await s.expect("error", errors_ok=True)
    detail = error.get("error") or {}
    s.check("and in response.create's tools", detail.get("code") == "mcp_server_not_allowed" and detail.get("event_id") == "evt_response_not_allowed", short(detail))
    events = await s.respond(forced("allowed", "add"), what="a call of the allowed server")
    s.check("the allowed server's tool runs", [c.get("output") for c in calls_in(events)] == ["4.0"], short(calls_in(events)))


# --- running them -----------------------------------------------------------------------------------

async def run(checks: Checks, name: str, base_url: str, scenario: Callable[..., Any], a: argparse.Namespace, *more: Any) -> None:
    client = AsyncOpenAI(base_url=base_url, api_key="sk-parley-mcp-test", max_retries=0)
    secrets = [a.token, a.header_secret]
    try:
        async with asyncio.timeout(a.timeout * 12):
            manager = client.realtime.connect(model="gpt-realtime")
            try:
                conn = await asyncio.wait_for(manager.__aenter__(), a.timeout)
            except Exception as error:
                raise Abort(f"connect failed: {type(error).__name__}: {error}") from None
            s = Session(name, conn, checks, a.timeout, secrets)
            try:
                await s.expect("session.created")
                await scenario(s, a, *more)
            finally:
                try:
                    await asyncio.wait_for(manager.__aexit__(None, None, None), a.timeout)
                except Exception as error:
                    checks.note(f"{name}: close: {type(error).__name__}: {error}")
                if s.received:
                    checks.check(f"{name}: all {s.received} server events validate against the SDK's models", not s.shape_errors,
                                 "\n       ".join([""] + s.shape_errors[:10]))
                    checks.check(f"{name}: no event holds the token or a header's value", not s.leaks, "\n       ".join([""] + s.leaks[:5]))
                    checks.check(f"{name}: every previous_item_id names an item the session announced", not s.unknown_previous,
                                 f"never announced: {sorted(s.unknown_previous)[:3]}" if s.unknown_previous else "")
    except Abort as error:
        checks.check(f"{name}: ran to the end", False, str(error))
    except TimeoutError:
        checks.check(f"{name}: ran to the end", False, f"did not finish within {a.timeout * 12:g} s")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="http://127.0.0.1:PORT/v1 (parley serve, loopback: any MCP URL allowed)")
    parser.add_argument("--allow-base-url", required=True, help="a second server, run with --mcp-allow naming MCP/json only")
    parser.add_argument("--mcp", required=True, help="http://127.0.0.1:PORT of mcp_test_server.py")
    parser.add_argument("--closed-port", type=int, required=True, help="a loopback port nothing listens on")
    parser.add_argument("--speech", required=True, help="comma-separated raw 24 kHz pcm16 files, each asking for the weather in Paris")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds for each wait")
    a = parser.parse_args()
    a.token = os.environ.get("MCP_TOKEN", "")
    a.header_secret = os.environ.get("MCP_HEADER_SECRET", "")
    if len(a.token) < 16 or len(a.header_secret) < 16:
        print("MCP_TOKEN and MCP_HEADER_SECRET must hold the test's secrets (16 characters or more)", file=sys.stderr)
        return 2
    checks = Checks()
    print(f"openai {openai.__version__}, pydantic {pydantic.VERSION}, base_url {a.base_url}, mcp {a.mcp}", flush=True)

    speeches = []
    for path in a.speech.split(","):
        with open(path, "rb") as file:
            speeches.append((os.path.basename(path), file.read()))
    understood: list[bool] = []
    await asyncio.gather(
        run(checks, "listing", a.base_url, listing, a),
        run(checks, "approvals", a.base_url, approvals, a),
        run(checks, "errors", a.base_url, errors, a),
        run(checks, "timeout", a.base_url, timeout, a),
        run(checks, "bad", a.base_url, bad, a),
        run(checks, "function filler", a.base_url, function_filler, a),
        run(checks, "allowlist", a.allow_base_url, allowlist, a),
        *[run(checks, f"speech {name}", a.base_url, speech, a, audio, understood) for name, audio in speeches],
    )
    wanted = max(1, len(speeches) - 1)
    checks.check(f"speech: the agent chose get_weather from at least {wanted} of {len(speeches)} voices", sum(understood) >= wanted,
                 f"{sum(understood)} of {len(speeches)}")
    print(f"mcp: {checks.passed} passed, {checks.failed} failed", flush=True)
    return 0 if checks.failed == 0 and checks.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
