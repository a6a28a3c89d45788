#!/usr/bin/env python3
"""Not a load client: Whisper base on its own, offline, on the languages bench's clips (issue 75).

What the model itself makes of espeak-ng's voices, without the server: each sentence of
scripts/benchmarks/language_sentences.json in the three ways languages_bench says them (as itself
at 165 words a minute, +f3 at 140, +m4 at 190), 16 kHz, decoded whole by faster-whisper in its
language (beam search alone and bounded, as the helper decodes outside English), and its language read from
Whisper's language tokens among CANDIDATES (the helper's `Whisper.found`). Prints a row per
language: the word error rate (recogniser_bench.words), how often the language was picked, and how
often at a share of the candidates' probability of 0.75 or more, right and wrong.

    .venv-speech/bin/python scripts/benchmarks/language_model_bench.py --languages es,de,fr,it --candidates en,es,de,fr,it
"""

import argparse
import io
import json
import os
import subprocess
import sys
import wave

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import recogniser_bench  # noqa: E402

ESPEAK = {"en": "en-us", "es": "es", "de": "de", "fr": "fr-fr", "it": "it", "pt": "pt-br", "nl": "nl"}
WAYS = (("", 165), ("+f3", 140), ("+m4", 190))
KEPT = 0.75


def spoken(text, voice, speed):
    """espeak-ng's speech of `text` at 16 kHz, float32."""
    out = subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "--stdout", text], capture_output=True, check=True).stdout
    with wave.open(io.BytesIO(out)) as clip:
        rate = clip.getframerate()
        pcm = np.frombuffer(clip.readframes(clip.getnframes()), dtype=np.int16).astype(np.float32) / 32768
    n = int(len(pcm) * 16000 / rate)
    return np.interp(np.linspace(0, len(pcm) - 1, n), np.arange(len(pcm)), pcm).astype(np.float32)


def errors(reference, heard):
    """Word-level edit distance, and the reference's length."""
    ref, hyp = recogniser_bench.words(reference), recogniser_bench.words(heard)
    row = list(range(len(hyp) + 1))
    for i in range(1, len(ref) + 1):
        previous, row[0] = row[0], i
        for j in range(1, len(hyp) + 1):
            current = min(row[j] + 1, row[j - 1] + 1, previous + (ref[i - 1] != hyp[j - 1]))
            previous, row[j] = row[j], current
    return row[len(hyp)], len(ref)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--languages", default="es,de,fr,it")
    parser.add_argument("--candidates", default="en,es,de,fr,it")
    parser.add_argument("--model", default=os.path.join(ROOT, ".venv-speech", "whisper-base"))
    arguments = parser.parse_args()
    from faster_whisper import WhisperModel
    from faster_whisper.audio import pad_or_trim

    model = WhisperModel(arguments.model, device="cpu", compute_type="int8", cpu_threads=1)
    with open(os.path.join(ROOT, "scripts", "benchmarks", "language_sentences.json")) as file:
        table = json.load(file)
    candidates = arguments.candidates.split(",")
    print(f"| language | WER (beam alone) | picked right among {arguments.candidates} | kept at {KEPT}: right / wrong |")
    print("| --- | ---: | ---: | ---: |")
    for language in arguments.languages.split(","):
        wrong_words = words = picked = kept_right = kept_wrong = clips = 0
        for variant, speed in WAYS:
            for text in table[language]:
                audio = spoken(text, ESPEAK[language] + variant, speed)
                # Bounded as the helper bounds it (Whisper.WHOLE_TOKENS_PER_SECOND): a loop ends where the speech does.
                most = min(220, 8 + int(len(audio) / 16000 * 12))
                segments, _ = model.transcribe(audio, language=language, beam_size=5, vad_filter=False, temperature=0.0,
                                               condition_on_previous_text=False, without_timestamps=True, max_new_tokens=most)
                e, n = errors(text, "".join(segment.text for segment in segments))
                wrong_words, words = wrong_words + e, words + n
                encoded = model.encode(pad_or_trim(model.feature_extractor(audio)))
                probabilities = {token[2:-2]: p for token, p in model.model.detect_language(encoded)[0]}
                best = max(candidates, key=lambda code: probabilities.get(code, 0.0))
                share = probabilities.get(best, 0.0) / max(1e-9, sum(probabilities.get(code, 0.0) for code in candidates))
                clips += 1
                picked += best == language
                if share >= KEPT:
                    kept_right += best == language
                    kept_wrong += best != language
        print(f"| {language} | {100 * wrong_words / words:.1f} % | {picked} of {clips} | {kept_right} / {kept_wrong} |", flush=True)


if __name__ == "__main__":
    main()
