"""A Python load client (raw WebSockets) not yet moved into parley-load (issue 72): what MCP tools add to a session.

What MCP tools add to a Realtime session: the time discovery adds to its start, and what a tool
call adds beyond the MCP server's own time (issue 40's benchmark).

Run by scripts/benchmarks/bench-mcp.sh (which starts Parley and scripts/benchmarks/mcp_bench_server.py);
by hand, against both already running:

    .venv-sdk/bin/python scripts/benchmarks/mcp_bench_client.py --url ws://127.0.0.1:P/v1/realtime \
        --mcp-url http://127.0.0.1:M/mcp --server-log FILE --parley-pid PID --mcp-pid PID --out DIR

1. Discovery. At each concurrency in --levels, --sessions sessions, that many at a time, of three
   kinds: `plain` (connect → session.created, no MCP); `cold` (then a session.update naming the MCP
   server with an `X-Bench` header of its own, so that no loop has its tools cached: initialize,
   notifications/initialized and tools/list at the server → mcp_list_tools.completed); `warm` (one
   header for all, after sessions named it one at a time until every loop had listed it: --loops,
   since a connection's loop is the kernel's choice; the loop's cache answers). Timed from before
   the TCP connect, and `update → completed` from the session.update's send. The server's own time
   for a cold session is the sum of its three requests' `read_us` in its log (from its read of a
   request to its answer; scripts/benchmarks/mcp_bench_server.py).
2. Calls. At each concurrency in --call-levels, that many sessions at once, each listing the server
   (warm, primed as above), then making calls one after another (--calls-alone for a lone session,
   else --calls): a user message `stamp N` (N unique) and a response.create with `tool_choice:
   {"type": "mcp", "server_label": "bench", "name": "stamp"}`, which the built-in agent answers by
   calling the tool. Timed: response.mcp_call.in_progress → .completed, and response.create →
   response.done in two parts: the model's (→ response.mcp_call_arguments.done; the built-in agent
   streams a call's start and its arguments in two pieces, 10 ms apart) and the rest. The call and
   the rest are each given less the server's own time for that call: its log's `read_us` for the
   tools/call with that N, and for a session's first call its initialize and
   notifications/initialized too, which Parley's client sends before its first request.

The way back alone, for a list and a call: from the server's last write of its answer (its log's
`answered_at`; Python's perf_counter is CLOCK_MONOTONIC on Linux, this client's clock too) to the
event here: Parley reading and parsing the answer, its events, and this client waking. The way
there cannot be timed so: Parley writes the request before the event that says so, which waits
for the end of the loop's event (`OutputCork`).

Beside each block: the CPU seconds of this client, of Parley, of the MCP server and of any other
process over it, and the machine's steal (from /proc/stat). Every session and wait is bounded
(--wait seconds per event, --time-limit for the whole run). Prints the tables and writes
DIR/mcp-bench.json; exits 1 if any list or call failed or the run ran out of time.
"""

import argparse
import asyncio
import itertools
import json
import os
import sys
import time
import urllib.request

from websockets.asyncio.client import connect

HZ = os.sysconf("SC_CLK_TCK")
LABEL = "bench"

parser = argparse.ArgumentParser()
parser.add_argument("--url", required=True)
parser.add_argument("--mcp-url", required=True)
parser.add_argument("--server-log", required=True)
parser.add_argument("--parley-pid", type=int, required=True)
parser.add_argument("--mcp-pid", type=int, required=True)
parser.add_argument("--metrics", help="Parley's /metrics URL, for its own parley_mcp_*_seconds")
parser.add_argument("--out", required=True)
parser.add_argument("--sessions", type=int, default=500)
parser.add_argument("--levels", default="1,10,50")
parser.add_argument("--loops", type=int, default=2, help="Parley's loops (each has its own cache)")
parser.add_argument("--prime", type=int, default=64, help="the most sessions listing before a warm block")
parser.add_argument("--call-levels", default="1,10,50")
parser.add_argument("--calls-alone", type=int, default=500)
parser.add_argument("--calls", type=int, default=20)
parser.add_argument("--wait", type=float, default=15.0)
parser.add_argument("--time-limit", type=float, default=600.0)
args = parser.parse_args()

