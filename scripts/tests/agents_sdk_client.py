#!/usr/bin/env python3
"""A tool round trip against Parley with the OpenAI Agents SDK's realtime agents (`agents.realtime`).

Run by scripts/tests/agents-sdk-test.sh (which makes the venv and starts `parley mock-llm` and the server):

    .venv-agents/bin/python scripts/tests/agents_sdk_client.py --url ws://127.0.0.1:PORT/v1/realtime?model=gpt-realtime

A `RealtimeAgent` with one `function_tool`, get_weather(city), runs through `RealtimeRunner` on the
SDK's own `OpenAIRealtimeWebSocketModel`, pointed at Parley by the model config's `url` (with an
`api_key`, sent as `Authorization: Bearer`). Text only (`output_modalities: ["text"]`); no audio.
The user asks "what's the weather in Paris"; the server's model (mock-llm) calls get_weather with
{"city": "Paris"}, the SDK runs the tool and sends its output back as a function_call_output item
with a new response, and the answer must quote the tool's output. Then, through the SDK's raw
message path, conversation.item.retrieve, .truncate and .delete of the assistant's answer, as the
SDK serialises them (it sends retrieve after transcriptions and truncate on interrupts, which a
text-only session never triggers by itself).

Every `error` event the server sent is printed as a note with the client event it answers; none
may be `unknown_event` or `unsupported_event`. Every event the SDK could not validate against its
models fails a check too.

With `--g711 FILE` it runs the SDK's telephony settings instead, as its Twilio example sets them
(`input_audio_format` and `output_audio_format` "g711_ulaw", semantic VAD, in
`initial_model_settings`): the SDK sends them with the agent's instructions in one session.update,
which must apply whole (session.updated shows the instructions and audio/pcmu both ways). Then
FILE (raw 8 kHz µ-law speech) goes in through `session.send_audio` at real-time pace, and the
reply (mock-llm's words, spoken by the server) must come back as µ-law: the SDK's `audio` events
of 160 bytes. The run ends after a second of it.

One line per check; the last line is `agents-sdk: N passed, M failed`. Exit status 0 only if none
failed. Every wait is bounded; the whole run by `--timeout` seconds (default 20).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any, Callable

import pydantic

import agents
from agents import function_tool, set_tracing_disabled
from agents.realtime import RealtimeAgent, RealtimeRunner
from agents.realtime.model_inputs import RealtimeModelSendRawMessage
from agents.realtime.openai_realtime import OpenAIRealtimeWebSocketModel
from checks import Abort, Checks  # scripts/tests/checks.py, beside this file

PROMPT = "what's the weather in Paris"
WEATHER = {"temperature_c": 21, "sky": "clear"}
INSTRUCTIONS = "You are Parley's Agents SDK test. Use get_weather for weather questions and answer briefly."




def short(value: Any, limit: int = 600) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "..."


class RecordingModel(OpenAIRealtimeWebSocketModel):
    """The SDK's own WebSocket model, unchanged but for a record of every message it sends."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[dict[str, Any]] = []

    async def _create_websocket_connection(self, url: str, headers: dict[str, str], transport_config: Any = None) -> Any:
        connection = await super()._create_websocket_connection(url, headers, transport_config)
        send = connection.send

        async def recording_send(message: Any, *args: Any, **kwargs: Any) -> None:
            try:
                self.sent.append(json.loads(message))
            except (TypeError, ValueError):
                self.sent.append({"unparsed": short(str(message))})
            await send(message, *args, **kwargs)

        connection.send = recording_send  # type: ignore[method-assign]
        return connection


