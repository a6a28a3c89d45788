"""Sessions that stream only bad input for a long time, and what they cost the server.

Run by scripts/benchmarks/bench-noise.sh (which starts the server and makes the clips); by hand:

    .venv-sdk/bin/python scripts/benchmarks/noise_sessions.py --port PORT --server-pid PID \
        --clips DIR --minutes 10 --out DIR

Three Realtime sessions (GA, pcm16 at 24 kHz, semantic_vad, spoken replies) each stream one kind of
audio in 20 ms appends at real-time pace: `quiet` (digital silence), `noise` (seeded white then
pink noise at -30 dBFS, a minute looped) and `mmhmm` (the clips in DIR, "mm hmm", "uh huh" and
"okay" in several voices, in a seeded order with 1 to 3 s of silence between). They start one
after another so that each kind's cost is the step it adds over the one before:

    idle (no session) | quiet | quiet + noise | quiet + noise + mmhmm, to the end

the first three stages IDLE and STAGE seconds long, the last the rest of MINUTES (counted from the
quiet session's start). Every SAMPLE seconds it reads the server's and its speech helper's resident
memory and CPU from /proc and a few series of /metrics. A stage's CPU is taken after its first
WARMUP seconds (a new session's first decodes and syntheses load things once).

At the end each session is asked a typed question out of band (the session must still answer),
and the script prints a table per kind and exits 1 when memory grew without bound: the server's
resident memory at the end more than --margin-mib above its level --settle seconds after the last
session opened (the helper's: --helper-margin-mib), or a session closed or did not answer.
"""

import argparse
import array
import asyncio
import base64
import json
import math
import os
import random
import sys
import time
import urllib.request

from websockets.asyncio.client import connect

RATE = 24_000
CHUNK = 480  # 20 ms at 24 kHz
KINDS = ("quiet", "noise", "mmhmm")
HZ = os.sysconf("SC_CLK_TCK")
# The series worth following; histograms are left out (their buckets say nothing about growth).
SERIES = ("parley_accounted_bytes", "parley_resident_bytes_per_connection", "parley_sessions_open",
          "parley_session_turns_total", "parley_session_responses_total", "parley_turn_ends_total",
          "parley_replies_paused_total", "parley_replies_resumed_total", "parley_backchannels_ignored_total",
          "parley_interruptions_total", "parley_turns_reopened_total", "parley_speech_helper_restarts_total",
          "parley_speech_overloaded_total", "parley_turn_premature_ends_total")


# MARK: Audio


def noise(seed, seconds=30, dbfs=-30.0):
    """`seconds` of white noise, then as long of pink (Paul Kellet's filter), both at `dbfs` RMS."""
    rng = random.Random(seed)
    n = RATE * seconds
    white = [rng.gauss(0.0, 1.0) for _ in range(2 * n)]
    pink, b = [], [0.0] * 7
    for w in white[n:]:
        b[0] = 0.99886 * b[0] + w * 0.0555179
        b[1] = 0.99332 * b[1] + w * 0.0750759
        b[2] = 0.96900 * b[2] + w * 0.1538520
        b[3] = 0.86650 * b[3] + w * 0.3104856
        b[4] = 0.55000 * b[4] + w * 0.5329522
        b[5] = -0.7616 * b[5] - w * 0.0168980
        pink.append(sum(b) + b[6] + w * 0.5362)
        b[6] = w * 0.115926
    target = 32768 * 10 ** (dbfs / 20)
    out = array.array("h")
    for part in (white[:n], pink):
        scale = target / math.sqrt(sum(x * x for x in part) / len(part))
        out.extend(max(-32768, min(32767, round(x * scale))) for x in part)
    return out.tobytes()


def mmhmm_stream(folder, seed):
    """Endless pcm16: the clips in a seeded shuffled order, each followed by 1 to 3 s of silence."""
    clips = {name: open(os.path.join(folder, name), "rb").read() for name in sorted(os.listdir(folder)) if name.endswith(".raw")}
    if not clips:
        sys.exit(f"no .raw clips in {folder}")
    rng = random.Random(seed)
    while True:
        order = list(clips)
        rng.shuffle(order)
        for name in order:
            yield clips[name]
            yield bytes(2 * int(RATE * rng.uniform(1.0, 3.0)))


