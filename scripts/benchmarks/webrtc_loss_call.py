"""Drives aiortc (a WebRTC client nobody here wrote): one call to Parley through udp_relay.py, for `make bench-webrtc-loss`.

The WebRTC half of `make bench-webrtc-loss` (scripts/benchmarks/webrtc-loss.sh): one aiortc call
to Parley through udp_relay.py, asking spoken questions in turn for --minutes, and measuring each
reply as loss_measure.py says (latency, and gaps on a fixed 20 ms timeline).

Adapted from scripts/tests/webrtc_call.py. The offer goes to the server itself; the answer's
candidate port is changed to --relay-port before setRemoteDescription, so all media, DTLS and
SCTP go through the relay. The reply's audio is stamped as aiortc's receiver hands each decrypted
RTP packet on (a wrapper around RTCRtpReceiver._handle_rtp_packet), before aiortc's own jitter
buffer: aiortc's (16 packets, 4 prefetched, no concealment) holds every packet behind a lost one
until 16 more have come, which is aiortc's choice, not what a browser's NetEq does, so the
playout model is ours and the same for both transports. How many frames aiortc's track skipped
is reported beside it (`aiortc_frames_skipped`).

Writes its report as JSON to --report; prints one line a turn.
"""
import argparse
import asyncio
import fractions
import json
import re
import sys
import time
import urllib.error
import urllib.request

import aioice.ice
import av
import numpy
from aiortc import MediaStreamTrack, RTCPeerConnection, RTCSessionDescription
from aiortc.rtcrtpreceiver import RTCRtpReceiver

from loss_measure import Events, client_arguments, fixed_timeline_gaps, questions, summary, write_report

# aioice gathers host candidates from the interfaces and leaves loopback out; the relay listens
# on 127.0.0.1 alone.
aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]

RATE = 48_000
FRAME = 960  # 20 ms, and the RTP timestamp step of one Opus packet from Parley

# Every RTP packet the receiver hands on: (monotonic seconds, RTP timestamp).
received: list[tuple[float, int]] = []
_handle_rtp_packet = RTCRtpReceiver._handle_rtp_packet


async def _stamped(self, packet, arrival_time_ms):
    received.append((time.monotonic(), packet.timestamp))
    return await _handle_rtp_packet(self, packet, arrival_time_ms)

RTCRtpReceiver._handle_rtp_packet = _stamped


