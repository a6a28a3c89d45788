"""Drives aiortc (a WebRTC stack nobody here wrote) and Parley's call API as an application does:
the calls out and the browsers' calls of `make chaos` (issue 73).

While chaos.sh deals its faults, each --every seconds, taking the nodes in turn:

  a call out   `POST /v1/realtime/calls` with a SIP transport to the chaos trunk (the callee is
               chaos_phones.py's pjsua2), a number of its own; its sideband (`?call_id=`) attached
               after the 201, every event kept, and its close; hung up through call control
               --hold seconds after `transport.answered`; then `GET` on the call for its end;
  a WebRTC call an aiortc peer's offer to the node, its `oai-events` channel's events kept, a
               question said into its microphone, the reply's audio counted, hung up (call
               control, then the peer closed) --hold seconds after the channel opened.

Calls go to the nodes directly, not through the balancer: a call lives on the node that holds it,
and its sideband and call control must reach that node (docs/operations.md). The key (a JWT the
nodes take) comes from PARLEY_LOAD_API_KEY. Each call is one JSON line in --report when it is
over; chaos_calls_verdict.py judges them against the faults.
"""
import argparse
import asyncio
import json
import os
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import websockets  # noqa: E402
from aiortc import RTCSessionDescription  # noqa: E402
from webrtc_call import peer, read_wav  # noqa: E402  (aiortc's peer as webrtc-test.sh makes it)

TYPES_KEPT = ("transport.ringing", "transport.answered", "transport.answered_by", "transport.failed",
              "session.created", "input_audio_buffer.speech_started", "response.done",
              "output_audio_buffer.started", "error", "session.closed")


