"""The voice-turn path the Python peers serve on /ws, as Parley serves it: shared by both servers.

A client streams Opus packets (one per binary message, 20 ms each from `parley-load voice`); each
is decoded at 16 kHz mono, run through a port of Parley's voice activity detector and turn-taking,
and a finished turn is answered with a canned reply streamed a word at a time, with the same event
names, fields and order as Parley's /ws sends (the GA dialect, text output, the built-in agent):

    session.created                                        on connect
    input_audio_buffer.speech_started                      speech begins (audio_start_ms, item_id)
    input_audio_buffer.speech_stopped                      500 ms of silence (audio_end_ms, item_id)
    input_audio_buffer.committed, conversation.item.created
    response.created
    response.output_item.added, conversation.item.created, response.content_part.added
    response.output_text.delta  x 42 (48 from turn 2 on)   one word every 10 ms
    response.output_text.done, response.content_part.done, response.output_item.done
    response.done                                          status completed (usage estimated)
    error                                                  a packet that does not decode; a text message

Speech during a reply cancels it, as Parley's default `interrupt_response` does (response.done
with status cancelled, reason turn_detected).

Parley's figures are read back in the same terms: /metrics carries the series the load harness
reads from Parley (`parley_audio_input_lag_seconds`, `parley_audio_input_frames_total`, the process
RSS it insists on), under Parley's names so that `parley-load voice` runs against a peer unchanged.
A frame's lag is measured as Parley's RealtimeSessionHandler.feedAudio measures it: arrival taken
before decoding, the frame's due time from AudioStreamClock, lag = the time once decoding, VAD and
turn-taking (the events' sends included) are done, less that due time.

Framework-independent: a server makes one VoiceSession per /ws connection with its own coroutine
for sending a text message, and feeds it the messages; everything runs on the server's asyncio loop.
libopus is reached through ctypes (Debian's libopus0), so nothing beyond the peers' pins is needed.
"""

from __future__ import annotations

import array
import asyncio
import ctypes
import ctypes.util
import json
import math
import os
import time
import warnings
from bisect import bisect_left
from collections.abc import Awaitable, Callable
from operator import mul

# audioop (C) computes a frame's sum of squares some ten times faster than a Python loop. It is
# deprecated since 3.11 and gone in 3.13 (PyPI's audioop-lts puts it back); without it the same
# sums are taken in Python.
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import audioop
except ImportError:  # pragma: no cover - Python 3.13+ without audioop-lts
    audioop = None

_JSON = json.JSONEncoder(separators=(",", ":"))  # compact: the harness reads `{"type":"…"` from the bytes


def _dumps(value: dict) -> str:
    return _JSON.encode(value)


# ---------------------------------------------------------------------------------------------
# float32 arithmetic. Parley's detector keeps its levels and floor in Swift's Float: each
# operation is rounded to 32 bits here too, so the floor drifts as Parley's does and the
# comparisons with the thresholds fall the same way. (One float32 +, -, * is exactly the double
# result rounded to float32, so a double operation and one rounding give the same bits.)

_F32 = array.array("f", [0.0])


def _f32(x: float) -> float:
    _F32[0] = x
    return _F32[0]


# ---------------------------------------------------------------------------------------------
# Opus decoding through ctypes.

class OpusError(Exception):
    """A packet libopus (or the checks before it) refused; the message is Parley's wording."""


# libopus's negative return codes, described as Parley's OpusError describes them.
_OPUS_ERRORS = {
    -1: "bad argument: libopus: invalid argument",
    -2: "output buffer too small",
    -3: "libopus internal error",
    -4: "invalid or corrupt Opus packet",
    -5: "libopus: request not implemented",
    -6: "libopus: invalid codec state",
    -7: "libopus: allocation failed",
}


