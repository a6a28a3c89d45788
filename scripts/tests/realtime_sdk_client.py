#!/usr/bin/env python3
"""A real round trip against Parley with the official `openai` Python SDK's realtime clients.

Run by scripts/tests/realtime-sdk-test.sh (which makes the venv and starts the server):

    .venv-sdk/bin/python scripts/tests/realtime_sdk_client.py --base-url http://127.0.0.1:PORT/v1

For the GA client (`client.realtime.connect`) and, if the installed SDK still has it, the beta
client (`client.beta.realtime.connect`, `OpenAI-Beta: realtime=v1`) it connects, waits for
`session.created`, updates the session, asks the built-in agent "what is 12 times 7" as a text
item, streams the reply to `response.done`, appends a second of silence and clears it, and sends
malformed events (each must get an `error` event and leave the connection open).

With `--g711 FILE` it instead speaks FILE (raw 8 kHz µ-law) in `audio/pcmu` both ways through the
GA client and checks the turn, its transcript and the µ-law reply (see `g711_round_trip`).

Every server event is also validated against the SDK's own pydantic model for its `type`, so a
field Parley names or shapes differently from what the SDK declares fails a check here, even
though the SDK's `recv()` itself would accept it (it builds models without validating).

One line per check; the last line is `sdk: N passed, M failed`. Exit status 0 only if none failed.
Every wait is bounded (`--timeout` seconds each, default 10).
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import json
import ssl
import sys
import typing
from typing import Any, Callable

import openai
import pydantic
from openai import AsyncOpenAI
from checks import Abort, Checks  # scripts/tests/checks.py, beside this file

QUESTION = "what is 12 times 7"
ANSWER = "84"
INSTRUCTIONS = "You are Parley's SDK round-trip test. Answer briefly."
# One second of silence: pcm16 little-endian, mono, 24 kHz.
SILENCE_1S = base64.b64encode(b"\x00\x00" * 24000).decode("ascii")




def models_by_type(union: Any) -> dict[str, type[pydantic.BaseModel]]:
    """Maps each event `type` literal of the SDK's server-event union to its model class."""
    inner = typing.get_args(union)[0] if typing.get_origin(union) is typing.Annotated else union
    table: dict[str, type[pydantic.BaseModel]] = {}
    for cls in typing.get_args(inner):
        for literal in typing.get_args(cls.model_fields["type"].annotation):
            table[literal] = cls
    return table


def validate(models: dict[str, type[pydantic.BaseModel]], event: dict[str, Any], problems: list[str]) -> None:
    """Adds to `problems` why `event` is not an event of the SDK's, if it is not."""
    kind = event.get("type")
    model = models.get(kind)
    try:
        if model is None:
            raise ValueError("not an event of the SDK's")
        model.model_validate(event)
    except (pydantic.ValidationError, ValueError) as error:
        problems.append(f"{kind}: {str(error)[:200]}")


def short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[:limit] + "..."


