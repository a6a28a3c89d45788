"""Drives Parley with the `websockets` package and urllib, and reads every output for a secret (issue 41).

No secret in any output (issue 41): a server holding every kind of secret Parley takes (an
upstream key, client and operator keys, a JWT secret, a signing key, a Twilio token, an OTLP
collector's key) and minting the rest (client secrets, resume tokens), at --log-level debug with
tracing, recording and reports on, is driven down every path that handles one: an upstream that
answers 401 quoting the key it was sent (as OpenAI-compatible servers do), sessions opened with a
key, a subprotocol key, a minted client secret and an HS256 JWT, a resume, a wrong key, a wrong
token, a forged Twilio signature, a report read with the operator's key. Then every byte the server
wrote (stderr, the OTLP payloads, the report, the recordings, /metrics) and every event a client
got that is not the secret's own delivery to its owner is searched for each secret and its parts.
Run twice: an upstream key of OpenAI's shape, and one of no known shape. Exit 0 when every check
passes, 1 when one fails, 2 when setup fails."""
import asyncio
import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import websockets

from checks import Checks  # scripts/tests/checks.py, beside this file

PARLEY = sys.argv[1]
checks = Checks()
check = checks.check
otlp_payloads: list[bytes] = []
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    """The OTLP collector (payloads kept as raw bytes: a string in protobuf is its UTF-8) and an
    upstream that refuses the key it was sent, quoting it whole and in its Authorization header."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/v1/traces":
            with lock:
                otlp_payloads.append(body)
            self.answer(200, b"", "application/x-protobuf")
        elif self.path == "/v1/chat/completions":
            sent = self.headers.get("Authorization", "")
            key = sent.removeprefix("Bearer ")
            said = {"error": {"message": f"Incorrect API key provided: {key}. You sent '{sent}'.", "type": "invalid_request_error",
                              "code": "invalid_api_key"}}
            self.answer(401, json.dumps(said).encode(), "application/json")
        else:
            self.answer(404, b"", "text/plain")

    def answer(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def parts(secret: str) -> list[str]:
    """The secret and its obvious parts: the pieces between separators, 8 characters or longer."""
    return [secret] + [p for p in re.split(r"[-_.:\s]", secret) if len(p) >= 8 and p != secret]


def jwt(secret: bytes, claims: dict) -> str:
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    signed = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + "." + b64(json.dumps(claims).encode())
    return signed + "." + b64(hmac.new(secret, signed.encode(), hashlib.sha256).digest())


def http(port: int, method: str, path: str, key: str | None, body: dict | None = None) -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


async def events_until(ws, kind: str, seconds: float = 10) -> list[dict]:
    got = []
    while True:
        event = json.loads(await asyncio.wait_for(ws.recv(), seconds))
        got.append(event)
        if event["type"] == kind:
            return got


async def refused(url: str, **options) -> int:
    try:
        async with websockets.connect(url, **options):
            return 101
    except websockets.exceptions.InvalidStatus as error:
        return error.response.status_code


async def drive(port: int, keys: dict) -> dict:
    """Every path that handles a secret; returns what the clients were given to keep (their own
    secrets' deliveries, not searched) and what they were told otherwise (searched)."""
    base = f"ws://127.0.0.1:{port}"
    bearer = {"Authorization": f"Bearer {keys['client']}"}
    told, kept = [], []
    # A resumable session asks for a reply; the upstream refuses the key and quotes it.
    ws = await websockets.connect(base + "/v1/realtime?resume=1", additional_headers=bearer)
    first = await events_until(ws, "session.created")
    session_id = first[-1]["session"]["id"]
    await ws.send(json.dumps({"type": "session.update", "session": {"type": "realtime", "recording": True}}))
    # A second of quiet audio, so the recording has something to hold.
    chunk = base64.b64encode(bytes(960)).decode()  # 20 ms of 24 kHz pcm16
    for _ in range(50):
        await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": chunk}))
    await ws.send(json.dumps({"type": "conversation.item.create", "item": {"type": "message", "role": "user",
                              "content": [{"type": "input_text", "text": "hello"}]}}))
    await ws.send(json.dumps({"type": "response.create", "response": {"output_modalities": ["text"]}}))
    events = first + await events_until(ws, "response.done")
    # The connection drops (no close frame): the session waits for its resume.
    ws.transport.abort()
    token = next((e for e in events if e["type"] == "session.resume_token"), None)
    kept += [e for e in events if e["type"] == "session.resume_token"]
    told += [e for e in events if e["type"] != "session.resume_token"]
    errors = [e for e in events if e["type"] == "error"]
    check("the upstream's 401 reached the client as an error, its key scrubbed",
          any("Incorrect API key provided: [redacted]" in e["error"]["message"] for e in errors), json.dumps(errors)[:400])
    # The session resumes with its token (the old socket is gone); a forged token is refused.
    if token:
        async with websockets.connect(f"{base}/v1/realtime?resume_token={token['token']}&last_seq={token['last_seq']}", additional_headers=bearer) as ws:
            resumed = await events_until(ws, "session.resumed")
            kept += [e for e in resumed if e["type"] == "session.resume_token"]
            told += [e for e in resumed if e["type"] != "session.resume_token"]
            await ws.send(json.dumps({"type": "session.update", "session": {"type": "realtime", "recording": False}}))
    check("a resume token was minted and used", token is not None)
    forged = "rt_" + base64.urlsafe_b64encode(os.urandom(18)).decode()
    keys["forged resume token"] = forged
    async with websockets.connect(f"{base}/v1/realtime?resume_token={forged}&last_seq=0", additional_headers=bearer) as ws:
        told += await events_until(ws, "error")
    # A client secret, minted with the key and used as a browser would (subprotocol).
    status, body = http(port, "POST", "/v1/realtime/client_secrets", keys["client"], {"session": {"type": "realtime"}})
    minted = json.loads(body).get("value", "") if status == 200 else ""
    check("a client secret was minted", minted.startswith("ek_"), f"{status} {body[:200]}")
    keys["client secret"] = minted
    async with websockets.connect(base + "/v1/realtime", subprotocols=["realtime", f"openai-insecure-api-key.{minted}"]) as ws:
        told += await events_until(ws, "session.created")
    # The client's key as a subprotocol, an HS256 JWT, and the wrong ones.
    async with websockets.connect(base + "/v1/realtime", subprotocols=["realtime", f"openai-insecure-api-key.{keys['client']}"]) as ws:
        told += await events_until(ws, "session.created")
    token_jwt = jwt(keys["jwt secret"].encode(), {"sub": "user-1", "exp": int(time.time()) + 300})
    keys["client JWT"] = token_jwt
    async with websockets.connect(base + "/v1/realtime", additional_headers={"Authorization": f"Bearer {token_jwt}"}) as ws:
        told += await events_until(ws, "session.created")
    wrong = "bad-" + secrets.token_hex(12)
    keys["a wrong key a client tried"] = wrong
    check("a wrong key is refused", await refused(base + "/v1/realtime", additional_headers={"Authorization": f"Bearer {wrong}"}) == 401)
    forged_jwt = jwt(b"not-the-secret-not-the-secret-not-the-secret", {"sub": "user-2", "exp": int(time.time()) + 300})
    keys["a forged JWT"] = forged_jwt
    check("a forged JWT is refused", await refused(base + "/v1/realtime", additional_headers={"Authorization": f"Bearer {forged_jwt}"}) == 401)
    check("a forged Twilio signature is refused",
          await refused(base + "/twilio", additional_headers={"X-Twilio-Signature": base64.b64encode(os.urandom(20)).decode()}) == 403)
    # The finished session's report, read with the operator's key.
    report = ""
    for _ in range(50):
        status, report = http(port, "GET", f"/v1/sessions/{session_id}", keys["operator"])
        if status == 200:
            break
        await asyncio.sleep(0.2)
    check("the session's report was read with the operator's key", status == 200, f"{status} {report[:200]}")
    _, metrics = http(port, "GET", "/metrics", None)
    return {"told": json.dumps(told), "kept": kept, "report": report, "metrics": metrics}


def run(upstream_key: str, upstream_port: int) -> None:
    print(f"-- an upstream key shaped {upstream_key[:11]}…")
    folder = tempfile.mkdtemp(prefix="parley-secrets-")
    # Prefixes under 8 characters: the parts searched for are the random ones.
    keys = {"upstream": upstream_key, "client": "cli-" + secrets.token_hex(16), "operator": "op-" + secrets.token_hex(16),
            "jwt secret": "jwt-" + secrets.token_hex(20), "signing key": "sig-" + secrets.token_hex(20),
            "twilio token": secrets.token_hex(16), "collector key": "col-" + secrets.token_hex(12)}
    files = {}
    for name, field in [("api-keys", "client"), ("operator-keys", "operator"), ("jwt", "jwt secret"), ("signing", "signing key"), ("twilio", "twilio token")]:
        files[name] = os.path.join(folder, name)
        with open(files[name], "w") as out:
            # Key files are lines; a JWT secret's and a signing key's files are their bytes.
            out.write(keys[field] + ("" if name in ("jwt", "signing") else "\n"))
    os.mkdir(os.path.join(folder, "recordings"))
    env = {**os.environ, "PARLEY_TEST_UPSTREAM_KEY": upstream_key, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{upstream_port}",
           "OTEL_EXPORTER_OTLP_HEADERS": f"x-collector-key={keys['collector key']}", "OTEL_BSP_SCHEDULE_DELAY": "200"}
    args = [PARLEY, "serve", "--port", "0", "--loops", "1", "--log-level", "debug", "--llm", "openai",
            "--llm-base-url", f"http://127.0.0.1:{upstream_port}/v1", "--llm-model", "m", "--llm-api-key-env", "PARLEY_TEST_UPSTREAM_KEY",
            "--transcriber", "none", "--synthesizer", "none", "--turn-model", "none", "--vad", "energy",
            "--api-keys", files["api-keys"], "--operator-keys", files["operator-keys"], "--jwt-secret-file", files["jwt"],
            "--signing-key-file", files["signing"], "--twilio-auth-token-file", files["twilio"],
            "--recordings", os.path.join(folder, "recordings"), "--store", "sqlite:" + os.path.join(folder, "store.sqlite")]
    stderr_path = os.path.join(folder, "stderr")
    with open(stderr_path, "w") as stderr:
        process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        line = process.stdout.readline()
        match = re.search(r"127\.0\.0\.1:(\d+)/", line)
        if not match:
            print("setup: parley did not listen: " + line + open(stderr_path).read()[-2000:], file=sys.stderr)
            sys.exit(2)
        seen = asyncio.run(asyncio.wait_for(drive(int(match.group(1)), keys), 90))
        time.sleep(1)  # the last spans' export (OTEL_BSP_SCHEDULE_DELAY 200 ms)
    finally:
        process.terminate()
        process.wait(15)
    written = {"stderr": open(stderr_path, "rb").read(), "the OTLP payloads": b"".join(otlp_payloads),
               "the session report": seen["report"].encode(), "/metrics": seen["metrics"].encode(),
               "the events clients were told": seen["told"].encode()}
    recordings = os.path.join(folder, "recordings")
    for root, _, names in os.walk(recordings):
        for name in names:
            written[f"recording {name}"] = open(os.path.join(root, name), "rb").read()
    check("the log says the model call failed", b"model call failed" in written["stderr"])
    check("spans were exported", len(written["the OTLP payloads"]) > 0)
    check("a recording was written", any(k.startswith("recording ") for k in written), str(sorted(written)))
    resume_tokens = [e["token"] for e in seen["kept"]]
    for name, secret in list(keys.items()) + [(f"resume token {i + 1}", t) for i, t in enumerate(resume_tokens)]:
        for piece in parts(secret):
            places = [where for where, data in written.items() if piece.encode() in data]
            check(f"the {name}{'' if piece == secret else ' (a part of it)'} is in no output", not places, f"found in {places}" if places else "")
    with lock:
        otlp_payloads.clear()


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    run("sk-proj-" + secrets.token_hex(20), port)
    run("vllm-token-" + secrets.token_hex(12), port)
    server.shutdown()
    print(f"secrets: {'all checks passed' if checks.failed == 0 else f'{checks.failed} failed'}")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
