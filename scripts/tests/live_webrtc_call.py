"""A GPT-Live WebRTC session, as a browser's back end makes one with the openai SDK's
`client.live.create` and aiortc (scripts/tests/webrtc-test.sh).

Creates the session with the offer in `transport` (the SDK validates the answer as its
`LiveCreateResponse`), opens the data channel, and checks GPT-Live's flow over it: session.started
without a session.start, a spoken question heard (input transcript deltas), the reply's words
(output transcript deltas) and its audio on the track, not on the channel; audio appends refused on
a call; the application's commentary spoken on the track; and a hangup through
`client.live.sessions.hangup`, with session.closed on the channel. The session is stored
(`store: true`) and then forked onto a second call with `client.live.sessions.fork`, which starts
with its conversation; a fork with a format of its own, or of an unknown id, is refused. Every event is validated against
the SDK's ServerEvent models. Prints one line per check and "all checks passed"; exits 1 on a failed
check.
"""
import argparse
import asyncio
import json
import sys
import time

import openai
import pydantic
from aiortc import RTCSessionDescription
from openai.types.live.server_event import ServerEvent
from realtime_sdk_client import models_by_type  # beside this file
from webrtc_call import check, peer, read_wav  # beside this file (and aioice's loopback patch)

MODEL = "gpt-live-1"
COMMENTARY = "The parcel left the depot this morning and arrives on Friday."


def validator():
    """Each event checked against the SDK's model for its type; the problems kept."""
    models = models_by_type(ServerEvent)
    problems = []

    def validate(event):
        model = models.get(event.get("type"))
        if model is None:
            problems.append(f"{event.get('type')!r} is not an event type of the SDK's")
            return
        try:
            model.model_validate(event)
        except pydantic.ValidationError as error:
            problems.append(f"{event.get('type')}: {error.errors()[:2]}")
    return validate, problems


async def call(args):
    question = read_wav(args.question)
    client = openai.AsyncOpenAI(base_url=args.url + "/v1", api_key=args.key, max_retries=0)
    validate, problems = validator()
    received = []

    def take(event):
        validate(event)
        received[0].add(event)

    pc, microphone, speaker, tasks, channel, events, opened = peer(take)
    received.append(events)
    await pc.setLocalDescription(await pc.createOffer())
    started = time.monotonic()
    created = await client.live.create(
        session={"model": MODEL, "instructions": "You are Parley's GPT-Live WebRTC test. Answer briefly.", "audio": {"output": {"voice": "cedar"}},
                 "store": True},
        transport={"type": "webrtc", "sdp": pc.localDescription.sdp})
    check(created.session.id.startswith("sess_") and created.transport.type == "webrtc", f"client.live.create answered ({created.session.id})")
    await pc.setRemoteDescription(RTCSessionDescription(sdp=created.transport.sdp, type="answer"))
    await asyncio.wait_for(opened, 20)
    check(True, f"the data channel open {time.monotonic() - started:.2f} s after the offer")
    began = await events.wait("session.started", 10)
    check(began["session"]["id"] == created.session.id and "format" not in began["session"].get("audio", {}),
          "session.started on the channel, without a session.start (the call's format is its media's)")

    channel.send(json.dumps({"type": "session.input_audio.append", "audio": "AAAA", "event_id": "evt_append"}))
    refused = await events.wait("error", 10, lambda e: e.get("client_event_id") == "evt_append")
    check(refused["error"]["code"] == "invalid_value", "an audio append on a call's channel is refused (the audio is the track's)")
    channel.send(json.dumps({"type": "session.output_audio.fixture.play", "audio": "AAAA", "event_id": "evt_fixture"}))
    refused = await events.wait("error", 10, lambda e: e.get("client_event_id") == "evt_fixture")
    check(refused["error"]["code"] == "invalid_value", "a fixture from the front end's data channel is refused (it is the WebSocket's or a sideband's)")

    await asyncio.sleep(0.5)
    microphone.say(question)
    await events.wait("session.input_transcript.delta", 20)
    reply = await events.wait("session.usage.updated", 60)
    heard = "".join(e["delta"] for e in events.all if e.get("type") == "session.input_transcript.delta")
    said = "".join(e["delta"] for e in events.all if e.get("type") == "session.output_transcript.delta")
    print(f"     heard: {heard!r}; said: {said[:120]!r}", flush=True)
    check(len(heard.split()) >= 2, "the question is heard (input transcript deltas)")
    check(len(said.split()) >= 2, "the reply's words (output transcript deltas)")
    check(not any(e.get("type") == "session.output_audio.delta" for e in events.all), "no audio deltas on the data channel")
    await asyncio.sleep(1.0)  # the reply's last packets, through the caller's jitter buffer
    spoken = speaker.speech_seconds()
    check(spoken >= 0.5, f"the reply is heard on the audio track ({spoken:.2f} s of speech)")

    before = len(speaker.audio())
    channel.send(json.dumps({"type": "session.commentary.append", "content": COMMENTARY, "delegation_id": None}))
    await events.wait("session.commentary.appended", 10)
    await events.wait("session.usage.updated", 30, lambda e: e is not reply and events.all.index(e) > events.all.index(reply))
    await asyncio.sleep(1.0)
    commented = speaker.speech_seconds(since=before)
    check(commented >= 1.0, f"the application's commentary is spoken on the track ({commented:.2f} s)")

    await client.live.sessions.hangup(created.session.id)
    closed = await events.wait("session.closed", 10)
    check(closed["reason"] == "close_requested", "client.live.sessions.hangup ends the session (session.closed on the channel)")
    for task in tasks:
        task.cancel()
    await pc.close()
    await fork(client, created.session.id, heard, take, received)
    check(not problems, "every event validates against the SDK's ServerEvent models" + ("".join("\n       " + p for p in problems) if problems else ""))
    print("all checks passed", flush=True)