def http(method: str, url: str, key: str, body: bytes | None = None, content_type: str = "application/json"):
    request = urllib.request.Request(url, data=body, method=method, headers={"Authorization": f"Bearer {key}", "Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            return response.status, response.read(), response.headers.get("Location", "")
    except urllib.error.HTTPError as error:
        return error.code, error.read(), ""
    except OSError as error:  # the node is down: refused, reset, timed out
        return 0, repr(error).encode(), ""


async def off_loop(*args):
    return await asyncio.get_running_loop().run_in_executor(None, http, *args)


class Report:
    def __init__(self, path: str):
        self.file = open(path, "a", buffering=1)

    def write(self, record: dict) -> None:
        self.file.write(json.dumps(record) + "\n")


async def call_out(node: int, base: str, key: str, number: str, hold: float, report: Report) -> None:
    record = {"kind": "sip_out", "node": str(node), "number": number, "placed": round(time.time(), 3), "events": []}
    status, body, _ = await off_loop("POST", f"{base}/v1/realtime/calls", key,
                                     json.dumps({"transport": {"type": "sip", "destination": number, "trunk": "chaos"}}).encode())
    record["status"] = status
    if status != 201:
        record["body"] = body[:200].decode(errors="replace")
        record["ended"] = round(time.time(), 3)
        return report.write(record)
    call_id = json.loads(body)["id"]
    record["id"] = call_id
    hangup_at = None
    try:
        async with websockets.connect(f"{base.replace('http', 'ws', 1)}/v1/realtime?call_id={call_id}",
                                      additional_headers={"Authorization": f"Bearer {key}"}, open_timeout=15) as side:
            while True:
                timeout = max(0.05, hangup_at - time.monotonic()) if hangup_at else 120
                try:
                    event = json.loads(await asyncio.wait_for(side.recv(), timeout))
                except asyncio.TimeoutError:
                    if hangup_at is None:
                        record["stalled"] = True  # two minutes without a word: judged lost
                        break
                    hangup_at = None
                    record["hung_up"] = round(time.time(), 3)
                    status, _, _ = await off_loop("POST", f"{base}/v1/realtime/calls/{call_id}/hangup", key, b"")
                    record["hangup_status"] = status
                    continue
                kind = event.get("type", "")
                if kind in TYPES_KEPT:
                    entry = kind if kind != "transport.failed" else f"{kind}:{event.get('error', {}).get('code')}"
                    record["events"].append(entry)
                if kind == "transport.answered" and "hung_up" not in record:
                    hangup_at = time.monotonic() + hold
    except websockets.ConnectionClosed as closed:
        record["close"] = [closed.rcvd.code if closed.rcvd else 1006, closed.rcvd.reason if closed.rcvd else ""]
    except (OSError, asyncio.TimeoutError, websockets.InvalidStatus) as error:
        record["close"] = [0, repr(error)[:200]]
    record["ended"] = round(time.time(), 3)
    record["read"] = await read_call(base, key, call_id)
    report.write(record)


async def read_call(base: str, key: str, call_id: str) -> dict:
    """The call as its node keeps it once it has ended (its status and reason), or why not."""
    for _ in range(10):  # the node may still be ending it (a close_notify just sent)
        status, body, _ = await off_loop("GET", f"{base}/v1/realtime/calls/{call_id}", key)
        if status != 200:
            return {"http": status}
        read = json.loads(body)
        if read.get("status") == "ended":
            break
        await asyncio.sleep(0.5)
    return {"status": read.get("status"), "ended_reason": read.get("ended_reason")}


async def webrtc_call(node: int, base: str, key: str, question, hold: float, report: Report) -> None:
    record = {"kind": "webrtc", "node": str(node), "placed": round(time.time(), 3), "events": []}
    closed = asyncio.get_running_loop().create_future()

    def take(event):
        kind = event.get("type", "")
        if kind in TYPES_KEPT and kind not in record["events"]:
            record["events"].append(kind)

    pc, microphone, speaker, tasks, channel, events, opened = peer(take)
    channel.on("close", lambda: closed.done() or closed.set_result("channel"))

    @pc.on("connectionstatechange")
    def on_state():
        record.setdefault("states", []).append(pc.connectionState)
        if pc.connectionState in ("failed", "closed") and not closed.done():
            closed.set_result(pc.connectionState)

    async def talk() -> str:
        """The call from its offer to its end; returns its id (empty when it was refused)."""
        await pc.setLocalDescription(await pc.createOffer())
        status, answer, location = await off_loop("POST", f"{base}/v1/realtime/calls", key, pc.localDescription.sdp.encode(), "application/sdp")
        record["status"] = status
        if status != 201:
            record["body"] = answer[:200].decode(errors="replace")
            return ""
        await pc.setRemoteDescription(RTCSessionDescription(sdp=answer.decode(), type="answer"))
        try:
            await asyncio.wait_for(opened, 20)
        except asyncio.TimeoutError:
            record["not_open"] = True
            return location.rsplit("/", 1)[-1]
        record["answered"] = round(time.time(), 3)
        microphone.say(question)
        done, _ = await asyncio.wait([closed], timeout=hold)
        if done:
            record["ended_by_server"] = closed.result()  # before its time: the node ended it
        else:
            # The hangup is the peer's close (a browser's page closing), which the server hears
            # as DTLS's close_notify.
            record["hung_up"] = round(time.time(), 3)
        return location.rsplit("/", 1)[-1]

    call_id = ""
    try:
        call_id = await talk()
    finally:
        record["heard_s"] = round(speaker.speech_seconds(), 2)
        for task in tasks:
            task.cancel()
        await pc.close()
        record["ended"] = round(time.time(), 3)
    if call_id:
        record["read"] = await read_call(base, key, call_id)
    report.write(record)


async def main_async(args) -> None:
    bases = args.nodes.split(",")
    key = os.environ["PARLEY_LOAD_API_KEY"]
    question = read_wav(args.question)
    report = Report(args.report)
    tasks = []
    start = time.monotonic()
    n = 0
    while time.monotonic() - start < args.seconds:
        node = n % len(bases)
        number = f"+1555200{n:04d}"
        tasks.append(asyncio.ensure_future(call_out(node, bases[node], key, number, args.hold, report)))
        await asyncio.sleep(args.every / 2)
        node = (n + 1) % len(bases)
        tasks.append(asyncio.ensure_future(webrtc_call(node, bases[node], key, question, args.hold, report)))
        await asyncio.sleep(args.every / 2)
        n += 1
    await asyncio.gather(*tasks, return_exceptions=True)
    print(f"calls: {n} out, {n} WebRTC", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", required=True, help="the nodes' HTTP URLs, comma-separated")
    parser.add_argument("--every", type=float, default=10)
    parser.add_argument("--hold", type=float, default=20)
    parser.add_argument("--question", required=True, help="48 kHz mono WAV a browser's caller says")
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--report", required=True)
    asyncio.run(main_async(parser.parse_args()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