class Microphone(MediaStreamTrack):
    """Silence, or the question queued with say(), in 20 ms frames at real-time pace; `spoken` is
    set to when the frame holding the question's last sample went to the encoder."""

    kind = "audio"

    def __init__(self) -> None:
        super().__init__()
        self.queue = numpy.zeros(0, dtype=numpy.int16)
        self.pts = 0
        self.start: float | None = None
        self.spoken: asyncio.Future | None = None

    def say(self, samples) -> asyncio.Future:
        self.queue = numpy.concatenate([self.queue, samples])
        self.spoken = asyncio.get_running_loop().create_future()
        return self.spoken

    async def recv(self):
        if self.start is None:
            self.start = time.monotonic()
        delay = self.start + self.pts / RATE - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        chunk, self.queue = self.queue[:FRAME], self.queue[FRAME:]
        if len(chunk) and not len(self.queue) and self.spoken and not self.spoken.done():
            self.spoken.set_result(time.monotonic())
        if len(chunk) < FRAME:
            chunk = numpy.concatenate([chunk, numpy.zeros(FRAME - len(chunk), dtype=numpy.int16)])
        frame = av.AudioFrame.from_ndarray(chunk.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = RATE
        frame.pts = self.pts
        frame.time_base = fractions.Fraction(1, RATE)
        self.pts += FRAME
        return frame


class Speaker:
    """Reads the track (or aiortc's queue grows) and counts the frames its pts skip."""

    def __init__(self) -> None:
        self.frames = 0
        self.skipped = 0
        self.last_pts: int | None = None

    async def run(self, track) -> None:
        while True:
            try:
                frame = await track.recv()
            except Exception:
                return
            self.frames += 1
            if self.last_pts is not None:
                missing = (frame.pts - self.last_pts) // FRAME - 1
                # Within a second: a longer jump is a new reply, not a loss.
                if 0 < missing <= 50:
                    self.skipped += missing
            self.last_pts = frame.pts


def reply_units(packets: list[tuple[float, int]]) -> dict[int, float]:
    """Each packet's 20 ms unit from its RTP timestamp (modulo 2^32, from the earliest), to when
    it came; the first unit is 0."""
    if not packets:
        return {}
    reference = packets[0][1]
    units: dict[int, float] = {}
    for came, timestamp in packets:
        offset = (timestamp - reference + 2**31) % 2**32 - 2**31
        units.setdefault(offset // FRAME, came)
    low = min(units)
    return {k - low: came for k, came in units.items()}


def post(url: str, body: bytes, headers: dict) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


async def call(args) -> dict:
    spoken_questions = questions(args.questions, RATE)
    loop = asyncio.get_running_loop()
    pc = RTCPeerConnection()
    microphone = Microphone()
    pc.addTrack(microphone)
    speaker = Speaker()
    tasks = []
    pc.on("track", lambda track: track.kind == "audio" and tasks.append(asyncio.ensure_future(speaker.run(track))))
    channel = pc.createDataChannel("oai-events")
    events = Events()
    opened = loop.create_future()
    channel.on("open", lambda: opened.done() or opened.set_result(True))
    channel.on("message", lambda message: events.add(json.loads(message)))

    await pc.setLocalDescription(await pc.createOffer())
    status, headers, answer = await loop.run_in_executor(None, post, args.url + "/v1/realtime/calls", pc.localDescription.sdp.encode(),
                                                         {"Content-Type": "application/sdp", "Authorization": "Bearer bench"})
    if status != 201:
        raise SystemExit(f"the offer was answered {status}: {answer[:200]!r}")
    call_id = headers.get("Location", "").rsplit("/", 1)[-1]
    # The server's candidate names its own media port; the client is to send to the relay's.
    sdp = re.sub(r"^(a=candidate:\S+ \d+ udp \d+ \S+ )\d+( typ)", rf"\g<1>{args.relay_port}\g<2>", answer.decode(), flags=re.M | re.I)
    sdp = re.sub(r"^(m=audio )\d+", rf"\g<1>{args.relay_port}", sdp, flags=re.M)
    await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="answer"))
    await asyncio.wait_for(opened, 30)
    if await events.wait("session.created", 15) is None:
        raise SystemExit("no session.created")
    channel.send(json.dumps({"type": "session.update", "session": {"type": "realtime", "audio": {
        "input": {"transcription": {"model": "whisper-1"},
                  "turn_detection": {"type": "server_vad", "silence_duration_ms": args.silence_ms}}}}}))
    if await events.wait("session.updated", 15) is None:
        raise SystemExit("no session.updated")
    print("webrtc: call up, asking", flush=True)

    turns = []
    started = time.monotonic()
    deadline = started + args.minutes * 60
    while time.monotonic() < deadline:
        name, samples = spoken_questions[len(turns) % len(spoken_questions)]
        await asyncio.sleep(args.pause)
        mark = events.mark()
        received.clear()
        question_end = await asyncio.wait_for(microphone.say(samples), len(samples) / RATE + 10)
        done = await events.wait("response.done", args.reply_timeout, mark)
        turn = {"question": name, "latency": None, "units": 0, "gaps": 0}
        if done is not None:
            reply = done["response"]["id"]
            turn["status"] = done["response"].get("status")
            await events.wait("output_audio_buffer.stopped", 15, mark, lambda e: e.get("response_id") == reply)
            await asyncio.sleep(args.drain)
        transcript = await events.wait("conversation.item.input_audio_transcription.completed", 0, mark)
        turn["transcript"] = transcript.get("transcript") if transcript else None
        packets = [p for p in received if p[0] >= question_end]
        units = reply_units(packets)
        if units:
            turn["latency"] = round(min(units.values()) - question_end, 3)
            turn["units"], turn["gaps"] = fixed_timeline_gaps(units, args.playout_ms / 1000)
            turn["packets"] = len(packets)
            # Kept for another playout model: each unit's arrival after the first, by unit index.
            first = min(units.values())
            turn["arrivals_ms"] = [round((units[k] - first) * 1000) if k in units else None for k in range(turn["units"])]
        turns.append(turn)
        print(f"webrtc: {name}: latency {turn['latency']} s, {turn['units']} units, {turn['gaps']} gaps, "
              f"heard {turn['transcript']!r}", flush=True)

    seconds = time.monotonic() - started
    await loop.run_in_executor(None, post, f"{args.url}/v1/realtime/calls/{call_id}/hangup", b"", {"Authorization": "Bearer bench"})
    for task in tasks:
        task.cancel()
    await pc.close()
    return summary(args.label, turns, seconds, time.process_time(),
                   {"aiortc_frames": speaker.frames, "aiortc_frames_skipped": speaker.skipped, "playout_ms": args.playout_ms})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="the server, for the offer and the hangup (not relayed)")
    client_arguments(parser, "WebRTC (UDP relay)", "udp_relay.py", 48000, "seconds after the reply for its last packets")
    args = parser.parse_args()
    write_report(asyncio.run(asyncio.wait_for(call(args), args.minutes * 60 + 120)), args.report)


if __name__ == "__main__":
    sys.exit(main())
