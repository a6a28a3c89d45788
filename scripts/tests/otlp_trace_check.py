"""Decodes Parley's traces with opentelemetry-proto (a collector's own messages, written by others).

The OTLP round trip (issue 28): a real OTLP/HTTP receiver that decodes what Parley exports with
the opentelemetry-proto package (the protobuf messages a collector reads), and an OpenAI-compatible
upstream that records the `traceparent` Parley sends it. One session whose upgrade carries a
`traceparent` asks a question and gets its answer (the upstream failing the first attempt);
then the checks: the session's span joins the
caller's trace, a turn span and the model call's span under it (model name, tokens in and out),
the upstream saw the model call's own span, the resource names the service, and no secret is in
any span. Then a server whose collector is down serves its session all the same and counts the
failed export. Exit 0 when every check passes, 1 when one fails, 2 when setup fails."""
import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import websockets
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from checks import Checks  # scripts/tests/checks.py, beside this file

PARLEY = sys.argv[1]
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
SECRET = "sk-otlp-test-secret"
spans: list[dict] = []
resources: list[dict] = []
upstream_traceparents: list[str] = []
lock = threading.Lock()
checks = Checks()
check = checks.check


def value(any_value) -> object:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/v1/traces":
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            with lock:
                for resource_spans in request.resource_spans:
                    resources.append({kv.key: value(kv.value) for kv in resource_spans.resource.attributes})
                    for scope in resource_spans.scope_spans:
                        for span in scope.spans:
                            spans.append({
                                "name": span.name, "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                                "parent": span.parent_span_id.hex(), "kind": span.kind,
                                "start": span.start_time_unix_nano, "end": span.end_time_unix_nano,
                                "attributes": {kv.key: value(kv.value) for kv in span.attributes},
                                "events": [event.name for event in span.events], "event_attributes": [{kv.key: value(kv.value) for kv in event.attributes} for event in span.events], "status": span.status.code,
                            })
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/v1/chat/completions":
            with lock:
                upstream_traceparents.append(self.headers.get("traceparent", ""))
                first = len(upstream_traceparents) == 1
            if first:
                # The first attempt fails as an overloaded upstream does: Parley tries again, and
                # the model call's span says so.
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            chunks = [{"choices": [{"delta": {"content": "Eighty-four."}, "finish_reason": None}]},
                      {"choices": [{"delta": {}, "finish_reason": "stop"}]},
                      {"choices": [], "usage": {"prompt_tokens": 21, "completion_tokens": 3}}]
            payload = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
            data = payload.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()


def start_parley(env: dict, port_of_upstream: int) -> tuple[subprocess.Popen, int]:
    args = [PARLEY, "serve", "--port", "0", "--loops", "1", "--llm", "openai", "--llm-base-url", f"http://127.0.0.1:{port_of_upstream}/v1",
            "--llm-model", "test-model", "--transcriber", "none", "--synthesizer", "none", "--turn-model", "none", "--vad", "energy"]
    process = subprocess.Popen(args, env={**os.environ, "OPENAI_API_KEY": SECRET, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    match = re.search(r"127\.0\.0\.1:(\d+)/", line)
    if not match:
        print("setup: parley did not listen: " + line + process.stderr.read(), file=sys.stderr)
        sys.exit(2)
    return process, int(match.group(1))


async def converse(port: int, traceparent: str | None) -> dict:
    headers = {"traceparent": traceparent} if traceparent else {}
    async with websockets.connect(f"ws://127.0.0.1:{port}/v1/realtime", additional_headers=headers) as ws:
        await ws.recv()  # session.created
        await ws.send(json.dumps({"type": "conversation.item.create", "item": {"type": "message", "role": "user",
                                  "content": [{"type": "input_text", "text": "what is twelve times seven"}]}}))
        await ws.send(json.dumps({"type": "response.create", "response": {"output_modalities": ["text"]}}))
        while True:
            event = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if event["type"] == "response.done":
                return event


def metric(port: int, name: str) -> float:
    import urllib.request
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return -1


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}", "OTEL_SERVICE_NAME": "parley-otlp-test",
           "OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_EXPORTER_OTLP_HEADERS": "x-collector-key=" + SECRET}
    parley, parley_port = start_parley(env, port)
    try:
        done = asyncio.run(converse(parley_port, f"00-{TRACE_ID}-{PARENT_ID}-01"))
        check("the session answered through the upstream", done["response"]["status"] == "completed", done["response"]["status"])
        deadline = time.time() + 10
        while time.time() < deadline:
            with lock:
                if any(s["name"] == "parley.session" for s in spans):
                    break
            time.sleep(0.1)
    finally:
        parley.terminate()
        parley.wait(10)
    with lock:
        by_name = {s["name"]: s for s in spans}
        session = by_name.get("parley.session")
        turn = by_name.get("parley.turn")
        chat = by_name.get("chat test-model")
        check("spans arrived, decoded by opentelemetry-proto", session is not None and turn is not None and chat is not None, str(sorted(by_name)))
        if not (session and turn and chat):
            sys.exit(1)
        check("the resource names the service", any(r.get("service.name") == "parley-otlp-test" for r in resources), str(resources[:1]))
        check("the session's span joins the caller's trace", session["trace_id"] == TRACE_ID and session["parent"] == PARENT_ID,
              f"{session['trace_id']} parent {session['parent']}")
        check("the session's span is a server span with its endpoint", session["kind"] == 2 and session["attributes"].get("parley.endpoint") == "/v1/realtime",
              str(session["attributes"]))
        check("the turn is the session's child", turn["parent"] == session["span_id"] and turn["trace_id"] == TRACE_ID)
        check("the model call is the turn's child, a client span", chat["parent"] == turn["span_id"] and chat["kind"] == 3)
        check("the model call names its model and tokens", chat["attributes"].get("gen_ai.request.model") == "test-model"
              and chat["attributes"].get("gen_ai.usage.input_tokens") == 21 and chat["attributes"].get("gen_ai.usage.output_tokens") == 3,
              str(chat["attributes"]))
        check("spans start before they end, the model call within the turn",
              all(s["start"] <= s["end"] for s in spans) and turn["start"] <= chat["start"] and chat["end"] <= turn["end"] + 1_000_000)
        sent = upstream_traceparents[-1] if upstream_traceparents else ""
        check("the upstream request carried the model call's traceparent", sent == f"00-{TRACE_ID}-{chat['span_id']}-01", sent)
        check("the failed first attempt is an event on the model call's span", chat["events"] == ["upstream_retry"] and len(upstream_traceparents) == 2
              and chat["event_attributes"][0].get("error.type") == "upstream_error",
              f"{chat['event_attributes']}, {len(upstream_traceparents)} upstream requests")
        blob = json.dumps(spans) + json.dumps(resources)
        check("no secret in any span", SECRET not in blob and "Bearer" not in blob)

    # A collector that is down: the session is served all the same, and the failure counted.
    down = {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    parley, parley_port = start_parley(down, port)
    try:
        done = asyncio.run(converse(parley_port, None))
        check("with the collector down, the session is served", done["response"]["status"] == "completed")
        deadline = time.time() + 5
        failed = -1.0
        while time.time() < deadline and failed < 1:
            failed = metric(parley_port, "parley_trace_export_failures_total")
            time.sleep(0.2)
        check("the failed export is counted", failed >= 1, f"parley_trace_export_failures_total {failed}")
    finally:
        parley.terminate()
        parley.wait(10)
    server.shutdown()
    print(f"otlp: {'all checks passed' if checks.failed == 0 else f'{checks.failed} failed'}")
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
