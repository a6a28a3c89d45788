"""Prints the words Whisper (tiny.en, the speech helper's own model in .venv-speech) hears in a WAV:
for tests that check what a client heard was the reply's speech, not noise or silence. Given
several WAVs, one line each, in order (the model loads once).

    .venv-speech/bin/python scripts/tests/recognise.py FILE.wav [FILE.wav...]
"""
import os
import sys

from faster_whisper import WhisperModel

model = WhisperModel(os.path.join(os.path.dirname(sys.executable), "..", "whisper-tiny.en"), device="cpu", compute_type="int8", cpu_threads=1)
for path in sys.argv[1:]:
    segments, _ = model.transcribe(path, language="en", beam_size=1)
    print(" ".join(segment.text.strip() for segment in segments), flush=True)