class _LibOpus:
    """libopus, loaded on first use so that a machine without it still runs /echo."""

    lib: ctypes.CDLL | None = None

    @classmethod
    def load(cls) -> ctypes.CDLL:
        if cls.lib is None:
            name = ctypes.util.find_library("opus") or "libopus.so.0"
            try:
                lib = ctypes.CDLL(name)
            except OSError as error:
                raise OpusError(f"libopus could not be loaded ({error}; Debian: apt-get install libopus0)") from None
            lib.opus_decoder_create.restype = ctypes.c_void_p
            lib.opus_decoder_create.argtypes = [ctypes.c_int32, ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
            lib.opus_decode.restype = ctypes.c_int
            lib.opus_decode.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
            lib.opus_decoder_destroy.restype = None
            lib.opus_decoder_destroy.argtypes = [ctypes.c_void_p]
            cls.lib = lib
        return cls.lib


class OpusDecoder:
    """One stream's libopus decoder, decoding straight at 16 kHz mono as Parley's /ws does (libopus
    resamples inside the decoder). Not thread-safe; a packet that fails leaves it usable."""

    SAMPLE_RATE = 16_000
    # RFC 6716 section 3.2.5: a packet holds at most 48 frames of at most 1,275 bytes.
    MAX_PACKET_BYTES = 48 * 1275
    # Samples per channel of the longest packet (120 ms) at 48 kHz: always enough room.
    MAX_SAMPLES = 5760
    # Decoding is synchronous and every session runs on one loop, so one output buffer serves all
    # the decoders of the process instead of 11 KiB per session.
    _pcm = ctypes.create_string_buffer(MAX_SAMPLES * 2)

    def __init__(self) -> None:
        self._lib = _LibOpus.load()
        error = ctypes.c_int(0)
        self._state = self._lib.opus_decoder_create(self.SAMPLE_RATE, 1, ctypes.byref(error))
        if error.value != 0 or not self._state:
            raise OpusError(_OPUS_ERRORS.get(error.value, f"libopus error {error.value}"))

    def decode(self, packet: bytes) -> bytes:
        """The packet's samples as native-endian int16 bytes (320 samples for 20 ms)."""
        # Parley's checks before libopus: an empty packet would mean "lost" to libopus.
        if not packet:
            raise OpusError(_OPUS_ERRORS[-4])
        if len(packet) > self.MAX_PACKET_BYTES:
            raise OpusError(f"Opus packet of {len(packet)} bytes is larger than any valid packet")
        n = self._lib.opus_decode(self._state, packet, len(packet), self._pcm, self.MAX_SAMPLES, 0)
        if n < 0:
            raise OpusError(_OPUS_ERRORS.get(n, f"libopus error {n}"))
        return ctypes.string_at(self._pcm, 2 * n)

    def close(self) -> None:
        if self._state:
            self._lib.opus_decoder_destroy(self._state)
            self._state = None

    def __del__(self) -> None:
        self.close()


# ---------------------------------------------------------------------------------------------
# Voice activity detection: a port of Sources/Session/VoiceActivityDetector.swift.

def _sums_of_squares(pcm: bytes, whole: int) -> list[float]:
    """The sum of squares of each 10 ms frame (160 samples) in pcm[:whole], exactly where it matters.

    audioop.rms gives floor(sqrt(sum / n)), too coarse for quiet frames. Widened to 32 bits first
    (each sample shifted left by 16) the sum is still exact in a double and the root carries 16 more
    bits: (r + 0.5) / 65536 is sqrt(sum / n) within 1/131072, so the integer sum is recovered
    exactly up to about 6.5 million (-44 dBFS), and above that it is within 1e-7 of itself (a
    millionth of a dB, below float32's resolution of the level in all but a few frames)."""
    if audioop is None:
        samples = array.array("h")
        samples.frombytes(pcm[:whole])
        return [float(sum(map(mul, samples[i:i + 160], samples[i:i + 160]))) for i in range(0, len(samples), 160)]
    wide = memoryview(audioop.lin2lin(pcm[:whole] if whole != len(pcm) else pcm, 2, 4))
    sums = []
    for offset in range(0, 2 * whole, 640):
        r = (audioop.rms(wide[offset:offset + 640], 4) + 0.5) / 65536.0
        s = r * r * 160.0
        sums.append(float(round(s)) if s < 6_000_000.0 else s)
    return sums


class VoiceActivityDetector:
    """Finds where speech starts and stops in 16 kHz mono audio, by energy against an adaptive noise
    floor, exactly as Parley's detector does (see VoiceActivityDetector.swift for the reasoning):
    10 ms frames, mean power in dBFS, a floor that falls fast and rises slowly and is never below
    the quietest frame of the last 2 s, speech after 3 frames above floor + (3 + 20 × threshold) dB,
    continued while above half that margin, stopped after `silence_duration_ms` below it."""

    SAMPLE_RATE = 16_000
    FRAME_MS = 10
    FRAME_SAMPLES = 160
    FRAME_BYTES = 2 * FRAME_SAMPLES
    ONSET_FRAMES = 3
    MAX_BACKTRACK_FRAMES = 10
    LOWEST_FLOOR_DB = -70.0
    SILENCE_DB = -120.0
    FLOOR_FALL = _f32(0.2)
    FLOOR_RISE = _f32(0.02)
    # The 2-second minimum is kept as four 0.5 s blocks.
    BLOCK_FRAMES = 50

    def __init__(self, threshold: float = 0.5, prefix_padding_ms: int = 300, silence_duration_ms: int = 500) -> None:
        start_margin = 3 + 20 * min(1.0, max(0.0, threshold))
        self.start_margin_db = _f32(start_margin)
        self.continue_margin_db = _f32(start_margin / 2)
        self.prefix_padding_ms = prefix_padding_ms
        self.silence_duration_ms = silence_duration_ms
        # Samples of a frame not yet complete (Parley keeps their running sum instead; the same).
        self._pending = b""
        # Frames measured so far: the clock.
        self._frames = 0
        self._floor: float | None = None
        self._block_min = math.inf
        self._block_fill = 0
        self._previous_block_mins = (math.inf, math.inf, math.inf)
        self._previous_min = math.inf
        self.speaking = False
        # First frame of the current run above the continuation level, or -1.
        self._run_start = -1
        self._run_first_loud = -1
        self._run_loud_frames = 0
        self._last_speech_frame = 0
        self._quiet_frames = 0
        # Where the current (or last) turn's speech began, before the prefix padding.
        self.speech_onset_ms = 0

    @property
    def elapsed_ms(self) -> int:
        return self._frames * self.FRAME_MS

    def process(self, pcm: bytes) -> list[tuple[str, int]]:
        """Native int16 samples in; ("started", audio_start_ms) and ("stopped", audio_end_ms) out."""
        if self._pending:
            pcm = self._pending + pcm
        whole = len(pcm) - len(pcm) % self.FRAME_BYTES
        self._pending = pcm[whole:]
        if not whole:
            return []
        events: list[tuple[str, int]] = []
        for sum_of_squares in _sums_of_squares(pcm, whole):
            self._measure_frame(sum_of_squares, events)
        return events

    def end_speech(self) -> None:
        """Forgets the turn in progress without reporting its end."""
        self.speaking = False
        self._reset_run()
        self._quiet_frames = 0

    def _measure_frame(self, sum_of_squares: float, events: list[tuple[str, int]]) -> None:
        # Fifty times a second per speaker: locals, and float32 rounding inlined through _F32
        # (f[0] = x; x = f[0]), in the same operations and order as the Swift.
        f = _F32
        frame = self._frames
        self._frames = frame + 1
        if sum_of_squares > 0:
            f[0] = 10 * math.log10(sum_of_squares / 160.0 / (32768.0 * 32768.0))
            level = f[0]
            if level < self.SILENCE_DB:
                level = self.SILENCE_DB
        else:
            level = self.SILENCE_DB

        # The quietest frame of the last 1.5 to 2 seconds: this block's and the three before it.
        block_min = self._block_min
        if level < block_min:
            block_min = level
        if self._block_fill == self.BLOCK_FRAMES - 1:
            self._previous_block_mins = previous = (self._previous_block_mins[1], self._previous_block_mins[2], block_min)
            self._previous_min = min(previous)
            self._block_min = block_min = math.inf
            self._block_fill = 0
        else:
            self._block_min = block_min
            self._block_fill += 1
        window_minimum = block_min if block_min < self._previous_min else self._previous_min

        floor = level if self._floor is None else self._floor
        if window_minimum > floor:
            floor = window_minimum
        base = floor if floor > self.LOWEST_FLOOR_DB else self.LOWEST_FLOOR_DB
        f[0] = base + self.continue_margin_db
        above_continue = level > f[0]

        if above_continue:
            f[0] = base + self.start_margin_db
            loud = level > f[0]
            if self._run_start < 0:
                self._run_start = frame
            if loud:
                if self._run_first_loud < 0:
                    self._run_first_loud = frame
                self._run_loud_frames += 1
            if self.speaking:
                self._last_speech_frame = frame
                self._quiet_frames = 0
            elif self._run_loud_frames >= self.ONSET_FRAMES:
                self.speaking = True
                self._last_speech_frame = frame
                self._quiet_frames = 0
                start = max(self._run_start, self._run_first_loud - self.MAX_BACKTRACK_FRAMES)
                self.speech_onset_ms = start * self.FRAME_MS
                events.append(("started", max(0, start * self.FRAME_MS - self.prefix_padding_ms)))
        else:
            if self._run_start >= 0:
                self._reset_run()
            # Only frames that are not speech teach the floor: floor += (level - floor) * rate.
            f[0] = level - floor
            f[0] = f[0] * (self.FLOOR_FALL if level < floor else self.FLOOR_RISE)
            f[0] = floor + f[0]
            floor = f[0]
            if self.speaking:
                self._quiet_frames += 1
                if self._quiet_frames * self.FRAME_MS >= self.silence_duration_ms:
                    self.speaking = False
                    self._quiet_frames = 0
                    events.append(("stopped", (self._last_speech_frame + 1) * self.FRAME_MS))
        self._floor = floor

    def _reset_run(self) -> None:
        self._run_start = -1
        self._run_first_loud = -1
        self._run_loud_frames = 0


# ---------------------------------------------------------------------------------------------
# The stream clock: a port of Sources/Session/AudioStreamClock.swift.

class AudioStreamClock:
    """How far behind real time a session's audio is being processed. A client streaming at
    real-time cadence sends frame k at about t0 + k × frame duration; the clock keeps the earliest
    alignment seen (arrival − audio so far), the client's own clock as closely as the server can
    know it, so a server already behind when the stream began is still seen to be behind. A pause
    of over a second starts a new stream."""

    PAUSE_NS = 1_000_000_000

    __slots__ = ("_origin", "_audio", "_last_arrival", "_streaming")

    def __init__(self) -> None:
        self._origin = 0
        self._audio = 0
        self._last_arrival = 0
        self._streaming = False

    def frame_arrived(self, duration_ns: int, now_ns: int) -> int:
        """A frame of `duration_ns` of audio arrived at `now_ns`: when it was due by the stream's clock."""
        if not self._streaming or now_ns - self._last_arrival > self.PAUSE_NS:
            self._streaming = True
            self._origin = now_ns
            self._audio = 0
        self._origin = min(self._origin, now_ns - self._audio)
        due = self._origin + self._audio
        self._audio += duration_ns
        self._last_arrival = now_ns
        return due


# ---------------------------------------------------------------------------------------------
# Process-wide metrics, in Prometheus text format with Parley's names, help texts and bounds.

def _read_resident_bytes() -> int:
    """Resident bytes from /proc/self/statm (its second field, in pages), as Parley reads them."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class VoiceMetrics:
    """Plain ints: one loop per process, so nothing to lock, and a frame costs a bisect and three adds."""

    LAG_BOUNDS = (0.0001, 0.00025, 0.0005, 0.001, 0.0015, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5, 10.0)
    RESPONSE_STATUSES = ("completed", "cancelled", "failed", "incomplete")

    def __init__(self) -> None:
        self.sessions_open = 0
        self.turns = 0
        self.responses = dict.fromkeys(self.RESPONSE_STATUSES, 0)
        self.frames_processed = 0
        self.frames_rejected = 0
        # Per bucket, not cumulative; the last one is past every bound (+Inf only).
        self.lag_buckets = [0] * (len(self.LAG_BOUNDS) + 1)
        self.lag_count = 0
        # Microseconds, truncated, as Parley sums them.
        self.lag_sum_us = 0
        self.startup_resident_bytes = 0

    def mark_startup(self) -> None:
        """Call once the server listens, before any connection."""
        self.startup_resident_bytes = _read_resident_bytes()

    def observe_lag(self, nanoseconds: int) -> None:
        seconds = nanoseconds / 1e9
        # The first bucket whose bound is >= the value, as Parley's Histogram.observe.
        self.lag_buckets[bisect_left(self.LAG_BOUNDS, seconds)] += 1
        self.lag_count += 1
        self.lag_sum_us += int(seconds * 1e6)

    def render(self) -> str:
        # Floats print as Parley's (Swift's) do: the shortest text that reads back the same
        # ("0.0001", "1.0", "5e-05"), which is Python's repr.
        lag = "parley_audio_input_lag_seconds"
        out = [
            "# HELP parley_process_resident_memory_bytes Resident set size of the process.",
            "# TYPE parley_process_resident_memory_bytes gauge",
            f"parley_process_resident_memory_bytes {_read_resident_bytes()}",
            # Parley's newer /metrics says its CPU, and the harness shows the server's beside the client's.
            "# HELP parley_process_cpu_seconds_total User and system CPU time of the process.",
            "# TYPE parley_process_cpu_seconds_total counter",
            f"parley_process_cpu_seconds_total {time.process_time()!r}",
            "# HELP parley_process_startup_resident_memory_bytes Resident set size once the server listened, before any connection.",
            "# TYPE parley_process_startup_resident_memory_bytes gauge",
            f"parley_process_startup_resident_memory_bytes {self.startup_resident_bytes}",
            "# HELP parley_sessions_open Voice sessions open (/ws).",
            "# TYPE parley_sessions_open gauge",
            f"parley_sessions_open {self.sessions_open}",
            "# HELP parley_session_turns_total Responses started (turns).",
            "# TYPE parley_session_turns_total counter",
            f"parley_session_turns_total {self.turns}",
            "# HELP parley_session_responses_total Responses finished, by status.",
            "# TYPE parley_session_responses_total counter",
        ]
        out += [f'parley_session_responses_total{{status="{status}"}} {n}' for status, n in self.responses.items()]
        out += [
            "# HELP parley_audio_input_frames_total Audio frames (Opus packets) received, by outcome.",
            "# TYPE parley_audio_input_frames_total counter",
            f'parley_audio_input_frames_total{{result="processed"}} {self.frames_processed}',
            f'parley_audio_input_frames_total{{result="rejected"}} {self.frames_rejected}',
            f"# HELP {lag} How far behind real time each audio frame was when its processing (decode, VAD, turn-taking) ended, "
            "by the stream's own clock; meaningful for clients that stream at real-time pace.",
            f"# TYPE {lag} histogram",
        ]
        cumulative = 0
        for bound, n in zip(self.LAG_BOUNDS, self.lag_buckets):
            cumulative += n
            out.append(f'{lag}_bucket{{le="{bound!r}"}} {cumulative}')
        out += [
            f'{lag}_bucket{{le="+Inf"}} {self.lag_count}',
            f"{lag}_sum {self.lag_sum_us / 1e6!r}",
            f"{lag}_count {self.lag_count}",
        ]
        return "\n".join(out) + "\n"


METRICS = VoiceMetrics()
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


# ---------------------------------------------------------------------------------------------
# The session: audio in, turns out, with Parley's events.

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def _base36(n: int) -> str:
    digits = ""
    while True:
        n, d = divmod(n, 36)
        digits = _BASE36[d] + digits
        if n == 0:
            return digits


class _AudioBuffer:
    """The user's audio since the last commit, kept as Parley's InputAudioBuffer keeps it (for a
    transcriber it does not have): the padding between turns, the turn itself, at most 30 s."""

    MAX_BYTES = 2 * 30 * 16_000
    DROP_STEP_BYTES = 2 * 16_000

    __slots__ = ("samples", "total_bytes")

    def __init__(self) -> None:
        self.samples = bytearray()
        # Bytes appended in the whole session: the clock audio_start_ms counts on.
        self.total_bytes = 0

    def append(self, pcm: bytes) -> None:
        self.samples += pcm
        self.total_bytes += len(pcm)
        if len(self.samples) > self.MAX_BYTES + self.DROP_STEP_BYTES:
            del self.samples[:len(self.samples) - self.MAX_BYTES]

    def keep_last(self, count: int) -> None:
        # Only once it has doubled, so that each sample moves about once.
        if len(self.samples) > 2 * count:
            del self.samples[:len(self.samples) - count]

    def keep_from(self, byte: int) -> None:
        first = self.total_bytes - len(self.samples)
        del self.samples[:min(len(self.samples), max(0, byte - first))]

    def take(self) -> None:
        self.samples = bytearray()


class _Response:
    __slots__ = ("id", "item_id", "input_tokens", "words", "text", "item_started")

    def __init__(self, response_id: str, item_id: str, input_tokens: int, words: list[str]) -> None:
        self.id = response_id
        self.item_id = item_id
        self.input_tokens = input_tokens
        self.words = words
        self.text = ""
        self.item_started = False


def _spoken_seconds(ms: int) -> str:
    tenths = (max(0, ms) + 50) // 100
    return f"{tenths // 10}.{tenths % 10}"


def _ordinal(n: int) -> str:
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _words(text: str) -> list[str]:
    """Words with their leading spaces, so that the deltas join back into the text (as BuiltinModel.words)."""
    words = text.split(" ")
    return [words[0]] + [" " + word for word in words[1:]]


def _tokens(text: str) -> int:
    """Parley's usage estimate: about four bytes of text per token."""
    return (len(text.encode()) + 3) // 4


Send = Callable[[str], Awaitable[None]]


class VoiceSession:
    """One /ws session. `send` sends one text message on the connection. Call `open` once accepted,
    `binary`/`text` for each message, and `close` when the connection is gone (always)."""

    # Parley's BuiltinModel streams its reply a word every 10 ms.
    WORD_INTERVAL = 0.01
    # Parley lets a session's codec go after 2 s without audio; the next packet makes a new one.
    CODEC_IDLE_SECONDS = 2.0
    # Parley's history budget: the last 64 messages (the peers' messages are short, so its 32 KiB
    # text budget is never what trims).
    MAX_HISTORY = 64
    REAL_MODEL_COMMAND = "parley serve --llm openai --llm-base-url URL --llm-model NAME"

    def __init__(self, send: Send) -> None:
        self._send = send
        self._seed_tag = _base36(time.monotonic_ns()).rjust(13, "0")
        self._counter = 0
        self._vad = VoiceActivityDetector()
        self._clock = AudioStreamClock()
        self._audio = _AudioBuffer()
        self._decoder: OpusDecoder | None = None
        self._codec_check: asyncio.TimerHandle | None = None
        self._last_audio = 0
        # The turn the detector has heard start and not yet end: (item id, onset ms).
        self._speech: tuple[str, int] | None = None
        self._response: _Response | None = None
        self._reply_task: asyncio.Task | None = None
        # A response created by this frame, whose reply starts once the frame's events are sent.
        self._reply_waiting: _Response | None = None
        # The conversation as Parley's history keeps it: [role, text, spoken ms or None, item id] per message.
        self._history: list[list] = []
        self._last_item_id: str | None = None
        self._open = False

    # -- the connection's side

    async def open(self) -> None:
        self._open = True
        METRICS.sessions_open += 1
        await self._send(self._session_created())

    async def binary(self, packet: bytes) -> None:
        """One Opus packet: decoded, through VAD and turn-taking, its lag observed."""
        arrived = time.monotonic_ns()
        self._last_audio = arrived
        try:
            if self._decoder is None:
                self._decoder = OpusDecoder()
                self._schedule_codec_check()
            pcm = self._decoder.decode(packet)
        except OpusError as error:
            METRICS.frames_rejected += 1
            await self._send(self._error("invalid_value", f"an Opus packet could not be decoded: {error}"))
            return
        due = self._clock.frame_arrived(len(pcm) * 1_000_000_000 // 2 // 16_000, arrived)
        for event in self._receive(pcm):
            await self._send(event)
        if self._reply_waiting is not None:
            # The model starts once response.created is on its way, so no delta can overtake it.
            self._reply_task = asyncio.get_running_loop().create_task(self._stream_reply(self._reply_waiting))
            self._reply_waiting = None
        done = time.monotonic_ns()
        METRICS.frames_processed += 1
        METRICS.observe_lag(done - due if done > due else 0)

    async def text(self, message: str) -> None:
        """Client events are not implemented: the voice path takes Opus packets only."""
        try:
            json.loads(message)
        except ValueError as error:
            await self._send(self._error("invalid_json", f"the event is not valid JSON: {error}"))
            return
        await self._send(self._error("unsupported_event", "this peer serves the voice path only: send each 20 ms Opus packet "
                                                         "as a binary message; client events are not implemented"))

    def close(self) -> None:
        if not self._open:
            return
        self._open = False
        METRICS.sessions_open -= 1
        if self._reply_task is not None:
            self._reply_task.cancel()
            self._reply_task = None
        if self._codec_check is not None:
            self._codec_check.cancel()
            self._codec_check = None
        if self._decoder is not None:
            self._decoder.close()
            self._decoder = None

    def _schedule_codec_check(self) -> None:
        self._codec_check = asyncio.get_running_loop().call_later(self.CODEC_IDLE_SECONDS, self._check_codec)

    def _check_codec(self) -> None:
        if (time.monotonic_ns() - self._last_audio) / 1e9 >= self.CODEC_IDLE_SECONDS:
            if self._decoder is not None:
                self._decoder.close()
            self._decoder = None
            self._codec_check = None
        else:
            self._schedule_codec_check()

    # -- turns (SessionEngine's server-VAD path, synchronous: events out as JSON texts)

    def _receive(self, pcm: bytes) -> list[str]:
        out: list[str] = []
        events = self._vad.process(pcm)
        self._audio.append(pcm)
        for kind, ms in events:
            if kind == "started":
                self._speech_started(ms, out)
            else:
                self._speech_stopped(ms, out)
        if self._speech is None:
            # Between turns only the padding the next start may reach back for is kept (plus the
            # detector's look-back of up to 130 ms, and some margin).
            self._audio.keep_last(2 * 16 * (self._vad.prefix_padding_ms + 300))
        return out

    def _speech_started(self, ms: int, out: list[str]) -> None:
        item_id = self._make("item")
        self._speech = (item_id, self._vad.speech_onset_ms)
        self._audio.keep_from(2 * 16 * ms)
        out.append(self._event("input_audio_buffer.speech_started", audio_start_ms=ms, item_id=item_id))
        if self._response is not None:  # barge-in, as Parley's default interrupt_response
            out += self._finish("cancelled", {"type": "cancelled", "reason": "turn_detected"})

    def _speech_stopped(self, ms: int, out: list[str]) -> None:
        if self._speech is None:
            return
        item_id, onset_ms = self._speech
        self._speech = None
        out.append(self._event("input_audio_buffer.speech_stopped", audio_end_ms=ms, item_id=item_id))
        # The commit: the audio is let go (a transcriber would take it here).
        previous = self._last_item_id
        self._audio.take()
        out.append(self._event("input_audio_buffer.committed", previous_item_id=previous, item_id=item_id))
        item = {"id": item_id, "object": "realtime.item", "type": "message", "status": "completed", "role": "user",
                "content": [{"type": "input_audio", "transcript": None}]}
        out.append(self._event("conversation.item.created", previous_item_id=previous, item=item))
        spoken_ms = max(0, ms - onset_ms)
        self._remember(item_id, ["user", f"[the user spoke for {_spoken_seconds(spoken_ms)} s; no transcriber is configured]", spoken_ms])
        if self._response is None:
            out.append(self._start_response())

    def _start_response(self) -> str:
        spoken_turns = sum(1 for message in self._history if message[0] == "user" and message[2] is not None)
        last_ms = self._history[-1][2]
        ordinal = f" That was your {_ordinal(spoken_turns)} spoken turn." if spoken_turns > 1 else ""
        # The built-in agent's answer to an untranscribed spoken turn, word for word.
        reply = (f"I heard you speak for about {_spoken_seconds(last_ms)} seconds, but no transcriber is configured, so I can't "
                 f"tell what you said.{ordinal} You can type instead, or run Parley with speech recognition and a real model "
                 f"({self.REAL_MODEL_COMMAND}).")
        input_tokens = sum(_tokens(message[1]) + 4 for message in self._history)
        response = _Response(self._make("resp"), self._make("item"), input_tokens, _words(reply))
        self._response = response
        METRICS.turns += 1
        self._reply_waiting = response
        return self._event("response.created", response=self._snapshot(response, "in_progress", None, [], None))

    async def _stream_reply(self, response: _Response) -> None:
        """The model's side: a word every WORD_INTERVAL, until done or cancelled by speech."""
        try:
            await asyncio.sleep(0)
            for word in response.words:
                if self._response is not response:
                    return
                for event in self._delta(response, word):
                    await self._send(event)
                await asyncio.sleep(self.WORD_INTERVAL)
            if self._response is response:
                for event in self._finish("completed", None):
                    await self._send(event)
        except asyncio.CancelledError:
            raise
        except Exception:  # the connection went away mid-reply: nothing left to tell
            return
        finally:
            if self._reply_task is asyncio.current_task():
                self._reply_task = None

    def _delta(self, response: _Response, word: str) -> list[str]:
        out: list[str] = []
        at = {"response_id": response.id, "item_id": response.item_id, "output_index": 0, "content_index": 0}
        if not response.item_started:
            response.item_started = True
            item = {"id": response.item_id, "object": "realtime.item", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
            out.append(self._event("response.output_item.added", response_id=response.id, output_index=0, item=item))
            out.append(self._event("conversation.item.created", previous_item_id=self._last_item_id, item=item))
            out.append(self._event("response.content_part.added", **at, part={"type": "text", "text": ""}))
            # Its place in the conversation is taken now, empty until it ends.
            self._remember(response.item_id, ["assistant", "", None])
        out.append(self._event("response.output_text.delta", **at, delta=word))
        response.text += word
        return out

    def _finish(self, status: str, details: dict | None) -> list[str]:
        response = self._response
        if response is None:
            return []
        self._response = None
        out: list[str] = []
        output = []
        if response.item_started:
            at = {"response_id": response.id, "item_id": response.item_id, "output_index": 0, "content_index": 0}
            out.append(self._event("response.output_text.done", **at, text=response.text))
            out.append(self._event("response.content_part.done", **at, part={"type": "text", "text": response.text}))
            item = {"id": response.item_id, "object": "realtime.item", "type": "message",
                    "status": "completed" if status == "completed" else "incomplete", "role": "assistant",
                    "content": [{"type": "output_text", "text": response.text}]}
            out.append(self._event("response.output_item.done", response_id=response.id, output_index=0, item=item))
            output = [item]
            for message in self._history:
                if message[3] == response.item_id:
                    message[1] = response.text
        output_tokens = _tokens(response.text)
        usage = {"total_tokens": response.input_tokens + output_tokens, "input_tokens": response.input_tokens, "output_tokens": output_tokens,
                 "input_token_details": {"text_tokens": response.input_tokens, "audio_tokens": 0, "cached_tokens": 0},
                 "output_token_details": {"text_tokens": output_tokens, "audio_tokens": 0}}
        out.append(self._event("response.done", response=self._snapshot(response, status, details, output, usage)))
        METRICS.responses[status] += 1
        return out

    def _remember(self, item_id: str, message: list) -> None:
        """Appends to the history (each message keeps its item id last), trimmed as Parley trims it."""
        self._history.append(message + [item_id])
        self._last_item_id = item_id
        if len(self._history) > self.MAX_HISTORY:
            del self._history[0]
            # The model's view still opens with the user.
            while len(self._history) > 1 and self._history[0][0] == "assistant":
                del self._history[0]

    # -- JSON, as Parley writes it (GA dialect, keys in its order)

    def _make(self, prefix: str) -> str:
        """Parley's ids: prefix_<13-digit base-36 session tag><counter in base 36>."""
        self._counter += 1
        return f"{prefix}_{self._seed_tag}{_base36(self._counter)}"

    def _event(self, event_type: str, **fields) -> str:
        return _dumps({"type": event_type, "event_id": self._make("event"), **fields})

    def _error(self, code: str, message: str) -> str:
        return self._event("error", error={"type": "invalid_request_error", "code": code, "message": message, "param": None, "event_id": None})

    def _snapshot(self, response: _Response, status: str, details: dict | None, output: list, usage: dict | None) -> dict:
        return {"object": "realtime.response", "id": response.id, "status": status, "status_details": details, "output": output,
                "conversation_id": f"conv_{self._seed_tag}", "output_modalities": ["text"], "max_output_tokens": "inf",
                "audio": {"output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "alloy"}},
                "usage": usage, "metadata": None}

    def _session_created(self) -> str:
        session = {
            "type": "realtime", "object": "realtime.session", "id": f"sess_{self._seed_tag}", "model": "parley-builtin",
            "output_modalities": ["text"], "instructions": "", "tools": [], "tool_choice": "auto", "max_output_tokens": "inf", "tracing": None,
            "audio": {
                "input": {"format": {"type": "audio/opus", "rate": 48000}, "transcription": None, "noise_reduction": None,
                          "turn_detection": {"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": self._vad.prefix_padding_ms,
                                             "silence_duration_ms": self._vad.silence_duration_ms, "create_response": True,
                                             "interrupt_response": True}},
                "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "alloy", "speed": 1},
            },
        }
        return self._event("session.created", session=session)


def libopus_warning() -> str | None:
    """A line for the server's start-up when /ws could not decode anything; None when it can."""
    try:
        _LibOpus.load()
    except OpusError as error:
        return str(error)
    return None
