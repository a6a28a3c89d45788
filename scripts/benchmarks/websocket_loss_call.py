"""The WebSocket half of `make bench-webrtc-loss` (scripts/benchmarks/webrtc-loss.sh): one Realtime
session on /v1/realtime through tcp_relay.py, asking the same spoken questions as
webrtc_loss_call.py for --minutes, and measuring each reply as loss_measure.py says (latency, and
gaps of a playout buffer running dry).

The microphone is a 20 ms clock: each tick sends `input_audio_buffer.append` with 20 ms of pcm16
at 24 kHz, the question's while one is queued, else silence (server_vad needs the silence to see
the turn end). The reply comes as `response.output_audio.delta` events (100 ms each from
Parley), stamped as each is read off the socket and cut into 20 ms units.

Writes its report as JSON to --report; prints one line a turn.
"""
import argparse
import asyncio
import base64
import json
import sys
import time

import numpy
import websockets

from loss_measure import Events, client_arguments, questions, stream_gaps, summary, write_report

RATE = 24_000
FRAME = 480  # 20 ms
AUDIO_DELTAS = ("response.output_audio.delta", "response.audio.delta")


class Microphone:
    """20 ms of the queued question, or of silence, every 20 ms of a clock that does not drift."""

    def __init__(self, socket) -> None:
        self.socket = socket
        self.queue = numpy.zeros(0, dtype=numpy.int16)
        self.spoken: asyncio.Future | None = None

    def say(self, samples) -> asyncio.Future:
        self.queue = numpy.concatenate([self.queue, samples])
        self.spoken = asyncio.get_running_loop().create_future()
        return self.spoken

    async def run(self) -> None:
        start = time.monotonic()
        sent = 0
        while True:
            delay = start + sent * FRAME / RATE - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            chunk, self.queue = self.queue[:FRAME], self.queue[FRAME:]
            last = len(chunk) > 0 and len(self.queue) == 0
            if len(chunk) < FRAME:
                chunk = numpy.concatenate([chunk, numpy.zeros(FRAME - len(chunk), dtype=numpy.int16)])
            await self.socket.send(json.dumps({"type": "input_audio_buffer.append",
                                               "audio": base64.b64encode(chunk.astype("<i2").tobytes()).decode()}))
            if last and self.spoken and not self.spoken.done():
                self.spoken.set_result(time.monotonic())
            sent += 1


async def session(args) -> dict:
    spoken_questions = questions(args.questions, RATE)
    events = Events()
    # (when read, samples) of every audio delta.
    audio: list[tuple[float, int]] = []
    url = f"ws://127.0.0.1:{args.relay_port}/v1/realtime?model=gpt-realtime"
    async with websockets.connect(url, max_size=16 * 1024 * 1024, compression=None,
                                  additional_headers={"Authorization": "Bearer bench"}) as socket:
        async def read() -> None:
            async for message in socket:
                came = time.monotonic()
                event = json.loads(message)
                if event.get("type") in AUDIO_DELTAS:
                    audio.append((came, len(base64.b64decode(event.get("delta", ""))) // 2))
                    continue  # not kept: three minutes of base64
                events.add(event)

        reading = asyncio.ensure_future(read())
        if await events.wait("session.created", 15) is None:
            raise SystemExit("no session.created")
        await socket.send(json.dumps({"type": "session.update", "session": {"type": "realtime", "output_modalities": ["audio"], "audio": {
            "input": {"format": {"type": "audio/pcm", "rate": RATE}, "transcription": {"model": "whisper-1"},
                      "turn_detection": {"type": "server_vad", "silence_duration_ms": args.silence_ms}},
            "output": {"format": {"type": "audio/pcm", "rate": RATE}}}}}))
        if await events.wait("session.updated", 15) is None:
            raise SystemExit("no session.updated")
        microphone = Microphone(socket)
        speaking = asyncio.ensure_future(microphone.run())
        print("websocket: session up, asking", flush=True)

        turns = []
        started = time.monotonic()
        deadline = started + args.minutes * 60
        while time.monotonic() < deadline:
            name, samples = spoken_questions[len(turns) % len(spoken_questions)]
            await asyncio.sleep(args.pause)
            mark = events.mark()
            audio.clear()
            question_end = await asyncio.wait_for(microphone.say(samples), len(samples) / RATE + 10)
            done = await events.wait("response.done", args.reply_timeout, mark)
            turn = {"question": name, "latency": None, "units": 0, "gaps": 0}
            if done is not None:
                turn["status"] = done["response"].get("status")
                await asyncio.sleep(args.drain)
            transcript = await events.wait("conversation.item.input_audio_transcription.completed", 0, mark)
            turn["transcript"] = transcript.get("transcript") if transcript else None
            deltas = [d for d in audio if d[0] >= question_end]
            if deltas:
                turn["latency"] = round(deltas[0][0] - question_end, 3)
                # Each delta's 20 ms units all came when it did (a partial last unit counts whole).
                arrivals = [came for came, samples in deltas for _ in range(-(-samples // FRAME))]
                turn["units"], turn["gaps"] = stream_gaps(arrivals, args.playout_ms / 1000)
                turn["deltas"] = len(deltas)
                # Kept for another playout model: each delta's arrival after the first, and its length.
                turn["arrivals_ms"] = [[round((came - deltas[0][0]) * 1000), round(samples / RATE * 1000)] for came, samples in deltas]
            turns.append(turn)
            print(f"websocket: {name}: latency {turn['latency']} s, {turn['units']} units, {turn['gaps']} gaps, "
                  f"heard {turn['transcript']!r}", flush=True)

        seconds = time.monotonic() - started
        speaking.cancel()
        reading.cancel()
    return summary(args.label, turns, seconds, time.process_time(), {"playout_ms": args.playout_ms})


def main() -> None:
    parser = argparse.ArgumentParser()
    client_arguments(parser, "WebSocket (TCP relay)", "tcp_relay.py", 24000, "seconds after response.done for the last deltas")
    args = parser.parse_args()
    write_report(asyncio.run(asyncio.wait_for(session(args), args.minutes * 60 + 120)), args.report)


if __name__ == "__main__":
    sys.exit(main())
