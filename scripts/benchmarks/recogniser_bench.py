#!/usr/bin/env python3
"""Not a load client: the speech helper's recognisers on the same clips, offline (no server, no sessions).

The speech helper's recognisers on the same clips: word error rate, CPU per decode, talkers per core.

`make bench-recogniser` runs it with .venv-speech's Python. It reads the helper's own classes
(helpers/parley_speech.py's `Whisper`, tiny.en and base), each on one thread, one decode at a time:

  * word error rate on WordErrorRate.swift's 30 sentences (read from that file) in the voices of
    `make bench-wer` (espeak-ng en-us at 175 and 140 wpm, en-gb+f3 at 160, flite slt and rms, Piper
    joe at length scales 1.0 and 1.25 with its noises off, as the tests' vectors), each clip made
    16 kHz mono by sox and decoded alone; words folded as WordErrorRate.words folds them (lower
    case, punctuation dropped, numbers spelled out), errors the edit distance;
  * CPU per decode (time.process_time, the median of --reps) on Piper joe's 30 sentences one after
    another, cut to 0.3 to 8 s;
  * talkers per core, from a model of the server's load (WhisperTranscriber.swift): a talker speaks
    half the time, in turns of T seconds; while it speaks a partial is decoded whenever 0.3 s (past
    1.5 s, 0.6 s) of new audio has come and none is in flight (a decode holds the talker's next one
    for its own CPU time); one final decode on the whole window ends the turn. CPU per turn is the
    sum; a core carries 2T / that.

Prints one table (markdown). --voices quick reads three voices; --sentences N the first N.
"""

import argparse
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import wave

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RATE = 16000

VOICES = {
    "espeak-ng en-us 175": ("espeak", "en-us", 175),
    "en-us 140": ("espeak", "en-us", 140),
    "en-gb+f3 160": ("espeak", "en-gb+f3", 160),
    "flite slt": ("flite", "slt", None),
    "flite rms": ("flite", "rms", None),
    "Piper joe ×1.0": ("piper", None, 1.0),
    "joe ×1.25": ("piper", None, 1.25),
}
QUICK = ("espeak-ng en-us 175", "flite slt", "Piper joe ×1.0")
LENGTHS = (0.3, 0.6, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)


