"""Piper's speech vectors for the Swift tests (Tests/TestSupport/SpeechVectors.swift), the voice
loaded once: piper's command loads it for every sentence, 2.2 s of CPU each, and a clean clone's
test run made 86 of them (190 core-seconds, most of what the Swift phase took more than a built
run's). The audio is what the command makes (piper-tts 1.8.0's __main__): each line of the text
synthesised with the same settings into one WAV, no silence between sentences.

    piper_vectors.py VOICE.onnx
    stdin:  one request a line, {"text": ..., "length_scale": ..., "path": ...}
    stdout: "ok" or "error MESSAGE", a line for each
"""
import json
import sys
import wave

from piper import PiperVoice, SynthesisConfig


def write(voice, text, length_scale, path):
    config = SynthesisConfig(speaker_id=None, length_scale=length_scale, noise_scale=0.0, noise_w_scale=0.0,
                             normalize_audio=True, volume=1.0)
    with wave.open(path, "wb") as wav:
        started = False
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            for chunk in voice.synthesize(line, config):
                if not started:
                    wav.setframerate(chunk.sample_rate)
                    wav.setsampwidth(chunk.sample_width)
                    wav.setnchannels(chunk.sample_channels)
                    started = True
                wav.writeframes(chunk.audio_int16_bytes)
        if not started:
            raise ValueError("no text to say")


def main():
    voice = PiperVoice.load(sys.argv[1])
    for request in sys.stdin:
        try:
            asked = json.loads(request)
            write(voice, asked["text"], float(asked["length_scale"]), asked["path"])
            print("ok", flush=True)
        except Exception as error:  # a request that fails is an answer; the next may not
            print(f"error {type(error).__name__}: {error}".replace("\n", " "), flush=True)


if __name__ == "__main__":
    main()