class Session:
    """One SDK connection with bounded waits and validation of everything received."""

    def __init__(self, name: str, conn: Any, models: dict[str, type[pydantic.BaseModel]], checks: Checks, timeout: float) -> None:
        self.name = name
        self.conn = conn
        self.models = models
        self.checks = checks
        self.timeout = timeout
        self.received = 0
        self.shape_errors: list[str] = []

    async def next_event(self, waiting_for: str) -> tuple[dict[str, Any], Any]:
        """The next event as raw JSON and as the SDK parses it (`parse_event`, what `recv()` returns)."""
        try:
            raw = await asyncio.wait_for(self.conn.recv_bytes(), self.timeout)
        except asyncio.TimeoutError:
            raise Abort(f"no event within {self.timeout:g} s while waiting for {waiting_for}") from None
        except Exception as error:  # websockets.ConnectionClosed and friends
            raise Abort(f"connection failed while waiting for {waiting_for}: {type(error).__name__}: {error}") from None
        self.received += 1
        try:
            data = json.loads(raw)
        except ValueError as error:
            raise Abort(f"server sent a message that is not JSON ({error}): {short(raw.decode('utf-8', 'replace'))}") from None
        parsed = self.conn.parse_event(raw)
        self.validate(data)
        return data, parsed

    def validate(self, data: Any) -> None:
        kind = data.get("type") if isinstance(data, dict) else None
        model = self.models.get(kind) if isinstance(kind, str) else None
        if model is None:
            self.shape_errors.append(f"{kind!r}: not an event type this SDK knows; event: {short(data)}")
            return
        try:
            model.model_validate(data)
        except pydantic.ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']} (got {short(e.get('input'), 80)})" for e in error.errors()[:6])
            self.shape_errors.append(f"{kind}: {problems}")

    async def expect(self, wanted: str, *, allow: Callable[[dict[str, Any]], bool] = lambda _: False) -> tuple[dict[str, Any], Any]:
        """Reads until an event of type `wanted`; an `error` or any other event not allowed aborts."""
        while True:
            data, parsed = await self.next_event(wanted)
            if data.get("type") == wanted:
                return data, parsed
            if data.get("type") == "error" or not allow(data):
                raise Abort(f"expected {wanted}, got {short(data)}")

    async def expect_error(self, label: str, code: str, event_id: str | None) -> None:
        data, parsed = await self.expect("error")
        error = data.get("error") or {}
        ok = error.get("code") == code and error.get("type") == "invalid_request_error"
        if event_id is not None:
            ok = ok and error.get("event_id") == event_id
        self.checks.check(f"{self.name}: {label} -> error {code}", ok and getattr(parsed, "type", None) == "error",
                          f"{error.get('message')}" if ok else f"got {short(data)}")


async def response_events(s: Session, during: str) -> typing.AsyncIterator[tuple[dict[str, Any], Any]]:
    """Events as `next_event` gives them, through the next `response.done` (the last); an `error`
    event aborts."""
    while True:
        data, parsed = await s.next_event("response.done")
        if data.get("type") == "error":
            raise Abort(f"error during {during}: {short(data)}")
        yield data, parsed
        if data.get("type") == "response.done":
            return