RUN = f"{os.getpid():x}{int(time.time()) % 100000:x}"
DEADLINE = time.monotonic() + args.time_limit
failures = []


class OutOfTime(Exception):
    pass


# MARK: Measuring


def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def machine_jiffies():
    """The machine's steal, busy (not idle nor waiting) and total jiffies, all cores."""
    with open("/proc/stat") as f:
        cpu = [int(x) for x in f.readline().split()[1:]]
    return cpu[7], sum(cpu[:8]) - cpu[3] - cpu[4], sum(cpu[:8])


def metrics_sums():
    """Parley's own call and list histograms' sums and counts (seconds), if --metrics was given."""
    if not args.metrics:
        return {}
    found = {}
    with urllib.request.urlopen(args.metrics, timeout=5) as answer:
        for line in answer.read().decode().splitlines():
            for name in ("parley_mcp_call_seconds", "parley_mcp_list_seconds"):
                for part in ("_sum", "_count"):
                    if line.startswith(name + part + " "):
                        found[name + part] = float(line.split()[1])
    return found


class Block:
    """CPU of this client, Parley and the MCP server, and the machine's steal, over a block."""

    def __init__(self):
        self.start = self.sample()

    @staticmethod
    def sample():
        steal, busy, total = machine_jiffies()
        return dict(t=time.monotonic(), client=proc_cpu(os.getpid()), parley=proc_cpu(args.parley_pid),
                    mcp=proc_cpu(args.mcp_pid), steal=steal, busy=busy / HZ, total=total, metrics=metrics_sums())

    def end(self):
        e, s = self.sample(), self.start
        out = dict(seconds=e["t"] - s["t"], client_cpu=e["client"] - s["client"], parley_cpu=e["parley"] - s["parley"],
                   mcp_cpu=e["mcp"] - s["mcp"], steal_pct=100 * (e["steal"] - s["steal"]) / max(1, e["total"] - s["total"]))
        # Whatever else ran on the machine meanwhile (a build, another test): it competes for the cores.
        out["others_cpu"] = max(0.0, e["busy"] - s["busy"] - out["client_cpu"] - out["parley_cpu"] - out["mcp_cpu"])
        for name in ("parley_mcp_call_seconds", "parley_mcp_list_seconds"):
            count = e["metrics"].get(name + "_count", 0) - s["metrics"].get(name + "_count", 0)
            if count:
                out[name + "_mean_ms"] = 1000 * (e["metrics"][name + "_sum"] - s["metrics"].get(name + "_sum", 0)) / count
                out[name + "_count"] = count
        return out


