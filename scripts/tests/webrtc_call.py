"""A WebRTC call to Parley as a browser makes one, with aiortc (scripts/tests/webrtc-test.sh).

Posts an SDP offer to POST /v1/realtime/calls (raw application/sdp, or multipart with a session
part), opens the `oai-events` data channel, and checks the Realtime API's flow over it: session
created and updated, a spoken question heard (speech_started/stopped, a transcript), a reply
spoken back on the audio track (output_audio_buffer started and stopped), then a barge-in that cuts
a long reply (cleared, the response cancelled), and a hangup. Writes what it heard to --heard (a
48 kHz mono WAV) for the words to be recognised apart. Prints one line per check and "all checks
passed"; exits 1 on a failed check.
"""
import argparse
import asyncio
import fractions
import json
import sys
import time
import urllib.error
import urllib.request
import wave

import aioice.ice
import av
import numpy
import websockets
from aiortc import MediaStreamTrack, RTCPeerConnection, RTCSessionDescription

# aioice gathers host candidates from the interfaces and leaves loopback out; the server here
# listens on 127.0.0.1 alone.
aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]

RATE = 48_000
FRAME = 960  # 20 ms


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        raise SystemExit(1)


def read_wav(path):
    with wave.open(path, "rb") as f:
        assert f.getframerate() == RATE and f.getnchannels() == 1 and f.getsampwidth() == 2, "speech must be 48 kHz mono pcm16"
        return numpy.frombuffer(f.readframes(f.getnframes()), dtype=numpy.int16)


