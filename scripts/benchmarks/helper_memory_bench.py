#!/usr/bin/env python3
"""Not a load client: the speech helper's memory over many decodes, for each recogniser it offers.

`make bench-helper-memory` runs it with .venv-speech's Python (issue 74: "the helper's memory is
flat over 1,000 decodes with every recogniser it offers"). For each recogniser it starts the
helper as the server does (helpers/parley_speech.py with --smart-turn and the recogniser's flag,
two workers and one for waited work), then, on its socket and its own protocol (hello, then per
decode: open a stream, append the clip, finish), makes DECODES final decodes one after another of
20 sentences in two voices (flite kal and espeak-ng en+m3, 16 kHz, 1 to 4 s), reading the helper's
RSS (/proc/PID/status) every 100. Prints a row per recogniser: RSS after the first decode, after
100, at the end, and the growth from 100 to the end (MiB), which is the leak if there is one (the
first hundred fill the allocator's arenas and CTranslate2's caches), with CPU a decode. With
--languages (issue 75), a row more: Whisper base decoding the languages' sentences one language
after another, each stream's language set (`LANGUAGES=es,de,fr,it RECOGNISERS= make bench-helper-memory`).
"""

import argparse
import importlib.util
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VENV = os.path.join(ROOT, ".venv-speech")
RECOGNISERS = {
    "whisper-tiny.en": ("--whisper", os.path.join(VENV, "whisper-tiny.en")),
    "whisper-base": ("--whisper-base", os.path.join(VENV, "whisper-base")),
}


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Helper:
    def __init__(self, flag, directory, folder):
        self.path = os.path.join(folder, "helper.sock")
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "helpers", "parley_speech.py"), "--socket", self.path,
             "--smart-turn", os.path.join(VENV, "smart-turn", "smart-turn-v3.2-cpu.onnx"), flag, directory,
             "--workers", "2", "--waited-workers", "1"],
            stdout=subprocess.PIPE, env={**os.environ, "OMP_NUM_THREADS": "1"}, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("ready"):
            raise SystemExit(f"helper-memory: the helper did not start ({flag} {directory}): {line!r}")
        self.socket = socket.socket(socket.AF_UNIX)
        self.socket.settimeout(60)
        self.socket.connect(self.path)
        self.buffer = b""
        self.ident = 0
        self.request({"op": "hello", "version": 2})

    def send(self, header, payload=b""):
        body = json.dumps(header).encode()
        self.socket.sendall(struct.pack("<II", len(body), len(payload)) + body + payload)

    def read(self):
        while True:
            if len(self.buffer) >= 8:
                h, p = struct.unpack("<II", self.buffer[:8])
                if len(self.buffer) >= 8 + h + p:
                    header = json.loads(self.buffer[8:8 + h])
                    self.buffer = self.buffer[8 + h + p:]
                    return header
            chunk = self.socket.recv(65536)
            if not chunk:
                raise SystemExit("helper-memory: the helper closed its socket")
            self.buffer += chunk

    def request(self, header, payload=b""):
        self.ident += 1
        self.send({**header, "id": self.ident}, payload)
        while True:
            answer = self.read()
            if answer.get("id") == self.ident:
                return answer

    def decode(self, pcm, language=None):
        self.ident += 1
        stream = self.ident
        self.send({"op": "open", "id": stream, "rate": 16000, **({"language": language} if language else {})})
        self.send({"op": "append", "id": stream}, pcm)
        answer = self.request({"op": "finish", "stream": stream})
        if "error" in answer:
            raise SystemExit(f"helper-memory: a decode failed: {answer}")
        return answer

    def rss_mib(self):
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def cpu_seconds(self):
        with open(f"/proc/{self.process.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.socket.close()
        self.process.terminate()
        self.process.wait(10)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decodes", type=int, default=1000)
    parser.add_argument("--recognisers", default=",".join(RECOGNISERS))
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "parley-recogniser-bench"))
    parser.add_argument("--languages", default="",
                        help="also Whisper base in these languages, one after another (es,de,fr,it): the bench's "
                             "sentences of each (language_sentences.json) in espeak-ng's voice of it, the stream's language set")
    arguments = parser.parse_args()
    bench = load("recogniser_bench", os.path.join(ROOT, "scripts", "benchmarks", "recogniser_bench.py"))
    telephone = load("telephone_wer_bench", os.path.join(ROOT, "scripts", "benchmarks", "telephone_wer_bench.py"))
    bench.VOICES.update(telephone.FRESH)
    clips = bench.Clips(arguments.cache)
    texts = bench.sentences()[:20]
    audio = [clips.pcm(voice, i, text) for voice in ("flite kal", "espeak-ng en+m3 165") for i, text in enumerate(texts)]
    # Each run: a label, the recogniser, and its decodes in order (a clip, the stream's language).
    runs = [(name, name, [(audio[n % len(audio)], None) for n in range(1, arguments.decodes + 1)])
            for name in arguments.recognisers.split(",") if name]
    if arguments.languages:
        with open(os.path.join(ROOT, "scripts", "benchmarks", "language_sentences.json")) as file:
            table = json.load(file)
        languages = arguments.languages.split(",")
        # Spoken as languages_bench speaks them: espeak-ng's voice of each, as itself at 165 words a minute.
        espeak = {"es": "es", "de": "de", "fr": "fr-fr", "it": "it", "pt": "pt-br", "nl": "nl", "en": "en-us"}
        decodes = []
        # One language after another, each for its share, so that memory a new language takes shows.
        for language in languages:
            voice = f"espeak-ng {espeak[language]} 165"
            bench.VOICES[voice] = ("espeak", espeak[language], 165)
            spoken = [clips.pcm(voice, i, text) for i, text in enumerate(table[language])]
            decodes += [(spoken[k % len(spoken)], language) for k in range(arguments.decodes // len(languages))]
        runs.append((f"whisper-base ({arguments.languages})", "whisper-base", decodes))
    print("| recogniser | decodes | RSS after 1 | after 100 | at the end | growth from 100 to the end | CPU a decode |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, name, decodes in runs:
        flag, directory = RECOGNISERS[name]
        with tempfile.TemporaryDirectory(prefix="parley-helper-memory-") as folder:
            helper = Helper(flag, directory, folder)
            samples, started = {}, helper.cpu_seconds()
            for n, (pcm, language) in enumerate(decodes, 1):
                helper.decode(pcm, language)
                if n == 1 or n % 100 == 0 or n == len(decodes):
                    samples[n] = helper.rss_mib()
                    print(f"helper-memory: {label}: {n} decodes ({language or 'en'}), RSS {samples[n]:.1f} MiB", file=sys.stderr, flush=True)
            cpu = (helper.cpu_seconds() - started) / len(decodes)
            helper.stop()
        hundred = samples.get(100, samples[1])
        end = samples[len(decodes)]
        print(f"| {label} | {len(decodes)} | {samples[1]:.1f} MiB | {hundred:.1f} MiB | {end:.1f} MiB | "
              f"**{end - hundred:+.1f} MiB** | {1000 * cpu:.0f} ms |", flush=True)


if __name__ == "__main__":
    main()
