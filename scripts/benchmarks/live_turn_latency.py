#!/usr/bin/env python3
"""Turn latency on GPT-Live's /v1/live/sessions beside the Realtime API's /v1/realtime, on one
server, alternated session by session (bench-live.sh): the same spoken question (raw 24 kHz pcm16
files, several voices and speeds) streamed at real-time pace with silence after it; the time from
the question's last word (the end of its last non-silent 20 ms frame as sent) to the reply's first
audio. Both under the same turn decision (`semantic_vad`, eagerness auto, which Live's sessions
always use), the same voice, the same model. Prints one line per turn and a JSON summary.
Raw WebSockets (the `websockets` package), so that the client costs the same on both."""
import argparse, asyncio, base64, json, statistics, struct, sys, time

import websockets

RATE = 24000
FRAME_BYTES = RATE * 2 // 50  # 20 ms


def last_word_end(pcm: bytes) -> int:
    """Bytes up to the end of the last 20 ms frame louder than -50 dBFS."""
    end = 0
    for i in range(0, len(pcm) - FRAME_BYTES + 1, FRAME_BYTES):
        samples = struct.unpack(f"<{FRAME_BYTES // 2}h", pcm[i:i + FRAME_BYTES])
        if (sum(s * s for s in samples) / len(samples)) ** 0.5 > 103:
            end = i + FRAME_BYTES
    return end


async def turn(url: str, api: str, speech: bytes, timeout: float) -> float | None:
    path = "/v1/live/sessions" if api == "live" else "/v1/realtime"
    async with websockets.connect(url.replace("http://", "ws://") + path, max_size=None) as ws:
        if api == "live":
            await ws.send(json.dumps({"type": "session.start", "session": {
                "model": "gpt-live-1", "audio": {"format": {"type": "audio/pcm", "rate": RATE}, "output": {"voice": "marin"}}}}))
            wanted, append = "session.started", "session.input_audio.append"
        else:
            await ws.send(json.dumps({"type": "session.update", "session": {"type": "realtime", "output_modalities": ["audio"], "audio": {
                "input": {"format": {"type": "audio/pcm", "rate": RATE}, "turn_detection": {"type": "semantic_vad", "eagerness": "auto"}},
                "output": {"format": {"type": "audio/pcm", "rate": RATE}, "voice": "marin"}}}}))
            wanted, append = "session.updated", "input_audio_buffer.append"
        async with asyncio.timeout(timeout):
            while json.loads(await ws.recv()).get("type") != wanted:
                pass
        audio = speech + b"\x00" * (RATE * 2 * 4)  # four seconds of silence after it
        end = last_word_end(speech)
        said_at = None
        first_audio = None
        start = time.monotonic()

        async def send():
            nonlocal said_at
            for i in range(0, len(audio), FRAME_BYTES):
                due = start + i / (RATE * 2)
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                await ws.send(json.dumps({"type": append, "audio": base64.b64encode(audio[i:i + FRAME_BYTES]).decode()}))
                if said_at is None and i + FRAME_BYTES >= end:
                    said_at = time.monotonic()

        sender = asyncio.create_task(send())
        try:
            async with asyncio.timeout(timeout):
                async for message in ws:
                    kind = json.loads(message).get("type")
                    if kind in ("session.output_audio.delta", "response.output_audio.delta"):
                        first_audio = time.monotonic()
                        break
        except TimeoutError:
            pass
        sender.cancel()
        if first_audio is None or said_at is None:
            return None
        return (first_audio - said_at) * 1000


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("speech", nargs="+", help="raw 24 kHz pcm16 files, one question each")
    args = parser.parse_args()
    results: dict[str, list[float]] = {"realtime": [], "live": []}
    failed = {"realtime": 0, "live": 0}
    for round_ in range(args.rounds):
        for path in args.speech:
            speech = open(path, "rb").read()
            # Alternated, and in turn first: neither endpoint always meets a warmer helper.
            for api in (("realtime", "live") if round_ % 2 == 0 else ("live", "realtime")):
                ms = await turn(args.url, api, speech, args.timeout)
                print(f"{api:8s} {path.rsplit('/', 1)[-1]:24s} {'failed' if ms is None else f'{ms:7.0f} ms'}", flush=True)
                if ms is None:
                    failed[api] += 1
                else:
                    results[api].append(ms)
    summary = {api: {"turns": len(v), "failed": failed[api], "median_ms": round(statistics.median(v)) if v else None,
                     "p90_ms": round(sorted(v)[int(len(v) * 0.9) - 1]) if len(v) >= 10 else None,
                     "min_ms": round(min(v)) if v else None, "max_ms": round(max(v)) if v else None} for api, v in results.items()}
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
