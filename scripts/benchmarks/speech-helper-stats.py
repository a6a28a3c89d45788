#!/usr/bin/env python3
"""Not a load client: reads a running speech helper's `stats` and prints where its CPU went.

Asks a running speech helper for its `stats` (docs/protocol.md, "The speech helper") and prints
where its CPU went, by kind of work, per turn: `speech-helper-stats.py SERVER_PID TURNS`. The helper
is found as the server's child running parley_speech.py, its socket from its command line. Used by
scripts/benchmarks/bench-talkers.sh after each run (a fresh helper a run, so its counts are the
run's, warm-up left out)."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from speech_helper_bench import stats as helper_stats  # noqa: E402


def helper_socket(server_pid):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as line:
                arguments = line.read().decode(errors="replace").split("\0")
        except (OSError, ValueError, IndexError):
            continue
        if parent == server_pid and any(a.endswith("parley_speech.py") for a in arguments) and "--socket" in arguments:
            return arguments[arguments.index("--socket") + 1]
    sys.exit(f"speech-helper-stats: no speech helper under process {server_pid}")


def main():
    server_pid, turns = int(sys.argv[1]), max(1, int(sys.argv[2]))
    stats = helper_stats(helper_socket(server_pid))
    cpu = stats.get("cpu_seconds", {})
    jobs = stats.get("jobs", {})
    kinds = ("verdict", "final", "quiet", "reply", "partial", "speak")
    print(json.dumps({"turns": turns, "cpu_seconds": cpu, "jobs": jobs, "superseded": stats.get("superseded", 0),
                      "shed": stats.get("shed", 0)}, sort_keys=True))
    print("helper CPU a turn, by kind of work (ms): " + ", ".join(
        f"{kind} {1000 * cpu.get(kind, 0) / turns:.0f} ({jobs.get(kind, 0) / turns:.1f} jobs)" for kind in kinds)
        + f"; all {1000 * sum(cpu.values()) / turns:.0f}; superseded {stats.get('superseded', 0)}, shed {stats.get('shed', 0)}")
    wall = stats.get("wall_seconds", {})
    print("a job's time on its worker, by kind (mean ms): " + ", ".join(
        f"{kind} {1000 * wall[kind] / jobs[kind]:.0f}" for kind in kinds if jobs.get(kind) and kind in wall))


if __name__ == "__main__":
    main()
