"""A self-check of the peers' voice path (/ws and /metrics), end to end, in about 20 seconds (30 with --parley).

For each peer (fastapi_echo.py, websockets_echo.py) it starts the server on a free port and opens
two /ws sessions at once, each streaming the speech recording as 20 ms Opus packets at real-time
pace and then 1 s of silence: one in 48 kHz fullband packets (32 kbit/s), one in 16 kHz wideband
(24 kbit/s), the two profiles `parley-load voice` sends. It checks that each session gets
session.created, that a garbage packet and a text message get an error event and the session goes
on, that the turn is heard (speech_started and speech_stopped at the times the detector gives for
the same packets in this process) and answered (response.done, completed), and that /metrics counts
every packet sent as processed, one lag observation each, and the garbage as rejected.

    .venv-peers/bin/python LoadTests/peers/test_peer_voice.py
    .venv-peers/bin/python LoadTests/peers/test_peer_voice.py --parley /tmp/parley-ref/parley

With --parley, the same sessions also run against a Parley binary first, and the peers' turn times
must equal Parley's. Exit status 0 when every check passes, 1 otherwise. Needs libopus (Debian's
libopus0) and the .venv-peers packages; nothing else.
"""

from __future__ import annotations

import argparse
import array
import asyncio
import ctypes
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
import wave

from websockets.asyncio.client import connect

import peer_voice
from peer_voice import OpusDecoder, VoiceActivityDetector, audioop

HERE = os.path.dirname(os.path.abspath(__file__))
SPEECH = os.path.join(HERE, "..", "reports", "compare-speech.wav")
PEERS = ("fastapi", "websockets")
# (sample rate, bitrate): the two profiles parley-load voice sends.
PROFILES = ((48_000, 32_000), (16_000, 24_000))
SILENCE_SECONDS = 1.0
GARBAGE = b"\xff\xff\xff\xff\xff"


# -- packets

def read_wav(path: str) -> tuple[bytes, int]:
    """Mono int16 samples (the first channel) and the rate."""
    with wave.open(path) as wav:
        if wav.getsampwidth() != 2:
            raise SystemExit(f"{path}: 16-bit PCM expected")
        channels, rate, frames = wav.getnchannels(), wav.getframerate(), wav.readframes(wav.getnframes())
    samples = array.array("h", frames)[::channels]
    return samples.tobytes(), rate


def resample(pcm: bytes, source: int, target: int) -> bytes:
    if audioop is not None:
        return audioop.ratecv(pcm, 2, 1, source, target, None)[0]
    # Without audioop, linear interpolation: good enough for packets both sides decode alike.
    samples = array.array("h", pcm)
    n = len(samples) * target // source
    out = array.array("h", bytes(2 * n))
    for i in range(n):
        x = i * source / target
        j = int(x)
        k = min(j + 1, len(samples) - 1)
        out[i] = int(samples[j] + (samples[k] - samples[j]) * (x - j))
    return out.tobytes()