class Microphone(MediaStreamTrack):
    """Silence, or the speech queued with say(), in 20 ms frames at real-time pace."""

    kind = "audio"

    def __init__(self):
        super().__init__()
        self.queue = numpy.zeros(0, dtype=numpy.int16)
        self.pts = 0
        self.start = None

    def say(self, samples):
        self.queue = numpy.concatenate([self.queue, samples])

    @property
    def speaking(self):
        return len(self.queue) > 0

    async def recv(self):
        if self.start is None:
            self.start = time.monotonic()
        due = self.start + self.pts / RATE
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        chunk = self.queue[:FRAME]
        self.queue = self.queue[FRAME:]
        if len(chunk) < FRAME:
            chunk = numpy.concatenate([chunk, numpy.zeros(FRAME - len(chunk), dtype=numpy.int16)])
        frame = av.AudioFrame.from_ndarray(chunk.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = RATE
        frame.pts = self.pts
        frame.time_base = fractions.Fraction(1, RATE)
        self.pts += FRAME
        return frame


class Speaker:
    """The reply's audio as the caller's track delivers it, resampled to 48 kHz mono."""

    def __init__(self):
        self.samples = []
        self.resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)

    async def run(self, track):
        while True:
            try:
                frame = await track.recv()
            except Exception:
                return
            for out in self.resampler.resample(frame):
                self.samples.append(out.to_ndarray().reshape(-1).copy())

    def audio(self):
        return numpy.concatenate(self.samples) if self.samples else numpy.zeros(0, dtype=numpy.int16)

    def speech_seconds(self, since=0):
        """20 ms frames louder than a whisper: the reply's speech, not the silence between."""
        audio = self.audio()[since:]
        frames = audio[: len(audio) // FRAME * FRAME].reshape(-1, FRAME).astype(numpy.float64)
        loud = numpy.sqrt((frames ** 2).mean(axis=1)) > 300 if len(frames) else []
        return float(numpy.count_nonzero(loud)) * FRAME / RATE


class Events:
    def __init__(self):
        self.all = []
        self.waiters = []

    def add(self, event):
        self.all.append(event)
        for waiter in list(self.waiters):
            if waiter[0](event) and not waiter[1].done():
                waiter[1].set_result(event)

    async def wait(self, kind, timeout, where=lambda e: True):
        for event in self.all:
            if event.get("type") == kind and where(event):
                return event
        future = asyncio.get_running_loop().create_future()
        self.waiters.append((lambda e: e.get("type") == kind and where(e), future))
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            types = [e.get("type") for e in self.all]
            check(False, f"{kind} within {timeout} s (events so far: {types[-40:]})")

    def types(self):
        return [e.get("type") for e in self.all]


def peer(take=None):
    """A browser's peer: a microphone track, the reply's track into a Speaker, and the
    `oai-events` data channel whose messages go to Events (through `take`, when given)."""
    pc = RTCPeerConnection()
    microphone = Microphone()
    pc.addTrack(microphone)
    speaker = Speaker()
    tasks = []

    @pc.on("track")
    def on_track(track):
        if track.kind == "audio":
            tasks.append(asyncio.ensure_future(speaker.run(track)))

    channel = pc.createDataChannel("oai-events")
    events = Events()
    opened = asyncio.get_running_loop().create_future()
    channel.on("open", lambda: opened.done() or opened.set_result(True))
    channel.on("message", lambda message: (take or events.add)(json.loads(message)))
    return pc, microphone, speaker, tasks, channel, events, opened


def post(url, body, headers):
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


async def call(args):
    question = read_wav(args.question)
    interruption = read_wav(args.interruption)
    pc, microphone, speaker, tasks, channel, events, opened = peer()

    await pc.setLocalDescription(await pc.createOffer())
    offer = pc.localDescription.sdp.encode()
    headers = {"Authorization": f"Bearer {args.key}"}
    if args.multipart:
        boundary = "parley-webrtc-test"
        session = json.dumps({"type": "realtime", "instructions": "You are a test.", "audio": {"output": {"voice": "alloy"}}})
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"sdp\"\r\nContent-Type: application/sdp\r\n\r\n").encode() + offer \
            + (f"\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"session\"\r\nContent-Type: application/json\r\n\r\n{session}\r\n--{boundary}--\r\n").encode()
        headers["Content-Type"] = f"multipart/form-data; boundary={boundary}"
    else:
        body = offer
        headers["Content-Type"] = "application/sdp"
    started = time.monotonic()
    status, response_headers, answer = await asyncio.get_running_loop().run_in_executor(
        None, post, args.url + "/v1/realtime/calls", body, headers)
    check(status == 201, f"the offer is answered 201 ({status}: {answer[:200]!r})")
    location = response_headers.get("Location", "")
    check(location.startswith("/v1/realtime/calls/rtc_"), f"Location names the call ({location})")
    call_id = location.rsplit("/", 1)[-1]
    await pc.setRemoteDescription(RTCSessionDescription(sdp=answer.decode(), type="answer"))
    await asyncio.wait_for(opened, 20)
    check(True, f"oai-events open {time.monotonic() - started:.2f} s after the offer")
    created = await events.wait("session.created", 10)
    if args.multipart:
        check(created["session"].get("instructions") == "You are a test.", "the multipart session's instructions are the session's")
    if args.quick:
        await hang_up(args, call_id, pc, tasks)
        print("all checks passed", flush=True)
        return

    # The sideband: a server's WebSocket on the same session, by the call's id.
    ws_url = args.url.replace("http://", "ws://") + f"/v1/realtime?call_id={call_id}"
    sideband = await websockets.connect(ws_url, additional_headers={"Authorization": f"Bearer {args.key}"})
    await sideband.send(json.dumps({"type": "session.update", "session": {"type": "realtime", "instructions": "Answer briefly."}}))
    updated = await events.wait("session.updated", 10, lambda e: e["session"].get("instructions") == "Answer briefly.")
    check(updated is not None, "the sideband's session.update reaches the call's session (its session.updated on the data channel)")
    seen = json.loads(await asyncio.wait_for(sideband.recv(), 10))
    check(seen.get("type") == "session.updated", f"the sideband gets the call's events ({seen.get('type')})")
    channel.send(json.dumps({"type": "session.update", "session": {"type": "realtime", "audio": {
        "input": {"format": {"type": "audio/pcm", "rate": 24000}, "transcription": {"model": "whisper-1"},
                  "turn_detection": {"type": "server_vad", "silence_duration_ms": 600}},
        "output": {"format": {"type": "audio/pcm", "rate": 24000}}}}}))
    await events.wait("session.updated", 10)
    check(True, "session.updated (the WebSocket formats it names do not change the call's Opus)")

    # A question, spoken into the call's audio track.
    await asyncio.sleep(0.5)
    microphone.say(question)
    await events.wait("input_audio_buffer.speech_started", 15)
    await events.wait("input_audio_buffer.speech_stopped", 20)
    transcript = await events.wait("conversation.item.input_audio_transcription.completed", 20)
    print(f"     heard: {transcript.get('transcript')!r}", flush=True)
    check(len(transcript.get("transcript", "").split()) >= 2, "the question is transcribed")
    first_done = await events.wait("response.done", 60)
    reply_id = first_done["response"]["id"]
    await events.wait("output_audio_buffer.started", 5, lambda e: e.get("response_id") == reply_id)
    await events.wait("output_audio_buffer.stopped", 10, lambda e: e.get("response_id") == reply_id)
    check(not any(t == "response.output_audio.delta" for t in events.types()), "no audio deltas on the data channel")
    await asyncio.sleep(1.0)  # the reply's last packets, through the caller's jitter buffer
    spoken = speaker.speech_seconds()
    check(spoken >= 0.5, f"the reply is heard on the audio track ({spoken:.2f} s of speech)")
    heard_until = len(speaker.audio())

    # A long reply, cut by the caller's voice.
    channel.send(json.dumps({"type": "conversation.item.create", "item": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": args.long_reply}]}}))
    channel.send(json.dumps({"type": "response.create"}))
    second = await events.wait("output_audio_buffer.started", 30, lambda e: e.get("response_id") != reply_id)
    long_id = second["response_id"]
    await asyncio.sleep(1.5)
    microphone.say(interruption)
    cut = await events.wait("response.done", 30, lambda e: e["response"]["id"] == long_id)
    check(cut["response"]["status"] == "cancelled", f"the barge-in cancels the reply ({cut['response']['status']}; "
          f"events since it started: {[t for t in events.types()[events.all.index(second):] if 'delta' not in t]})")
    await events.wait("output_audio_buffer.cleared", 5, lambda e: e.get("response_id") == long_id)
    check(True, "output_audio_buffer.cleared after the barge-in")

    reply = next((e for e in events.all if e.get("type") == "response.output_audio_transcript.done"
                  and e.get("response_id") == reply_id), {})
    with open(args.heard + ".txt", "w") as f:
        f.write(reply.get("transcript", ""))
    with wave.open(args.heard, "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(RATE)
        f.writeframes(speaker.audio()[:heard_until].tobytes())

    await hang_up(args, call_id, pc, tasks)
    code = None
    try:
        async with asyncio.timeout(10):
            while True:
                await sideband.recv()
    except websockets.ConnectionClosed as closed:
        code = closed.rcvd.code if closed.rcvd else None
    except TimeoutError:
        pass
    check(code == 1000, f"the sideband is closed (1000) with the call ({code})")
    print(f"reply_speech_seconds={spoken:.2f} events={len(events.all)}")
    print("all checks passed", flush=True)


async def hang_up(args, call_id, pc, tasks):
    status, _, body = await asyncio.get_running_loop().run_in_executor(
        None, post, f"{args.url}/v1/realtime/calls/{call_id}/hangup", b"", {"Authorization": f"Bearer {args.key}"})
    check(status == 200, f"hangup answered 200 ({status} {body[:100]!r})")
    for task in tasks:
        task.cancel()
    await pc.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True, help="an ek_ client secret or an API key")
    parser.add_argument("--question", required=True, help="48 kHz mono WAV")
    parser.add_argument("--interruption", required=True, help="48 kHz mono WAV")
    parser.add_argument("--long-reply", default="Tell me a long story about a small boat that left the harbour at dawn.",
                        help="a user message whose reply is long enough to be cut")
    parser.add_argument("--heard", required=True, help="where the first reply's audio is written")
    parser.add_argument("--multipart", action="store_true")
    parser.add_argument("--quick", action="store_true", help="only the offer, the channel, session.created, and the hangup")
    args = parser.parse_args()
    try:
        asyncio.run(asyncio.wait_for(call(args), 180))
    except asyncio.TimeoutError:
        check(False, "the call within 180 s")


if __name__ == "__main__":
    sys.exit(main())
