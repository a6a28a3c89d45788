"""Drives the `openai` SDK (a client nobody here wrote): calls out, placed as an application places them.

Calls out, as an application places them (scripts/tests/sip-dial-out-test.sh): `POST
/v1/realtime/calls` with a SIP transport, the call's progress on its sideband (`?call_id=`), its
session hearing the callee and answering, the application's hangup; a busy callee and one that
never answers, told as `transport.failed`; a GPT-Live session placed on `POST /v1/live/sessions`
and watched with the openai SDK's Live sideband (every event validated against its models);
requests refused with their reasons; the counts in /metrics. Prints one ok/FAIL line a check.
"""
import asyncio
import argparse
import json
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from openai import AsyncOpenAI
from openai.types.live.connect_server_event import ConnectServerEvent

from checks import Checks  # beside this file
from http_json import request  # beside this file
from realtime_sdk_client import models_by_type, short  # beside this file


async def live_call(base: str, c: Checks) -> None:
    """A GPT-Live session on a call Parley places, watched on its sideband through the SDK."""
    status, _, body = post(base, "/v1/live/sessions", {"session": {"model": "gpt-live-1", "instructions": "You are Parley's dial-out test. Answer briefly."},
                                                       "transport": {"type": "sip", "destination": "+15550000004", "trunk": "test"}})
    session_id = body.get("session", {}).get("id", "")
    c.check("POST /v1/live/sessions with a SIP transport: the session's id", status == 200 and session_id.startswith("sess_"), f"{status} {body}")
    client = AsyncOpenAI(base_url=base + "/v1", api_key="sk-parley-dial-out", max_retries=0)
    models = models_by_type(ConnectServerEvent)
    problems: list[str] = []
    kinds: list[str] = []
    async with client.live.sideband.connect(session_id=session_id) as side:
        async with asyncio.timeout(60):
            while True:
                event = json.loads(await side.recv_bytes())
                kind = event.get("type", "?")
                model = models.get(kind)
                try:
                    if model is None:
                        raise ValueError("not an event of the SDK's")
                    model.model_validate(event)
                except Exception as error:  # noqa: BLE001
                    problems.append(f"{kind}: {str(error)[:160]}")
                if kind not in ("session.output_audio.delta", "session.input_audio.append"):
                    kinds.append(kind)
                if kind == "transport.dtmf.sent":
                    kinds.append(f"key {event.get('event')} sent ({event.get('client_event_id')})")
                if kind == "session.output_transcript.delta" and "hung up" not in kinds:
                    kinds.append("hung up")
                    await side.transport.dtmf.send(event="9", event_id="evt_key_9")
                    await asyncio.sleep(3.0)  # three seconds of the reply at the callee (it must hear one), then the hangup
                    await client.live.sessions.hangup(session_id)
                if kind == "info" and event.get("code") == "answered_by":
                    kinds.append("answered_by " + event.get("message", "").split(" ")[0])
                if kind in ("session.closed", "transport.failed"):
                    break
    c.check("GPT-Live: transport.answered, session.started, the callee heard, a reply, session.closed",
            all(k in kinds for k in ("transport.answered", "session.started", "session.input_transcript.delta", "session.output_transcript.delta", "session.closed")),
            ", ".join(dict.fromkeys(kinds)))
    c.check("GPT-Live: a key pressed through the SDK's sideband (transport.dtmf.send): transport.dtmf.sent", "key 9 sent (evt_key_9)" in kinds,
            ", ".join(dict.fromkeys(kinds)))
    c.check("GPT-Live: answering-machine detection told as an info: human", "answered_by human" in kinds, ", ".join(dict.fromkeys(kinds)))
    c.check("GPT-Live: every sideband event validates against the SDK's ConnectServerEvent models", not problems, "; ".join(problems[:4]))
    # Its state and story, read as a call's (GET on the session's URL), once it has ended.
    read: dict = {}
    for _ in range(20):
        status, _, read = get(base, f"/v1/live/sessions/{session_id}")
        if status != 200 or read.get("status") == "ended":
            break
        await asyncio.sleep(0.2)
    story = [e.get("type") for e in read.get("events", [])]
    c.check("GPT-Live: GET /v1/live/sessions/{id}: ended, its story kept (answered, answered_by, the key sent)",
            status == 200 and read.get("object") == "live.session" and read.get("status") == "ended"
            and "transport.answered" in story and "transport.dtmf.sent" in story, json.dumps(read)[:400])