def pct(values, p):
    """The p-th percentile by nearest rank; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def ms(value):
    return "-" if value is None else f"{value:.2f}"


# MARK: A session


class Session:
    def __init__(self, ws):
        self.ws = ws

    @classmethod
    async def open(cls):
        if time.monotonic() > DEADLINE:
            raise OutOfTime()
        ws = await asyncio.wait_for(connect(args.url, max_size=1 << 24, open_timeout=args.wait, ping_interval=None), args.wait)
        return cls(ws)

    async def send(self, event):
        await self.ws.send(json.dumps(event))
        return time.perf_counter()

    async def expect(self, *types, fail=("error",)):
        """The next event of one of `types`, and when it arrived; an `error` (or a type in `fail`) raises."""
        while True:
            left = min(args.wait, DEADLINE - time.monotonic())
            if left <= 0:
                raise OutOfTime()
            raw = await asyncio.wait_for(self.ws.recv(), left)
            at = time.perf_counter()
            event = json.loads(raw)
            kind = event.get("type")
            if kind in types:
                return event, at
            if kind in fail:
                raise RuntimeError(f"{kind}: {json.dumps(event)[:300]}")

    async def close(self):
        await self.ws.close()


def mcp_entry(tag):
    return {"type": "mcp", "server_label": LABEL, "server_url": args.mcp_url, "require_approval": "never",
            "headers": {"X-Bench": tag}}


async def discover(session, tag):
    """session.update naming the server → mcp_list_tools.completed; (sent, completed, item)."""
    sent = await session.send({"type": "session.update", "session": {"type": "realtime", "output_modalities": ["text"],
                                                                      "tools": [mcp_entry(tag)]}})
    done, at = await session.expect("mcp_list_tools.completed", fail=("error", "mcp_list_tools.failed"))
    return sent, at, done.get("item_id")


# MARK: 1. Discovery


async def one_start(kind, tag):
    began = time.perf_counter()
    session = await Session.open()
    try:
        _, created = await session.expect("session.created")
        record = dict(kind=kind, tag=tag, created_ms=1000 * (created - began))
        if kind != "plain":
            sent, completed, _ = await discover(session, tag)
            record.update(update_ms=1000 * (completed - sent), listed_ms=1000 * (completed - began), completed_at=completed)
        return record
    finally:
        await session.close()


async def pool(count, concurrency, job):
    """`job(i)` for i in 0..<count, `concurrency` at a time; the results, and the failures noted."""
    numbers = iter(range(count))
    results = []

    async def worker():
        for i in numbers:
            try:
                results.append(await job(i))
            except OutOfTime:
                failures.append("out of time")
                return
            except Exception as error:  # noqa: BLE001 - every failure is counted and shown
                failures.append(f"{type(error).__name__}: {error}")

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return results


def server_log():
    lines = []
    with open(args.server_log) as f:
        for line in f:
            try:
                lines.append(json.loads(line))
            except ValueError:
                pass
    return lines


async def prime(tag):
    """Sessions naming the server with `tag`, one at a time, until every loop has listed it (each
    loop keeps its own cache, and a connection's loop is the kernel's choice): at most --prime."""
    for _ in range(args.prime):
        if sum(1 for line in server_log() if line["tag"] == tag and line["method"] == "tools/list") >= args.loops:
            return
        await one_start("warm", tag)
    failures.append(f"{args.prime} sessions did not reach all {args.loops} loops' caches")


async def discovery(level):
    rows = {}
    for kind in ("plain", "cold", "warm"):
        if kind == "warm":
            await prime(f"warm-{RUN}-{level}")
        block = Block()
        records = await pool(args.sessions, level, lambda i: one_start(
            kind, f"cold-{RUN}-{level}-{i}" if kind == "cold" else f"warm-{RUN}-{level}"))
        rows[kind] = dict(records=records, block=block.end())
    # The server's own time for each cold session: its three requests.
    by_tag = {}
    for line in server_log():
        by_tag.setdefault(line["tag"], []).append(line)
    own, lists = [], []
    for record in rows["cold"]["records"]:
        seen = by_tag.get(record["tag"], [])
        three = [line for line in seen if line["method"] in ("initialize", "notifications/initialized", "tools/list")]
        record["server_ms"] = sum(line["read_us"] for line in three) / 1000
        record["app_ms"] = sum(line["app_us"] for line in three) / 1000
        own.append(record["server_ms"])
        listed = [line for line in seen if line["method"] == "tools/list"]
        lists += [line["read_us"] / 1000 for line in listed]
        if listed:
            record["back_ms"] = 1000 * (record["completed_at"] - listed[-1]["answered_at"])
    # Every loop listed once while priming; a warm session that reached the server would show here.
    warm_asked = sum(1 for line in by_tag.get(f"warm-{RUN}-{level}", []) if line["method"] == "tools/list") - args.loops
    rows["server"] = dict(cold_three_ms=own, tools_list_ms=lists, warm_tools_lists=warm_asked)
    return rows


# MARK: 2. Calls

counter = itertools.count(1000)


async def caller(calls, tag):
    session = await Session.open()
    made = []
    try:
        await session.expect("session.created")
        await discover(session, tag)
        for k in range(calls):
            n = next(counter)
            await session.send({"type": "conversation.item.create", "item": {
                "type": "message", "role": "user", "content": [{"type": "input_text", "text": f"stamp {n}"}]}})
            created = await session.send({"type": "response.create", "response": {
                "output_modalities": ["text"], "tool_choice": {"type": "mcp", "server_label": LABEL, "name": "stamp"}}})
            _, written = await session.expect("response.mcp_call_arguments.done", fail=("error", "response.done"))
            _, progress = await session.expect("response.mcp_call.in_progress", fail=("error", "response.done"))
            _, completed = await session.expect("response.mcp_call.completed", fail=("error", "response.mcp_call.failed", "response.done"))
            item, _ = await session.expect("response.output_item.done")
            done, finished = await session.expect("response.done")
            output = item.get("item", {}).get("output") or ""
            if f'"n": {n}' not in output or done["response"]["status"] != "completed":
                raise RuntimeError(f"call {n}: output {output!r}, status {done['response']['status']}")
            made.append(dict(n=n, first=k == 0, call_ms=1000 * (completed - progress), response_ms=1000 * (finished - created),
                             model_ms=1000 * (written - created), after_model_ms=1000 * (finished - written), completed_at=completed))
    except OutOfTime:
        failures.append("out of time")
    except Exception as error:  # noqa: BLE001
        failures.append(f"{type(error).__name__}: {error}")
    finally:
        await session.close()
    return made


async def calls(level):
    tag = f"calls-{RUN}"
    await prime(tag)
    block = Block()
    per_session = args.calls_alone if level == 1 else args.calls
    made = [call for session in await asyncio.gather(*(caller(per_session, tag) for _ in range(level))) for call in session]
    stats = block.end()
    lines = server_log()
    by_n = {line.get("n"): line for line in lines if line["method"] == "tools/call"}
    opening = {}
    for line in lines:
        if line["tag"] == tag and line["method"] in ("initialize", "notifications/initialized"):
            was = opening.get(line["session"], (0, 0))
            opening[line["session"]] = (was[0] + line["read_us"] / 1000, was[1] + line["app_us"] / 1000)
    for call in made:
        line = by_n.get(call["n"])
        if line is None:
            failures.append(f"call {call['n']} is not in the server's log")
            continue
        before = opening.get(line["session"], (0, 0)) if call["first"] else (0, 0)
        call["server_ms"] = line["read_us"] / 1000 + before[0]
        call["app_ms"] = line["app_us"] / 1000 + before[1]
        call["back_ms"] = 1000 * (call["completed_at"] - line["answered_at"])
        call["tool_ms"] = (line.get("tool_us") or 0) / 1000
    return dict(records=[c for c in made if "server_ms" in c], block=stats)


# MARK: The report


def block_text(b):
    return (f"client CPU {b['client_cpu']:.2f} s, Parley {b['parley_cpu']:.2f} s, MCP server {b['mcp_cpu']:.2f} s "
            f"over {b['seconds']:.1f} s; other processes {b['others_cpu']:.2f} s; steal {b['steal_pct']:.1f} %")


def discovery_table(results):
    print("\n### Discovery: a session's start, ms (p50 / p99)\n")
    print("| sessions at once | no MCP: connect → session.created | cold: connect → mcp_list_tools.completed | of which update → completed | "
          "cold, ratio to no MCP (p50) | the server's own time (initialize + initialized + tools/list) | cold less the server's time | "
          "of which the list's way back (the server's answer → completed at the client) | "
          "warm: connect → completed | of which update → completed | warm, ratio to no MCP (p50) |")
    print("| ---: | --- | --- | --- | ---: | --- | --- | --- | --- | --- | ---: |")
    for level, rows in results.items():
        plain = [r["created_ms"] for r in rows["plain"]["records"]]
        cold = rows["cold"]["records"]
        warm = rows["warm"]["records"]
        cl, cu, own = [r["listed_ms"] for r in cold], [r["update_ms"] for r in cold], [r["server_ms"] for r in cold]
        less = [r["listed_ms"] - r["server_ms"] for r in cold]
        back = [r["back_ms"] for r in cold if "back_ms" in r]
        wl, wu = [r["listed_ms"] for r in warm], [r["update_ms"] for r in warm]

        def pair(v):
            return f"{ms(pct(v, 50))} / {ms(pct(v, 99))}"

        def ratio(v):
            return f"{pct(v, 50) / pct(plain, 50):.1f}×" if v and plain else "-"

        print(f"| {level} | {pair(plain)} | {pair(cl)} | {pair(cu)} | {ratio(cl)} | {pair(own)} | {pair(less)} | {pair(back)} | {pair(wl)} | {pair(wu)} | {ratio(wl)} |")
    print()
    for level, rows in results.items():
        s = rows["server"]
        print(f"- {level} at once: sessions measured plain {len(rows['plain']['records'])}, cold {len(rows['cold']['records'])}, "
              f"warm {len(rows['warm']['records'])}; the server's tools/list alone p50 {ms(pct(s['tools_list_ms'], 50))}, "
              f"p99 {ms(pct(s['tools_list_ms'], 99))} ms; tools/list asked by warm sessions: {s['warm_tools_lists']}")
        for kind in ("plain", "cold", "warm"):
            b, records = rows[kind]["block"], rows[kind]["records"]
            mean = ""
            if kind == "cold" and "parley_mcp_list_seconds_mean_ms" in b and records:
                seen = sum(r["update_ms"] for r in records) / len(records)
                own = sum(r["server_ms"] for r in records) / len(records)
                app = sum(r["app_ms"] for r in records) / len(records)
                mean = (f"; means: update → completed {seen:.2f} ms, Parley's HTTP exchanges (parley_mcp_list_seconds) "
                        f"{b['parley_mcp_list_seconds_mean_ms']:.2f} ms over {b['parley_mcp_list_seconds_count']:.0f}, the server's own {own:.2f} ms "
                        f"(its app alone {app:.2f} ms)")
            print(f"  - {kind}: {block_text(b)}{mean}")


def calls_table(results):
    print("\n### Calls: what Parley adds beyond the server's own time, ms (p50 / p99)\n")
    print("| sessions at once | calls | in_progress → completed | the server's own time | in_progress → completed less the server's | "
          "of which the answer's way back (the server's answer → completed at the client) | "
          "response.create → response.done | of which the model (→ mcp_call_arguments.done) | the rest (→ response.done) less the server's | "
          "the tool function itself |")
    print("| --- | ---: | --- | --- | --- | --- | --- | --- | --- | --- |")
    for level, result in results.items():
        for which, name in ((False, "later calls"), (True, "a session's first call")):
            rows = [r for r in result["records"] if r["first"] == which]
            if not rows:
                continue

            def pair(key, less=False):
                v = [r[key] - (r["server_ms"] if less else 0) for r in rows]
                return f"{ms(pct(v, 50))} / {ms(pct(v, 99))}"

            print(f"| {level}, {name} | {len(rows)} | {pair('call_ms')} | {pair('server_ms')} | {pair('call_ms', True)} | {pair('back_ms')} | "
                  f"{pair('response_ms')} | {pair('model_ms')} | {pair('after_model_ms', True)} | {pair('tool_ms')} |")
    print()
    for level, result in results.items():
        b, rows = result["block"], result["records"]
        mean = ""
        if "parley_mcp_call_seconds_mean_ms" in b and rows:
            seen = sum(r["call_ms"] for r in rows) / len(rows)
            own = sum(r["server_ms"] for r in rows) / len(rows)
            app = sum(r["app_ms"] for r in rows) / len(rows)
            mean = (f"; means: in_progress → completed {seen:.2f} ms, Parley's HTTP exchange (parley_mcp_call_seconds) "
                    f"{b['parley_mcp_call_seconds_mean_ms']:.2f} ms over {b['parley_mcp_call_seconds_count']:.0f}, the server's own {own:.2f} ms "
                    f"(its app alone {app:.2f} ms)")
        rate = len(rows) / b["seconds"] if b["seconds"] else 0
        print(f"- {level} at once: {len(rows)} calls, {rate:.0f} a second; {block_text(b)}{mean}")


async def main():
    os.makedirs(args.out, exist_ok=True)
    found = {"discovery": {}, "calls": {}}
    for level in [int(x) for x in args.levels.split(",") if x]:
        found["discovery"][level] = await discovery(level)
        print(f"discovery at {level}: done ({len(failures)} failures so far)", file=sys.stderr)
    for level in [int(x) for x in args.call_levels.split(",") if x]:
        found["calls"][level] = await calls(level)
        print(f"calls at {level}: done ({len(failures)} failures so far)", file=sys.stderr)
    with open(os.path.join(args.out, "mcp-bench.json"), "w") as f:
        json.dump(dict(found, failures=failures), f)
    discovery_table(found["discovery"])
    calls_table(found["calls"])
    if failures:
        print(f"\n{len(failures)} failures; the first: " + "; ".join(sorted(set(failures))[:5]))
        return 1
    return 0


sys.exit(asyncio.run(main()))
