#!/usr/bin/env python3
"""Drives the openai SDK (and a simulated Twilio carrier): what a running Parley hears, word for word.

How well a running server hears, through its own path (VAD, the turn's window, partials, the
helper under load), on clean, G.711 and noisy lines, with the word error rate as a median and a
spread over start phases instead of one draw (issue 74). `make bench-hearing` runs it against a
server it starts (scripts/benchmarks/bench-hearing.sh); `scripts/tests/hearing-test.sh` runs the
short version in `make test`.

A run is one carrier, one line and one start phase: each voice is one session that says the
sentences one after another at real-time pace, each after LEAD seconds of the line and followed by
TRAIL seconds of it, then waits for every turn begun meanwhile to be transcribed. What a
sentence's turns were heard saying, joined, is scored against it (recogniser_bench.words: numbers
spelled or in digits fold to digits). A segment is a whole number of 160 ms (the 20 ms frames' and
Silero's 32 ms windows' common multiple), so a sentence starts PHASE ms into its frame and its VAD
window in every run whatever came before; the phases (0, 6, 12, 18, 24 ms by default) spread the
starts over the 32 ms grid, where the words were found to change (issue 74).

Lines (the issue's noisy line): `clean`, the clip as made (16 kHz); `g711`, low-passed to 8 kHz and
through µ-law and back; `noisy`, that and then pink noise at 10 dB under the clip's speech (seeded
per sentence, so every run hears the same noise). Carriers: `pcm` (/v1/realtime, audio/pcm at 24
kHz), `pcmu` (/v1/realtime, audio/pcmu), `twilio` (/twilio's Media Streams, read on the call's
sideband), `sip` (a call placed through Parley's trunk, `--sip-trunk`, to a pjsua2 phone that
answers and plays the session's sentences into the line: hearing_sip_callee.py, which
bench-hearing.sh starts; read on the call's sideband; 4 at once at most, PJSIP's limit). On the
G.711 carriers `clean` is `g711`.

Models (`--models`): `default` leaves the session's recogniser to the server; a name (whisper-tiny.en,
whisper-base) asks for it in `audio.input.transcription.model`, so two recognisers are measured
side by side on one server in one run.

Each turn's latency is read too: from the end of the sentence's speech (when the frame that holds
its last sample was sent) to its transcript's `completed` event, which takes in the VAD's 500 ms
of silence and the final decode (the median over the run's sentences, of the last turn of each).

Prints a table per carrier, line and model (each phase's WER, the median, the spread, the
transcript's latency) and, with --json, writes them; with --baseline FILE, exits 1 when a median rises past the recorded one by more than
the recorded spread (and --margin points).
"""

import argparse
import asyncio
import warnings

warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
import audioop  # noqa: E402 (G.711 as Python 3.11 ships it)
import base64
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
import wave

import numpy as np
import websockets
from openai import AsyncOpenAI, NotFoundError

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FRAME_MS = 20
SEGMENT_MS = 160  # the 20 ms frames' and the VAD's 32 ms windows' least common multiple
LEAD_SECONDS = 1.0
TRAIL_SECONDS = 2.0
SNR_DB = 10
TURN_TIMEOUT = 30.0


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


scorer = load("recogniser_bench", os.path.join(ROOT, "scripts", "benchmarks", "recogniser_bench.py"))
telephone = load("telephone_wer_bench", os.path.join(ROOT, "scripts", "benchmarks", "telephone_wer_bench.py"))


# MARK: Lines


def resample(audio, up, down):
    """`audio` (float) at up/down times its rate: zeros stuffed, a Kaiser windowed-sinc low-pass at
    the lower of the two Nyquists, every down-th sample."""
    stuffed = np.zeros(len(audio) * up)
    stuffed[::up] = audio * up
    cutoff = 0.5 / max(up, down)
    n = np.arange(-24 * max(up, down), 24 * max(up, down) + 1)
    taps = 2 * cutoff * np.sinc(2 * cutoff * n) * np.kaiser(len(n), 8.0)
    return np.convolve(stuffed, taps, mode="same")[::down]