async def round_trip(s: Session, *, ga: bool, model: str) -> None:
    c = s.checks
    n = s.name
    text_delta = "response.output_text.delta" if ga else "response.text.delta"
    text_done = "response.output_text.done" if ga else "response.text.done"

    # session.created: the first event.
    data, parsed = await s.next_event("session.created")
    session = data.get("session") or {}
    c.check(f"{n}: session.created first", data.get("type") == "session.created" and getattr(parsed, "type", None) == "session.created",
            f"session {session.get('id')}, model {session.get('model')}" if data.get("type") == "session.created" else f"got {short(data)}")
    if data.get("type") != "session.created":
        raise Abort("no session.created")
    c.check(f"{n}: session model is the ?model= asked for", session.get("model") == model, f"got {session.get('model')!r}")
    if ga:
        fmt = ((session.get("audio") or {}).get("input") or {}).get("format")
        c.check(f"{n}: session.audio.input.format is audio/pcm 24000", fmt == {"type": "audio/pcm", "rate": 24000}, f"got {fmt!r}")
    else:
        c.check(f"{n}: session.input_audio_format is pcm16", session.get("input_audio_format") == "pcm16", f"got {session.get('input_audio_format')!r}")

    # session.update -> session.updated
    if ga:
        await s.conn.session.update(session={"type": "realtime", "instructions": INSTRUCTIONS, "output_modalities": ["text"]})
    else:
        await s.conn.session.update(session={"instructions": INSTRUCTIONS, "modalities": ["text"]})
    data, _ = await s.expect("session.updated")
    session = data.get("session") or {}
    modalities = session.get("output_modalities" if ga else "modalities")
    c.check(f"{n}: session.update -> session.updated (text only, instructions set)",
            modalities == ["text"] and session.get("instructions") == INSTRUCTIONS,
            f"modalities {modalities!r}, instructions {session.get('instructions')!r}")

    # A user text item, then a response.
    await s.conn.conversation.item.create(item={
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": QUESTION}],
    })
    created = "conversation.item.added" if ga else "conversation.item.created"
    data, _ = await s.expect(created)
    item = data.get("item") or {}
    content = item.get("content") or [{}]
    c.check(f"{n}: conversation.item.create -> {created}",
            item.get("role") == "user" and content[0].get("text") == QUESTION, f"item {item.get('id')}")
    if ga:
        data, _ = await s.expect("conversation.item.done")
        c.check(f"{n}: then conversation.item.done", (data.get("item") or {}).get("id") == item.get("id"), short(data))

    await s.conn.response.create()
    seen: list[str] = []
    deltas: list[str] = []
    done_text = None
    async for data, parsed in response_events(s, "the response"):
        kind = data.get("type")
        seen.append(kind)
        if kind == text_delta:
            deltas.append(getattr(parsed, "delta", None) or "")
        elif kind == text_done:
            done_text = data.get("text")
    response = data.get("response") or {}
    text = "".join(deltas)
    # The assistant item is announced right after response.output_item.added (GA: conversation.item.added,
    # and conversation.item.done after response.output_item.done; beta: conversation.item.created).
    if ga:
        expected_order = ["response.created", "response.output_item.added", "conversation.item.added", "response.content_part.added", text_delta,
                          text_done, "response.content_part.done", "response.output_item.done", "conversation.item.done", "response.done"]
    else:
        expected_order = ["response.created", "response.output_item.added", "conversation.item.created", "response.content_part.added", text_delta,
                          text_done, "response.content_part.done", "response.output_item.done", "response.done"]
    order = [k for i, k in enumerate(seen) if k != text_delta or (i == 0 or seen[i - 1] != text_delta)]
    c.check(f"{n}: response events in order", order == expected_order, " ".join(order) if order == expected_order else f"got {order}")
    c.check(f"{n}: {text_delta} deltas joined contain {ANSWER!r}", bool(deltas) and ANSWER in text, f"{len(deltas)} deltas: {text!r}")
    c.check(f"{n}: {text_done} text equals the joined deltas", done_text == text, f"got {done_text!r}")
    c.check(f"{n}: response.done status completed", response.get("status") == "completed",
            f"got {response.get('status')!r} {short(response.get('status_details'))}")
    usage = response.get("usage") or {}
    c.check(f"{n}: response.done usage present", isinstance(usage.get("total_tokens"), int) and usage["total_tokens"] > 0
            and usage.get("total_tokens") == (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0), short(usage))
    output = response.get("output") or [{}]
    parts = output[0].get("content") or [{}]
    part_type = "output_text" if ga else "text"
    c.check(f"{n}: response.done output holds the {part_type} reply", parts[0].get("type") == part_type and parts[0].get("text") == text,
            f"got {short(parts[0])}")

    # A second of silence, then clear it.
    await s.conn.input_audio_buffer.append(audio=SILENCE_1S)
    await s.conn.input_audio_buffer.clear()
    # With server VAD, silence must not start speech; any event but these two fails.
    await s.expect("input_audio_buffer.cleared")
    c.check(f"{n}: input_audio_buffer.append 1 s silence + clear -> input_audio_buffer.cleared", True)

    # Malformed events: each gets an error event, and the session goes on.
    await s.conn.send({"type": "parley.no_such_event", "event_id": "evt_sdk_unknown"})
    await s.expect_error("unknown event type (sent as a dict)", "unknown_event", "evt_sdk_unknown")
    await s.conn.send({"type": "conversation.item.create", "event_id": "evt_sdk_noitem"})
    await s.expect_error("conversation.item.create without item", "missing_field", "evt_sdk_noitem")
    send_raw = getattr(s.conn, "send_raw", None)
    if send_raw is not None:
        await send_raw('{"type": "session.update", "session": ')
        await s.expect_error("text that is not JSON (send_raw)", "invalid_json", None)
    else:
        c.note(f"{n}: this client has no send_raw; invalid JSON not sent")
    await s.conn.input_audio_buffer.clear()
    await s.expect("input_audio_buffer.cleared")
    c.check(f"{n}: connection still open after the errors", True, "input_audio_buffer.clear answered")


