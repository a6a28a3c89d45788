#!/usr/bin/env python3
"""Not a load client: one Piper reply voice measured in a process of its own, offline (no server, no sessions).

The reply voice, float32 against int8 (issue 49's helper memory): for one Piper voice file, in a
process of its own, the memory the voice adds once loaded and run, the CPU and wall time of a
sentence, and how well Whisper tiny.en (the helper's recogniser, greedy) hears 20 sentences in it.

    voice_bench.py VOICE      one line: VOICE  +MiB  cpu ms/sentence  wall ms  WER % (errors/words)
    voice_bench.py snr REFERENCE VOICE
                              the waveform's distance from REFERENCE's, as a signal-to-noise ratio,
                              both without Piper's noise (noise_scale 0): for voices that differ
                              only in the decoder, whose sentences then last the same

Piper draws its noise from a generator seeded once a process, so one process says its sentences the
same way every time and another differently: bench-voice.sh runs each voice in several processes.
Numbers are written as words in SENTENCES where Whisper would write digits, so that the word error
rate counts what was heard, not how it was spelled."""

import ctypes
import os
import re
import sys
import time
import types

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "helpers"))

SENTENCES = [
    "Sure, the weather in Paris is sunny today, with a light breeze.",
    "Your order ships on Monday and should arrive by Thursday afternoon.",
    "I'm sorry, I didn't catch that. Could you say it again?",
    "Please hold on while I check the schedule for the next train.",
    "The nearest pharmacy is a short walk north, next to the bakery.",
    "Your appointment with the dentist has been moved to Friday morning.",
    "It will be cloudy in London with a chance of rain later tonight.",
    "I have added milk, eggs and bread to your shopping list.",
    "The flight to Berlin leaves from the gate at the end of the hall.",
    "Thank you for calling. Is there anything else I can help you with?",
    "The library will be closed next Monday for the public holiday.",
    "Turn left at the traffic lights and the hotel is on your right.",
    "I found three Italian restaurants within walking distance of you.",
    "The meeting has been moved to the afternoon in the large room.",
    "Remember to bring your passport and a printed copy of the ticket.",
    "The package was delivered to your front door at noon.",
    "Would you like me to send the receipt to your email address?",
    "Your table is booked for this evening, and they have a window seat.",
    "The museum opens in the morning and closes before dinner on weekdays.",
    "I can remind you about it tomorrow, or would you rather set a time?",
]


def rss_mib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


def words(text):
    return re.sub(r"[^a-z0-9' ]", " ", text.lower()).split()


def distance(a, b):
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[:], i
        for j, y in enumerate(b, 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (x != y))
    return row[-1]


def main(path):
    sys.modules.setdefault("av", types.ModuleType("av"))  # as the helper does: faster-whisper without PyAV
    import parley_speech_models as models
    from faster_whisper import WhisperModel

    trim = ctypes.CDLL("libc.so.6").malloc_trim
    trim(0)
    before = rss_mib()
    voice = models.Piper(path)
    clips, cpu, wall = [], [], []
    for sentence in SENTENCES:
        started, clock = time.process_time(), time.perf_counter()
        pcm = b"".join(voice.speak(sentence, 1.0, lambda: False))
        cpu.append(time.process_time() - started)
        wall.append(time.perf_counter() - clock)
        clips.append(pcm)
    trim(0)
    added = rss_mib() - before
    recogniser = WhisperModel(os.path.join(ROOT, ".venv-speech", "whisper-tiny.en"), device="cpu", compute_type="int8", cpu_threads=1)
    errors = total = 0
    for sentence, pcm in zip(SENTENCES, clips):
        audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        # Resampled to 16 kHz by interpolation: the same for both voices, which is all this compares.
        at16k = np.interp(np.arange(int(len(audio) * 16000 / voice.rate)) * voice.rate / 16000, np.arange(len(audio)), audio)
        segments, _ = recogniser.transcribe(at16k.astype(np.float32), language="en", beam_size=1, without_timestamps=True)
        heard = " ".join(segment.text for segment in segments)
        errors += distance(words(sentence), words(heard))
        total += len(words(sentence))
    # The first sentence warms the session up: the CPU is the median of the rest.
    print(f"{os.path.basename(path)}  +{added:.0f} MiB  cpu {1000 * float(np.median(cpu[1:])):.0f} ms/sentence"
          f"  wall {1000 * float(np.median(wall[1:])):.0f} ms  WER {100 * errors / total:.1f} % ({errors}/{total})", flush=True)


def snr(reference, path):
    import parley_speech_models as models
    from piper import SynthesisConfig

    quiet = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
    ratios = []
    for sentence in SENTENCES[:5]:
        a, b = (np.concatenate([chunk.audio_float_array for chunk in models.Piper(p).voice.synthesize(sentence, quiet)])
                for p in (reference, path))
        if len(a) != len(b):
            sys.exit(f"{path}: the sentences last differently ({len(a)} and {len(b)} samples): not a decoder-only difference")
        ratios.append(10 * np.log10(np.sum(a ** 2) / max(float(np.sum((a - b) ** 2)), 1e-12)))
    print(f"{os.path.basename(path)} against {os.path.basename(reference)}: waveform SNR {min(ratios):.1f} to {max(ratios):.1f} dB"
          f" over {len(ratios)} sentences", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "snr":
        snr(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1])