def ulaw_round_trip(audio8k):
    pcm = np.clip(audio8k, -32768, 32767).astype("<i2").tobytes()
    return np.frombuffer(audioop.ulaw2lin(audioop.lin2ulaw(pcm, 2), 2), dtype="<i2").astype(np.float64)


class Segment:
    """One sentence as a carrier sends it: LEAD of the line, PHASE ms, the speech, TRAIL of the line,
    a whole number of SEGMENT_MS; at 24 kHz pcm16 (`pcm`) and 8 kHz µ-law (`ulaw`)."""

    def __init__(self, clip16k, line, phase_ms, seed):
        speech = np.frombuffer(clip16k, dtype="<i2").astype(np.float64)
        if line == "clean":
            rate, audio = 16000, speech
        else:
            rate, audio = 8000, ulaw_round_trip(telephone.to_8k(clip16k))
        before = int((LEAD_SECONDS * 1000 + phase_ms) * rate / 1000)
        total_ms = LEAD_SECONDS * 1000 + phase_ms + len(audio) * 1000 / rate + TRAIL_SECONDS * 1000
        total = int(-(-total_ms // SEGMENT_MS) * SEGMENT_MS * rate / 1000)
        stream = np.zeros(total)
        stream[before:before + len(audio)] = audio
        if line == "noisy":
            loud = np.abs(audio) > 0.02 * np.abs(audio).max()
            speech_rms = np.sqrt(np.mean(audio[loud] ** 2))
            stream += telephone.pink_noise(total, seed) * speech_rms / (10 ** (SNR_DB / 20))
        if rate == 16000:
            pcm24 = resample(stream, 3, 2)
            ulaw_source = resample(stream, 1, 2)
        else:
            pcm24 = resample(stream, 3, 1)
            ulaw_source = stream
        # Where the speech ends, in ms from the segment's start.
        self.speech_end_ms = (before + len(audio)) * 1000 / rate
        self.pcm = np.clip(pcm24, -32768, 32767).astype("<i2").tobytes()
        self.ulaw = audioop.lin2ulaw(np.clip(ulaw_source, -32768, 32767).astype("<i2").tobytes(), 2)

    def frames(self, encoding):
        data, size = (self.pcm, 24000 * 2 * FRAME_MS // 1000) if encoding == "pcm" else (self.ulaw, 8000 * FRAME_MS // 1000)
        return [data[i:i + size] for i in range(0, len(data), size)]


# MARK: Sessions


class Heard:
    """The turns a session's events tell of: which began while each sentence was being said, and their
    transcripts when they come."""

    def __init__(self):
        self.sentence = -1
        self.turns = {}  # item id -> (sentence, transcript or None)
        # Sentence -> when its speech's last frame was sent, and when its last transcript came.
        self.spoken_until = {}
        self.transcribed_at = {}
        # Sentence -> the language its last transcript was said to be in (Parley's `language`).
        self.languages = {}
        # A placed call's answer (or its failure): when its phone starts to say the sentences.
        self.answered = asyncio.Event()
        self.changed = asyncio.Event()
        self.errors = []

    def event(self, kind, data):
        if kind == "input_audio_buffer.speech_started":
            self.turns.setdefault(data["item_id"], [self.sentence, None])
        elif kind == "conversation.item.input_audio_transcription.completed":
            turn = self.turns.setdefault(data["item_id"], [self.sentence, None])
            turn[1] = data.get("transcript") or ""
            self.transcribed_at[turn[0]] = time.monotonic()
            self.languages[turn[0]] = data.get("language")
        elif kind == "conversation.item.input_audio_transcription.failed":
            self.turns.setdefault(data["item_id"], [self.sentence, None])[1] = ""
            self.errors.append(f"transcription failed: {data.get('error')}")
        elif kind == "error":
            self.errors.append(f"error: {data.get('error')}")
        elif kind == "transport.answered":
            self.answered.set()
        elif kind == "transport.failed":
            self.errors.append(f"the call failed: {data.get('error')}")
            self.answered.set()
        self.changed.set()

    def pending(self):
        return [item for item, (_, text) in self.turns.items() if text is None]

    async def settled(self):
        """Every turn begun so far transcribed (a turn still open is waited on too)."""
        deadline = time.monotonic() + TURN_TIMEOUT
        while self.pending():
            self.changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                self.errors.append(f"no transcript within {TURN_TIMEOUT:.0f} s for {self.pending()}")
                for item in self.pending():
                    self.turns[item][1] = ""
                return
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except asyncio.TimeoutError:
                pass

    def said(self, sentence):
        return " ".join(text for s, text in self.turns.values() if s == sentence and text)

    def latencies_ms(self):
        """Per sentence heard, from its speech's end to its last transcript."""
        return [1000 * (self.transcribed_at[s] - end) for s, end in self.spoken_until.items() if s in self.transcribed_at]


async def say(send, segment, encoding, heard, index):
    """One sentence at real-time pace, then its turns transcribed."""
    heard.sentence = index
    heard.spoken_until[index] = time.monotonic() + segment.speech_end_ms / 1000
    await paced(send, segment.frames(encoding))
    await heard.settled()


async def paced(send, frames):
    """`frames` through `send`, one every FRAME_MS on an absolute clock."""
    start = time.monotonic()
    for i, frame in enumerate(frames):
        delay = start + i * FRAME_MS / 1000 - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        await send(frame)


async def read_events(connection, heard):
    async for event in connection:
        heard.event(event.type, event.model_dump())


# Hearing alone: no replies. A reply still unheard when the next sentence began made the two one
# reopened turn in some runs and not others (as the reply was slower or faster under load), and
# the words of a turn depend on its window. The turn detection is the server's default otherwise
# (server_vad: threshold 0.5, 300 ms of padding, 500 ms of silence), which a partial update keeps.
def hearing_only(model, audio_format=None, language=None):
    """The session's update: text only, no replies, the recogniser `model` (`default`: the server's)
    in `language` (None: the server's, or found)."""
    audio_input = {"turn_detection": {"type": "server_vad", "create_response": False}}
    transcription = ({} if model == "default" else {"model": model}) | ({"language": language} if language else {})
    if transcription:
        audio_input["transcription"] = transcription
    if audio_format:
        audio_input["format"] = audio_format
    return {"type": "realtime", "output_modalities": ["text"], "audio": {"input": audio_input}}


async def say_on_realtime(client, encoding, model, segments, heard, language=None):
    audio_format = {"type": "audio/pcm", "rate": 24000} if encoding == "pcm" else {"type": "audio/pcmu"}
    async with client.realtime.connect(model="gpt-realtime") as connection:
        await connection.session.update(session=hearing_only(model, audio_format, language))
        reader = asyncio.create_task(read_events(connection, heard))

        async def send(frame):
            await connection.input_audio_buffer.append(audio=base64.b64encode(frame).decode())

        try:
            for i, segment in enumerate(segments):
                await say(send, segment, encoding, heard, i)
        finally:
            reader.cancel()


async def say_on_twilio(client, url, model, segments, heard):
    call_sid = "CA" + uuid.uuid4().hex
    stream_sid = "MZ" + uuid.uuid4().hex
    async with websockets.connect(url.replace("http", "ws", 1) + "/twilio", max_size=None) as stream:
        await stream.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}))
        await stream.send(json.dumps({"event": "start", "sequenceNumber": "1", "streamSid": stream_sid, "start": {
            "streamSid": stream_sid, "callSid": call_sid, "accountSid": "AC" + "0" * 32, "tracks": ["inbound"],
            "customParameters": {}, "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}}}))
        drain = asyncio.create_task(drain_stream(stream))
        async with Sideband(client, call_sid) as sideband:
            await sideband.session.update(session=hearing_only(model))
            reader = asyncio.create_task(read_events(sideband, heard))
            sequence, sent_ms = 2, 0

            async def send(frame):
                nonlocal sequence, sent_ms
                await stream.send(json.dumps({"event": "media", "sequenceNumber": str(sequence), "streamSid": stream_sid, "media": {
                    "track": "inbound", "chunk": str(sequence - 1), "timestamp": str(sent_ms),
                    "payload": base64.b64encode(frame).decode()}}))
                sequence += 1
                sent_ms += FRAME_MS

            try:
                for i, segment in enumerate(segments):
                    await say(send, segment, "ulaw", heard, i)
            finally:
                reader.cancel()
        await stream.send(json.dumps({"event": "stop", "sequenceNumber": str(sequence), "streamSid": stream_sid,
                                      "stop": {"accountSid": "AC" + "0" * 32, "callSid": call_sid}}))
        drain.cancel()


async def say_on_sip(client, arguments, model, segments, heard):
    """The sentences as a phone says them: written where the callee reads them, the call placed to
    its number (the session's settings in the request, so nothing is heard before they hold), the
    story read on its sideband from the answer, when the callee starts to play."""
    number = "+1555" + str(uuid.uuid4().int % 10 ** 7).zfill(7)
    pcm8k = b"".join(audioop.ulaw2lin(segment.ulaw, 2) for segment in segments)
    path = os.path.join(arguments.sip_wav_dir, number + ".wav")
    with wave.open(path, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(pcm8k)
    answered = await client.post("/realtime/calls", cast_to=dict, body={
        "transport": {"type": "sip", "destination": number, "trunk": arguments.sip_trunk, "ring_timeout_seconds": 10},
        "session": hearing_only(model)})
    call_id = answered["id"]
    try:
        async with Sideband(client, call_id) as sideband:
            reader = asyncio.create_task(read_events(sideband, heard))
            try:
                await asyncio.wait_for(heard.answered.wait(), 15)
                # The callee plays from its media's start, a few ms after its 200: each sentence
                # begins at its offset in the file, whichever frame the VAD hears first.
                start = time.monotonic()
                offset = 0.0
                for i, segment in enumerate(segments):
                    heard.sentence = i
                    heard.spoken_until[i] = start + offset + segment.speech_end_ms / 1000
                    offset += len(segment.ulaw) / 8000
                    await asyncio.sleep(max(0.0, start + offset - time.monotonic()))
                    await heard.settled()
            finally:
                reader.cancel()
    finally:
        try:
            await client.post(f"/realtime/calls/{call_id}/hangup", cast_to=dict, body={})
        except NotFoundError:
            pass  # the call had ended (its failure is in `heard`)
        os.unlink(path)


class Sideband:
    """The call's sideband (`client.realtime.connect(call_id=...)`), once the stream's `start` has
    made its session: 404 `call_not_found` until then, tried again every 100 ms for 5 s."""

    def __init__(self, client, call_sid):
        self.client, self.call_sid, self.manager = client, call_sid, None

    async def __aenter__(self):
        for attempt in range(50):
            self.manager = self.client.realtime.connect(call_id=self.call_sid)
            try:
                return await self.manager.__aenter__()
            except websockets.exceptions.InvalidStatus as refused:
                if refused.response.status_code != 404 or attempt == 49:
                    raise
                await asyncio.sleep(0.1)

    async def __aexit__(self, *exception):
        return await self.manager.__aexit__(*exception)


async def drain_stream(stream):
    async for _ in stream:
        pass


# MARK: Runs


class Bench:
    def __init__(self, arguments):
        self.arguments = arguments
        telephone_voices = telephone.FRESH
        scorer.VOICES.update(telephone_voices)
        # flite's and espeak-ng's in turn, so that two voices are one of each.
        kal, awb, m3, f4 = telephone_voices
        self.voices = [kal, m3, awb, f4][: arguments.voices]
        self.texts = scorer.sentences()[: arguments.sentences]
        self.clips = scorer.Clips(arguments.cache)
        # PJSIP as PyPI builds it holds 4 calls: the callee's limit.
        self.sip_limit = asyncio.Semaphore(4)
        self.client = AsyncOpenAI(base_url=arguments.url + "/v1", api_key=os.environ.get("PARLEY_API_KEY", "unused"), max_retries=0)

    def segments(self, voice, line, phase_ms):
        return [Segment(self.clips.pcm(voice, i, text), line, phase_ms, seed=1000 * self.voices.index(voice) + i)
                for i, text in enumerate(self.texts)]

    async def session(self, carrier, line, model, phase_ms, _run, voice, limit):
        heard = Heard()
        async with limit:
            # Made when its turn comes, off the event loop: made for every session at the start,
            # they held the loop long enough for the first sessions' handshakes to time out.
            segments = await asyncio.to_thread(self.segments, voice, line, phase_ms)
            if carrier == "twilio":
                await say_on_twilio(self.client, self.arguments.url, model, segments, heard)
            elif carrier == "sip":
                async with self.sip_limit:
                    await say_on_sip(self.client, self.arguments, model, segments, heard)
            else:
                await say_on_realtime(self.client, carrier, model, segments, heard)
        errors = words = 0
        for i, text in enumerate(self.texts):
            reference, hypothesis = scorer.words(text), scorer.words(heard.said(i))
            errors += scorer.errors(reference, hypothesis)
            words += len(reference)
            if self.arguments.verbose and hypothesis != reference:
                print(f"  {carrier} {line} {model} {phase_ms} ms {voice}: {text!r} heard {heard.said(i)!r}", file=sys.stderr)
        return errors, words, heard.errors, len(heard.turns), heard.latencies_ms()

    async def all(self, runs):
        limit = asyncio.Semaphore(self.arguments.sessions)
        tasks = {run: [asyncio.create_task(self.session(*run, voice, limit)) for voice in self.voices] for run in runs}
        results = {}
        for run, session_tasks in tasks.items():
            done = await asyncio.gather(*session_tasks)
            errors = sum(d[0] for d in done)
            words = sum(d[1] for d in done)
            problems = [p for d in done for p in d[2]]
            results[run] = (errors / words, problems, sum(d[3] for d in done), [ms for d in done for ms in d[4]])
        return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the server, http://host:port")
    parser.add_argument("--carriers", default="pcm,pcmu,twilio")
    parser.add_argument("--lines", default="clean,g711,noisy")
    parser.add_argument("--models", default="default", help="recognisers asked for by name (audio.input.transcription.model), "
                        "comma-separated; default: the server's")
    parser.add_argument("--sip-trunk", help="for the sip carrier: the trunk (--sip-trunk NAME=URI) whose far end is hearing_sip_callee.py")
    parser.add_argument("--sip-wav-dir", help="for the sip carrier: where hearing_sip_callee.py reads each number's WAV")
    parser.add_argument("--phases", default="0,6,12,18,24", help="each run's start phase in ms, comma-separated")
    parser.add_argument("--voices", type=int, default=4, help="how many of telephone_wer_bench's four fresh voices "
                        "(flite kal, espeak-ng en+m3, flite awb, espeak-ng en-us+f4)")
    parser.add_argument("--sentences", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=20, help="sessions at once (the load the runs put on the box)")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "parley-recogniser-bench"))
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--baseline", help="a JSON of recorded medians and spreads to hold (exit 1 past them)")
    parser.add_argument("--margin", type=float, default=0.0, help="points allowed past a baseline's median and spread")
    parser.add_argument("--verbose", action="store_true", help="each sentence heard wrong, on stderr")
    arguments = parser.parse_args()
    bench = Bench(arguments)
    phases = [int(p) for p in arguments.phases.split(",")]
    cases = []
    for carrier in arguments.carriers.split(","):
        for line in arguments.lines.split(","):
            if carrier != "pcm" and line == "clean":
                continue  # a G.711 carrier's clean line is the g711 line
            cases += [(carrier, line, model) for model in arguments.models.split(",")]
    # A phase may be named twice: the same audio twice, which should be heard alike.
    runs = [(carrier, line, model, phase, k) for carrier, line, model in cases for k, phase in enumerate(phases)]
    started = time.monotonic()
    results = asyncio.run(bench.all(runs))
    report = {"voices": bench.voices, "sentences": len(bench.texts), "phases": phases, "sessions": arguments.sessions,
              "seconds": round(time.monotonic() - started, 1), "cases": {}}
    print(f"| carrier | line | model | {' | '.join(f'{p} ms' for p in phases)} | median | spread | turns a run | transcript after the speech, p50 / p90 |")
    print("| --- | --- | --- |" + " ---: |" * (len(phases) + 4))
    problems = []
    for carrier, line, model in cases:
        rates = [results[(carrier, line, model, p, k)][0] for k, p in enumerate(phases)]
        for k, p in enumerate(phases):
            problems += [f"{carrier} {line} {model} {p} ms: {e}" for e in results[(carrier, line, model, p, k)][1]]
        median, spread = statistics.median(rates), max(rates) - min(rates)
        # How many turns the server made of the sentences in each run: a sentence heard as two turns
        # in one run and one in another is decoded in other windows (semantic_vad's verdicts come
        # when the helper answers, so a pause inside a sentence may end the turn or not).
        turns = [results[(carrier, line, model, p, k)][2] for k, p in enumerate(phases)]
        latencies = sorted(ms for k, p in enumerate(phases) for ms in results[(carrier, line, model, p, k)][3])
        p50, p90 = (latencies[len(latencies) // 2], latencies[len(latencies) * 9 // 10]) if latencies else (0, 0)
        # A case's name: carrier and line, and the model when one was asked for by name.
        name = f"{carrier} {line}" + ("" if model == "default" else f" {model}")
        report["cases"][name] = {"wer": [round(100 * r, 2) for r in rates], "median": round(100 * median, 2),
                                 "spread": round(100 * spread, 2), "turns": turns,
                                 "transcript_ms_p50": round(p50), "transcript_ms_p90": round(p90)}
        print(f"| {carrier} | {line} | {model} | " + " | ".join(f"{100 * r:.1f} %" for r in rates) + f" | **{100 * median:.1f} %** | {100 * spread:.1f} | "
              + " ".join(str(t) for t in turns) + f" | {p50:.0f} / {p90:.0f} ms |")
    print(f"{len(bench.voices)} voices x {len(bench.texts)} sentences a run, {arguments.sessions} sessions at once, "
          f"{report['seconds']:.0f} s", flush=True)
    for problem in problems:
        print(f"hearing: {problem}", file=sys.stderr)
    if arguments.json:
        with open(arguments.json, "w") as out:
            json.dump(report, out, indent=1)
    if arguments.baseline:
        failed = False
        for case, recorded in json.load(open(arguments.baseline))["cases"].items():
            now = report["cases"].get(case)
            if now is None:
                continue
            bound = recorded["median"] + recorded["spread"] + arguments.margin
            verdict = "ok" if now["median"] <= bound else "FAILED"
            failed |= verdict == "FAILED"
            print(f"hearing: {verdict}: {case}: median {now['median']:.1f} % (recorded {recorded['median']:.1f} %, "
                  f"spread {recorded['spread']:.1f}, bound {bound:.1f} %)")
        if problems:
            failed = True
            print("hearing: FAILED: the server reported errors (above)")
        sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