class Recorder:
    """Everything the session yields, in order, with waits on it."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.events: list[Any] = []
        self.server_events: list[dict[str, Any]] = []  # raw JSON from the server, as the SDK got it
        self.text_by_response: dict[str, str] = {}
        self.ended: str | None = None  # why the event stream stopped, if it did
        self.changed = asyncio.Condition()

    async def consume(self, session: Any) -> None:
        try:
            async for event in session:
                async with self.changed:
                    self.events.append(event)
                    if event.type == "raw_model_event":
                        data = event.data
                        if data.type == "raw_server_event" and isinstance(data.data, dict):
                            self.server_events.append(data.data)
                        elif data.type == "output_text_delta":
                            self.text_by_response[data.response_id] = self.text_by_response.get(data.response_id, "") + data.delta
                    self.changed.notify_all()
            reason = "the session's event stream ended"
        except Exception as error:  # the SDK raises stored exceptions (e.g. a connection closed) here
            reason = f"the session raised {type(error).__name__}: {error}"
        async with self.changed:
            self.ended = reason
            self.changed.notify_all()

    async def wait_for(self, what: str, found: Callable[[], Any], seconds: float = 10.0) -> Any:
        """Waits until `found()` returns something truthy (returned), at most `seconds` and never past the deadline."""
        limit = min(time.monotonic() + seconds, self.deadline)
        async with self.changed:
            while True:
                result = found()
                if result:
                    return result
                if self.ended:
                    raise Abort(f"{self.ended} while waiting for {what}")
                remaining = limit - time.monotonic()
                if remaining <= 0:
                    raise Abort(f"no {what} within {seconds:g} s (or the overall deadline)")
                try:
                    await asyncio.wait_for(self.changed.wait(), remaining)
                except asyncio.TimeoutError:
                    pass

    def of_type(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]

    def server_of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.server_events if e.get("type") == kind]


def history_items(recorder: Recorder) -> list[Any]:
    """The SDK's latest view of the conversation (history_updated carries it whole, history_added one item)."""
    history: list[Any] = []
    for event in recorder.events:
        if event.type == "history_updated":
            history = list(event.history)
        elif event.type == "history_added":
            history = [item for item in history if item.item_id != event.item.item_id] + [event.item]
    return history


def message_text(item: Any) -> str:
    return "".join((getattr(part, "text", None) or getattr(part, "transcript", None) or "") for part in getattr(item, "content", []) or [])


PHONE_INSTRUCTIONS = "You are Parley's telephone test. Greet the caller and keep it short: this is a phone call."


async def telephone(session: Any, model: RecordingModel, recorder: Recorder, speech: bytes, checks: Checks) -> None:
    """The Twilio example's settings: one session.update with the formats and the instructions,
    µ-law speech in through the SDK, µ-law speech back."""
    updated = await recorder.wait_for("session.updated for each of the SDK's session.update events",
                                      lambda: len(recorder.server_of_type("session.updated")) >= max(1, sum(m.get("type") == "session.update" for m in model.sent))
                                      and recorder.server_of_type("session.updated"))
    pcmu = {"type": "audio/pcmu"}
    combined = [m for m in model.sent if m.get("type") == "session.update" and (m.get("session") or {}).get("instructions") == PHONE_INSTRUCTIONS
                and (((m.get("session") or {}).get("audio") or {}).get("input") or {}).get("format") == pcmu]
    checks.check("the SDK sent the g711_ulaw formats and the instructions in one session.update", bool(combined),
                 short(combined[0]) if combined else "; ".join(short(m, 300) for m in model.sent if m.get("type") == "session.update"))
    errors = recorder.server_of_type("error")
    checks.check("the server took it whole: no error", not errors, short(errors))
    session_json = updated[-1].get("session") or {}
    audio = session_json.get("audio") or {}
    formats = ((audio.get("input") or {}).get("format"), (audio.get("output") or {}).get("format"))
    checks.check("session.updated shows the instructions", session_json.get("instructions") == PHONE_INSTRUCTIONS, repr(session_json.get("instructions")))
    checks.check("session.updated shows audio/pcmu both ways and semantic_vad",
                 formats == (pcmu, pcmu) and ((audio.get("input") or {}).get("turn_detection") or {}).get("type") == "semantic_vad", f"formats {formats!r}")

    # The caller speaks, as Twilio's media would arrive: 20 ms of µ-law at a time, then silence.
    chunk = 160
    audio_in = speech + b"\xff" * 8000
    started = time.monotonic()
    for i, start in enumerate(range(0, len(audio_in), chunk)):
        await session.send_audio(audio_in[start:start + chunk])
        await asyncio.sleep(max(0.0, started + (i + 1) * 0.02 - time.monotonic()))
    heard = await recorder.wait_for("the caller's turn transcribed", lambda: recorder.server_of_type("conversation.item.input_audio_transcription.completed"))
    checks.check("the µ-law turn was heard and transcribed", bool(heard[0].get("transcript")), repr(heard[0].get("transcript")))
    pieces = await recorder.wait_for("a second of the reply's audio", lambda: len(recorder.of_type("audio")) >= 50 and recorder.of_type("audio"))
    sizes = sorted({len(e.audio.data) for e in pieces})
    deltas = recorder.server_of_type("response.output_audio.delta")
    checks.check("the reply comes as µ-law: audio events of 160 bytes (20 ms at 8 kHz)", sizes == [160] and len(deltas) >= 50,
                 f"{len(pieces)} audio events, sizes {sizes}")


