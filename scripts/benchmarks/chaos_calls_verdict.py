"""Not a load client: the verdict on the calls of `make chaos` (issue 73), drawn from the reports of
chaos_phones.py (pjsua2: calls in, and the callee of calls out) and chaos_calls.py (the application
placing calls out; aiortc's WebRTC calls), the faults chaos.sh dealt and the nodes' /metrics at
the end.

Every call must be accounted for by a reason:

  ended as meant   a call in hung up by its caller (its BYE answered 200); a call out hung up by
                   the application (its sideband closed 1000 `the call ended: server_bye`, the
                   callee told by Parley's BYE, the call read back `ended`, `server_bye`); a WebRTC
                   call closed by its peer (read back `ended`, `hangup`);
  drained          its node was SIGTERMed while it was up, and it ended at the drain's bound: a
                   call out's sideband says `drained`; a call in got Parley's BYE; a WebRTC
                   call's transport was closed by the node;
  its node died    kill -9 of its node while it was up: a call in's BYE is not answered (or is
                   481 by the node's next incarnation), a call out's sideband drops (1006), a
                   WebRTC call's node no longer knows it;
  refused          placed while its node was down or draining: connection refused, 503, or no
                   answer to the INVITE (408).

A call that fits none is lost, and fails the run. Then, per node as it stands at the end: no call
open (`parley_sip_calls_open`, `parley_webrtc_calls_open`), and its counters agree with the calls
it ended as meant since its last start (`parley_sip_calls_total{end="caller_bye"}` with the calls
in, `{end="server_bye"}` with the calls out, `parley_webrtc_calls_ended_total{reason="hangup"}`
with the WebRTC calls).

  chaos_calls_verdict.py OUT_DIR
"""
import json
import sys
from collections import Counter

out = sys.argv[1]
failed: list[str] = []

# Windows in which a node was not itself: (node index as the drivers count, 0-based; kind; from; to).
windows = []
for line in open(f"{out}/node-faults.txt"):
    start, end, kind, node = line.split()
    windows.append((int(node) - 1, kind, float(start), float(end)))
starts = {}  # node (0-based) -> when its last incarnation was spawned (Unix seconds)
for line in open(f"{out}/node-starts.txt"):
    node, at = line.split()
    starts[int(node) - 1] = float(at)


def fault(node: int, kind: str, start: float, end: float, margin: float = 3.0) -> bool:
    """A fault of `kind` on `node` whose window meets [start, end]."""
    return any(n == node and k == kind and s - margin <= end and start <= e + margin for n, k, s, e in windows)


def down(node: int, at: float) -> bool:
    return fault(node, "kill", at, at, 5.0) or fault(node, "term", at, at, 5.0)


records = []
for name in ("phones.jsonl", "calls.jsonl"):
    try:
        records += [json.loads(line) for line in open(f"{out}/{name}") if line.strip()]
    except FileNotFoundError:
        failed.append(f"no {name}: its driver did not run")

# The callee's view of each call out, by the number dialled.
callee = {r["node"]: r for r in records if r["kind"] == "sip_out" and "number" not in r}
outcomes: Counter = Counter()
meant: Counter = Counter()  # (node, kind) -> calls ended as meant within the node's last incarnation
lost = []