def chunks(kind, args):
    """Endless 20 ms chunks of one kind's audio."""
    if kind == "quiet":
        silence = bytes(2 * CHUNK)
        while True:
            yield silence
    if kind == "noise":
        loop = noise(args.seed)
        while True:
            for i in range(0, len(loop), 2 * CHUNK):
                yield loop[i:i + 2 * CHUNK]
    pending = b""
    for piece in mmhmm_stream(args.clips, args.seed):
        pending += piece
        while len(pending) >= 2 * CHUNK:
            yield pending[:2 * CHUNK]
            pending = pending[2 * CHUNK:]


# MARK: A session


class Session:
    """One Realtime session streaming one kind; counts what the server says back."""

    def __init__(self, kind, args):
        self.kind, self.args = kind, args
        self.counts = {}
        self.user_words, self.replies, self.errors = [], [], []
        self.audio_ms = 0.0
        self.active = None
        self.closed = None
        self.answered = None
        self.probe_done = asyncio.Event()
        self.stop = asyncio.Event()
        self.t0 = time.monotonic()
        # Every event but the deltas, stamped: what the turns and replies were, in order.
        self.log = open(os.path.join(args.out, f"events-{kind}.jsonl"), "w")

    async def run(self):
        url = f"ws://127.0.0.1:{self.args.port}/v1/realtime"
        async with connect(url, subprotocols=["realtime"], max_size=None, open_timeout=30) as ws:
            self.ws = ws
            reader = asyncio.create_task(self.read())
            await ws.send(json.dumps({"type": "session.update", "session": {
                "type": "realtime", "output_modalities": ["audio"],
                "audio": {"input": {"format": {"type": "audio/pcm", "rate": RATE}, "turn_detection": {"type": "semantic_vad"}},
                          "output": {"format": {"type": "audio/pcm", "rate": RATE}}}}}))
            try:
                await self.stream()
                await self.probe()
            finally:
                reader.cancel()

    async def stream(self):
        start = time.monotonic()
        for n, chunk in enumerate(chunks(self.kind, self.args)):
            if self.stop.is_set() or self.closed:
                return
            await self.ws.send('{"type":"input_audio_buffer.append","audio":"' + base64.b64encode(chunk).decode() + '"}')
            delay = start + (n + 1) * 0.02 - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)

    async def probe(self):
        """A typed question out of band once the audio stops: the session must still answer it."""
        if self.closed:
            return
        if self.active:
            await self.ws.send('{"type":"response.cancel"}')
            for _ in range(100):
                if not self.active:
                    break
                await asyncio.sleep(0.1)
        await self.ws.send(json.dumps({"type": "response.create", "response": {
            "conversation": "none", "output_modalities": ["text"], "metadata": {"probe": "1"},
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What is 2 plus 2?"}]}]}}))
        try:
            await asyncio.wait_for(self.probe_done.wait(), 30)
        except asyncio.TimeoutError:
            self.answered = "no response.done within 30 s"

    async def read(self):
        try:
            async for message in self.ws:
                self.event(json.loads(message))
        except Exception as error:  # the connection ended: say how
            self.closed = f"{type(error).__name__}: {error}"
        else:
            self.closed = f"closed by the server ({self.ws.close_code})"

    def event(self, e):
        kind = e.get("type", "?")
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if not kind.endswith(".delta"):
            self.log.write(json.dumps({"t": round(time.monotonic() - self.t0, 3), **e}) + "\n")
        if kind == "response.output_audio.delta":
            self.audio_ms += len(e.get("delta", "")) * 3 / 4 / 2 / RATE * 1000
        elif kind == "conversation.item.input_audio_transcription.completed":
            self.user_words.append(e.get("transcript", ""))
        elif kind == "response.created":
            self.active = e["response"]["id"]
        elif kind in ("response.output_audio_transcript.done", "response.output_text.done"):
            self.last_text = e.get("transcript", e.get("text", ""))
        elif kind == "response.done":
            response = e["response"]
            self.active = None
            if (response.get("metadata") or {}).get("probe"):
                self.answered = "yes" if response["status"] == "completed" else f"status {response['status']}"
                self.answer_text = getattr(self, "last_text", "")
                self.probe_done.set()
            else:
                why = (response.get("status_details") or {}).get("reason")
                self.replies.append((response["status"] + (f" ({why})" if why else ""), getattr(self, "last_text", "")[:60]))
        elif kind == "error":
            self.errors.append(e.get("error", {}).get("code"))


# MARK: The server, from /proc and /metrics


def proc(pid):
    """(resident MiB, CPU seconds) of one process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return rss, (int(fields[11]) + int(fields[12])) / HZ
    except (OSError, StopIteration):
        return None


def descendants(pid):
    """Every process under `pid`, from each one's parent in /proc/N/stat."""
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    parent[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    found, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        children = [c for c, pp in parent.items() if pp == p]
        found += children
        frontier += children
    return found


def helper(server):
    """The speech helper (helpers/parley_speech.py) and anything it started: summed (MiB, CPU s).
    Found again at every sample: the server restarts a helper that dies."""
    for pid in descendants(server):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"parley_speech" not in f.read():
                    continue
        except OSError:
            continue
        got = [g for g in map(proc, [pid] + descendants(pid)) if g]
        return sum(g[0] for g in got), sum(g[1] for g in got)
    return 0.0, 0.0


def metrics(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and line.split("{")[0].split(" ")[0] in SERIES:
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def sample(args, t, stage):
    server = proc(args.server_pid)
    if server is None:
        sys.exit("the server is gone")
    h_rss, h_cpu = helper(args.server_pid)
    return {"t": t, "stage": stage, "rss": server[0], "cpu": server[1], "helper_rss": h_rss, "helper_cpu": h_cpu,
            "metrics": metrics(args.port)}


# MARK: The run


def line(s):
    m = s["metrics"]
    responses = sum(v for k, v in m.items() if k.startswith("parley_session_responses_total"))
    return (f"t={s['t']:5.0f} s  {s['stage']:<18} server {s['rss']:6.1f} MiB {s['cpu']:7.2f} s  "
            f"helper {s['helper_rss']:6.1f} MiB {s['helper_cpu']:7.2f} s  accounted {m.get('parley_accounted_bytes', 0):8.0f} B  "
            f"turns {m.get('parley_session_turns_total', 0):3.0f}  responses {responses:3.0f}")


async def run(args):
    stage_starts = [0, args.idle, args.idle + args.stage, args.idle + 2 * args.stage]
    end = args.idle + args.minutes_s
    stage_names = ["idle", "quiet", "quiet+noise", "quiet+noise+mmhmm"]
    grid = sorted(set(range(0, end + 1, args.sample)) | set(stage_starts) | {end, stage_starts[3] + args.settle}
                  | {s + args.warmup for s in stage_starts[1:]})
    sessions, tasks, samples = {}, {}, []
    t0 = time.monotonic()
    out = open(os.path.join(args.out, "samples.jsonl"), "w")
    for t in grid:
        await asyncio.sleep(max(0.0, t0 + t - time.monotonic()))
        stage = stage_names[max(i for i, s in enumerate(stage_starts) if s <= t)] if t < end else "end"
        s = sample(args, t, stage)
        samples.append(s)
        out.write(json.dumps(s) + "\n")
        out.flush()
        if t % args.sample == 0 or t == end:
            print(line(s), flush=True)
        if t in stage_starts[1:]:
            kind = KINDS[stage_starts.index(t) - 1]
            sessions[kind] = Session(kind, args)
            tasks[kind] = asyncio.create_task(sessions[kind].run())
        for kind, task in tasks.items():
            if task.done() and task.exception() and not sessions[kind].closed:
                sessions[kind].closed = f"{type(task.exception()).__name__}: {task.exception()}"
    for session in sessions.values():
        session.stop.set()
    done, pending = await asyncio.wait(tasks.values(), timeout=60)
    for task in pending:
        task.cancel()
    for kind, task in tasks.items():
        if task.done() and not task.cancelled() and task.exception() and not sessions[kind].closed:
            sessions[kind].closed = f"{type(task.exception()).__name__}: {task.exception()}"
    return summary(args, samples, sessions, stage_starts, stage_names, end)


def at(samples, t):
    return next(s for s in samples if s["t"] == t)


def summary(args, samples, sessions, starts, names, end):
    bounds = list(zip(starts, starts[1:] + [end]))
    stages = []
    for (a, b), name in zip(bounds, names):
        first = at(samples, a if name == "idle" else a + args.warmup)
        last = at(samples, b)
        span = last["t"] - first["t"]
        stages.append({"stage": name, "from": first["t"], "to": b,
                       "server_cores": (last["cpu"] - first["cpu"]) / span, "helper_cores": (last["helper_cpu"] - first["helper_cpu"]) / span,
                       "server_rss": last["rss"], "helper_rss": last["helper_rss"],
                       "accounted_mib": last["metrics"].get("parley_accounted_bytes", 0) / 2**20,
                       "server_growth": last["rss"] - first["rss"], "helper_growth": last["helper_rss"] - first["helper_rss"],
                       "metrics": {k: last["metrics"].get(k, 0) - at(samples, a)["metrics"].get(k, 0) for k in last["metrics"]
                                   if not k.startswith(("parley_accounted", "parley_resident", "parley_sessions_open"))}})
    print(f"\nstages (CPU from {args.warmup} s after each session opened to the next; RSS at each stage's end):")
    print(f"{'stage':<18} {'server cores':>12} {'helper cores':>12} {'server RSS':>10} {'helper RSS':>10} {'growth in stage (server/helper MiB)':>36}")
    for s in stages:
        print(f"{s['stage']:<18} {s['server_cores']:12.4f} {s['helper_cores']:12.4f} {s['server_rss']:10.1f} {s['helper_rss']:10.1f} "
              f"{s['server_growth']:17.1f} / {s['helper_growth']:.1f}")
    print("\nper kind (the step its session added over the stage before; quiet against no session):")
    print(f"{'kind':<6} {'server cores':>12} {'helper cores':>12} {'server MiB':>10} {'accounted':>9} {'helper MiB':>10} {'speech_started':>14} "
          f"{'turns':>5} {'replies':>7} {'reply audio s':>13} {'open at end':>11} {'answers':>7}")
    rows = {}
    for i, kind in enumerate(KINDS):
        before, this, session = stages[i], stages[i + 1], sessions.get(kind)
        c = session.counts if session else {}
        row = {"server_cores": this["server_cores"] - before["server_cores"], "helper_cores": this["helper_cores"] - before["helper_cores"],
               "server_mib": this["server_rss"] - before["server_rss"], "helper_mib": this["helper_rss"] - before["helper_rss"],
               "accounted_mib": this["accounted_mib"] - before["accounted_mib"],
               "speech_started": c.get("input_audio_buffer.speech_started", 0), "turns": c.get("input_audio_buffer.committed", 0),
               "replies": len(session.replies) if session else 0, "reply_audio_s": session.audio_ms / 1000 if session else 0,
               "open": not (session and session.closed), "answered": session.answered if session else None,
               "closed": session.closed if session else "never opened", "user_words": session.user_words if session else [],
               "reply_statuses": [r[0] for r in session.replies] if session else [], "replies_text": session.replies if session else [],
               "errors": session.errors if session else [], "events": c}
        rows[kind] = row
        print(f"{kind:<6} {row['server_cores']:12.4f} {row['helper_cores']:12.4f} {row['server_mib']:10.1f} {row['accounted_mib']:9.2f} {row['helper_mib']:10.1f} "
              f"{row['speech_started']:14d} {row['turns']:5d} {row['replies']:7d} {row['reply_audio_s']:13.1f} "
              f"{'yes' if row['open'] else 'NO':>11} {str(row['answered']):>7}")
    for kind, row in rows.items():
        if row["user_words"] or row["replies"] or row["errors"] or not row["open"]:
            words = {}
            for w in row["user_words"]:
                words[w] = words.get(w, 0) + 1
            print(f"\n{kind}: user turns heard as {json.dumps(words)}")
            statuses = {}
            for st in row["reply_statuses"]:
                statuses[st] = statuses.get(st, 0) + 1
            print(f"{kind}: replies {json.dumps(statuses)}; first ones: {json.dumps(row['replies_text'][:3])}")
            print(f"{kind}: events {json.dumps({k: v for k, v in sorted(row['events'].items()) if not k.endswith('.delta')})}")
            if row["errors"]:
                print(f"{kind}: errors {json.dumps(row['errors'])}")
            if not row["open"]:
                print(f"{kind}: the session ended early: {row['closed']}")
    for stage in stages[1:]:
        print(f"\nmetrics added during {stage['stage']}: " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(stage["metrics"].items()) if v))
    settle = at(samples, starts[3] + args.settle)
    last = samples[-1]
    tail = [s for s in samples if s["t"] >= settle["t"]]
    slope = fit(tail, "rss")
    growth, helper_growth = last["rss"] - settle["rss"], last["helper_rss"] - settle["helper_rss"]
    print(f"\nserver RSS {settle['rss']:.1f} MiB {args.settle} s after the last session opened, {last['rss']:.1f} at the end "
          f"({growth:+.1f} MiB over {last['t'] - settle['t']:.0f} s, fit {slope:+.2f} MiB/h; margin {args.margin_mib} MiB)")
    print(f"helper RSS {settle['helper_rss']:.1f} MiB then, {last['helper_rss']:.1f} at the end ({helper_growth:+.1f} MiB, "
          f"fit {fit(tail, 'helper_rss'):+.2f} MiB/h; margin {args.helper_margin_mib} MiB)")
    failures = []
    if growth > args.margin_mib:
        failures.append(f"the server's RSS grew {growth:.1f} MiB after warm-up (margin {args.margin_mib})")
    if helper_growth > args.helper_margin_mib:
        failures.append(f"the helper's RSS grew {helper_growth:.1f} MiB after warm-up (margin {args.helper_margin_mib})")
    for kind, row in rows.items():
        if not row["open"]:
            failures.append(f"the {kind} session ended early: {row['closed']}")
        elif row["answered"] != "yes":
            failures.append(f"the {kind} session did not answer the typed question: {row['answered']}")
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"stages": stages, "kinds": rows, "server_growth_mib": growth, "helper_growth_mib": helper_growth,
                   "server_fit_mib_per_hour": slope, "failures": failures}, f, indent=1)
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


def fit(samples, key):
    """Least-squares slope of `key` against time, in MiB an hour."""
    n = len(samples)
    if n < 2:
        return 0.0
    mt = sum(s["t"] for s in samples) / n
    mv = sum(s[key] for s in samples) / n
    den = sum((s["t"] - mt) ** 2 for s in samples)
    return sum((s["t"] - mt) * (s[key] - mv) for s in samples) / den * 3600 if den else 0.0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--server-pid", type=int, required=True)
    p.add_argument("--clips", required=True, help="a folder of .raw clips: pcm16 mono 24 kHz")
    p.add_argument("--out", required=True)
    p.add_argument("--minutes", type=float, default=10, help="from the quiet session's start to the end")
    p.add_argument("--idle", type=int, default=30, help="seconds with no session first")
    p.add_argument("--stage", type=int, default=120, help="seconds of quiet alone, then of quiet and noise")
    p.add_argument("--sample", type=int, default=30)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--settle", type=int, default=180, help="seconds after the last session opens to the growth check's start")
    p.add_argument("--margin-mib", type=float, default=8)
    p.add_argument("--helper-margin-mib", type=float, default=16)
    p.add_argument("--seed", type=int, default=37)
    args = p.parse_args()
    args.minutes_s = int(args.minutes * 60)
    if args.minutes_s < 2 * args.stage + args.settle + args.sample:
        p.error("--minutes must leave the last stage longer than --settle plus a sample")
    if args.stage < args.warmup + args.sample:
        p.error("--stage must be at least --warmup plus a sample: its CPU is read after the warm-up")
    args.minutes = args.minutes_s / 60
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