async def g711_round_trip(s: Session, *, ga: bool, model: str, speech: bytes) -> None:
    """Telephone audio both ways (GA only): `audio/pcmu` in and out set in one session.update with
    the instructions, spoken µ-law (8 kHz, made by espeak-ng and sox) appended through the SDK in
    20 ms chunks at real-time pace, then a second of µ-law silence so server VAD ends the turn.
    The turn must be heard (speech_started/stopped, a transcript), and the reply's audio must come
    as µ-law deltas of 160 bytes (20 ms); after a second of it the reply is cancelled, as a caller
    barging in would, which keeps the run short. The server needs a recogniser and a synthesiser."""
    c = s.checks
    n = s.name
    await s.expect("session.created")
    pcmu = {"type": "audio/pcmu"}
    await s.conn.session.update(session={"type": "realtime", "instructions": INSTRUCTIONS, "output_modalities": ["audio"],
                                         "audio": {"input": {"format": pcmu}, "output": {"format": pcmu}}})
    data, _ = await s.expect("session.updated")
    audio = (data.get("session") or {}).get("audio") or {}
    formats = ((audio.get("input") or {}).get("format"), (audio.get("output") or {}).get("format"))
    c.check(f"{n}: session.updated reports audio/pcmu both ways and the instructions",
            formats == (pcmu, pcmu) and (data.get("session") or {}).get("instructions") == INSTRUCTIONS, f"formats {formats!r}")

    chunk = 160  # 20 ms of 8 kHz µ-law
    audio_in = speech + b"\xff" * 8000  # µ-law silence (0xFF is zero)
    started = asyncio.get_running_loop().time()
    for i, start in enumerate(range(0, len(audio_in), chunk)):
        await s.conn.input_audio_buffer.append(audio=base64.b64encode(audio_in[start:start + chunk]).decode("ascii"))
        # Real-time pace, as a phone line delivers it.
        await asyncio.sleep(max(0.0, started + (i + 1) * 0.02 - asyncio.get_running_loop().time()))

    seen: list[str] = []
    deltas: list[bytes] = []
    transcript = None
    cancelled = False
    async for data, _ in response_events(s, "the G.711 turn"):
        kind = data.get("type")
        seen.append(kind)
        if kind == "conversation.item.input_audio_transcription.completed":
            transcript = data.get("transcript")
        if kind == "response.output_audio.delta":
            deltas.append(base64.b64decode(data.get("delta") or ""))
            if len(deltas) == 50 and not cancelled:
                await s.conn.response.cancel()
                cancelled = True
    turn = ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped", "input_audio_buffer.committed"]
    c.check(f"{n}: the µ-law turn was heard (speech_started, speech_stopped, committed)", [k for k in seen if k in turn] == turn, " ".join(seen[:6]))
    # pocketsphinx hears espeak-ng poorly, through the telephone band more so ("What is the weather
    # like today", made so, comes back as "would it not with like it and any"); this comes through.
    c.check(f"{n}: its transcript is the greeting", bool(transcript) and "morning" in transcript, f"heard {transcript!r}")
    sizes = sorted({len(d) for d in deltas})
    c.check(f"{n}: the reply came as response.output_audio.delta of 160 bytes (20 ms of µ-law)", len(deltas) >= 50 and sizes == [160],
            f"{len(deltas)} deltas, {len(deltas) * 0.02:.2f} s, sizes {sizes}")
    status = (data.get("response") or {}).get("status")
    c.check(f"{n}: cancelled after a second of it: response.output_audio.done, response.done cancelled",
            "response.output_audio.done" in seen and status == "cancelled", f"status {status!r}")
    data, _ = await s.expect("conversation.item.truncated")
    played = data.get("audio_end_ms")
    # Sent paced to real time with a 200 ms lead: of the second received, about 800 ms had played.
    c.check(f"{n}: conversation.item.truncated says how much was played", isinstance(played, int) and 600 <= played <= len(deltas) * 20,
            f"audio_end_ms {played} of {len(deltas) * 20} ms sent")


