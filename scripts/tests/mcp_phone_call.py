"""Drives Parley with twilio_carrier.py's carrier (Twilio's side has no client to drive): a call with a slow MCP tool.

A phone call on /twilio whose agent runs a slow MCP tool, played by the simulated carrier of
scripts/tests/twilio_carrier.py. Run by scripts/tests/mcp-session-test.sh against `parley serve
--twilio-session FILE --tool-filler-after 1`, FILE naming mcp_test_server.py's /agent-slow (its
get_weather answers after about 3 s, and notes when it began and ended in the MCP server's EVENTS).

The caller asks for the weather by speech (8 kHz µ-law at real-time pace, silence after it as a
line carries); the agent calls get_weather. The carrier must receive audio while the tool runs (the
filler) and again after it returned (the answer, in a response the server starts by itself), and
/metrics must count the filler and the call. The audio from the tool's start to the answer's end is
kept (raw µ-law in --keep) for the wrapper to recognise.

    mcp_phone_call.py --url ws://127.0.0.1:PORT/twilio --speech said.ulaw --metrics URL --events FILE --keep heard.ulaw

Prints one line per check; exit 1 on the first failure.
"""

import argparse
import re
import time

from twilio_carrier import Call, fail, metric, ok  # beside this file

# Twilio's media: 20 ms a chunk. The filler ("One moment, let me check.") is over a second of it.
FILLER_CHUNKS = 10  # 200 ms at least while the tool runs
ANSWER_CHUNKS = 25  # 500 ms at least after it returned


def tool_times(events, since):
    """(began, ended) of the first get_weather call that began after `since` (wall-clock seconds,
    as the MCP server notes them; other tests' calls came before), None until it has ended."""
    began = call = None
    with open(events) as file:
        for line in file:
            found = re.match(r"tool get_weather (began|ended) ([0-9.]+) call=([0-9]+)", line)
            if not found:
                continue
            at = float(found.group(2))
            if found.group(1) == "began" and began is None and at >= since:
                began, call = at, found.group(3)
            elif found.group(1) == "ended" and found.group(3) == call:
                return (began, at)
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--speech", required=True, help="raw 8 kHz µ-law: the caller asks for the weather")
    parser.add_argument("--metrics", required=True)
    parser.add_argument("--events", required=True, help="the MCP test server's EVENTS file")
    parser.add_argument("--keep", required=True, help="where the audio heard from the tool's start on is written (raw µ-law)")
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args()
    with open(args.speech, "rb") as f:
        speech = f.read()

    fillers = metric(args.metrics, "parley_tool_fillers_total")
    calls_ok = metric(args.metrics, 'parley_mcp_calls_total{result="ok"}')
    # The carrier's clock is monotonic; the MCP server notes wall-clock times.
    wall = time.time() - time.monotonic()

    placed = time.time()
    call = Call(args.url)
    call.start()
    call.speak(speech)
    # The line carries silence while the caller waits, until the answer has come (bounded).
    deadline = time.monotonic() + args.timeout
    times = None
    while time.monotonic() < deadline:
        call.silence(0.2)
        if call.closed is not None:
            fail(f"the server closed the call ({call.closed})")
        times = times or tool_times(args.events, placed)
        with call.lock:
            answered = times is not None and sum(1 for at, _ in call.media if at + wall > times[1]) >= ANSWER_CHUNKS
        if answered:
            break
    if times is None:
        fail(f"the agent did not call get_weather within {args.timeout:g} s (no call in the MCP server's events)")
    began, ended = times
    with call.lock:
        media = list(call.media)
    during = [p for at, p in media if began < at + wall < ended]
    after = [p for at, p in media if at + wall > ended]
    before = [p for at, p in media if at + wall <= began]
    ok(f"the agent called get_weather from the caller's speech; it ran {ended - began:.1f} s")
    if before:
        print(f"twilio-carrier: note: {len(before)} chunks of audio before the tool began (the question heard as two turns?)", flush=True)
    if len(during) < FILLER_CHUNKS:
        fail(f"{len(during)} chunks of audio while the tool ran, not the filler's {FILLER_CHUNKS} or more")
    ok(f"while the tool ran: {len(during)} chunks ({len(during) * 20} ms) of audio, the filler")
    if len(after) < ANSWER_CHUNKS:
        fail(f"{len(after)} chunks of audio after the tool returned, not an answer's {ANSWER_CHUNKS} or more")
    # The answer is spoken out before the carrier checks /metrics and writes what it heard.
    settle = time.monotonic() + args.timeout
    while time.monotonic() < settle:
        call.silence(0.2)
        with call.lock:
            quiet = not call.media or call.media[-1][0] < time.monotonic() - 0.6
        if quiet:
            break
    with call.lock:
        heard = [p for at, p in call.media if at + wall > began]
    ok(f"after it returned: {len(heard) - len(during)} chunks ({(len(heard) - len(during)) * 20} ms), the answer, unasked")
    with open(args.keep, "wb") as f:
        f.write(b"".join(heard))
    if call.errors:
        fail("; ".join(call.errors[:3]))

    now_fillers = metric(args.metrics, "parley_tool_fillers_total")
    now_ok = metric(args.metrics, 'parley_mcp_calls_total{result="ok"}')
    if now_fillers < fillers + 1:
        fail(f"parley_tool_fillers_total went {fillers:g} -> {now_fillers:g}")
    if now_ok < calls_ok + 1:
        fail(f'parley_mcp_calls_total{{result="ok"}} went {calls_ok:g} -> {now_ok:g}')
    ok(f'/metrics: parley_tool_fillers_total {fillers:g} -> {now_fillers:g}, parley_mcp_calls_total{{result="ok"}} {calls_ok:g} -> {now_ok:g}')
    call.send({"event": "stop", "stop": {"accountSid": "AC" + "0" * 32, "callSid": call.call_sid}})
    call.wait(lambda: call.closed is not None, "the server closing after stop", timeout=5)
    print("mcp-phone-call: all checks passed", flush=True)


if __name__ == "__main__":
    main()
