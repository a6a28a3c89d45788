"""Drives the openai SDK (`client.live`), a client nobody here wrote, on a GPT-Live call carried by a Twilio media stream.

The carrier side is twilio_carrier.py's simulated Twilio (its `Call`): a stream started with
`<Parameter name="api" value="live">`, so that the call's conversation is GPT-Live's over the
same media leg a Realtime call uses. The application side is the SDK: it attaches a sideband by
the call's CallSid (`client.live.sideband.connect`), hears the caller's words and the session's
reply as GPT-Live's events (each validated against the SDK's `ConnectServerEvent` models), while
the phone hears the reply as Twilio media; then `client.live.sessions.hangup` ends the call: the
stream closes and the sideband gets `session.closed` with `close_requested`.

    twilio_live.py --url ws://127.0.0.1:PORT/twilio --api http://127.0.0.1:PORT/v1 --speech said.ulaw
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time

from openai import AsyncOpenAI
from openai.types.live.connect_server_event import ConnectServerEvent

from checks import Checks
from realtime_sdk_client import models_by_type, short, validate
from twilio_carrier import SILENCE, Call

TIMEOUT = float(os.environ.get("CARRIER_TIMEOUT", "30"))


async def run(args: argparse.Namespace, checks: Checks) -> None:
    call = Call(args.url, signed_url=args.signed_url, token=os.environ.get("TWILIO_AUTH_TOKEN"), headers=None)
    call.start({"api": "live", "instructions": "You answer the phone for Parley's Twilio test. Answer briefly."})
    client = AsyncOpenAI(base_url=args.api, max_retries=0)
    models = models_by_type(ConnectServerEvent)
    problems: list[str] = []
    seen: list[str] = []
    heard = ""
    spoken = ""
    closed = None
    # The session is GPT-Live's from the start: attach by the call's CallSid (the stream's `start`
    # made the session; a second lets it be listed).
    await asyncio.sleep(0.5)
    async with client.live.sideband.connect(session_id=call.call_sid) as side:
        checks.check("the sideband attached to the Twilio call's GPT-Live session by its CallSid", True, call.call_sid)
        asked = time.monotonic()
        speaking = asyncio.create_task(asyncio.to_thread(lambda: (call.speak(args.speech_bytes), call.speak(SILENCE * 60))))
        hung_up = False
        async with asyncio.timeout(TIMEOUT):
            while True:
                event = json.loads(await side.recv_bytes())
                kind = event.get("type")
                validate(models, event, problems)
                if kind not in ("session.output_audio.delta", "session.input_audio.append"):
                    seen.append(kind)
                if kind == "session.input_transcript.delta":
                    heard += event["delta"]
                elif kind == "session.output_transcript.delta":
                    spoken += event["delta"]
                elif kind == "session.usage.updated" and spoken and not hung_up:
                    await speaking
                    # The reply's audio reached the phone as Twilio media, then the application hangs up.
                    await asyncio.to_thread(call.wait, lambda: len(call.media_after(asked)) >= 25, "the reply's audio on the stream")
                    await client.live.sessions.hangup(call.call_sid)
                    hung_up = True
                elif kind == "session.closed":
                    closed = event
                    break
    checks.check("the caller heard (input transcript on the sideband)", any(w in heard.lower() for w in ("paris", "weather")), repr(heard))
    checks.check("the session answered (output transcript on the sideband)", bool(spoken.strip()), repr(spoken[:80]))
    checks.check("the reply played on the phone as Twilio media, a mark after each chunk",
                 len(call.media_after(asked)) >= 25 and len(call.marks_received) == len(call.media), f"{len(call.media_after(asked))} chunks")
    checks.check("session.closed with close_requested after the hangup", closed is not None and closed.get("reason") == "close_requested", short(closed or {}))
    await asyncio.to_thread(call.wait, lambda: call.closed is not None, "the stream closing after the hangup")
    checks.check("the stream closed after the hangup", call.closed is not None, repr(call.closed))
    checks.check("no Live event reached the Twilio stream", not call.errors, "; ".join(call.errors[:3]))
    checks.check("every sideband event validates against the SDK's ConnectServerEvent models", not problems, "; ".join(problems[:5]))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--signed-url")
    parser.add_argument("--api", required=True, help="the server's /v1 base URL for the SDK")
    parser.add_argument("--speech", required=True, help="raw 8 kHz µ-law, the caller's question")
    args = parser.parse_args()
    args.signed_url = args.signed_url or args.url
    with open(args.speech, "rb") as f:
        args.speech_bytes = f.read()
    checks = Checks()
    asyncio.run(run(args, checks))
    print(f"twilio live: {checks.passed} passed, {checks.failed} failed", flush=True)
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