MESSAGE = "Hello, this is Parley calling about your order. Please call us back."


def post(base: str, path: str, body: dict | None) -> tuple[int, dict, dict]:
    return request(base + path, body)


def get(base: str, path: str) -> tuple[int, dict, dict]:
    return request(base + path, method="GET")


def place(base: str, number: str, session: dict | None = None, **transport) -> tuple[int, dict, dict]:
    return post(base, "/v1/realtime/calls", {"transport": {"type": "sip", "destination": number, "trunk": "test", **transport},
                                             "session": session or {"instructions": "You are Parley's dial-out test. Answer briefly."}})


# The agent's key tool (run by Parley on a phone call): the built-in agent, made to call it first,
# presses the one key its schema allows.
KEYS_SESSION = {"instructions": "You are Parley's dial-out test. Answer briefly.", "tool_choice": "required",
                "tools": [{"type": "function", "name": "press_keys", "description": "Press keys on the call (an IVR menu's choice).",
                           "parameters": {"type": "object", "properties": {"keys": {"type": "string", "enum": ["4"]}}, "required": ["keys"]}}]}


def failure(seen: list[dict]) -> dict:
    """The error of the last transport.failed seen, if any."""
    return next((e.get("error", {}) for e in reversed(seen) if e.get("type") == "transport.failed"), {})


def events_until(socket, wanted: set[str], timeout: float) -> list[dict]:
    """The sideband's events up to one of `wanted` (or the timeout, or the call's end)."""
    seen = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            event = json.loads(socket.recv(timeout=max(0.1, end - time.monotonic())))
        except (TimeoutError, ConnectionClosed):
            break
        seen.append(event)
        if event.get("type") in wanted:
            break
    return seen


# The callee's numbers that answer at once and say nothing (sip_callee.py): +15550000100 and on.
QUICK = "+1555000010"


def sideband_story(ws: str, call_id: str, seconds: float) -> tuple[list[dict], tuple[int, str] | None]:
    """What a sideband attached now hears within `seconds`, and its close (code, reason) if the
    server closed it meanwhile."""
    seen: list[dict] = []
    end = time.monotonic() + seconds
    with connect(f"{ws}/v1/realtime?call_id={call_id}") as side:
        while time.monotonic() < end:
            try:
                seen.append(json.loads(side.recv(timeout=max(0.05, end - time.monotonic()))))
            except TimeoutError:
                break
            except ConnectionClosed as closed:
                return seen, ((closed.rcvd.code, closed.rcvd.reason) if closed.rcvd else (1006, ""))
    return seen, None


def late_listener(base: str, ws: str, c: Checks) -> None:
    """Issue 73: a callee that answers as fast as loopback lets it; a sideband attached seconds
    after the 201 still hears the call's progress first, in order and once; GET tells the same;
    once the call is over, a sideband hears the story and a close that says how it ended."""
    status, _, body = place(base, QUICK + "0")
    call_id = body.get("id", "")
    time.sleep(4.5)  # rung, answered, and the answering-machine verdict (at 4 s at the latest) given
    seen, closed = sideband_story(ws, call_id, 1.0)
    progress = [e.get("type") for e in seen if e.get("type", "").startswith("transport.")]
    c.check("a sideband attached 4.5 s after the 201 hears the call's story first: ringing, answered, answered_by, in order, once",
            status == 201 and progress == ["transport.ringing", "transport.answered", "transport.answered_by"] and closed is None,
            f"{progress} {closed}")
    status, _, call = get(base, f"/v1/realtime/calls/{call_id}")
    c.check("GET /v1/realtime/calls/{id}: answered, with its story", status == 200 and call.get("status") == "answered"
            and [e.get("type") for e in call.get("events", [])] == progress, json.dumps(call)[:300])
    post(base, f"/v1/realtime/calls/{call_id}/hangup", None)
    time.sleep(0.5)
    status, _, call = get(base, f"/v1/realtime/calls/{call_id}")
    c.check("GET after the hangup: ended (server_bye), its story kept", status == 200 and call.get("status") == "ended"
            and call.get("ended_reason") == "server_bye" and len(call.get("events", [])) == 3, json.dumps(call)[:300])
    seen, closed = sideband_story(ws, call_id, 3.0)
    c.check("a sideband attached to the ended call: its story, then closed (1000) saying how it ended",
            [e.get("type") for e in seen] == progress and closed is not None and closed[0] == 1000 and "server_bye" in closed[1], f"{[e.get('type') for e in seen]} {closed}")


