#!/usr/bin/env python3
"""Not a load client: the speech helper's Whisper on synthesised clips, offline (no server, no sessions).

Backchannels against interruptions, as the speech helper's Whisper hears them, and the paused
reply's rule with and without the decode's confidence.

`make bench-backchannels` runs it with .venv-speech's Python. Each utterance (hums and backchannels,
and real interruptions) is said in 8 voices (flite kal, awb, rms and slt; espeak-ng en-us, en-gb+f3
and en+m3; Piper joe with its noises off) at 0.85, 1 and 1.25 times their pace, made 16 kHz mono by
sox with 0.2 s of quiet before and 0.3 s after (as the VAD cuts a speech), and decoded by the
helper's own `Whisper` class on its whole window, as the decode at a quiet is. For each it prints
what Whisper wrote and its confidence (average log-probability, no-speech probability), then the
count of backchannels that would cut a playing reply and of interruptions that would not, under
the rule without the confidence and with it.

The rule is ReplyInterruption's (Sources/SessionEngine/Engine/ReplyInterruption.swift): a word
that asks for the floor, or three words that are not backchannels, cut the reply; with the
confidence, ordinary words count only at `sureWordsLogProbability` and above, and a floor word is
dropped when the decode is under `unsureFloorLogProbability` with a no-speech probability of
`unsureFloorNoSpeech` or more. Its word lists and thresholds are read from that file, so the two
never disagree. (Speech that lasts 1.5 s cuts by its length alone; none of these does.)
"""

import argparse
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import wave

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RULE_SOURCE = os.path.join(ROOT, "Sources", "SessionEngine", "Engine", "ReplyInterruption.swift")

BACKCHANNELS = ["uh huh", "mm hmm", "yeah", "okay", "mhm", "hmm", "right", "uh-huh", "yeah yeah", "mm"]
INTERRUPTIONS = ["wait", "stop", "no no no", "hold on a second", "actually I meant Tuesday", "can you say that again",
                 "that is not what I asked", "sorry, what was the price"]
VOICES = [("flite", "kal"), ("flite", "awb"), ("flite", "rms"), ("flite", "slt"),
          ("espeak", "en-us"), ("espeak", "en-gb+f3"), ("espeak", "en+m3"), ("piper", "joe")]
SPEEDS = [0.85, 1.0, 1.25]


def swift_set(source, name):
    body = re.search(rf"static let {name}: Set<String> = \[(.*?)\]", source, re.S).group(1)
    return set(re.findall(r'"([^"]+)"', body))


def swift_number(source, name):
    return float(re.search(rf"static let {name} = (-?[0-9.]+)", source).group(1))


class Rule:
    def __init__(self):
        source = open(RULE_SOURCE).read()
        self.phrases = swift_set(source, "backchannelPhrases")
        self.backchannels = swift_set(source, "backchannelWords")
        self.floor = swift_set(source, "interruptionWords")
        self.sure = swift_number(source, "sureWordsLogProbability")
        self.unsure_floor = swift_number(source, "unsureFloorLogProbability")
        self.unsure_no_speech = swift_number(source, "unsureFloorNoSpeech")

    def count(self, text):
        folded = "".join(c if c.isalpha() or c.isdigit() or c == "'" else " " for c in text.lower()).split()
        words = backchannels = 0
        asks = any(t in self.floor for t in folded)
        i = 0
        while i < len(folded):
            if i + 1 < len(folded) and f"{folded[i]} {folded[i + 1]}" in self.phrases:
                backchannels, i = backchannels + 1, i + 2
                continue
            hum = folded[i].isalpha() and not any(c in "aeiouy" for c in folded[i])
            if folded[i] in self.backchannels or hum:
                backchannels += 1
            else:
                words += 1
            i += 1
        return words, backchannels, asks

    def cuts(self, text, confidence, narrowband=False):
        words, _, asks = self.count(text)
        if confidence is not None:
            if confidence.logprob < self.sure:
                words = 0
            # ReplyInterruption.weighed: on a phone line (8 kHz) a floor word counts however unsure.
            if not narrowband and confidence.logprob < self.unsure_floor and confidence.no_speech >= self.unsure_no_speech:
                asks = False
        return asks or words >= 3


PIPER = []


