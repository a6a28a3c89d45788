#!/usr/bin/env python3
"""Not a load client: the speech helper's Whisper on telephone audio, offline (no server, no sessions).

Telephone audio as the speech helper's Whisper hears it: word error rate on clean speech, on a
G.711 line, and on a G.711 line with pink noise at 10 dB SNR (Whisper base's with `--recogniser whisper-base`), with the helper's 8 to 16 kHz
interpolator against linear interpolation (what it used before), and with libspeexdsp's noise
suppressor on the line (the server's `noise_reduction`, near_field: 15 dB) and off.

`make bench-telephone` runs it with .venv-speech's Python. The sentences, voices, folding of words
and edit distance are recogniser_bench.py's (WordErrorRate.swift's 30 sentences); the voices, by
default, four that no test here tunes on (`--voices tests` for recogniser_bench's).
A line: the clip low-passed at 3.6 kHz and taken to 8 kHz (as a phone's codec
band-limits), pink noise (seeded, per clip) added at the clip's speech RMS less 10 dB, encoded to
µ-law and decoded back (G.711, audioop), then handed to `Whisper.transcribe(pcm, 8000)`, which
raises it to 16 kHz (WHISPER_DIR names another CTranslate2 Whisper than the helper's tiny.en, as
docs/benchmarks.md's Whisper base row was measured). The denoiser runs on the 8 kHz line in 20 ms frames, as the session runs it at
the engine's rate (Codec/Denoiser.swift). A noisy line starts 3 s before the speech (LEAD_SECONDS), as a call's denoiser has heard its
line before the caller speaks; that lead is cut before the decode.
"""

import argparse
import audioop
import ctypes
import ctypes.util
import importlib.util
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# Voices no test or benchmark here chose a rule by: the targets are on voices not tuned on.
FRESH = {
    "flite kal": ("flite", "kal", None),
    "flite awb": ("flite", "awb", None),
    "espeak-ng en+m3 165": ("espeak", "en+m3", 165),
    "espeak-ng en-us+f4 150": ("espeak", "en-us+f4", 150),
}


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pink_noise(n, seed):
    """Pink (1/f power) noise of unit RMS, by shaping white noise's spectrum."""
    rng = np.random.default_rng(seed)
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n)
    f[0] = f[1]
    noise = np.fft.irfft(spectrum / np.sqrt(f), n)
    return noise / np.sqrt(np.mean(noise ** 2))


def to_8k(pcm16k):
    audio = np.frombuffer(pcm16k, dtype="<i2").astype(np.float64)
    # sox-free and exact enough for a phone's band: a windowed-sinc low-pass at 3.6 kHz, then every other sample.
    n = np.arange(-63, 64)
    taps = np.sinc(2 * 3600 / 16000 * n) * np.kaiser(len(n), 8.0)
    taps /= taps.sum()
    return np.convolve(audio, taps, mode="same")[::2]


# The noisy line heard before the clip's speech: the server denoises a call's input only once
# LineNoiseFloor has found its floor loud for 3 s (--phone-line-denoise auto), so the denoiser has
# heard the noise that long when the caller speaks. The bench denoised each clip from its first
# sample until 2026-11-28 (below), which flattered the denoiser.
LEAD_SECONDS = 3


def line(pcm16k, snr_db, seed, lead_seconds=0):
    """The clip as a G.711 line delivers it: 8 kHz pcm16 bytes, with pink noise at `snr_db` (None: none),
    after `lead_seconds` of the line alone."""
    audio = to_8k(pcm16k)
    if snr_db is not None:
        loud = np.abs(audio) > 0.02 * np.abs(audio).max()
        speech_rms = np.sqrt(np.mean(audio[loud] ** 2))
        audio = np.concatenate([np.zeros(lead_seconds * 8000), audio])
        audio = audio + pink_noise(len(audio), seed) * speech_rms / (10 ** (snr_db / 20))
    pcm = np.clip(audio, -32768, 32767).astype("<i2").tobytes()
    return audioop.ulaw2lin(audioop.lin2ulaw(pcm, 2), 2)


class Denoiser:
    """libspeexdsp's preprocessor, denoising only, at 8 kHz in 20 ms frames (Codec/Denoiser.swift's settings)."""

    SET_DENOISE, SET_NOISE_SUPPRESS = 0, 18
    FRAME = 160

    def __init__(self, suppress_db=-15):
        lib = ctypes.CDLL(ctypes.util.find_library("speexdsp") or "libspeexdsp.so.1")
        lib.speex_preprocess_state_init.restype = ctypes.c_void_p
        lib.speex_preprocess_state_init.argtypes = (ctypes.c_int, ctypes.c_int)
        lib.speex_preprocess_ctl.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
        lib.speex_preprocess_run.argtypes = (ctypes.c_void_p, ctypes.POINTER(ctypes.c_int16))
        lib.speex_preprocess_state_destroy.argtypes = (ctypes.c_void_p,)
        self.lib, self.suppress_db = lib, suppress_db

    def __call__(self, pcm):
        lib = self.lib
        state = lib.speex_preprocess_state_init(self.FRAME, 8000)
        on, level = ctypes.c_int(1), ctypes.c_int(self.suppress_db)
        lib.speex_preprocess_ctl(state, self.SET_DENOISE, ctypes.byref(on))
        lib.speex_preprocess_ctl(state, self.SET_NOISE_SUPPRESS, ctypes.byref(level))
        samples = np.frombuffer(pcm, dtype="<i2").copy()
        samples = np.pad(samples, (0, -len(samples) % self.FRAME))
        for start in range(0, len(samples), self.FRAME):
            frame = samples[start:start + self.FRAME]
            lib.speex_preprocess_run(state, frame.ctypes.data_as(ctypes.POINTER(ctypes.c_int16)))
        lib.speex_preprocess_state_destroy(state)
        return samples.tobytes()