def attach_race(base: str, ws: str, c: Checks) -> None:
    """Issue 73: 30 sidebands opened 0-29 ms after the 201, as a callee that answers at once
    answers, in six rounds: none is closed while the call is up, each hears it answered once."""
    problems: list[str] = []
    for round in range(6):
        _, _, body = place(base, QUICK + str(1 + round))
        call_id = body.get("id", "")
        heard: list[tuple[list[dict], tuple[int, str] | None] | None] = [None] * 30

        def attach(i: int) -> None:
            time.sleep(i / 1000)
            heard[i] = sideband_story(ws, call_id, 2.5 - i / 1000)

        threads = [threading.Thread(target=attach, args=(i,)) for i in range(30)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        post(base, f"/v1/realtime/calls/{call_id}/hangup", None)
        for i, result in enumerate(heard):
            seen, closed = result or ([], (0, "no result"))
            answered = sum(1 for e in seen if e.get("type") == "transport.answered")
            if closed is not None or answered != 1:
                problems.append(f"round {round + 1}, sideband {i}: closed {closed}, answered {answered} times")
    c.check("30 sidebands opened 0-29 ms after the 201, six rounds: none closed while the call was up, each told answered once",
            not problems, "; ".join(problems[:5]))


def unreachable(base: str, ws: str, c: Checks, port: int) -> None:
    """Issue 73: a trunk that takes the INVITE and never answers (a socket that only listens):
    `unreachable` at timer B though the call was to ring 5 s, and no CANCEL sent (RFC 3261
    section 9.1: none before a provisional response)."""
    hole = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    hole.bind(("127.0.0.1", port))
    hole.settimeout(0.5)
    status, _, body = post(base, "/v1/realtime/calls", {"transport": {"type": "sip", "destination": "+15550000030", "trunk": "blackhole",
                                                                       "ring_timeout_seconds": 5}})
    methods: list[str] = []
    failed: dict = {}
    with connect(f"{ws}/v1/realtime?call_id={body.get('id', '')}") as side:
        end = time.monotonic() + 45
        while time.monotonic() < end and not failed:
            try:
                methods.append(hole.recv(65536).split(b" ", 1)[0].decode(errors="replace"))
            except TimeoutError:
                pass
            try:
                event = json.loads(side.recv(timeout=0.01))
                if event.get("type") == "transport.failed":
                    failed = event.get("error", {})
            except TimeoutError:
                pass
            except ConnectionClosed:
                break
    hole.close()
    c.check("a trunk that never answers: unreachable (not no_answer) though it was to ring 5 s, and no CANCEL sent",
            status == 201 and failed.get("code") == "unreachable" and "CANCEL" not in methods and "INVITE" in methods,
            f"{failed} sent: {sorted(set(methods))}")


def sipp_trunks(base: str, ws: str, c: Checks) -> None:
    """SIPp's trunks: each call's end, as its sideband is told it (on a thread of its own, beside
    the pjsua2 callees' calls: they share nothing but the server)."""
    for trunk, wanted, label in (
            ("auth", lambda seen: any(e.get("type") == "transport.answered" for e in seen), "a digest challenge answered with the trunk's credentials: answered"),
            ("unauthorized", lambda seen: failure(seen).get("code") == "unauthorized" and failure(seen).get("sip_status") == 401,
             "401 forever: one answer, then unauthorized (401)"),
            ("503", lambda seen: failure(seen).get("code") == "unavailable" and "retry after 120" in failure(seen).get("message", ""),
             "503 with Retry-After: unavailable, its retry said"),
            ("early-bye", lambda seen: any(e.get("type") == "transport.ringing" for e in seen) and failure(seen).get("code") == "hung_up_early",
             "a BYE during early media: ringing, then hung_up_early"),
            ("silent", lambda seen: any(e.get("type") == "transport.answered" for e in seen), "a callee that never sends RTP: answered")):
        status, _, body = post(base, "/v1/realtime/calls", {"transport": {"type": "sip", "destination": "+15550000010", "trunk": trunk}})
        if trunk == "503":
            # A call that fails at once: a sideband attached a second later hears why, from its
            # story, and then the close (issue 73).
            time.sleep(1.0)
            seen, closed = sideband_story(ws, body.get("id", ""), 5.0)
            c.check("a call that failed before its sideband attached: transport.failed from its story, then a close saying why",
                    closed is not None and closed[0] == 1000 and "unavailable" in closed[1], f"{closed}")
        else:
            with connect(f"{ws}/v1/realtime?call_id={body.get('id', '')}") as side:
                seen = events_until(side, {"transport.failed", "transport.answered"}, 15)
        c.check(f"trunk {trunk}: {label}", status == 201 and wanted(seen), json.dumps(seen)[:400])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:  # the silent callee's call ends at --sip-media-timeout
        with urllib.request.urlopen(base + "/metrics", timeout=10) as response:
            if 'parley_sip_calls_total{end="media_timeout"} 1' in response.read().decode():
                break
        time.sleep(0.5)
    else:
        c.check("the callee that never sent RTP: hung up at the media timeout", False)


def busy_and_no_answer(base: str, ws: str, c: Checks) -> None:
    """A busy callee, then one no one answers (beside the voicemails: they share only the server)."""
    status, _, body = place(base, "+15550000002")
    with connect(f"{ws}/v1/realtime?call_id={body.get('id', '')}") as side:
        failed = events_until(side, {"transport.failed"}, 15)[-1:]
        error = failed[0].get("error", {}) if failed else {}
        c.check("a busy callee: transport.failed, busy, SIP 486", error.get("code") == "busy" and error.get("sip_status") == 486, json.dumps(failed))

    status, _, body = place(base, "+15550000003", ring_timeout_seconds=5)
    with connect(f"{ws}/v1/realtime?call_id={body.get('id', '')}") as side:
        failed = events_until(side, {"transport.failed"}, 20)[-1:]
        error = failed[0].get("error", {}) if failed else {}
        c.check("no one answers: cancelled at its ring timeout, transport.failed no_answer", error.get("code") == "no_answer", json.dumps(failed))


def hang_up_on_machine(base: str, ws: str, c: Checks) -> None:
    status, _, body = place(base, "+15550000006", answering_machine={"on_machine": "hang_up", "until_decided": "listen"})
    with connect(f"{ws}/v1/realtime?call_id={body.get('id', '')}") as side:
        seen = events_until(side, {"never"}, 15)
        kinds = [e.get("type") for e in seen]
        c.check("hang_up: a machine, then the call ends with no reply begun", status == 201 and "transport.answered_by" in kinds and "response.created" not in kinds,
                ", ".join(dict.fromkeys(kinds)))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="http://127.0.0.1:PORT")
    parser.add_argument("--blackhole-port", type=int, required=True, help="the port of the trunk that never answers, to listen on")
    args = parser.parse_args()
    base = args.url
    ws = base.replace("http://", "ws://")
    c = Checks()

    # SIPp's trunks and the GPT-Live call beside the Realtime calls: they share only the server.
    trunks = threading.Thread(target=sipp_trunks, args=(base, ws, c))
    trunks.start()
    live = threading.Thread(target=lambda: asyncio.run(live_call(base, c)))
    live.start()
    # Issue 73's calls beside the rest: the late listener, the attach race, the unanswering trunk.
    stories = threading.Thread(target=lambda: (late_listener(base, ws, c), attach_race(base, ws, c)))
    stories.start()
    silent_trunk = threading.Thread(target=unreachable, args=(base, ws, c, args.blackhole_port))
    silent_trunk.start()
    status, headers, body = place(base, "+15550000001", KEYS_SESSION)
    call_id = body.get("id", "")
    c.check("POST /v1/realtime/calls with a SIP transport: 201 with the call's id and Location",
            status == 201 and call_id.startswith("rtc_") and headers.get("Location", "").endswith(call_id), f"{status} {body}")
    with connect(f"{ws}/v1/realtime?call_id={call_id}") as side:
        seen = events_until(side, {"transport.answered", "transport.failed"}, 15)
        answered = next((e for e in seen if e.get("type") == "transport.answered"), None)
        c.check("the sideband: transport.answered with the call's id", answered is not None and answered.get("call_id") == call_id,
                ", ".join(e.get("type", "?") for e in seen))
        seen = events_until(side, {"response.output_audio_transcript.delta"}, 40)
        if not any(e.get("type") == "transport.answered_by" for e in seen):
            seen += events_until(side, {"transport.answered_by"}, 5)
        who = next((e for e in seen if e.get("type") == "transport.answered_by"), {})
        c.check("answering-machine detection: the person who said hello is human", who.get("answered_by") == "human", json.dumps(who))
        heard = " ".join(e.get("transcript", "") for e in seen if e.get("type") == "conversation.item.input_audio_transcription.completed")
        c.check("the session heard the callee", "hello" in heard.lower() or "who" in heard.lower(), repr(heard))
        c.check("the session answered it (its reply's words)", any(e.get("type") == "response.output_audio_transcript.delta" for e in seen),
                ", ".join(sorted({e.get("type", "?") for e in seen})))
        called = [e for e in seen if e.get("type") == "response.function_call_arguments.done"]
        outputs = [e.get("item", {}).get("output", "") for e in seen if e.get("type") == "conversation.item.added" and e.get("item", {}).get("type") == "function_call_output"]
        c.check("the agent's press_keys call was run by Parley and answered with what it pressed",
                [e.get("name") for e in called] == ["press_keys"] and outputs == ['{"pressed":"4"}'], json.dumps(called + [{"outputs": outputs}])[:400])
        for key in "123":
            side.send(json.dumps({"type": "transport.dtmf.send", "event": key, "event_id": f"evt_key_{key}"}))
        sent = [e for e in events_until(side, {"never"}, 1.5) if e.get("type") in ("transport.dtmf.sent", "error")]
        c.check("keys pressed on the call: transport.dtmf.sent for each", [e.get("event") for e in sent] == list("123")
                and [e.get("client_event_id") for e in sent] == ["evt_key_1", "evt_key_2", "evt_key_3"], json.dumps(sent))
        time.sleep(3.0)  # three seconds of the answer's audio at the callee (it must hear one), then the hangup
        status, _, _ = post(base, f"/v1/realtime/calls/{call_id}/hangup", None)
        c.check("the application hangs the call up (200)", status == 200, str(status))

    # The same voicemail with hang_up, beside the next: the session listens until the verdict, then Parley hangs up.
    machine = threading.Thread(target=hang_up_on_machine, args=(base, ws, c))
    machine.start()
    unanswered = threading.Thread(target=busy_and_no_answer, args=(base, ws, c))
    unanswered.start()
    # A voicemail: the message left after its beep, then Parley's BYE (no hangup from here).
    status, _, body = place(base, "+15550000005", answering_machine={"on_machine": "leave_message", "message": MESSAGE})
    with connect(f"{ws}/v1/realtime?call_id={body.get('id', '')}") as side:
        seen = events_until(side, {"transport.answered_by"}, 15)
        who = seen[-1] if seen and seen[-1].get("type") == "transport.answered_by" else {}
        c.check("answering-machine detection: the voicemail is a machine, decided within 2.5 s of its greeting",
                who.get("answered_by") == "machine" and who.get("decided_after_ms", 99_999) <= 2_500 + 200, json.dumps(who))
        session_id = next((e.get("session", {}).get("id", "") for e in seen if e.get("type") == "session.created"), "")
        seen = events_until(side, {"never"}, 25)  # to the call's end: the sideband closes
        said = " ".join(e.get("delta", "") for e in seen if e.get("type") == "response.output_audio_transcript.delta")
        c.check("leave_message: the session said the message word for word after the beep", said.strip() == MESSAGE, repr(said[:200]))
    report: dict = {}
    for _ in range(50):  # written as the session closes, on its loop
        status, _, report = get(base, f"/v1/sessions/{session_id}")
        if status == 200:
            break
        time.sleep(0.1)
    c.check("the session's report says who answered", report.get("answered_by", {}).get("answer") == "machine", json.dumps(report.get("answered_by")))

    machine.join()
    unanswered.join()

    live.join()
    trunks.join()
    stories.join()
    silent_trunk.join()


    for label, transport, code in (("an unknown trunk", {"type": "sip", "destination": "+15550000001", "trunk": "nope"}, "unknown_trunk"),
                                   ("a destination that is no number or SIP URI", {"type": "sip", "destination": "15550000001", "trunk": "test"}, "invalid_value"),
                                   ("a field SIP's transport does not define", {"type": "sip", "destination": "+15550000001", "trunk": "test", "codec": "g729"},
                                    "unknown_parameter")):
        status, _, body = post(base, "/v1/realtime/calls", {"transport": transport})
        c.check(f"refused: {label} (400 {code})", status == 400 and body.get("error", {}).get("code") == code, f"{status} {body}")

    # A trunk's limits: its second call at once, or a second call within its minute, is 429.
    for trunk, code in (("one-at-a-time", "trunk_busy"), ("one-a-minute", "trunk_rate_limited")):
        first, _, placed = post(base, "/v1/realtime/calls", {"transport": {"type": "sip", "destination": "+15550000020", "trunk": trunk}})
        status, headers, body = post(base, "/v1/realtime/calls", {"transport": {"type": "sip", "destination": "+15550000021", "trunk": trunk}})
        c.check(f"trunk {trunk}: the first call placed, the next 429 {code} with Retry-After",
                first == 201 and status == 429 and body.get("error", {}).get("code") == code and int(headers.get("Retry-After", "0")) >= 1, f"{first} {status} {headers.get('Retry-After')} {body}")
        post(base, f"/v1/realtime/calls/{placed.get('id', '')}/hangup", None)

    with urllib.request.urlopen(base + "/metrics", timeout=10) as response:
        metrics = response.read().decode()
    for line in ("parley_sip_calls_placed_total 21", 'parley_sip_calls_unanswered_total{reason="unreachable"} 1', 'parley_sip_calls_refused_out_total{reason="trunk_busy"} 1',
                 'parley_sip_calls_refused_out_total{reason="trunk_rate_limited"} 1', 'parley_sip_calls_answered_by_total{answer="machine"} 2', 'parley_sip_calls_total{end="media_timeout"} 1',
                 'parley_sip_calls_unanswered_total{reason="unauthorized"} 1', 'parley_sip_calls_unanswered_total{reason="unavailable"} 1',
                 'parley_sip_calls_unanswered_total{reason="hung_up_early"} 1', 'parley_sip_calls_unanswered_total{reason="busy"} 1', 'parley_sip_calls_unanswered_total{reason="no_answer"} 1'):
        c.check(f"/metrics: {line}", line in metrics)
    print(f"dial out: {c.passed} passed, {c.failed} failed", flush=True)
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
