#!/usr/bin/env python3
"""Drives the openai SDK: what a running Parley hears in Spanish, German, French, Italian, Portuguese and Dutch, beside English.

Issue 75's measure, through the server's own path (VAD, windows, the helper's recognisers): ten
everyday requests per language (scripts/benchmarks/language_sentences.json), each said by
espeak-ng's voice of the language in three ways no test tunes on (as itself at 165 words a
minute, +f3 at 140, +m4 at 190), sent as 24 kHz pcm16 on /v1/realtime at real-time pace after a
second of silence (hearing_bench's segments, on its clean line). `make bench-languages` runs it
against a server it starts with `--language auto` (scripts/benchmarks/bench-languages.sh).

Two modes:
- `set`: the session sets `audio.input.transcription.language`; one session per voice says the
  ten sentences one after another. English set is heard by Whisper tiny.en, the others by
  Whisper base.
- `found`: the session sets no language, and each sentence is a session of its own, so that each
  is a first turn, all that finding the language has to go on. Found right when the transcript's
  `language` (Parley's extension) is the sentence's.

Prints a row per language and mode: each voice's word error rate (recogniser_bench.words), their
median, how often the language was found (found), and the transcript's latency after the speech's
end (p50); with --json, writes them.
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time

from openai import AsyncOpenAI

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# espeak-ng's voice of each language.
ESPEAK = {"en": "en-us", "es": "es", "de": "de", "fr": "fr-fr", "it": "it", "pt": "pt-br", "nl": "nl"}
# (variant, words a minute): the voice as itself, a higher one slower, a lower one faster.
WAYS = (("", 165), ("+f3", 140), ("+m4", 190))


# hearing_bench (beside this file) makes the segments, sends them and reads the events.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hearing_bench as hearing  # noqa: E402

scorer = hearing.scorer


def voices(language):
    """The language's voices as recogniser_bench's VOICES names them (its Clips makes them)."""
    named = {}
    for variant, speed in WAYS:
        name = f"espeak-ng {ESPEAK[language]}{variant} {speed}"
        named[name] = ("espeak", ESPEAK[language] + variant, speed)
    scorer.VOICES.update(named)
    return list(named)


class Bench:
    def __init__(self, arguments):
        self.arguments = arguments
        sentences = json.load(open(os.path.join(ROOT, "scripts", "benchmarks", "language_sentences.json")))
        self.languages = arguments.languages.split(",")
        self.sentences = {language: sentences[language][: arguments.sentences] for language in self.languages}
        # A cache of its own: its clips' names (voice, index) would meet recogniser_bench's English ones.
        self.clips = scorer.Clips(arguments.cache)
        self.client = AsyncOpenAI(base_url=arguments.url + "/v1", api_key=os.environ.get("PARLEY_API_KEY", "unused"), max_retries=0)

    def segment(self, language, voice, index):
        pcm = self.clips.pcm(voice, index, self.sentences[language][index])
        return hearing.Segment(pcm, "clean", 0, seed=index)

    async def session(self, language, voice, indices, set_language, limit):
        """One session saying the sentences `indices`: per sentence, (errors, words, language said)."""
        heard = hearing.Heard()
        async with limit:
            segments = await asyncio.to_thread(lambda: [self.segment(language, voice, i) for i in indices])
            await hearing.say_on_realtime(self.client, "pcm", "default", segments, heard, language if set_language else None)
        results = []
        for k, i in enumerate(indices):
            text = self.sentences[language][i]
            reference, hypothesis = scorer.words(text), scorer.words(heard.said(k))
            results.append((scorer.errors(reference, hypothesis), len(reference), heard.languages.get(k)))
            if self.arguments.verbose and hypothesis != reference:
                print(f"  {language} {voice}: {text!r} heard {heard.said(k)!r} ({heard.languages.get(k)})", file=sys.stderr)
        return results, heard.errors, heard.latencies_ms()

    async def run(self, mode, language):
        """Per voice: its sessions' results, its problems and latencies."""
        limit = asyncio.Semaphore(self.arguments.sessions)
        indices = range(len(self.sentences[language]))
        per_voice = {}
        for voice in voices(language):
            if mode == "set":
                per_voice[voice] = [self.session(language, voice, list(indices), True, limit)]
            else:
                per_voice[voice] = [self.session(language, voice, [i], False, limit) for i in indices]
        tasks = {voice: [asyncio.create_task(c) for c in coroutines] for voice, coroutines in per_voice.items()}
        return {voice: await asyncio.gather(*session_tasks) for voice, session_tasks in tasks.items()}


async def main_async(arguments):
    bench = Bench(arguments)
    modes = arguments.modes.split(",")
    report = {"sentences": arguments.sentences, "sessions": arguments.sessions, "ways": [f"{v or 'as itself'} {s} wpm" for v, s in WAYS],
              "cases": {}}
    print("| language | mode | " + " | ".join(f"{v or 'voice'} {s} wpm" for v, s in WAYS) + " | median WER | language found | transcript after the speech, p50 |")
    print("| --- | --- |" + " ---: |" * (len(WAYS) + 3))
    problems = []
    started = time.monotonic()
    for language in bench.languages:
        for mode in modes:
            results = await bench.run(mode, language)
            rates, found, said, latencies = [], 0, 0, []
            for voice, sessions in results.items():
                rows = [row for session_rows, _, _ in sessions for row in session_rows]
                rates.append(sum(r[0] for r in rows) / max(1, sum(r[1] for r in rows)))
                found += sum(1 for r in rows if r[2] == language)
                said += len(rows)
                latencies += [ms for _, _, session_latencies in sessions for ms in session_latencies]
                problems += [f"{language} {mode} {voice}: {p}" for _, session_problems, _ in sessions for p in session_problems]
            latencies.sort()
            p50 = latencies[len(latencies) // 2] if latencies else 0
            case = {"wer": [round(100 * r, 1) for r in rates], "median": round(100 * statistics.median(rates), 1),
                    "transcript_ms_p50": round(p50)}
            if mode == "found":
                case["found"] = round(100 * found / max(1, said), 1)
            report["cases"][f"{language} {mode}"] = case
            print(f"| {language} | {mode} | " + " | ".join(f"{w:.1f} %" for w in case["wer"]) + f" | **{case['median']:.1f} %** | "
                  + (f"{case['found']:.0f} %" if mode == "found" else "set") + f" | {p50:.0f} ms |", flush=True)
    report["seconds"] = round(time.monotonic() - started, 1)
    print(f"{len(WAYS)} voices x {arguments.sentences} sentences per language and mode, {arguments.sessions} sessions at once, "
          f"{report['seconds']:.0f} s")
    for problem in problems:
        print(f"languages: {problem}", file=sys.stderr)
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the server, http://host:port (run with --language auto for `found`)")
    parser.add_argument("--languages", default="en,es,de,fr,it,pt,nl")
    parser.add_argument("--modes", default="set,found")
    parser.add_argument("--sentences", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=6, help="sessions at once")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "parley-languages-bench"))
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--verbose", action="store_true", help="each sentence heard wrong, on stderr")
    arguments = parser.parse_args()
    report = asyncio.run(main_async(arguments))
    if arguments.json:
        with open(arguments.json, "w") as out:
            json.dump(report, out, indent=1)


if __name__ == "__main__":
    main()
