"""GPT-Live's SIP flow, the application's side, with the official openai SDK (scripts/tests/live-sip-test.sh):
an HTTP endpoint takes `live.transport.incoming` (verified with `client.webhooks.unwrap`, validated
as the SDK's `LiveTransportIncomingWebhookEvent`), accepts the call as a Live session with
`client.live.sessions.accept`, attaches a sideband (`client.live.sideband.connect`), sees the
caller's words and the front's reply, says its own commentary into the call, and hangs up with
`client.live.sessions.hangup` once it has been said. (Delegation itself is tested on the WebSocket:
through G.711, Whisper tiny writes "delegate" as "navigate" often enough to make it a coin toss.) Every sideband event is validated against the SDK's `ConnectServerEvent` models.
Prints one line per check; exits 0 when all passed.
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import json
import math
import struct
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from openai import AsyncOpenAI, OpenAI
from openai.types.live.connect_server_event import ConnectServerEvent
from openai.types.webhooks.live_transport_incoming_webhook_event import LiveTransportIncomingWebhookEvent
from checks import Checks
from realtime_sdk_client import models_by_type, short, validate

COMMENTARY = "It is sunny in Paris and twenty one degrees."
# The application's own audio played on the call through the sideband: a second of a 1 kHz tone,
# pcm16 at 24 kHz as every fixture is; the phone finds the tone in what it heard.
FIXTURE = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 1000 * i / 24_000))) for i in range(24_000))


async def run_call(session_id: str, base_url: str, checks: Checks, timeout: float) -> None:
    client = AsyncOpenAI(base_url=base_url, max_retries=0)
    await client.live.sessions.accept(session_id, session={
        "model": "gpt-live-1", "instructions": "You answer the phone for Parley's SIP test. Answer briefly.",
        "audio": {"output": {"voice": "marin"}}, "delegation": {"type": "client", "acknowledgement_delay_ms": 0}})
    checks.check("client.live.sessions.accept answered", True, session_id)
    models = models_by_type(ConnectServerEvent)
    problems: list[str] = []
    seen: list[str] = []
    heard = ""
    spoken = ""
    async with client.live.sideband.connect(session_id=session_id) as side:
        checks.check("the sideband attached to the call's session", True)
        commented = False
        replied = False
        fixture: list[str] = []
        async with asyncio.timeout(timeout):
            while True:
                raw = await side.recv_bytes()
                event = json.loads(raw)
                kind = event.get("type")
                validate(models, event, problems)
                if kind != "session.output_audio.delta" and kind != "session.input_audio.append":
                    seen.append(kind)
                if kind == "session.input_transcript.delta":
                    heard += event["delta"]
                elif kind == "session.output_transcript.delta" and commented:
                    spoken += event["delta"]
                elif kind == "session.usage.updated" and "degrees" in spoken.lower() and not fixture:
                    fixture.append("asked")
                    await side.session.output_audio.fixture.play(audio=base64.b64encode(FIXTURE).decode("ascii"), event_id="evt_fixture")
                elif kind in ("session.output_audio.fixture.playing", "session.output_audio.fixture.played") and event.get("client_event_id") == "evt_fixture":
                    fixture.append(kind.rsplit(".", 1)[1])
                    if kind.endswith("played"):
                        # Played means sent: the phone's buffer plays its last part out first.
                        await asyncio.sleep(1.0)
                        await client.live.sessions.hangup(session_id)
                elif kind == "session.usage.updated" and len(heard.split()) >= 2 and not commented:
                    # The front has answered the caller: now the application's own words.
                    replied = True
                    await side.session.commentary.append(content=COMMENTARY, delegation_id=None)
                    commented = True
                elif kind == "session.closed":
                    checks.check("session.closed on the sideband after the hangup", event.get("reason") == "close_requested", short(event))
                    break
    checks.check("the caller heard (input transcript on the sideband)", "paris" in heard.lower() or "weather" in heard.lower(), repr(heard))
    checks.check("the front answered the caller (its reply's usage on the sideband)", replied, ", ".join(seen[-20:]))
    checks.check("the application's commentary said on the call", "sunny in paris" in spoken.lower(), repr(spoken))
    checks.check("the sideband's fixture played on the call (playing, then played)", fixture == ["asked", "playing", "played"], repr(fixture))
    checks.check("every sideband event validates against the SDK's ConnectServerEvent models", not problems, "; ".join(problems[:5]))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--secret-file", required=True)
    parser.add_argument("--timeout", type=float, default=90)
    args = parser.parse_args()
    with open(args.secret_file) as file:
        secret = file.read().strip()
    checks = Checks()
    client = OpenAI(base_url=args.base_url, max_retries=0)
    incoming: list[str] = []
    arrived = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {name.lower(): value for name, value in self.headers.items()}
            try:
                event = client.webhooks.unwrap(body, headers, secret=secret)
                LiveTransportIncomingWebhookEvent.model_validate(json.loads(body))
                ok = event.type == "live.transport.incoming" and event.data.type == "sip" and event.data.session_id.startswith("sess_")
            except Exception as error:  # noqa: BLE001 (any failure is the check's)
                checks.check("the webhook verifies and validates", False, f"{type(error).__name__}: {error}")
                ok = False
            self.send_response(200 if ok else 400)
            self.send_header("Content-Length", "0")
            self.end_headers()
            if ok and not incoming:
                checks.check("live.transport.incoming verified by client.webhooks.unwrap and validated", True, event.data.session_id)
                incoming.append(event.data.session_id)
                arrived.set()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"note listening on {args.port}", flush=True)
    if not arrived.wait(args.timeout):
        checks.check("the call's webhook arrived", False)
        return 1
    try:
        asyncio.run(run_call(incoming[0], args.base_url, checks, args.timeout))
    except Exception as error:  # noqa: BLE001
        checks.check("the Live call", False, f"{type(error).__name__}: {error}")
    server.shutdown()
    print(f"live sip app: {checks.passed} passed, {checks.failed} failed", flush=True)
    return 0 if checks.failed == 0 and checks.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
