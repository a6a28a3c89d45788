"""GPT-Live sessions against a Parley server with the openai Python SDK's own Live client
(`client.live.connect`), every server event validated against the SDK's `ServerEvent` models.

Run by scripts/tests/live-sdk-test.sh, which starts `parley serve` (its speech helper, Piper,
Silero) with `parley mock-llm` as the voice front's model (it calls the function the user names:
"delegate"). Two kinds of run:

- the protocol (no speech): the errors a client meets (audio before the start, an unknown field,
  Decisions, a second start, Responses commands, a fixture too long or ragged), then a session's
  commands and their answers (instructions, update, mute and unmute, a fixture played, close);
- spoken turns, one connection a voice (espeak-ng voices at several speeds, made by the shell
  script): speech muted is not heard; speech asking to delegate comes back as the input
  transcript, `session.delegation.created` for the application, and the application's commentary
  spoken (its transcript and audio), with or without the acknowledgement first.

Exit status: 0 every check passed; 1 a check failed.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import json
import math
import struct
import sys
from typing import Any

import openai
import pydantic
from openai import AsyncOpenAI
from openai.types.live.server_event import ServerEvent
from openai.types.live.connect_server_event import ConnectServerEvent
from openai.types.live.fork_server_event import ForkServerEvent
from checks import Abort, Checks  # scripts/tests/checks.py, beside this file
from realtime_sdk_client import models_by_type, short

MODEL = "gpt-live-1"
RATE = 24000
CHUNK_MS = 100
COMMENTARY = "It is sunny in Paris and twenty one degrees."


def pcm_silence(ms: int, rate: int = RATE) -> bytes:
    return b"\x00\x00" * (rate * ms // 1000)


def at_16k(pcm: bytes) -> bytes:
    """24 kHz pcm16 at 16 kHz: two of every three samples' worth, each the mean of its span."""
    samples = struct.unpack(f"<{len(pcm) // 2}h", pcm)
    out = []
    for i in range(0, len(samples) - 2, 3):
        a, b, c = samples[i:i + 3]
        out += [(2 * a + b) // 3, (b + 2 * c) // 3]
    return struct.pack(f"<{len(out)}h", *out)


def pcm_tone(ms: int, hz: float = 440.0) -> bytes:
    count = RATE * ms // 1000
    return b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * hz * i / RATE))) for i in range(count))


class Live:
    """One SDK Live connection: bounded waits, every event validated, events kept for the checks."""

    def __init__(self, name: str, conn: Any, checks: Checks, timeout: float, union: Any = ServerEvent) -> None:
        self.name = name
        self.conn = conn
        self.checks = checks
        self.timeout = timeout
        self.models = models_by_type(union)
        self.shape_errors: list[str] = []
        self.received = 0
        self.seen: list[dict[str, Any]] = []
        self.rate = RATE

    async def next_event(self, waiting_for: str, timeout: float | None = None) -> dict[str, Any]:
        try:
            raw = await asyncio.wait_for(self.conn.recv_bytes(), timeout or self.timeout)
        except asyncio.TimeoutError:
            raise Abort(f"no event within {timeout or self.timeout:g} s while waiting for {waiting_for}") from None
        except Exception as error:
            raise Abort(f"connection failed while waiting for {waiting_for}: {type(error).__name__}: {error}") from None
        self.received += 1
        data = json.loads(raw)
        self.conn.parse_event(raw)  # what recv() gives an application
        kind = data.get("type")
        model = self.models.get(kind)
        if model is None:
            self.shape_errors.append(f"{kind!r}: not an event type this SDK knows: {short(data)}")
        else:
            try:
                model.model_validate(data)
            except pydantic.ValidationError as error:
                self.shape_errors.append(f"{kind}: {error.errors()[:3]}")
        self.seen.append(data)
        return data

    async def expect(self, wanted: str, *, skip: tuple[str, ...] = (), timeout: float | None = None) -> dict[str, Any]:
        """Reads until an event of type `wanted`; an `error`, or an event not in `skip`, aborts."""
        while True:
            data = await self.next_event(wanted, timeout)
            if data.get("type") == wanted:
                return data
            if data.get("type") == "error" or data.get("type") not in skip:
                raise Abort(f"expected {wanted}, got {short(data)}")

    async def expect_error(self, label: str, code: str, event_id: str | None = None) -> None:
        data = await self.next_event(f"the error for {label}")
        error = data.get("error") or {}
        ok = data.get("type") == "error" and error.get("code") == code
        if event_id is not None:
            ok = ok and data.get("client_event_id") == event_id
        self.checks.check(f"{self.name}: {label} -> error {code}", ok, error.get("message", "") if ok else f"got {short(data)}")

    async def raw(self, event: dict[str, Any]) -> None:
        """Sends `event` as written (the SDK's typed helpers would not send a wrong field)."""
        await self.conn.send_raw(json.dumps(event))

    async def stream(self, audio: bytes) -> None:
        """`audio` (pcm16 at 24 kHz) through the SDK's append, at real-time pace."""
        step = self.rate * 2 * CHUNK_MS // 1000
        for start in range(0, len(audio), step):
            await self.conn.session.input_audio.append(audio=base64.b64encode(audio[start:start + step]).decode("ascii"))
            await asyncio.sleep(CHUNK_MS / 1000)

    def validated(self) -> None:
        self.checks.check(f"{self.name}: all {self.received} server events validate against the SDK's ServerEvent models", not self.shape_errors,
                          "\n       ".join([""] + self.shape_errors))