async def transcription_round_trip(s: Session, *, ga: bool, model: str, speech: bytes) -> None:
    """A transcription session (GA, `?intent=transcription`): `session.created` with the
    transcription session object, a `session.update` with `type: "transcription"`, µ-law speech
    with near_field noise reduction and server VAD, then the turn's events and transcript, and no
    response at all; `response.create` is refused with an `error`. Every event is checked against
    the SDK's models as in the other round trips (the GA session union's transcription member
    included). The server needs a recogniser."""
    c = s.checks
    n = s.name
    data, _ = await s.expect("session.created")
    created = data.get("session") or {}
    c.check(f"{n}: session.created is a transcription session", created.get("type") == "transcription"
            and created.get("object") == "realtime.transcription_session", short(created))
    pcmu = {"type": "audio/pcmu"}
    await s.conn.session.update(session={"type": "transcription", "audio": {"input": {
        "format": pcmu, "noise_reduction": {"type": "near_field"}, "transcription": {"model": "whisper-1", "language": "en"},
        "turn_detection": {"type": "server_vad", "silence_duration_ms": 500}}}})
    data, _ = await s.expect("session.updated")
    audio_input = ((data.get("session") or {}).get("audio") or {}).get("input") or {}
    c.check(f"{n}: session.updated reports audio/pcmu and near_field noise reduction",
            audio_input.get("format") == pcmu and audio_input.get("noise_reduction") == {"type": "near_field"}, short(audio_input))

    chunk = 160  # 20 ms of 8 kHz µ-law
    audio_in = speech + b"\xff" * 8000
    started = asyncio.get_running_loop().time()
    for i, start in enumerate(range(0, len(audio_in), chunk)):
        await s.conn.input_audio_buffer.append(audio=base64.b64encode(audio_in[start:start + chunk]).decode("ascii"))
        await asyncio.sleep(max(0.0, started + (i + 1) * 0.02 - asyncio.get_running_loop().time()))

    seen: list[str] = []
    while "conversation.item.input_audio_transcription.completed" not in seen:
        data, _ = await s.next_event("conversation.item.input_audio_transcription.completed")
        if data.get("type") == "error":
            raise Abort(f"error during the transcription turn: {short(data)}")
        seen.append(data.get("type"))
    transcript = data.get("transcript")
    turn = ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped", "input_audio_buffer.committed"]
    c.check(f"{n}: the turn was heard (speech_started, speech_stopped, committed)", [k for k in seen if k in turn] == turn, " ".join(seen))
    c.check(f"{n}: its transcript is the greeting", bool(transcript) and "morning" in transcript, f"heard {transcript!r}")
    await s.conn.response.create(event_id="no_response")
    data, _ = await s.expect("error")
    error = data.get("error") or {}
    seen.append("error")
    c.check(f"{n}: response.create is refused", error.get("code") == "invalid_session_type" and error.get("event_id") == "no_response", short(data))
    c.check(f"{n}: no response.* event at all", not any(k.startswith("response.") for k in seen), " ".join(seen))


WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


