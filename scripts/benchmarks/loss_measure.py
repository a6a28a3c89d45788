"""Not a load client: the measures of `make bench-webrtc-loss` and the side-by-side table of its two reports.

What `make bench-webrtc-loss` measures, the same way for both clients (webrtc_loss_call.py, beside
this file, and `parley-load loss-call`, LoadTests/parley-load/Turns/LossCallCommand.swift, which
writes the same report), and its side-by-side table.

A turn: a spoken question, the moment its last sample was sent, and the reply's audio as 20 ms
units, each with the moment it reached the client. From that:
  latency  the question's last sample sent to the reply's first audio received (both clients
           stamp audio as it comes off the network, before any playout buffer);
  gaps     ticks of a 20 ms playout clock with no audio while the reply is still going. The clock
           starts --playout-ms after the first unit came (the same for both). The two transports
           play differently, as their clients do:
             WebRTC: a fixed timeline (RTP timestamps); unit k plays at start + k * 20 ms, and one
               lost, or come after its tick, is a gap (a real receiver conceals it; the words in it
               are lost either way);
             WebSocket: a stream; each tick plays the next unit if it has come, else it is a gap
               and the rest of the reply plays 20 ms later (nothing is lost; the reply stretches;
               parley-load's LossCallCommand.streamGaps).

  python3 loss_measure.py table WEBRTC.json WEBSOCKET.json    prints the side-by-side table
"""
import json
import statistics
import sys
import wave
from pathlib import Path

FRAME = 0.020


def read_wav(path: Path, rate: int):
    import numpy
    with wave.open(str(path), "rb") as f:
        if f.getframerate() != rate or f.getnchannels() != 1 or f.getsampwidth() != 2:
            raise SystemExit(f"{path}: must be {rate} Hz mono pcm16")
        return numpy.frombuffer(f.readframes(f.getnframes()), dtype=numpy.int16)


def questions(folder: str, rate: int):
    """(name, samples) for every `*.RATE.wav` in folder, in name order."""
    found = sorted(Path(folder).glob(f"*.{rate}.wav"))
    if not found:
        raise SystemExit(f"no *.{rate}.wav in {folder}")
    return [(path.name.removesuffix(f".{rate}.wav"), read_wav(path, rate)) for path in found]


class Events:
    """The server's events as they come, and bounded waits for one of a kind after a mark."""

    def __init__(self) -> None:
        import asyncio
        self.all: list[dict] = []
        self.changed = asyncio.Event()

    def add(self, event: dict) -> None:
        self.all.append(event)
        self.changed.set()

    def mark(self) -> int:
        return len(self.all)

    async def wait(self, kind: str, timeout: float, since: int = 0, where=lambda e: True) -> dict | None:
        """The first event of `kind` at or after index `since` for which `where` holds, or None
        when none comes within `timeout` seconds."""
        import asyncio
        import time
        deadline = time.monotonic() + timeout
        seen = since
        while True:
            for event in self.all[seen:]:
                if event.get("type") == kind and where(event):
                    return event
            seen = len(self.all)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except asyncio.TimeoutError:
                pass


def fixed_timeline_gaps(arrivals: dict[int, float], playout: float) -> tuple[int, int]:
    """(units, gaps) of a reply played on a fixed timeline: arrivals maps each unit's index (from
    0) to when it came; a unit missing or come after its tick is a gap."""
    if not arrivals:
        return 0, 0
    start = min(arrivals.values()) + playout
    units = max(arrivals) + 1
    gaps = sum(1 for k in range(units) if arrivals.get(k, float("inf")) > start + k * FRAME)
    return units, gaps


def client_arguments(parser, label: str, relay: str, rate: int, drain: str) -> None:
    """The options both clients take, so that the two sides of the table ask alike."""
    parser.add_argument("--relay-port", type=int, required=True, help=f"{relay}'s --listen")
    parser.add_argument("--questions", required=True, help=f"a folder of *.{rate}.wav questions")
    parser.add_argument("--minutes", type=float, default=3)
    parser.add_argument("--label", default=label, help="the report's column heading")
    parser.add_argument("--report", required=True, help="where the JSON report goes")
    parser.add_argument("--playout-ms", type=float, default=60, help="the playout clock's start after the reply's first audio")
    parser.add_argument("--silence-ms", type=int, default=600, help="server_vad's silence_duration_ms")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds of silence before each question")
    parser.add_argument("--drain", type=float, default=1.0, help=drain)
    parser.add_argument("--reply-timeout", type=float, default=30)


def write_report(report: dict, path: str) -> None:
    with open(path, "w") as f:
        json.dump(report, f, indent=1)


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def summary(transport: str, turns: list[dict], seconds: float, cpu_seconds: float, extra: dict) -> dict:
    """The report of one run: turns each {question, latency (s or None), units, gaps, transcript}."""
    answered = [t for t in turns if t.get("latency") is not None]
    latencies = [t["latency"] for t in answered]
    units = sum(t.get("units", 0) for t in turns)
    gaps = sum(t.get("gaps", 0) for t in turns)
    reply_minutes = units * FRAME / 60
    return {
        "transport": transport,
        "seconds": round(seconds, 1),
        "questions": len(turns),
        "answered": len(answered),
        "latency_p50_ms": round(percentile(latencies, 0.5) * 1000) if latencies else None,
        "latency_p95_ms": round(percentile(latencies, 0.95) * 1000) if latencies else None,
        "latency_mean_ms": round(statistics.fmean(latencies) * 1000) if latencies else None,
        "reply_audio_s": round(units * FRAME, 1),
        "gaps": gaps,
        "gaps_per_reply_minute": round(gaps / reply_minutes, 1) if reply_minutes else None,
        "gap_fraction": round(gaps / units, 4) if units else None,
        "client_cpu_s": round(cpu_seconds, 1),
        **extra,
        "turns": turns,
    }


def missing(report: dict) -> int | str:
    """Units lost on the way (WebRTC's, from each turn's arrivals; a stream loses none): the rest
    of the gaps came too late for their tick."""
    if not report["transport"].startswith("WebRTC"):
        return 0
    return sum(sum(1 for came in t.get("arrivals_ms", []) if came is None) for t in report["turns"])


def table(paths: list[str]) -> None:
    reports = [json.load(open(path)) for path in paths]
    rows = [
        ("questions asked / answered", lambda r: f"{r['questions']} / {r['answered']}"),
        ("reply latency p50", lambda r: f"{r['latency_p50_ms']} ms"),
        ("reply latency p95", lambda r: f"{r['latency_p95_ms']} ms"),
        ("reply audio received", lambda r: f"{r['reply_audio_s']} s"),
        ("gaps (20 ms ticks)", lambda r: f"{r['gaps']} ({100 * (r['gap_fraction'] or 0):.1f} %)"),
        ("  of which never came", lambda r: f"{missing(r)}"),
        ("gaps per minute of reply", lambda r: f"{r['gaps_per_reply_minute']}"),
        ("client CPU", lambda r: f"{r['client_cpu_s']} s over {r['seconds']:.0f} s"),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'':{width}}  " + "  ".join(f"{r['transport']:>22}" for r in reports))
    for name, cell in rows:
        values = []
        for report in reports:
            try:
                values.append(cell(report))
            except (KeyError, TypeError):
                values.append("-")
        print(f"{name:{width}}  " + "  ".join(f"{v:>22}" for v in values))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "table":
        table(sys.argv[2:])
    else:
        raise SystemExit(__doc__)