def floors(bench, clips, voices, texts):
    """The floor LineNoiseFloor reads, per line: each clip's one-second floors (the quietest 20 ms
    of each second, dBFS), their median per clip; printed as the least, median and most of those
    medians over the clips, for a clean line and pink noise at 30, 20 and 10 dB SNR."""
    print("| line | least | median | most |")
    print("| --- | ---: | ---: | ---: |")
    for snr in (None, 30, 20, 10):
        medians = []
        for voice in voices:
            for i, text in enumerate(texts):
                audio = np.frombuffer(line(clips.pcm(voice, i, text), snr, seed=i), dtype="<i2").astype(np.float64)
                frames = audio[: len(audio) // 160 * 160].reshape(-1, 160)
                levels = 10 * np.log10(np.mean(frames ** 2, axis=1) / 32768.0 ** 2 + 1e-12)
                seconds = [levels[k:k + 50].min() for k in range(0, len(levels) - 49, 50)] or [levels.min()]
                medians.append(float(np.median(seconds)))
        name = "clean G.711" if snr is None else f"G.711 + pink noise {snr} dB"
        print(f"| {name} | {min(medians):.1f} | {np.median(medians):.1f} | {max(medians):.1f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--voices", choices=("fresh", "tests", "quick"), default="fresh",
                        help="fresh: voices no test here tunes on (flite kal and awb, espeak-ng en+m3 and en-us+f4); "
                             "tests: recogniser_bench's; quick: three of those")
    parser.add_argument("--sentences", type=int, default=30)
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "parley-recogniser-bench"))
    parser.add_argument("--lines", help="which lines to measure, by their row numbers from 1, comma-separated (default: all)")
    parser.add_argument("--recogniser", choices=("whisper", "whisper-base"), default="whisper",
                        help="whisper: Whisper tiny.en, the default; whisper-base: Whisper base")
    parser.add_argument("--no-lead", dest="lead", action="store_false",
                        help="noisy lines without the 3 s of line before the speech (the denoiser starts on the clip, as before 2026-11-28)")
    parser.add_argument("--floors", action="store_true",
                        help="print the lines' noise floors (what --phone-line-denoise auto reads) instead of word error rates")
    arguments = parser.parse_args()
    os.chdir(ROOT)
    bench = load("recogniser_bench", os.path.join(ROOT, "scripts", "benchmarks", "recogniser_bench.py"))
    models = load("parley_speech_models", os.path.join(ROOT, "helpers", "parley_speech_models.py"))
    denoise = Denoiser()
    band_limited = models.to_16k

    def linear(pcm, rate):
        audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        if rate != 8000:
            return band_limited(pcm, rate)
        return np.interp(np.arange(len(audio) * 2) / 2.0, np.arange(len(audio)), audio).astype(np.float32)

    bench.VOICES.update(FRESH)
    voices = {"fresh": list(FRESH), "tests": [v for v in bench.VOICES if v not in FRESH], "quick": list(bench.QUICK)}[arguments.voices]
    texts = bench.sentences()[: arguments.sentences]
    clips = bench.Clips(arguments.cache)
    if arguments.floors:
        return floors(bench, clips, voices, texts[:10])
    if arguments.recogniser == "whisper-base":
        recogniser = models.Whisper(os.path.join(ROOT, ".venv-speech", "whisper-base"), threads=1, name="whisper-base")
    else:
        recogniser = models.Whisper(os.environ.get("WHISPER_DIR") or os.path.join(ROOT, ".venv-speech", "whisper-tiny.en"), threads=1)
    conditions = [
        ("clean, 16 kHz", None, None, band_limited, False),
        ("G.711, linear interpolation (before)", 8000, None, linear, False),
        ("G.711, band-limited interpolation", 8000, None, band_limited, False),
        ("G.711, band-limited, speexdsp denoiser 15 dB", 8000, None, band_limited, True),
        ("G.711 + pink noise 10 dB, linear interpolation (before)", 8000, 10, linear, False),
        ("G.711 + pink noise 10 dB, band-limited interpolation", 8000, 10, band_limited, False),
        ("G.711 + pink noise 10 dB, band-limited, speexdsp denoiser 15 dB", 8000, 10, band_limited, True),
    ]
    print("| line | " + " | ".join(voices) + f" | all {len(voices) * len(texts)} clips |")
    print("| --- |" + " ---: |" * (len(voices) + 1))
    if arguments.lines:
        conditions = [conditions[int(n) - 1] for n in arguments.lines.split(",")]
    for name, rate, snr, resample, denoised in conditions:
        models.to_16k = resample
        cells, all_errors, all_words = [], 0, 0
        for voice in voices:
            errors = words = 0
            for i, text in enumerate(texts):
                pcm = clips.pcm(voice, i, text)
                if rate is not None:
                    lead = LEAD_SECONDS if snr is not None and arguments.lead else 0
                    pcm = line(pcm, snr, seed=i, lead_seconds=lead)
                    if denoised:
                        pcm = denoise(pcm)
                    pcm = pcm[lead * 8000 * 2:]
                heard = recogniser.transcribe(pcm, rate or 16000).text
                reference = bench.words(text)
                errors += bench.errors(reference, bench.words(heard))
                words += len(reference)
            cells.append(f"{errors / words:.1%}")
            all_errors += errors
            all_words += words
        print(f"| {name} | " + " | ".join(cells) + f" | **{all_errors / all_words:.1%}** |", flush=True)
    models.to_16k = band_limited


if __name__ == "__main__":
    main()