def synthesise(engine, voice, text, speed, path):
    if engine == "flite":
        subprocess.run(["flite", "-voice", voice, "--setf", f"duration_stretch={1 / speed}", "-t", text, "-o", path], check=True)
    elif engine == "espeak":
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(int(170 * speed)), "-w", path, text], check=True)
    else:
        from piper import PiperVoice, SynthesisConfig

        if not PIPER:
            PIPER.append(PiperVoice.load(os.path.join(ROOT, ".venv-speech", "piper-voice", "en_US-joe-medium.onnx")))
        piper = PIPER[0]
        with wave.open(path, "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(piper.config.sample_rate)
            for chunk in piper.synthesize(text, SynthesisConfig(length_scale=1 / speed, noise_scale=0.0, noise_w_scale=0.0)):
                out.writeframes(chunk.audio_int16_bytes)


def pcm16k(path):
    raw = subprocess.run(["sox", path, "-r", "16000", "-b", "16", "-c", "1", "-e", "signed-integer", "-t", "raw", "-",
                          "pad", "0.2", "0.3"], check=True, capture_output=True).stdout
    return raw


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write every decode here")
    parser.add_argument("--line", choices=("clean", "g711", "g711-noisy"), default="clean",
                        help="clean: 16 kHz as made; g711: a G.711 phone line (8 kHz µ-law, telephone_wer_bench's); "
                             "g711-noisy: that line with pink noise 10 dB under the speech, denoised as a noisy call is")
    arguments = parser.parse_args()
    phone = None
    if arguments.line != "clean":
        import importlib.util
        spec = importlib.util.spec_from_file_location("telephone", os.path.join(ROOT, "scripts", "benchmarks", "telephone_wer_bench.py"))
        phone = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(phone)
        denoise = phone.Denoiser()
    sys.path.insert(0, os.path.join(ROOT, "helpers"))
    from parley_speech_models import Whisper

    whisper = Whisper(os.path.join(ROOT, ".venv-speech", "whisper-tiny.en"), threads=1, replicas=1)
    rule = Rule()
    rows = []
    with tempfile.TemporaryDirectory(prefix="parley-backchannels-") as folder:
        for (engine, voice), speed in itertools.product(VOICES, SPEEDS):
            for kind, texts in (("backchannel", BACKCHANNELS), ("interruption", INTERRUPTIONS)):
                for text in texts:
                    path = os.path.join(folder, "clip.wav")
                    synthesise(engine, voice, text, speed, path)
                    if phone is None:
                        decoded = whisper.transcribe(pcm16k(path), 16000)
                    else:
                        # The clip's speech sets the noise's level; the seed is the clip's, so runs agree.
                        pcm = phone.line(pcm16k(path), 10 if arguments.line == "g711-noisy" else None, seed=len(rows))
                        decoded = whisper.transcribe(denoise(pcm) if arguments.line == "g711-noisy" else pcm, 8000)
                    rows.append({"kind": kind, "voice": f"{engine} {voice}", "speed": speed, "said": text, "heard": decoded.text,
                                 "logprob": decoded.confidence.logprob if decoded.confidence else None,
                                 "no_speech": decoded.confidence.no_speech if decoded.confidence else None,
                                 "cuts_blind": rule.cuts(decoded.text, None),
                                 "cuts": rule.cuts(decoded.text, decoded.confidence, narrowband=phone is not None)})
    if arguments.json:
        with open(arguments.json, "w") as out:
            json.dump(rows, out, indent=1)
    backchannels = [r for r in rows if r["kind"] == "backchannel"]
    interruptions = [r for r in rows if r["kind"] == "interruption"]
    print("| rule | backchannels that cut the reply | interruptions that did not |")
    print("| --- | ---: | ---: |")
    for name, key in (("words alone (before)", "cuts_blind"), ("words weighed by the decode's confidence", "cuts")):
        print(f"| {name} | {sum(r[key] for r in backchannels)} of {len(backchannels)} "
              f"| {sum(not r[key] for r in interruptions)} of {len(interruptions)} |")
    print()
    for r in rows:
        wrong = r["cuts"] if r["kind"] == "backchannel" else not r["cuts"]
        if wrong or r["cuts"] != r["cuts_blind"]:
            confidence = f'{r["logprob"]:.2f} / {r["no_speech"]:.2f}' if r["logprob"] is not None else "none"
            print(f'- {"still wrong" if wrong else "now right"}: {r["kind"]} "{r["said"]}" ({r["voice"]} ×{r["speed"]}) '
                  f'heard "{r["heard"]}", {confidence}')


if __name__ == "__main__":
    main()