async def run(args: argparse.Namespace, checks: Checks) -> None:
    deadline = time.monotonic() + args.timeout
    calls: list[dict[str, Any]] = []

    @function_tool
    def get_weather(city: str) -> dict[str, Any]:
        """The current weather in a city.

        Args:
            city: The city's name.
        """
        calls.append({"city": city})
        return WEATHER

    agent = RealtimeAgent(name="Weather", instructions=INSTRUCTIONS, tools=[get_weather])
    model_settings: dict[str, Any] = {"model_name": args.model, "output_modalities": ["text"]}
    if args.g711:
        # As the SDK's Twilio example (examples/realtime/twilio/twilio_handler.py) sets them.
        agent = RealtimeAgent(name="Phone", instructions=PHONE_INSTRUCTIONS)
        model_settings = {"model_name": args.model, "input_audio_format": "g711_ulaw", "output_audio_format": "g711_ulaw",
                          "turn_detection": {"type": "semantic_vad", "interrupt_response": True, "create_response": True}}
    model = RecordingModel()
    runner = RealtimeRunner(agent, model=model)
    recorder = Recorder(deadline)
    model_config = {"url": args.url, "api_key": "sk-parley-agents-test", "initial_model_settings": model_settings}

    session = await runner.run(model_config=model_config)
    try:
        await asyncio.wait_for(session.enter(), max(0.1, min(10.0, deadline - time.monotonic())))
    except asyncio.TimeoutError:
        raise Abort("the session did not connect within 10 s") from None
    except Exception as error:
        raise Abort(f"the session could not connect: {type(error).__name__}: {error}") from None
    consumer = asyncio.create_task(recorder.consume(session))
    try:
        checks.check("connected through the model config's url", True, args.url)
        if args.g711:
            with open(args.g711, "rb") as file:
                await telephone(session, model, recorder, file.read(), checks)
        else:
            await conversation(session, model, recorder, calls, checks)
    except Abort as error:  # counted here, so that the report below knows a check failed
        checks.check("round trip", False, str(error))
    finally:
        try:
            await asyncio.wait_for(session.close(), 5)
        except Exception as error:
            checks.note(f"close: {type(error).__name__}: {error}")
        consumer.cancel()
        await asyncio.gather(consumer, return_exceptions=True)
        report_errors(model, recorder, checks)


