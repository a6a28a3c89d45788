"""Drives the `openai` SDK (a client nobody here wrote): the application behind Parley's SIP webhook.

The application behind Parley's SIP webhook, as OpenAI's SIP guide has one write it with the
official `openai` Python SDK: an HTTP endpoint takes `realtime.call.incoming`, checks its Standard
Webhooks signature with `client.webhooks.unwrap` and the `whsec_` secret, and decides the call
through call control (`client.realtime.calls.accept|reject|refer|hangup`), watching a call's
session on its sideband WebSocket (`client.realtime.connect(call_id=...)`).

Run by scripts/tests/sip_calls.py (the phone), which reads what it does on stdout, one JSON object
a line, and tells it on stdin when to act on a call: `hangup CALL_ID`, `refer CALL_ID URI`.
It decides each call by the user its INVITE's To names:

    keys      accepted with instructions; the sideband attached (session.update, then every event)
    transfer  accepted; referred when told
    reject    rejected with 486 Busy Here
    ring      left ringing (the caller cancels)
    unheard   the webhook answered 503 (not taken): Parley refuses the call 480 at once
    silent    the webhook taken, the call never decided: Parley refuses it 480 after 20 s
    anything else: accepted

    .venv-sdk/bin/python sip_application.py --base-url http://127.0.0.1:PORT/v1 --port N --secret-file FILE

The API key (the server's) comes from OPENAI_API_KEY. Every event on a sideband is validated
against the SDK's own model for its type; a mismatch is reported as `shape`.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import typing
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import pydantic
from openai import OpenAI
from openai.types.realtime import RealtimeServerEvent
from openai.types.webhooks import RealtimeCallIncomingWebhookEvent

INSTRUCTIONS = "You answer the phone for the SIP test. Be brief."
write_lock = threading.Lock()


def say(**fields: Any) -> None:
    """One line for the phone."""
    with write_lock:
        print(json.dumps(fields), flush=True)


def models_by_type() -> dict[str, type[pydantic.BaseModel]]:
    union = RealtimeServerEvent
    inner = typing.get_args(union)[0] if typing.get_origin(union) is typing.Annotated else union
    table: dict[str, type[pydantic.BaseModel]] = {}
    for cls in typing.get_args(inner):
        for literal in typing.get_args(cls.model_fields["type"].annotation):
            table[literal] = cls
    return table


MODELS = models_by_type()


def shape_error(data: dict[str, Any]) -> str | None:
    model = MODELS.get(data.get("type"))
    if model is None:
        return f"{data.get('type')!r} is not an event type this SDK knows"
    try:
        model.model_validate(data)
    except pydantic.ValidationError as error:
        return f"{data.get('type')}: " + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()[:4])
    return None


def to_user(sip_headers: list[Any]) -> str:
    for header in sip_headers:
        if header.name.lower() == "to":
            found = re.search(r"sips?:([^@;>]+)@", header.value)
            return found.group(1) if found else ""
    return ""


class Application:
    def __init__(self, client: OpenAI, secret: str) -> None:
        self.client = client
        self.secret = secret
        self.tamper_checked = False

    # The webhook: on the HTTP server's thread.
    def webhook(self, body: bytes, headers: dict[str, str]) -> int:
        try:
            event = self.client.webhooks.unwrap(body, headers, secret=self.secret)
        except openai.InvalidWebhookSignatureError as error:
            say(event="bad-signature", error=str(error))
            return 400
        if not self.tamper_checked:
            # The check means something: one byte changed and the same headers no longer verify.
            self.tamper_checked = True
            tampered = body.replace(b"realtime.call.incoming", b"realtime.call.incominG", 1)
            try:
                self.client.webhooks.verify_signature(tampered, headers, secret=self.secret)
                say(event="tamper-accepted")
            except openai.InvalidWebhookSignatureError:
                say(event="tamper-refused")
        if event.type != "realtime.call.incoming":
            say(event="unexpected", type=event.type)
            return 200
        # unwrap builds the event without validating it: the SDK's model must take it as it is.
        try:
            RealtimeCallIncomingWebhookEvent.model_validate(json.loads(body))
        except pydantic.ValidationError as error:
            say(event="webhook-shape", call_id=event.data.call_id, problem=str(error.errors()[:3]))
        call_id = event.data.call_id
        user = to_user(event.data.sip_headers)
        # OpenAI's event leaves out the INVITE's authorization headers (a digest answer is the
        # trunk's, not the application's to see).
        credentials = [h.name for h in event.data.sip_headers if h.name.lower() in ("authorization", "proxy-authorization")]
        say(event="webhook", call_id=call_id, user=user, webhook_id=headers.get("webhook-id"), headers=len(event.data.sip_headers),
            credentials=credentials)
        if user == "unheard":
            say(event="webhook-refused", call_id=call_id, user=user)
            return 503
        if user != "silent":
            threading.Thread(target=self.decide, args=(call_id, user), daemon=True).start()
        return 200

    def decide(self, call_id: str, user: str) -> None:
        calls = self.client.realtime.calls
        try:
            if user == "reject":
                calls.reject(call_id, status_code=486)
                say(event="rejected", call_id=call_id, user=user)
            elif user == "ring":
                say(event="ringing", call_id=call_id, user=user)
            else:
                calls.accept(call_id, type="realtime", instructions=INSTRUCTIONS)
                say(event="accepted", call_id=call_id, user=user)
                if user == "keys":
                    self.sideband(call_id, user)
        except Exception as error:  # noqa: BLE001
            say(event="error", call_id=call_id, user=user, during="decide", error=f"{type(error).__name__}: {error}")

    def sideband(self, call_id: str, user: str) -> None:
        with self.client.realtime.connect(call_id=call_id, max_retries=0) as conn:
            # What accept set shows in the session: an update that changes nothing echoes it.
            conn.session.update(session={"type": "realtime"})
            say(event="sideband-open", call_id=call_id, user=user)
            spoken: dict[str, str] = {}
            told: set[str] = set()
            try:
                while True:
                    data = json.loads(conn.recv_bytes())
                    kind = data.get("type")
                    problem = shape_error(data)
                    if problem:
                        say(event="shape", call_id=call_id, problem=problem)
                    if kind == "input_audio_buffer.dtmf_event_received":
                        say(event="dtmf", call_id=call_id, key=data.get("event"), received_at=data.get("received_at"))
                    elif kind == "session.updated":
                        say(event="session-updated", call_id=call_id, instructions=data["session"].get("instructions"))
                    elif kind == "conversation.item.done" and (data.get("item") or {}).get("role") == "user":
                        texts = [c.get("text") or c.get("transcript") or "" for c in data["item"].get("content") or []]
                        say(event="user-item", call_id=call_id, text=" ".join(texts))
                    elif kind == "response.output_audio_transcript.delta":
                        # The reply's words come as it is spoken: its first sentence, once whole.
                        said = spoken.get(data.get("response_id"), "") + (data.get("delta") or "")
                        spoken[data.get("response_id")] = said
                        if re.search(r"[.?!][\"']?(\s|$)", said) and data.get("response_id") not in told:
                            told.add(data.get("response_id"))
                            say(event="reply-sentence", call_id=call_id, text=said.strip())
                    elif kind == "response.done":
                        response = data.get("response") or {}
                        spoken = [c.get("transcript") or c.get("text") or "" for item in response.get("output") or [] for c in item.get("content") or []]
                        say(event="response-done", call_id=call_id, status=response.get("status"), transcript=" ".join(spoken))
                    elif kind == "error":
                        say(event="session-error", call_id=call_id, error=data.get("error"))
            except Exception as error:  # noqa: BLE001 -- the call ended: Parley closes its sidebands
                say(event="sideband-closed", call_id=call_id, how=type(error).__name__)

    # Commands from the phone: on the main thread.
    def command(self, line: str) -> None:
        words = line.split()
        if not words:
            return
        try:
            if words[0] == "hangup":
                self.client.realtime.calls.hangup(words[1])
                say(event="hung-up", call_id=words[1])
            elif words[0] == "refer":
                self.client.realtime.calls.refer(words[1], target_uri=words[2])
                say(event="referred", call_id=words[1], target=words[2])
            else:
                say(event="error", during="command", error=f"unknown command {line!r}")
        except Exception as error:  # noqa: BLE001
            say(event="error", during=words[0], call_id=words[1] if len(words) > 1 else None, error=f"{type(error).__name__}: {error}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--port", type=int, required=True, help="where the webhook is served (127.0.0.1)")
    parser.add_argument("--secret-file", required=True, help="the whsec_ secret Parley signs with")
    args = parser.parse_args()
    with open(args.secret_file) as file:
        secret = file.read().strip()
    client = OpenAI(base_url=args.base_url, timeout=10, max_retries=0)
    app = Application(client, secret)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status = app.webhook(body, {name.lower(): value for name, value in self.headers.items()})
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    say(event="listening", port=server.server_address[1])
    for line in sys.stdin:  # until the phone closes stdin
        app.command(line)
    server.shutdown()


if __name__ == "__main__":
    main()