def judge(r: dict) -> str | None:
    kind, node = r["kind"], int(r["node"])
    placed, ended = r["placed"], r.get("ended") or r["placed"]
    if kind == "sip_in":
        if r["answered"] is None:
            if r["final"] in (503, 408, 0) and down(node, placed):
                return "refused (its node down or draining)"
            return None
        if r["hung_up_here"] and r["final"] == 200 and r["ended"]:
            if r["answered"] >= starts.get(node, 0):
                meant[(node, kind)] += 1
            return "ended as meant (the caller's BYE)"
        if not r["hung_up_here"] and r["ended"] and fault(node, "term", r["answered"], r["ended"]):
            return "drained (Parley's BYE at the drain's bound)"
        if fault(node, "kill", r["answered"], ended):
            return "its node died (kill -9)"
        return None
    if kind == "sip_out":
        status, events = r.get("status"), r.get("events", [])
        close = r.get("close") or [None, ""]
        read = r.get("read", {})
        if status != 201:
            return "refused (its node down or draining)" if down(node, placed) else None
        phone = callee.get(r["number"])
        if "transport.answered" not in events:
            failures = [e for e in events if e.startswith("transport.failed")]
            if failures and (fault(node, "term", placed, ended) or fault(node, "kill", placed, ended)):
                return f"refused ({failures[0]} while its node drained)"
            if close[0] == 1006 and fault(node, "kill", placed, ended):
                return "its node died (kill -9) while it rang"
            return None
        if close[0] == 1000 and "server_bye" in close[1] and r.get("hangup_status") == 200:
            if phone is None or phone["hung_up_here"]:
                return None  # the callee never heard Parley's BYE
            if read.get("ended_reason") != "server_bye":
                # Its node drained or died between the hangup and the read (`GET` found no node):
                # the callee heard the BYE, which is the end that was meant.
                if read.get("http") in (0, 404) and (fault(node, "term", placed, ended + 2) or fault(node, "kill", placed, ended + 2)):
                    return "ended as meant (the application's hangup), its node gone before it was read"
                return None
            if r["placed"] >= starts.get(node, 0):
                meant[(node, kind)] += 1
            return "ended as meant (the application's hangup)"
        if close[0] == 1000 and "drained" in close[1] and fault(node, "term", placed, ended):
            return "drained (its sideband told `drained`)"
        if close[0] in (1006, 0) and fault(node, "kill", placed, ended):
            return "its node died (kill -9)"
        return None
    if kind == "webrtc":
        status = r.get("status")
        if status != 201 or r.get("not_open"):
            return "refused (its node down or draining)" if down(node, placed) else None
        read = r.get("read", {})
        if r.get("hung_up") and read.get("ended_reason") == "hangup":
            if r["placed"] >= starts.get(node, 0):
                meant[(node, kind)] += 1
            return "ended as meant (the peer's close)"
        if r.get("hung_up") and read.get("http") in (0, 404) and (fault(node, "term", placed, ended + 2) or fault(node, "kill", placed, ended + 2)):
            return "ended as meant (the peer's close), its node gone before it was read"
        if r.get("ended_by_server") and fault(node, "term", placed, ended):
            return "drained (the node closed its transport)"
        if fault(node, "kill", placed, ended):
            return "its node died (kill -9)"
        return None
    return None


heard: Counter = Counter()  # kind -> calls ended as meant on which the caller heard the agent speak


def heard_agent(r: dict) -> bool:
    if r["kind"] == "sip_in":
        return r.get("heard_ms", 0) >= 500
    if r["kind"] == "sip_out":
        return callee.get(r["number"], {}).get("heard_ms", 0) >= 500
    return r.get("heard_s", 0) >= 0.5


placed = Counter()
for r in records:
    if r["kind"] == "sip_out" and "number" not in r:
        continue  # the callee's half of a call out, judged with the application's
    placed[r["kind"]] += 1
    why = judge(r)
    if why is None:
        lost.append(r)
    else:
        outcomes[(r["kind"], why)] += 1
        if why.startswith("ended as meant") and heard_agent(r):
            heard[r["kind"]] += 1

for kind in ("sip_in", "sip_out", "webrtc"):
    print(f"{kind}: {placed[kind]} placed")
    for (k, why), count in sorted(outcomes.items()):
        if k == kind:
            print(f"  {count:4d} {why}")
for r in lost:
    failed.append(f"a {r['kind']} call not accounted for by any reason: {json.dumps(r)[:600]}")
if sum(placed.values()) == 0:
    failed.append("no call was placed")
for kind in placed:
    ended_as_meant = sum(count for (k, why), count in outcomes.items() if k == kind and why.startswith("ended as meant"))
    print(f"{kind}: the agent heard speaking on {heard[kind]} of the {ended_as_meant} calls ended as meant")
    if not ended_as_meant:
        failed.append(f"no {kind} call ended as meant")
    elif not heard[kind]:
        failed.append(f"no {kind} call heard the agent speak")

# The nodes at the end: nothing open; the counters tell the same story as the callers.
for node in sorted(starts):
    metrics = {}
    for line in open(f"{out}/metrics-node{node + 1}.txt"):
        name, _, value = line.rpartition(" ")
        metrics[name] = float(value)
    sip_open, webrtc_open = metrics.get("parley_sip_calls_open", -1), metrics.get("parley_webrtc_calls_open", -1)
    said = (metrics.get('parley_sip_calls_total{end="caller_bye"}', 0), metrics.get('parley_sip_calls_total{end="server_bye"}', 0),
            metrics.get('parley_webrtc_calls_ended_total{reason="hangup"}', 0))
    seen = (meant[(node, "sip_in")], meant[(node, "sip_out")], meant[(node, "webrtc")])
    print(f"node{node + 1}: calls open {sip_open:g} SIP, {webrtc_open:g} WebRTC; since its last start, ended as meant "
          f"(caller_bye, server_bye, hangup): /metrics {tuple(int(x) for x in said)}, the callers {seen}")
    if sip_open != 0 or webrtc_open != 0:
        failed.append(f"node{node + 1}: calls still open at the end ({sip_open:g} SIP, {webrtc_open:g} WebRTC)")
    if tuple(int(x) for x in said) != seen:
        failed.append(f"node{node + 1}: /metrics says {tuple(int(x) for x in said)} calls ended as meant, the callers {seen}")

for problem in failed:
    print("FAILED: " + problem)
sys.exit(1 if failed else 0)