def session_config(**extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "model": MODEL,
        "instructions": "You are Parley's GPT-Live test. Answer briefly.",
        "audio": {"format": {"type": "audio/pcm", "rate": RATE}, "output": {"voice": "marin"}},
        "input": [{"role": "developer", "content": [{"type": "input_text", "text": "The caller is testing the server."}]}],
    }
    config.update(extra)
    return config


async def protocol_run(live: Live) -> None:
    c = live.checks
    await live.conn.session.input_audio.append(audio=base64.b64encode(pcm_silence(100)).decode("ascii"), event_id="evt_early_audio")
    await live.expect_error("audio before session.start", "session_not_started", "evt_early_audio")
    await live.raw({"type": "session.start", "event_id": "evt_unknown", "session": {**session_config(), "voice": "marin"}})
    await live.expect_error("session.start with an unknown field", "unknown_parameter", "evt_unknown")
    await live.raw({"type": "session.start", "event_id": "evt_decisions",
                    "session": session_config(delegation={"type": "decisions", "decisions": {"model": "x"}})})
    await live.expect_error("Decisions delegation", "unsupported_value", "evt_decisions")

    await live.conn.session.start(session=session_config(), event_id="evt_start")
    started = await live.expect("session.started")
    session = started.get("session", {})
    c.check(f"{live.name}: session.started after the errors (the session went on)",
            session.get("model") == MODEL and session.get("status") == "active" and started.get("client_event_id") == "evt_start"
            and session.get("audio", {}).get("format", {}).get("rate") == RATE and session.get("id", "").startswith("sess_"), short(session))

    await live.conn.session.start(session=session_config(), event_id="evt_again")
    await live.expect_error("a second session.start", "session_already_started", "evt_again")
    await live.conn.response.create(event_id="evt_response")
    await live.expect_error("response.create under client delegation", "invalid_request", "evt_response")
    await live.conn.decision.create(event_id="evt_decision")
    await live.expect_error("decision.create", "unsupported_event", "evt_decision")
    await live.conn.session.output_audio.fixture.play(audio=base64.b64encode(pcm_silence(31_000)).decode("ascii"), event_id="evt_long")
    await live.expect_error("a 31 s fixture", "invalid_value", "evt_long")
    await live.raw({"type": "session.output_audio.fixture.play", "event_id": "evt_ragged", "audio": base64.b64encode(b"\x01\x02\x03").decode("ascii")})
    await live.expect_error("a fixture of half a sample", "invalid_value", "evt_ragged")

    await live.conn.session.instructions.append(content="The caller's name is Ada.", delegation_id=None, event_id="evt_instr")
    appended = await live.expect("session.instructions.appended")
    c.check(f"{live.name}: instructions appended", appended.get("client_event_id") == "evt_instr")

    # A trusted sideband attached to the running session: it sees the session's events, the
    # primary's audio before muting, and updates the session; the primary sees the update too.
    sideband_manager = live.client.live.sideband.connect(session_id=session["id"])
    sideband_conn = await asyncio.wait_for(sideband_manager.__aenter__(), live.timeout)
    side = Live(f"{live.name} sideband", sideband_conn, c, live.timeout, ConnectServerEvent)
    side.client = live.client
    try:
        await side.raw({"type": "session.start", "session": session_config(), "event_id": "evt_side_start"})
        await side.expect_error("session.start on a sideband", "invalid_value", "evt_side_start")
        await side.conn.session.update(session={"delegation": {"type": "client", "acknowledgement_delay_ms": 250}}, event_id="evt_update")
        updated = await side.expect("session.updated")
        c.check(f"{live.name}: the sideband's session.update answered", updated["session"].get("delegation") == {"type": "client", "acknowledgement_delay_ms": 250},
                short(updated["session"].get("delegation")))
        seen = await live.expect("session.updated")
        c.check(f"{live.name}: the primary sees the sideband's update", seen["session"].get("delegation", {}).get("acknowledgement_delay_ms") == 250)
        await live.conn.session.input_audio.append(audio=base64.b64encode(pcm_tone(100)).decode("ascii"))
        reflected = await side.expect("session.input_audio.append")
        c.check(f"{live.name}: the sideband hears the primary's audio", base64.b64decode(reflected["audio"]) == pcm_tone(100))
        await live.conn.session.instructions.append(content="Speak slowly.", delegation_id=None, event_id="evt_instr2")
        await live.expect("session.instructions.appended")
        await side.expect("session.instructions.appended")
        c.check(f"{live.name}: the sideband sees the primary's commands answered", True)
        # A trusted sideband may play a fixture (a SIP call's only way to): both hear it out.
        await side.conn.session.output_audio.fixture.play(audio=base64.b64encode(pcm_tone(300, 660.0)).decode("ascii"), event_id="evt_side_fixture")
        for listener in (side, live):
            await listener.expect("session.output_audio.fixture.played",
                                  skip=("session.output_audio.fixture.playing", "session.output_audio.delta"))
        c.check(f"{live.name}: a sideband's fixture played out, on the primary and the sideband",
                sum(len(base64.b64decode(e["delta"])) for e in live.seen if e["type"] == "session.output_audio.delta") >= RATE * 2 * 3 // 10)
    finally:
        await asyncio.wait_for(sideband_manager.__aexit__(None, None, None), live.timeout)
        side.validated()

    await live.conn.session.input_audio.mute(event_id="evt_mute")
    muted = await live.expect("session.input_audio.muted")
    await live.conn.session.input_audio.unmute(event_id="evt_unmute")
    unmuted = await live.expect("session.input_audio.unmuted")
    c.check(f"{live.name}: mute and unmute answered", muted.get("client_event_id") == "evt_mute" and unmuted.get("client_event_id") == "evt_unmute")

    tone = pcm_tone(1000)
    await live.conn.session.output_audio.fixture.play(audio=base64.b64encode(tone).decode("ascii"), event_id="evt_fixture")
    await live.expect("session.output_audio.fixture.playing")
    await live.conn.session.instructions.append(content="too early", delegation_id=None, event_id="evt_during")
    played_bytes = b""
    got_error = False
    while True:
        data = await live.next_event("session.output_audio.fixture.played")
        if data["type"] == "session.output_audio.delta":
            played_bytes += base64.b64decode(data["delta"])
        elif data["type"] == "error":
            got_error = data.get("error", {}).get("code") == "fixture_active"
        elif data["type"] == "session.output_audio.fixture.played":
            break
        else:
            raise Abort(f"unexpected during the fixture: {short(data)}")
    # Through the session's output, as a reply is: the same samples, to the last piece's end.
    worst = max((abs(a - b) for a, b in zip(struct.unpack(f"<{len(tone) // 2}h", tone), struct.unpack(f"<{len(played_bytes) // 2}h", played_bytes[:len(tone)]))), default=1 << 16)
    c.check(f"{live.name}: the fixture played out as output audio, whole", len(played_bytes) >= len(tone) and worst <= 64,
            f"{len(played_bytes)} of {len(tone)} bytes, largest difference {worst}")
    c.check(f"{live.name}: instructions during the fixture -> error fixture_active", got_error)

    await live.conn.session.close(event_id="evt_close")
    closed = await live.expect("session.closed", skip=("session.usage.updated",))
    c.check(f"{live.name}: session.closed, close_requested, with usage",
            closed.get("reason") == "close_requested" and closed.get("usage", {}).get("seconds", -1) >= 0 and closed.get("session", {}).get("id") == session.get("id"))


async def spoken_run(live: Live, muted_speech: bytes, request: bytes, *, first: bool, store: bool = False, rate: int = RATE) -> None:
    """`first`: the run that also checks mute (speech muted is not heard) and waits for the
    acknowledgement; the others thinking first, so that it is cancelled (make test's budget).
    `store`: the session is stored as it ends (its id in `live.stored`), for the fork run.
    `rate`: the session's audio/pcm rate, both ways (24000, or 16000)."""
    c = live.checks
    config = session_config(store=True) if store else session_config()
    if rate != RATE:
        live.rate = rate
        config["audio"]["format"]["rate"] = rate
        muted_speech, request = at_16k(muted_speech), at_16k(request)
    await live.conn.session.start(session=config)
    started = await live.expect("session.started")
    c.check(f"{live.name}: the session's audio at {rate} Hz", started["session"]["audio"]["format"] == {"type": "audio/pcm", "rate": rate},
            short(started["session"]["audio"]))
    if store:
        live.stored = started["session"]["id"]
    if first:
        await muted_run(live, muted_speech)
    await delegated_run(live, request, wait_for_acknowledgement=first)


async def muted_run(live: Live, muted_speech: bytes) -> None:
    c = live.checks
    # Muted: the speech is not heard (no transcript, no reply) ...
    await live.conn.session.input_audio.mute()
    await live.expect("session.input_audio.muted")
    await live.stream(muted_speech + pcm_silence(1500, live.rate))
    heard_muted: list[str] = []
    try:
        while True:
            data = await live.next_event("nothing, while muted", timeout=2.0)
            heard_muted.append(data["type"])
    except Abort:
        pass
    c.check(f"{live.name}: speech while muted is not heard", not heard_muted, ", ".join(heard_muted))
    await live.conn.session.input_audio.unmute()
    await live.expect("session.input_audio.unmuted")


async def delegated_run(live: Live, request: bytes, *, wait_for_acknowledgement: bool) -> None:
    c = live.checks
    # A request the voice front delegates to the application.
    sender = asyncio.create_task(live.stream(request + pcm_silence(2500, live.rate)))
    heard = ""
    delegation: dict[str, Any] = {}
    try:
        while not delegation:
            data = await live.next_event("session.delegation.created", timeout=30)
            if data["type"] == "session.input_transcript.delta":
                heard += data["delta"]
            elif data["type"] == "session.delegation.created":
                delegation = data
            elif data["type"] == "error":
                raise Abort(f"error while speaking: {short(data)}")
    finally:
        await sender
    c.check(f"{live.name}: delegated to the application", delegation["delegation"].get("target") == "client"
            and delegation["delegation"]["id"].startswith("deleg_") and delegation.get("offset_ms", -1) >= 0, short(delegation))
    delegation_id = delegation["delegation"]["id"]

    said = ""
    if wait_for_acknowledgement:
        while "moment" not in said.lower():
            data = await live.next_event("the acknowledgement", timeout=30)
            if data["type"] == "session.output_transcript.delta":
                said += data["delta"]
            elif data["type"] == "error":
                raise Abort(f"error before the acknowledgement: {short(data)}")
        c.check(f"{live.name}: the delegation acknowledged in speech", True, repr(said))
    else:
        await live.conn.session.thinking.append(content="Looking up the forecast.", delegation_id=delegation_id)
        await live.expect("session.thinking.appended", skip=("session.usage.updated", "session.output_transcript.delta", "session.output_audio.delta",
                                                             "session.input_transcript.delta"))
    await live.conn.session.commentary.append(content=COMMENTARY, delegation_id=delegation_id)
    spoken = ""
    audio = 0
    appended = False
    while "degrees" not in spoken.lower() or not appended:
        data = await live.next_event("the commentary spoken", timeout=30)
        if data["type"] == "session.output_transcript.delta":
            spoken += data["delta"]
        elif data["type"] == "session.output_audio.delta":
            audio += len(base64.b64decode(data["delta"]))
        elif data["type"] == "session.commentary.appended":
            appended = True
        elif data["type"] == "error":
            raise Abort(f"error while the commentary was spoken: {short(data)}")
    while True:  # the rest of its audio, to its usage
        data = await live.next_event("session.usage.updated", timeout=30)
        if data["type"] == "session.output_audio.delta":
            audio += len(base64.b64decode(data["delta"]))
        if data["type"] == "session.usage.updated":
            break
    # The request's words, however many turns the recogniser made of them.
    heard += "".join(e["delta"] for e in live.seen if e["type"] == "session.input_transcript.delta" and e["delta"] not in heard)
    c.check(f"{live.name}: the request heard (input transcript)", "weather" in heard.lower(), repr(heard))
    c.check(f"{live.name}: the application's commentary spoken word for word", "sunny in paris" in spoken.lower(), repr(spoken))
    c.check(f"{live.name}: with its audio", audio > live.rate * 2, f"{audio / (live.rate * 2):.1f} s")
    # Each delta's place on the timeline is its length at the session's rate.
    deltas = [e for e in live.seen if e["type"] == "session.output_audio.delta"]
    c.check(f"{live.name}: the reply audio's timeline at {live.rate} Hz",
            all(abs((e["end_ms"] - e["start_ms"]) - len(base64.b64decode(e["delta"])) * 1000 // (live.rate * 2)) <= 1 for e in deltas), f"{len(deltas)} deltas")
    await live.conn.session.close()
    await live.expect("session.closed", skip=("session.usage.updated", "session.output_audio.delta", "session.output_transcript.delta"))


async def responses_run(live: Live, request: bytes, *, mcp: str | None) -> None:
    """A task delegated to the session's Responses backend: with a function tool (answered by the
    application with response.item.create and response.create) or an MCP server's tool (called by
    the server); the backend's events come as response.event envelopes and its answer is spoken."""
    c = live.checks
    tools: list[dict[str, Any]] = [{"type": "function", "name": "order_status", "description": "An order's status by its number.",
                                    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}]
    if mcp:
        tools = [{"type": "mcp", "server_label": "agent", "server_url": mcp, "require_approval": "never"}]
    await live.conn.session.start(session=session_config(delegation={
        "type": "responses", "responses": {"model": "gpt-5.2", "instructions": "Answer with the result in one short sentence.", "tools": tools}}))
    started = await live.expect("session.started")
    c.check(f"{live.name}: responses delegation started", started["session"]["delegation"]["type"] == "responses")

    sender = asyncio.create_task(live.stream(request + pcm_silence(2500, live.rate)))
    kinds: list[str] = []
    delegation_id = ""
    spoken = ""
    answered_call = False
    heard = ""
    try:
        # Until the answer has been spoken: its reply's usage, after the backend's last response.
        while True:
            data = await live.next_event("the backend's answer spoken", timeout=40)
            kind = data["type"]
            if kind == "session.delegation.created":
                delegation_id = data["delegation"]["id"]
                c.check(f"{live.name}: delegated to responses", data["delegation"]["target"] == "responses")
            elif kind == "response.event":
                inner = data["event"]
                kinds.append(inner.get("type", "?"))
                if data.get("delegation_id") != delegation_id:
                    raise Abort(f"a response.event without its delegation: {short(data)}")
                if inner.get("type") == "response.function_call_arguments.done" and not answered_call:
                    c.check(f"{live.name}: the backend called the application's function", inner.get("name") == "order_status", short(inner))
                    await live.conn.response.item.create(item={"type": "function_call_output", "call_id": inner.get("call_id", ""),
                                                               "output": "shipped"})
                    await live.conn.response.create()
                    answered_call = True
            elif kind == "session.input_transcript.delta":
                heard += data["delta"]
            elif kind == "session.output_transcript.delta":
                if kinds and kinds[-1] == "response.completed":
                    spoken += data["delta"]
            elif kind == "session.usage.updated" and spoken.strip() and "moment" not in spoken.lower():
                break
            elif kind == "session.usage.updated":
                spoken = ""  # the acknowledgement's, or the front's own words
            elif kind == "error":
                raise Abort(f"error during the delegation: {short(data)}")
    except Abort as error:
        tail = ", ".join(e["type"] + (":" + e.get("delta", "")[:30] if "transcript" in e["type"] else "") for e in live.seen[-25:] if e["type"] != "session.output_audio.delta")
        raise Abort(f"{error}; the backend's events so far: {', '.join(kinds)}; the last events: {tail}; spoken {spoken!r}") from None
    finally:
        await sender
    c.check(f"{live.name}: the backend's events as Responses events", "response.created" in kinds and kinds[-1] == "response.completed", ", ".join(kinds[:12]))
    if mcp:
        c.check(f"{live.name}: the backend called the MCP server's tool", "response.mcp_call.completed" in kinds, ", ".join(kinds))
        c.check(f"{live.name}: the MCP tool's answer spoken", "sunny" in spoken.lower() or "21" in spoken, repr(spoken))
    else:
        c.check(f"{live.name}: the function's answer spoken", answered_call and "shipped" in spoken.lower(), f"heard {heard!r}, spoke {spoken!r}")
    await live.conn.session.close()
    await live.expect("session.closed", skip=("session.usage.updated", "session.output_audio.delta", "session.output_transcript.delta", "response.event"))


async def fork_run(live: Live, parent: str) -> None:
    """A fork of the stored session `parent` over the fork WebSocket: a wrong override refused
    (the connection goes on), then the stored configuration and conversation inherited."""
    c = live.checks
    await live.raw({"type": "session.start", "event_id": "evt_fork_model", "session": {"model": "gpt-live-other"}})
    await live.expect_error("a fork that names a model", "unknown_parameter", "evt_fork_model")
    await live.raw({"type": "session.start", "event_id": "evt_fork_client", "session": {"client": {}}})
    await live.expect_error("a WebSocket fork with client permissions", "invalid_value", "evt_fork_client")
    await live.conn.session.start(session={"audio": {"format": {"type": "audio/pcm", "rate": RATE}}}, event_id="evt_fork")
    started = await live.expect("session.started")
    session = started["session"]
    c.check(f"{live.name}: a new session, answering its start", session["id"] != parent and session["id"].startswith("sess_")
            and started.get("client_event_id") == "evt_fork", short(session))
    c.check(f"{live.name}: the stored configuration inherited",
            session.get("instructions") == session_config()["instructions"] and session.get("store") is True
            and session["audio"]["output"]["voice"] == "marin", short(session))
    history = [(item["role"], item["content"][0]["text"]) for item in session.get("input", [])]
    said = " ".join(text for role, text in history).lower()
    c.check(f"{live.name}: the stored conversation inherited (developer, the user's words, the reply)",
            history[:1] == [("developer", "The caller is testing the server.")] and "weather" in said and "sunny in paris" in said,
            repr(history))
    await live.conn.session.instructions.append(content="Mention the fork.", delegation_id=None, event_id="evt_fork_instr")
    appended = await live.expect("session.instructions.appended")
    c.check(f"{live.name}: the fork takes commands", appended.get("client_event_id") == "evt_fork_instr")
    await live.conn.session.close()
    await live.expect("session.closed", skip=("session.usage.updated",))


async def recording_checks(checks: Checks, client: AsyncOpenAI, parent: str) -> None:
    """The stored session's recording (Ogg Opus, both sides), and refusals for ids not stored."""
    try:
        content = await client.live.sessions.download_recording(parent)
        data = content.content
        # The last page's granule position: 48 kHz samples from the start (RFC 7845, section 4).
        last = data.rfind(b"OggS")
        seconds = int.from_bytes(data[last + 6:last + 14], "little") / 48_000 if last >= 0 else 0
        checks.check("live recording: the stored session's recording downloaded, Ogg Opus",
                     data[:4] == b"OggS" and b"OpusHead" in data[:200], f"{len(data)} bytes, starts {data[:8]!r}")
        checks.check("live recording: it holds the session (more than 3 s)", seconds > 3, f"{seconds:.1f} s")
    except Exception as error:
        checks.check("live recording: downloaded", False, f"{type(error).__name__}: {error}")
    for label, session_id in (("an unknown session", "sess_nope"), ("a path that is no session id", "../etc")):
        try:
            await client.live.sessions.download_recording(session_id)
            checks.check(f"live recording: {label} -> 404", False, "it was served")
        except openai.NotFoundError as error:
            checks.check(f"live recording: {label} -> 404", True, str(error.status_code))
        except Exception as error:
            checks.check(f"live recording: {label} -> 404", False, f"{type(error).__name__}: {error}")


async def run(checks: Checks, client: AsyncOpenAI, name: str, timeout: float, body: Any, fork_of: str | None = None) -> str | None:
    """One session through `body`; the id it stored, if it did."""
    live: Live | None = None
    try:
        async with asyncio.timeout(120):
            manager = client.live.forks.connect(session_id=fork_of) if fork_of else client.live.connect()
            conn = await asyncio.wait_for(manager.__aenter__(), timeout)
            live = Live(name, conn, checks, timeout, union=ForkServerEvent if fork_of else ServerEvent)
            live.client = client
            live.stored = None
            try:
                await body(live)
            finally:
                try:
                    await asyncio.wait_for(manager.__aexit__(None, None, None), timeout)
                except Exception as error:
                    checks.note(f"{name}: close: {type(error).__name__}: {error}")
                live.validated()
    except Abort as error:
        checks.check(f"{name}: run", False, str(error))
    except TimeoutError:
        checks.check(f"{name}: run", False, "did not finish within 120 s")
    return live.stored if live else None


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True, help="http://127.0.0.1:PORT/v1")
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--speech", nargs="*", default=[], metavar="NAME:MUTED:REQUEST",
                        help="a spoken run: a name, and two raw 24 kHz pcm16 files (speech sent muted, then the request)")
    parser.add_argument("--order", metavar="FILE", help="speech asking to delegate an order's lookup (Responses delegation, a function tool)")
    parser.add_argument("--weather", metavar="FILE", help="speech asking to delegate the weather (Responses delegation, the MCP server's tool)")
    parser.add_argument("--mcp", help="the test MCP server's agent URL (for --weather)")
    args = parser.parse_args()
    checks = Checks()
    print(f"openai {openai.__version__}, pydantic {pydantic.VERSION}, base_url {args.base_url}", flush=True)
    client = AsyncOpenAI(base_url=args.base_url, api_key="sk-parley-sdk-test", max_retries=0)
    await run(checks, client, "live protocol", args.timeout, protocol_run)
    for index, spec in enumerate(args.speech):
        name, muted_path, request_path = spec.split(":")
        with open(muted_path, "rb") as file:
            muted = file.read()
        with open(request_path, "rb") as file:
            request = file.read()
        # The last spoken session is stored, and forked below.
        last = index == len(args.speech) - 1
        # The second speaks audio/pcm at 16 kHz both ways.
        rate = 16000 if index == 1 else RATE
        stored = await run(checks, client, f"live {name}" + (" at 16 kHz" if rate != RATE else ""), args.timeout,
                           lambda live, m=muted, r=request, first=(index == 0), last=last, rate=rate: spoken_run(live, m, r, first=first, store=last, rate=rate))
    if args.speech:
        checks.check("live store: the stored session's id", bool(stored), repr(stored))
        if stored:
            await run(checks, client, "live fork", args.timeout, lambda live: fork_run(live, stored), fork_of=stored)
            await recording_checks(checks, client, stored)
    if args.order:
        with open(args.order, "rb") as file:
            order = file.read()
        await run(checks, client, "live responses function", args.timeout, lambda live: responses_run(live, order, mcp=None))
    if args.weather:
        with open(args.weather, "rb") as file:
            weather = file.read()
        await run(checks, client, "live responses mcp", args.timeout, lambda live: responses_run(live, weather, mcp=args.mcp))
    print(f"live sdk: {checks.passed} passed, {checks.failed} failed", flush=True)
    return 0 if checks.failed == 0 and checks.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