async def fork(client, parent, heard, take, received):
    """The stored session `parent` forked onto a new call: its conversation is the fork's input."""
    pc, _, _, tasks, channel, events, opened = peer(take)
    received[0] = events
    await pc.setLocalDescription(await pc.createOffer())
    offer = {"type": "webrtc", "sdp": pc.localDescription.sdp}
    for label, session_id, session, error in (("a format of its own (a call's is its media's)", parent, {"audio": {"format": {"type": "audio/pcmu"}}}, openai.BadRequestError),
                                              ("an unknown session", "sess_nope", {}, openai.NotFoundError)):
        try:
            await client.live.sessions.fork(session_id, transport=offer, session=session)
            check(False, f"a fork with {label} is refused")
        except error as refused:
            check(True, f"a fork with {label} is refused ({refused.status_code})")
    # The fork's front end is held to what it may send and be sent.
    permissions = {"data_channel": {"allowed_client_events": ["session.instructions.append"],
                                    "allowed_server_events": [{"type": "error"}, {"type": "session.instructions.appended"}]}}
    forked = await client.live.sessions.fork(parent, transport=offer, session={"store": False, "client": permissions})
    check(forked.session.id.startswith("sess_") and forked.session.id != parent, f"client.live.sessions.fork answered ({forked.session.id})")
    await pc.setRemoteDescription(RTCSessionDescription(sdp=forked.transport.sdp, type="answer"))
    await asyncio.wait_for(opened, 20)
    began = await events.wait("session.started", 10)
    session = began["session"]
    history = " ".join(item["content"][0]["text"] for item in session.get("input", []))
    check(session["id"] == forked.session.id and session["audio"]["output"]["voice"] == "cedar" and session["store"] is False,
          "the fork's session.started: the stored voice, its own store setting")
    first_word = next((word for word in heard.split() if len(word) > 3), heard.strip())
    check(first_word.lower() in history.lower(), f"the fork starts with the stored conversation ({history[:100]!r})")
    notice = await events.wait("info", 10)
    check(notice["code"] == "data_channel_permissions", f"the fork's channel told its permissions ({notice['message'][:90]}...)")
    channel.send(json.dumps({"type": "session.commentary.append", "content": "Not allowed.", "delegation_id": None, "event_id": "evt_denied"}))
    denied = await events.wait("error", 10, lambda e: e.get("client_event_id") == "evt_denied")
    check(denied["error"]["code"] == "event_not_allowed", "a command the channel may not send is refused (event_not_allowed)")
    channel.send(json.dumps({"type": "session.instructions.append", "content": "Be brief.", "delegation_id": None, "event_id": "evt_allowed"}))
    await events.wait("session.instructions.appended", 10, lambda e: e.get("client_event_id") == "evt_allowed")
    check(True, "a command it may send is taken")
    await client.live.sessions.hangup(forked.session.id)
    await events.wait("session.closed", 10)
    check(not any(e.get("type") in ("session.input_transcript.delta", "session.output_transcript.delta", "session.usage.updated") for e in events.all),
          "the channel was sent only the events it allows")
    for task in tasks:
        task.cancel()
    await pc.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--question", required=True, help="48 kHz mono WAV")
    args = parser.parse_args()
    try:
        asyncio.run(asyncio.wait_for(call(args), 120))
    except asyncio.TimeoutError:
        check(False, "the Live call within 120 s")


if __name__ == "__main__":
    sys.exit(main())