def encode(pcm: bytes, rate: int, bitrate: int) -> list[bytes]:
    """20 ms Opus packets (OPUS_APPLICATION_VOIP), the speech then SILENCE_SECONDS of zeros."""
    lib = peer_voice._LibOpus.load()
    lib.opus_encoder_create.restype = ctypes.c_void_p
    lib.opus_encoder_create.argtypes = [ctypes.c_int32, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    lib.opus_encode.restype = ctypes.c_int32
    lib.opus_encode.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int32]
    lib.opus_encoder_ctl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int32]
    lib.opus_encoder_destroy.argtypes = [ctypes.c_void_p]
    error = ctypes.c_int(0)
    encoder = lib.opus_encoder_create(rate, 1, 2048, ctypes.byref(error))
    assert error.value == 0 and encoder, f"opus_encoder_create failed ({error.value})"
    lib.opus_encoder_ctl(encoder, 4002, bitrate)  # OPUS_SET_BITRATE_REQUEST
    frame = 2 * rate // 50
    pcm = pcm[:len(pcm) // frame * frame] + bytes(frame * int(SILENCE_SECONDS * 50))
    out = ctypes.create_string_buffer(4000)
    packets = []
    for offset in range(0, len(pcm), frame):
        n = lib.opus_encode(encoder, pcm[offset:offset + frame], frame // 2, out, len(out))
        assert n > 0, f"opus_encode failed ({n})"
        packets.append(out.raw[:n])
    lib.opus_encoder_destroy(encoder)
    return packets


def expected_turns(packets: list[bytes]) -> list[tuple[str, int]]:
    """What the detector hears in these packets, decoded here as the servers decode them."""
    decoder, vad, events = OpusDecoder(), VoiceActivityDetector(), []
    for packet in packets:
        events += vad.process(decoder.decode(packet))
    decoder.close()
    return events


# -- servers

class Server:
    """A server under test, on a free port, stopped on exit."""

    def __init__(self, name: str, command: list[str]) -> None:
        self.name = name
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=os.path.join(HERE, "..", ".."))
        deadline = time.monotonic() + 30
        lines = []
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            lines.append(line)
            match = re.search(r"listening on http://[^ ]*:(\d+)/", line)
            if match:
                self.port = int(match.group(1))
                return
        self.stop()
        raise SystemExit(f"{name} did not say it was listening:\n{''.join(lines)}")

    def metrics(self) -> dict[str, float]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as response:
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4"), response.headers["Content-Type"]
            text = response.read().decode()
        return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line and not line.startswith("#")}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process.stdout.close()


# -- one session

async def session(port: int, packets: list[bytes]) -> dict:
    """Streams the packets at real-time pace (after a garbage packet and a text message); returns
    what came back: the event types in order, the turn times, and the errors."""
    seen: dict = {"types": [], "turns": [], "errors": [], "done": []}
    async with connect(f"ws://127.0.0.1:{port}/ws", max_size=1 << 20) as websocket:
        first = json.loads(await asyncio.wait_for(websocket.recv(), 5))
        seen["types"].append(first["type"])

        async def read() -> None:
            async for message in websocket:
                event = json.loads(message)
                kind = event["type"]
                seen["types"].append(kind)
                if kind == "input_audio_buffer.speech_started":
                    seen["turns"].append(("started", event["audio_start_ms"]))
                elif kind == "input_audio_buffer.speech_stopped":
                    seen["turns"].append(("stopped", event["audio_end_ms"]))
                elif kind == "error":
                    seen["errors"].append(event["error"]["message"])
                elif kind == "response.done":
                    seen["done"].append(event["response"]["status"])

        reader = asyncio.create_task(read())
        await websocket.send(GARBAGE)
        await websocket.send("hello")
        start = time.monotonic()
        for i, packet in enumerate(packets):
            await websocket.send(packet)
            await asyncio.sleep(max(0.0, start + (i + 1) * 0.02 - time.monotonic()))
        # The turn ended 500 ms into the silence; its reply takes about half a second.
        deadline = time.monotonic() + 5
        while not seen["done"] and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        reader.cancel()
    return seen


# -- checks

class Checks:
    def __init__(self) -> None:
        self.failures: list[str] = []

    def check(self, ok: bool, what: str) -> None:
        print(f"  {'ok  ' if ok else 'FAIL'}  {what}", flush=True)
        if not ok:
            self.failures.append(what)


async def run_sessions(port: int, streams: list[list[bytes]]) -> list[dict]:
    return await asyncio.gather(*(session(port, packets) for packets in streams))