async def tool_round_trip(s: Session, *, ga: bool, model: str) -> None:
    """A function call through the SDK's typed calls: tools declared, the model's call streamed,
    the output sent back as a function_call_output item, the answer using it."""
    c = s.checks
    n = s.name
    text_delta = "response.output_text.delta" if ga else "response.text.delta"
    await s.expect("session.created")
    update: dict[str, Any] = {"tools": [WEATHER_TOOL], "tool_choice": "auto", "instructions": INSTRUCTIONS}
    if ga:
        update["type"] = "realtime"
        update["output_modalities"] = ["text"]
    else:
        update["modalities"] = ["text"]
    await s.conn.session.update(session=update)
    data, _ = await s.expect("session.updated")
    tools = (data.get("session") or {}).get("tools") or []
    c.check(f"{n}: session.updated reports the tool", [t.get("name") for t in tools] == ["get_weather"], f"got {short(tools)}")

    created = "conversation.item.added" if ga else "conversation.item.created"
    await s.conn.conversation.item.create(item={"type": "message", "role": "user",
                                                "content": [{"type": "input_text", "text": "what's the weather in Paris"}]})
    await s.expect(created)
    await s.conn.response.create()
    deltas: list[str] = []
    call: dict[str, Any] | None = None
    while True:
        data, parsed = await s.next_event("response.done")
        kind = data.get("type")
        if kind == "error":
            raise Abort(f"error during the call: {short(data)}")
        if kind == "response.function_call_arguments.delta":
            deltas.append(data.get("delta", ""))
        if kind == "response.function_call_arguments.done":
            call = data
            c.check(f"{n}: the SDK parses function_call_arguments.done", getattr(parsed, "call_id", None) == data.get("call_id"))
        if kind == "response.done":
            response = data.get("response") or {}
            break
    if call is None:
        raise Abort("no response.function_call_arguments.done")
    arguments = json.loads(call.get("arguments") or "{}")
    c.check(f"{n}: the model called get_weather for Paris", call.get("name") == "get_weather" and arguments.get("city") == "Paris",
            f"got {short(call)}")
    c.check(f"{n}: the arguments streamed as deltas", "".join(deltas) == call.get("arguments"), f"deltas {deltas!r}")
    output = response.get("output") or []
    c.check(f"{n}: response.done holds the function_call item",
            response.get("status") == "completed" and any(item.get("type") == "function_call" and item.get("call_id") == call.get("call_id") for item in output),
            f"got {short(response)}")

    await s.conn.conversation.item.create(item={"type": "function_call_output", "call_id": call["call_id"],
                                                "output": json.dumps({"temperature_c": 21, "sky": "clear"})})
    data, _ = await s.expect(created)
    c.check(f"{n}: function_call_output accepted", (data.get("item") or {}).get("type") == "function_call_output", f"got {short(data)}")
    await s.conn.response.create()
    text = ""
    while True:
        data, _ = await s.next_event("response.done")
        if data.get("type") == "error":
            raise Abort(f"error after the output: {short(data)}")
        if data.get("type") == text_delta:
            text += data.get("delta", "")
        if data.get("type") == "response.done":
            break
    c.check(f"{n}: the answer uses the tool's output", "21" in text and "get_weather" in text, f"got {text!r}")

    # An output for a call that was never made is refused, and the session goes on.
    await s.conn.conversation.item.create(item={"type": "function_call_output", "call_id": "call_never_made", "output": "x"},
                                          event_id="evt_sdk_badcall")
    await s.expect_error("function_call_output for an unknown call_id", "invalid_value", "evt_sdk_badcall")