def helper_module():
    spec = importlib.util.spec_from_file_location("parley_speech", os.path.join(ROOT, "helpers", "parley_speech.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sentences():
    source = open(os.path.join(ROOT, "Tests", "SpeechTests", "WordErrorRate.swift")).read()
    block = re.search(r"static let sentences = \[(.*?)\]", source, re.S).group(1)
    return re.findall(r'"([^"]*)"', block)


# MARK: WordErrorRate.words, in Python

ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
        "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def spelled(n):
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("" if n % 10 == 0 else " " + ONES[n % 10])
    if n < 1000:
        return ONES[n // 100] + " hundred" + ("" if n % 100 == 0 else " " + spelled(n % 100))
    if n < 10000:
        return spelled(n // 1000) + " thousand" + ("" if n % 1000 == 0 else " " + spelled(n % 1000))
    return str(n)


NUMBER_WORDS = {word: value for value, word in enumerate(ONES)} | {word: 10 * i for i, word in enumerate(TENS) if word}
SCALES = {"hundred": 100, "thousand": 1000}


def spoken_numbers(tokens):
    """Runs of number words as the digits they say: "twenty five" is 25, "four five six seven" is
    4 5 6 7 (a word under twenty after a unit starts a new number), "two hundred and eight" 208."""
    out, value, current = [], None, 0

    def flush():
        nonlocal value, current
        if value is not None:
            out.append(str(value + current))
        value, current = None, 0

    for i, token in enumerate(tokens):
        if token in NUMBER_WORDS:
            n = NUMBER_WORDS[token]
            after_scale = current == 0 and bool(value)
            after_tens = current >= 20 and current % 10 == 0 and n < 10
            if value is not None and not (after_scale or after_tens):
                flush()
            if value is None:
                value = 0
            current += n
        elif token in SCALES and value is not None:
            scale = SCALES[token]
            value, current = (value + current) * scale if scale > 100 else value + current * scale, 0
        elif token == "and" and value is not None and i + 1 < len(tokens) and tokens[i + 1] in NUMBER_WORDS:
            continue
        else:
            flush()
            out.append(token)
    flush()
    return out


def words(text):
    """A text as the words a word error rate counts: lower case, punctuation dropped, and every
    number, spelled or in digits, as its digits one by one, so that "4567", "4 5 6 7" and "four
    five six seven" read alike, and "208" against "2 at 8" is one error, not three (issue 74)."""
    tokens = [word for word in re.split(r"[^\w']+|_", text.lower()) if word]
    out = []
    for token in spoken_numbers(tokens):
        out += list(token) if token.isdigit() else [token]
    return out


def errors(reference, heard):
    previous = list(range(len(heard) + 1))
    for i, word in enumerate(reference):
        row = [i + 1] + [0] * len(heard)
        for j, other in enumerate(heard):
            row[j + 1] = min(previous[j] + (word != other), previous[j + 1] + 1, row[j] + 1)
        previous = row
    return previous[-1]


# MARK: Clips


class Clips:
    """Each sentence in each voice as 16 kHz mono pcm16, made once into a cache folder."""

    def __init__(self, folder):
        self.folder = folder
        self.piper = None
        os.makedirs(folder, exist_ok=True)

    def pcm(self, voice, index, sentence):
        kind, name, speed = VOICES[voice]
        path = os.path.join(self.folder, f"{kind}-{name}-{speed}-{index}.wav")
        if not os.path.exists(path):
            raw = path + ".raw.wav"
            if kind == "espeak":
                subprocess.run(["espeak-ng", "-v", name, "-s", str(speed), "-w", raw, sentence], check=True)
            elif kind == "flite":
                subprocess.run(["flite", "-voice", name, "-t", sentence, "-o", raw], check=True)
            else:
                self.say_piper(sentence, speed, raw)
            subprocess.run(["sox", raw, "-r", str(RATE), "-c", "1", "-b", "16", path], check=True)
            os.unlink(raw)
        with wave.open(path) as clip:
            return clip.readframes(clip.getnframes())

    def say_piper(self, sentence, length_scale, path):
        from piper import PiperVoice, SynthesisConfig

        if self.piper is None:
            self.piper = PiperVoice.load(os.path.join(ROOT, ".venv-speech", "piper-voice", "en_US-joe-medium.onnx"))
        config = SynthesisConfig(length_scale=length_scale, noise_scale=0.0, noise_w_scale=0.0)
        with wave.open(path, "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(self.piper.config.sample_rate)
            for chunk in self.piper.synthesize(sentence, config):
                out.writeframes(chunk.audio_int16_bytes)


# MARK: The recognisers


class Recogniser:
    """One way of decoding: a model, its beam, and whether the decode is the `fast` one."""

    def __init__(self, name, model, beam=None, fast=False):
        self.name, self.model, self.beam, self.fast = name, model, beam, fast

    def __call__(self, pcm):
        if self.beam is not None:
            self.model.BEAM_SIZE = self.beam
        return self.model.transcribe(pcm, RATE, self.fast).text


def cpu_ms(recogniser, pcm, reps):
    recogniser(pcm)
    samples = []
    for _ in range(reps):
        started = time.process_time()
        recogniser(pcm)
        samples.append((time.process_time() - started) * 1000)
    return statistics.median(samples)


def interpolated(curve, seconds):
    points = sorted(curve.items())
    if seconds <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if seconds <= x1:
            return y0 + (y1 - y0) * (seconds - x0) / (x1 - x0)
    return points[-1][1]


def turn_cpu_ms(partial_curve, final_curve, seconds):
    """CPU of one turn of `seconds`: the partials the server's cadence asks for, then the final decode."""
    total, decoded_up_to, busy_until, step = 0.0, 0.0, 0.0, 0.02
    t = step
    while t < seconds - 1e-9:
        every = 0.3 if t < 1.5 else 0.6
        if t >= busy_until and t - decoded_up_to >= every - 1e-9:
            cost = interpolated(partial_curve, t)
            total += cost
            decoded_up_to, busy_until = t, t + cost / 1000
        t += step
    return total + interpolated(final_curve, seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--voices", choices=("all", "quick"), default="all")
    parser.add_argument("--sentences", type=int, default=30)
    parser.add_argument("--reps", type=int, default=5, help="decodes timed per length (the median is kept)")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "parley-recogniser-bench"))
    parser.add_argument("--skip-base", action="store_true", help="Whisper tiny.en alone, not Whisper base beside it")
    arguments = parser.parse_args()
    os.chdir(ROOT)

    speech = helper_module()
    whisper = speech.Whisper(os.path.join(ROOT, ".venv-speech", "whisper-tiny.en"), threads=1)
    recognisers = [
        Recogniser("Whisper tiny.en, beam 5, 30 s window (final texts today)", whisper, beam=5),
        Recogniser("Whisper tiny.en, greedy, 30 s window", whisper, beam=1),
        Recogniser("Whisper tiny.en, beam 5, 15 s window (partials today, `fast`)", whisper, beam=5, fast=True),
        Recogniser("Whisper tiny.en, greedy, 15 s window", whisper, beam=1, fast=True),
    ]
    if not arguments.skip_base:
        base = speech.Whisper(os.path.join(ROOT, ".venv-speech", "whisper-base"), threads=1, name="whisper-base")
        recognisers.append(Recogniser("Whisper base, beam 5, 30 s window (--transcriber whisper-base)", base, beam=5))

    voices = list(VOICES) if arguments.voices == "all" else list(QUICK)
    texts = sentences()[: arguments.sentences]
    clips = Clips(arguments.cache)
    audio = {(voice, i): clips.pcm(voice, i, text) for voice in voices for i, text in enumerate(texts)}

    # Word error rate, and the mean CPU of a clip's decode.
    rates, clip_cpu, misheard = {}, {}, {}
    for recogniser in recognisers:
        recogniser(audio[(voices[0], 0)])  # warm
        total_errors, total_words, cpu = 0, 0, []
        for voice in voices:
            voice_errors, voice_words = 0, 0
            for i, text in enumerate(texts):
                started = time.process_time()
                heard = recogniser(audio[(voice, i)])
                cpu.append((time.process_time() - started) * 1000)
                reference = words(text)
                wrong = errors(reference, words(heard))
                if wrong:
                    misheard.setdefault(recogniser.name, []).append(f"{voice}: {text!r} -> {heard!r}")
                voice_errors += wrong
                voice_words += len(reference)
            rates[(recogniser.name, voice)] = voice_errors / voice_words
            total_errors += voice_errors
            total_words += voice_words
        rates[(recogniser.name, "all")] = total_errors / total_words
        clip_cpu[recogniser.name] = statistics.mean(cpu)
        print(f"{recogniser.name}: {total_errors / total_words:.1%} over {len(cpu)} clips ({total_words} words), "
              f"{statistics.mean(cpu):.0f} ms CPU a clip", file=sys.stderr, flush=True)

    # CPU per decode by the audio's length, on Piper joe's sentences end to end.
    joined = b"".join(clips.pcm("Piper joe ×1.0", i, text) for i, text in enumerate(sentences()))
    curves = {}
    for recogniser in recognisers:
        curves[recogniser.name] = {s: cpu_ms(recogniser, joined[: int(s * RATE) * 2], arguments.reps) for s in LENGTHS}
        print(f"{recogniser.name}: " + ", ".join(f"{s} s {ms:.0f} ms" for s, ms in curves[recogniser.name].items()),
              file=sys.stderr, flush=True)

    # Talkers: a recogniser's partials are its `fast` decodes (Whisper's 15 s window at the same beam).
    def partner(recogniser):
        if recogniser.beam is None or recogniser.fast:
            return recogniser
        return next(r for r in recognisers if r.model is recogniser.model and r.beam == recogniser.beam and r.fast)

    print()
    print("| recogniser | " + " | ".join(voices) + f" | all {len(voices) * len(texts)} clips | CPU ms a clip | "
          "CPU ms per decode of 1 s / 3 s / 8 s | talkers per core, turns of 1 s / 3 s / 8 s (partials on) |")
    print("| --- |" + " ---: |" * (len(voices) + 4))
    for recogniser in recognisers:
        curve = curves[recogniser.name]
        talkers = []
        for seconds in (1, 3, 8):
            if recogniser.fast:
                talkers.append("")
                continue
            turn = turn_cpu_ms(curves[partner(recogniser).name], curve, seconds)
            talkers.append(f"{2 * seconds * 1000 / turn:.1f}")
        cells = [f"{rates[(recogniser.name, voice)]:.1%}" for voice in voices]
        print(f"| {recogniser.name} | " + " | ".join(cells) + f" | **{rates[(recogniser.name, 'all')]:.1%}** | "
              f"{clip_cpu[recogniser.name]:.0f} | {curve[1.0]:.0f} / {curve[3.0]:.0f} / {curve[8.0]:.0f} | "
              + (" / ".join(talkers) if all(talkers) else "— (partials only)") + " |")
    print()
    for name, lines in misheard.items():
        print(f"{name}: {len(lines)} clips misheard", file=sys.stderr)
        for line in lines:
            print("  " + line, file=sys.stderr)


if __name__ == "__main__":
    main()
