#!/usr/bin/env python3
"""Not a load client: the speech helper's counters and the talkers' seconds of speech, for bench-speech-helper.sh.

What scripts/benchmarks/bench-speech-helper.sh asks in Python (run with .venv-speech/bin/python):

  stats SOCKET      the helper's counters: hello (protocol 2), then `stats`, on the helper's own
                    socket SOCKET; prints "helper stats: {...}"
  speech TURNS      the seconds of speech in the first TURNS of `parley-load talkers`' sentences,
                    in Piper's joe voice at its own pace, as the talker makes them (not its silences)
"""

import json
import socket
import struct
import sys

# parley-load talkers' sentences, in its order (LoadTests/parley-load).
SENTENCES = ["Could you please tell me what twelve times seven is?",
             "I was wondering, what is three hundred and forty five plus one hundred and twenty?",
             "How many words are in the sentence, the quick brown fox jumps over the lazy dog?",
             "Thank you very much, that was really helpful for my trip to Paris.",
             "If I had nine boxes with twelve apples in each, what is nine times twelve?",
             "What is one thousand divided by eight?"]


def stats(path):
    """The helper's `stats` answer, a dict (also scripts/benchmarks/speech-helper-stats.py's)."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    for header in ({"op": "hello", "id": 0, "version": 2}, {"op": "stats", "id": 1}):
        body = json.dumps(header).encode()
        s.sendall(struct.pack("<II", len(body), 0) + body)
    data = b""
    while True:
        data += s.recv(65536)
        frames, rest = [], data
        while len(rest) >= 8:
            h, p = struct.unpack("<II", rest[:8])
            if len(rest) < 8 + h + p:
                break
            frames.append(json.loads(rest[8:8 + h]))
            rest = rest[8 + h + p:]
        answers = [f for f in frames if f.get("id") == 1]
        if answers:
            return answers[0]


def speech(turns):
    from piper import PiperVoice
    voice = PiperVoice.load(".venv-speech/piper-voice/en_US-joe-medium.onnx")
    print(round(sum(sum(len(c.audio_int16_bytes) for c in voice.synthesize(t)) / 2 / voice.config.sample_rate
                    for t in SENTENCES[:turns]), 2))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("stats", "speech"):
        sys.exit(__doc__)
    if sys.argv[1] == "stats":
        print("helper stats:", json.dumps(stats(sys.argv[2])))
    else:
        speech(int(sys.argv[2]))