async def client_secret_flow(checks: Checks, base_url: str, model: str, options: dict[str, Any], timeout: float) -> None:
    """The SDK's ephemeral-secret flow: a server with the real key mints a secret
    (client.realtime.client_secrets.create), a client holding only the secret opens a session,
    which keeps the instructions the secret pinned."""
    c = checks
    client = AsyncOpenAI(base_url=base_url, api_key="sk-parley-sdk-test", max_retries=0)
    pinned = "Answer in one word."
    try:
        secret = await asyncio.wait_for(client.realtime.client_secrets.create(
            expires_after={"anchor": "created_at", "seconds": 120},
            session={"type": "realtime", "model": model, "instructions": pinned}), timeout)
    except Exception as error:
        c.check("client_secrets.create", False, f"{type(error).__name__}: {error}")
        return
    c.check("client_secrets.create gives an ek_ secret", secret.value.startswith("ek_") and secret.expires_at > 0,
            f"expires_at {secret.expires_at}, session instructions {getattr(secret.session, 'instructions', None)!r}")
    ephemeral = AsyncOpenAI(base_url=base_url, api_key=secret.value, max_retries=0)
    try:
        async with asyncio.timeout(timeout * 3):
            async with ephemeral.realtime.connect(model=model, websocket_connection_options=options) as conn:
                created = json.loads(await asyncio.wait_for(conn.recv_bytes(), timeout))
                session = created.get("session") or {}
                c.check("the secret opens a session with the pinned instructions",
                        created.get("type") == "session.created" and session.get("instructions") == pinned, short(created))
                await conn.session.update(session={"type": "realtime", "instructions": "Say anything."}, event_id="evt_sdk_pinned")
                refused = json.loads(await asyncio.wait_for(conn.recv_bytes(), timeout))
                error = refused.get("error") or {}
                c.check("changing pinned instructions is refused", refused.get("type") == "error" and error.get("param") == "session.instructions",
                        short(refused))
    except Exception as error:
        c.check("a session with the client secret", False, f"{type(error).__name__}: {error}")
    bad = AsyncOpenAI(base_url=base_url, api_key="ek_forged.secret", max_retries=0)
    try:
        async with asyncio.timeout(timeout):
            async with bad.realtime.connect(model=model, websocket_connection_options=options) as conn:
                await conn.recv_bytes()
        c.check("a forged secret is refused", False, "it connected")
    except Exception as error:
        c.check("a forged secret is refused", "401" in str(error), f"{type(error).__name__}: {short(str(error), 160)}")