async def conversation(session: Any, model: RecordingModel, recorder: Recorder, calls: list[dict[str, Any]], checks: Checks) -> None:
    # The session: what the SDK's session.update asked for, and what the server says it holds.
    # (On session.created the SDK sends a second session.update, for tracing: wait for both answers.)
    updated = await recorder.wait_for("session.updated for each of the SDK's session.update events",
                                      lambda: len(recorder.server_of_type("session.updated")) >= max(1, sum(m.get("type") == "session.update" for m in model.sent))
                                      and recorder.server_of_type("session.updated"))
    session_json = updated[-1].get("session") or {}
    checks.check("session.updated reports get_weather and text output",
                 session_json.get("output_modalities") == ["text"] and (session_json.get("tools") or [{}])[0].get("parameters", {}).get("required") == ["city"],
                 f"output_modalities {session_json.get('output_modalities')!r}, tools {short(session_json.get('tools'), 200)}")
    note_session_differences(model, session_json, checks)

    # The user's question, then the model's call of the tool, run by the SDK.
    await session.send_message(PROMPT)
    tool_start = await recorder.wait_for("tool_start event", lambda: recorder.of_type("tool_start"))
    tool_start = tool_start[0]
    try:
        arguments = json.loads(tool_start.arguments)
    except ValueError:
        arguments = None
    checks.check("tool_start for get_weather with {\"city\": \"Paris\"}",
                 tool_start.tool.name == "get_weather" and arguments == {"city": "Paris"},
                 f"tool {tool_start.tool.name!r}, arguments {tool_start.arguments!r}")
    tool_end = (await recorder.wait_for("tool_end event", lambda: recorder.of_type("tool_end")))[0]
    checks.check("the function ran once, with city=\"Paris\"", calls == [{"city": "Paris"}], f"calls {calls!r}")
    checks.check("tool_end carries the function's output", tool_end.output == WEATHER, f"output {tool_end.output!r}")

    call_done = recorder.server_of_type("response.function_call_arguments.done")
    checks.check("the server streamed the call (response.function_call_arguments.done)",
                 len(call_done) == 1 and call_done[0].get("name") == "get_weather", short(call_done))
    call_id = call_done[0].get("call_id") if call_done else None

    # The SDK sends the output as a function_call_output item and asks for a new response.
    output_items = await recorder.wait_for("conversation.item.created/added for the function_call_output",
                                           lambda: [e for e in recorder.server_events if e.get("type") in ("conversation.item.created", "conversation.item.added")
                                                    and (e.get("item") or {}).get("type") == "function_call_output"])
    sent_output = [m for m in model.sent if m.get("type") == "conversation.item.create" and (m.get("item") or {}).get("type") == "function_call_output"]
    checks.check("the server took the SDK's function_call_output",
                 (output_items[0].get("item") or {}).get("call_id") == call_id and len(sent_output) == 1
                 and json.loads((sent_output[0].get("item") or {}).get("output") or "null") == WEATHER,
                 f"sent {short(sent_output)}")

    # The answer: a second response whose text uses the tool's output.
    def answer() -> Any:
        dones = recorder.server_of_type("response.done")
        if len(dones) < 2:
            return None
        ends = recorder.of_type("agent_end")
        return dones[1] if len(ends) >= 2 else None

    done = await recorder.wait_for("the second response.done (the answer) and agent_end", answer)
    response = done.get("response") or {}
    response_id = response.get("id")
    text = recorder.text_by_response.get(response_id, "")
    checks.check("the answer streamed as output text uses the tool's output",
                 "21" in text and "clear" in text, f"text {text!r}")
    checks.check("the answer's response.done is completed", response.get("status") == "completed",
                 f"status {response.get('status')!r} {short(response.get('status_details'))}")
    checks.check("two agent turns (agent_start/agent_end x2)", len(recorder.of_type("agent_start")) == 2 and len(recorder.of_type("agent_end")) == 2,
                 f"{len(recorder.of_type('agent_start'))} starts, {len(recorder.of_type('agent_end'))} ends")

    # The SDK's history: the user's message, the call with its output, the answer.
    def settled_history() -> Any:
        history = history_items(recorder)
        assistant = [i for i in history if i.type == "message" and i.role == "assistant" and getattr(i, "status", None) == "completed" and message_text(i)]
        return history if assistant else None

    history = await recorder.wait_for("a completed assistant message in the SDK's history", settled_history, 5)
    kinds = [(i.type, getattr(i, "role", None) or getattr(i, "name", None)) for i in history]
    user = [i for i in history if i.type == "message" and i.role == "user"]
    tool_items = [i for i in history if i.type == "function_call"]
    assistant = [i for i in history if i.type == "message" and i.role == "assistant"]
    checks.check("history: the user's message", len(user) == 1 and message_text(user[0]) == PROMPT, f"items {kinds}")
    checks.check("history: the get_weather call with its output",
                 len(tool_items) == 1 and tool_items[0].name == "get_weather" and tool_items[0].status == "completed"
                 and json.loads(tool_items[0].output or "null") == WEATHER and json.loads(tool_items[0].arguments or "null") == {"city": "Paris"},
                 short([i.model_dump() for i in tool_items]))
    answer_item = assistant[-1] if assistant else None
    checks.check("history: the assistant's answer equals the streamed text", answer_item is not None and message_text(answer_item) == text,
                 f"{message_text(answer_item)!r}" if answer_item else "none")
    if answer_item is None:
        raise Abort("no assistant item to retrieve")
    item_id = answer_item.item_id

    # conversation.item.retrieve / .truncate / .delete as the SDK serialises them (raw message path).
    async def send_raw(kind: str, event_id: str, **fields: Any) -> None:
        await session.model.send_event(RealtimeModelSendRawMessage(message={"type": kind, "other_data": {"event_id": event_id, **fields}}))
        sent = [m for m in model.sent if m.get("event_id") == event_id]
        if not sent:
            raise Abort(f"the SDK did not send {kind} (it failed to convert the raw message)")

    def answered(event_id: str, kind: str) -> Callable[[], Any]:
        return lambda: ([e for e in recorder.server_events if e.get("type") == kind and (e.get("item_id") or (e.get("item") or {}).get("id")) == item_id]
                        or [e for e in recorder.server_of_type("error") if (e.get("error") or {}).get("event_id") == event_id])

    await send_raw("conversation.item.retrieve", "evt_agents_retrieve", item_id=item_id)
    got = (await recorder.wait_for("conversation.item.retrieved", answered("evt_agents_retrieve", "conversation.item.retrieved"), 5))[0]
    checks.check("conversation.item.retrieve -> conversation.item.retrieved with the answer",
                 got.get("type") == "conversation.item.retrieved" and (got.get("item") or {}).get("id") == item_id, short(got))

    await send_raw("conversation.item.truncate", "evt_agents_truncate", item_id=item_id, content_index=0, audio_end_ms=0)
    got = (await recorder.wait_for("an answer to conversation.item.truncate", answered("evt_agents_truncate", "conversation.item.truncated"), 5))[0]
    code = (got.get("error") or {}).get("code")
    checks.check("conversation.item.truncate of a text answer is understood (truncated, or an error that is not unknown/unsupported)",
                 got.get("type") == "conversation.item.truncated" or code not in ("unknown_event", "unsupported_event"), short(got))

    await send_raw("conversation.item.delete", "evt_agents_delete", item_id=item_id)
    got = (await recorder.wait_for("conversation.item.deleted", answered("evt_agents_delete", "conversation.item.deleted"), 5))[0]
    checks.check("conversation.item.delete -> conversation.item.deleted", got.get("type") == "conversation.item.deleted", short(got))
    await recorder.wait_for("the SDK's history without the deleted answer",
                            lambda: recorder.events[-1:] and not any(i.item_id == item_id for i in history_items(recorder)), 5)
    checks.check("the SDK dropped the deleted item from its history", True)