def check_server(server: Server, streams: list[list[bytes]], expected: list[list], checks: Checks) -> list[list]:
    results = asyncio.run(run_sessions(server.port, streams))
    for (rate, bitrate), packets, want, seen in zip(PROFILES, streams, expected, results):
        label = f"{server.name} {rate // 1000} kHz"
        checks.check(seen["types"][:1] == ["session.created"], f"{label}: session.created first")
        checks.check(len(seen["errors"]) == 2 and "could not be decoded" in seen["errors"][0],
                     f"{label}: an error event each for the garbage packet and the text message ({len(seen['errors'])})")
        checks.check(seen["turns"] == want, f"{label}: speech_started/stopped at {seen['turns']} (the detector here: {want})")
        checks.check(seen["done"] == ["completed"], f"{label}: response.done {seen['done']}")
        deltas = seen["types"].count("response.output_text.delta")
        checks.check(deltas > 1, f"{label}: the reply came as {deltas} response.output_text.delta events")
    # The servers see the closes a moment after the clients do.
    metrics = server.metrics()
    deadline = time.monotonic() + 3
    while metrics.get("parley_sessions_open") != 0 and time.monotonic() < deadline:
        time.sleep(0.05)
        metrics = server.metrics()
    sent = sum(len(packets) for packets in streams)
    processed = metrics.get('parley_audio_input_frames_total{result="processed"}')
    rejected = metrics.get('parley_audio_input_frames_total{result="rejected"}')
    lag_count = metrics.get("parley_audio_input_lag_seconds_count")
    checks.check(processed == sent, f"{server.name}: /metrics processed frames {processed} = packets sent {sent}")
    checks.check(lag_count == sent, f"{server.name}: /metrics lag observations {lag_count} = packets sent {sent}")
    checks.check(rejected == len(streams), f"{server.name}: /metrics rejected frames {rejected} = garbage packets {len(streams)}")
    checks.check(metrics.get("parley_sessions_open") == 0, f"{server.name}: parley_sessions_open back to {metrics.get('parley_sessions_open')}")
    p99 = lag_percentile(metrics, 0.99)
    print(f"        (lag p99 <= {p99} s over {lag_count:.0f} frames)")
    return [seen["turns"] for seen in results]


def lag_percentile(metrics: dict[str, float], q: float) -> str:
    buckets = sorted((float(key.split('"')[1]), value) for key, value in metrics.items()
                     if key.startswith("parley_audio_input_lag_seconds_bucket") and "+Inf" not in key)
    total = metrics.get("parley_audio_input_lag_seconds_count", 0)
    for bound, cumulative in buckets:
        if cumulative >= q * total:
            return repr(bound)
    return "+Inf"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parley", help="a parley binary: run the same sessions against it, and require the peers' turn times to equal its own")
    parser.add_argument("--input", default=SPEECH, help="speech to stream (16-bit WAV; default: LoadTests/reports/compare-speech.wav)")
    args = parser.parse_args()

    started = time.monotonic()
    pcm, rate = read_wav(args.input)
    streams = [encode(resample(pcm, rate, target), target, bitrate) for target, bitrate in PROFILES]
    expected = [expected_turns(packets) for packets in streams]
    checks = Checks()
    checks.check(all(any(kind == "stopped" for kind, _ in want) for want in expected), f"the detector here hears a whole turn in {os.path.basename(args.input)}: {expected}")

    if args.parley:
        print(f"parley ({args.parley})", flush=True)
        server = Server("parley", [args.parley, "serve", "--port", "0", "--loops", "1"])
        try:
            parley_turns = check_server(server, streams, expected, checks)
        finally:
            server.stop()
        checks.check(parley_turns == expected, f"parley's turn times equal the Python detector's: {parley_turns}")

    for name in PEERS:
        print(name, flush=True)
        server = Server(name, [sys.executable, "-u", os.path.join(HERE, f"{name}_echo.py"), "--port", "0"])
        try:
            check_server(server, streams, expected, checks)
        finally:
            server.stop()

    elapsed = time.monotonic() - started
    if checks.failures:
        print(f"FAILED: {len(checks.failures)} check(s) in {elapsed:.0f} s", flush=True)
        sys.exit(1)
    print(f"PASS: every check, in {elapsed:.0f} s", flush=True)


if __name__ == "__main__":
    main()