async def run_client(checks: Checks, name: str, open_manager: Callable[[], Any], models: dict[str, type[pydantic.BaseModel]],
                     *, ga: bool, model: str, timeout: float, tools: bool = False, speech: bytes | None = None,
                     transcription: bool = False) -> None:
    try:
        async with asyncio.timeout(timeout * 6):
            manager = open_manager()
            try:
                conn = await asyncio.wait_for(manager.__aenter__(), timeout)
            except asyncio.TimeoutError:
                raise Abort(f"connect did not complete within {timeout:g} s") from None
            except Exception as error:
                raise Abort(f"connect failed: {type(error).__name__}: {error}") from None
            s = Session(name, conn, models, checks, timeout)
            try:
                checks.check(f"{name}: connected", True)
                if speech is not None and transcription:
                    await transcription_round_trip(s, ga=ga, model=model, speech=speech)
                elif speech is not None:
                    await g711_round_trip(s, ga=ga, model=model, speech=speech)
                else:
                    await (tool_round_trip if tools else round_trip)(s, ga=ga, model=model)
            finally:
                try:
                    await asyncio.wait_for(manager.__aexit__(None, None, None), timeout)
                except Exception as error:
                    checks.note(f"{name}: close: {type(error).__name__}: {error}")
                if s.received:
                    checks.check(f"{name}: all {s.received} server events validate against the SDK's models", not s.shape_errors,
                                 "\n       ".join([""] + s.shape_errors))
    except Abort as error:
        checks.check(f"{name}: round trip", False, str(error))
    except TimeoutError:
        checks.check(f"{name}: round trip", False, f"did not finish within {timeout * 6:g} s")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="http://127.0.0.1:PORT/v1")
    parser.add_argument("--model", default="gpt-realtime")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds for each wait")
    parser.add_argument("--ca", help="PEM CA certificate to trust for an https:// base URL (wss)")
    parser.add_argument("--client-secret", action="store_true", help="the ephemeral client-secret flow instead (the server must hold the key sk-parley-sdk-test)")
    parser.add_argument("--tools", action="store_true", help="a function-call round trip instead (the server's model must call tools: mock-llm)")
    parser.add_argument("--g711", metavar="FILE", help="a spoken round trip in audio/pcmu instead, sending FILE (raw 8 kHz µ-law speech); GA only")
    parser.add_argument("--transcription", metavar="FILE", help="a transcription session instead (?intent=transcription), sending FILE (raw 8 kHz µ-law speech); GA only")
    args = parser.parse_args()
    # For wss: the websockets client verifies the server against this CA (and checks the name).
    options = {"ssl": ssl.create_default_context(cafile=args.ca)} if args.ca else {}

    checks = Checks()
    print(f"openai {openai.__version__}, pydantic {pydantic.VERSION}, base_url {args.base_url}", flush=True)

    from openai.types.realtime.realtime_server_event import RealtimeServerEvent as GAEvent

    if args.client_secret:
        await client_secret_flow(checks, args.base_url, args.model, options, args.timeout)
        print(f"sdk: {checks.passed} passed, {checks.failed} failed", flush=True)
        return 0 if checks.failed == 0 and checks.passed > 0 else 1

    client = AsyncOpenAI(base_url=args.base_url, api_key="sk-parley-sdk-test", max_retries=0)
    if args.transcription:
        with open(args.transcription, "rb") as file:
            speech = file.read()
        await run_client(checks, "ga transcription", lambda: client.realtime.connect(model=args.model, extra_query={"intent": "transcription"},
                                                                                    websocket_connection_options=options),
                         models_by_type(GAEvent), ga=True, model=args.model, timeout=args.timeout, speech=speech, transcription=True)
        print(f"sdk: {checks.passed} passed, {checks.failed} failed", flush=True)
        return 0 if checks.failed == 0 and checks.passed > 0 else 1

    if args.g711:
        with open(args.g711, "rb") as file:
            speech = file.read()
        await run_client(checks, "ga g711", lambda: client.realtime.connect(model=args.model, websocket_connection_options=options), models_by_type(GAEvent),
                         ga=True, model=args.model, timeout=args.timeout, speech=speech)
        print(f"sdk: {checks.passed} passed, {checks.failed} failed", flush=True)
        return 0 if checks.failed == 0 and checks.passed > 0 else 1

    await run_client(checks, "ga", lambda: client.realtime.connect(model=args.model, websocket_connection_options=options), models_by_type(GAEvent),
                     ga=True, model=args.model, timeout=args.timeout, tools=args.tools)

    beta = getattr(getattr(client, "beta", None), "realtime", None)
    if beta is None or not hasattr(beta, "connect"):
        checks.note("this SDK has no beta realtime client; beta skipped")
    else:
        from openai.types.beta.realtime.realtime_server_event import RealtimeServerEvent as BetaEvent

        # The beta client always dials wss:// from base_url (resources/beta/realtime/realtime.py,
        # _prepare_url: copy_with(scheme="wss")); for a plain ws:// server it needs websocket_base_url.
        ws_url = args.base_url.replace("http://", "ws://", 1).replace("https://", "wss://", 1)
        checks.note(f"beta: the SDK's beta client dials wss:// whatever base_url says; using websocket_base_url={ws_url}")
        beta_client = AsyncOpenAI(base_url=args.base_url, websocket_base_url=ws_url, api_key="sk-parley-sdk-test", max_retries=0)
        await run_client(checks, "beta", lambda: beta_client.beta.realtime.connect(model=args.model, websocket_connection_options=options), models_by_type(BetaEvent),
                         ga=False, model=args.model, timeout=args.timeout, tools=args.tools)

    print(f"sdk: {checks.passed} passed, {checks.failed} failed", flush=True)
    return 0 if checks.failed == 0 and checks.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