def note_session_differences(model: RecordingModel, reported: dict[str, Any], checks: Checks) -> None:
    """Notes (not checks) where the server's session.updated differs from the SDK's session.update
    defaults: settings a server may accept and ignore, worth knowing about."""
    asked: dict[str, Any] = {}
    for message in model.sent:
        if message.get("type") == "session.update":
            asked.update(message.get("session") or {})

    def at(session: dict[str, Any], path: str) -> Any:
        value: Any = session
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        return value

    for path in ("audio.input.transcription", "audio.input.turn_detection.type", "tracing", "audio.output.voice"):
        if at(asked, path) is not None and at(asked, path) != at(reported, path):
            checks.note(f"session: the SDK sent {path} = {json.dumps(at(asked, path))}; the server reports {json.dumps(at(reported, path))}")


def report_errors(model: RecordingModel, recorder: Recorder, checks: Checks) -> None:
    """Notes for every error event from the server (with the client event it answers), and checks
    that none is unknown_event/unsupported_event and that the SDK validated every server event."""
    errors = recorder.server_of_type("error")
    for error in errors:
        event_id = (error.get("error") or {}).get("event_id")
        sent = [m for m in model.sent if event_id and m.get("event_id") == event_id]
        checks.note(f"server error event: {json.dumps(error)}")
        if sent:
            checks.note(f"  ... answering the SDK's: {short(sent[0], 2000)}")
    not_understood = [e for e in errors if (e.get("error") or {}).get("code") in ("unknown_event", "unsupported_event")]
    detail = f"{len(errors)} error events in all" if not not_understood else "\n       ".join([""] + [json.dumps(e) for e in not_understood])
    checks.check("no unknown_event/unsupported_event error for anything the SDK sent", not not_understood, detail)

    invalid = [e for e in recorder.of_type("error") if isinstance(getattr(e, "error", None), pydantic.ValidationError)]
    checks.check(f"the SDK validated all {len(recorder.server_events)} server events against its models", not invalid,
                 "\n       ".join([""] + [str(e.error).replace("\n", " | ")[:600] for e in invalid]))
    if checks.failed and model.sent:
        checks.note("what the SDK sent: " + " ".join(m.get("type", "?") for m in model.sent))
        checks.note("what the server sent: " + " ".join(e.get("type", "?") for e in recorder.server_events))
        for message in model.sent:
            if message.get("type") == "session.update":
                checks.note(f"  SDK session.update: {json.dumps(message)}")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="ws://127.0.0.1:PORT/v1/realtime?model=gpt-realtime")
    parser.add_argument("--model", default="gpt-realtime")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds for the whole run")
    parser.add_argument("--g711", metavar="FILE", help="the SDK's telephony settings instead, sending FILE (raw 8 kHz µ-law speech)")
    args = parser.parse_args()

    set_tracing_disabled(True)  # no trace uploads from this machine (client-side tracing only)
    checks = Checks()
    print(f"openai-agents {agents.__version__ if hasattr(agents, '__version__') else '?'}, url {args.url}", flush=True)
    try:
        async with asyncio.timeout(args.timeout + 10):  # the waits are bounded by --timeout; this covers connect and close
            await run(args, checks)
    except Abort as error:
        checks.check("round trip", False, str(error))
    except TimeoutError:
        checks.check("round trip", False, f"did not finish within {args.timeout + 10:g} s")
    print(f"agents-sdk: {checks.passed} passed, {checks.failed} failed", flush=True)
    return 0 if checks.failed == 0 and checks.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
