"""Not a load client: an OTLP/HTTP collector that only counts what Parley exports (`make bench-tracing`).

An OTLP/HTTP collector that only counts: it reads each export request whole and answers 200,
so a benchmark measures what exporting costs Parley, not what decoding costs a collector. Prints
its port first, then, on SIGTERM, the requests and bytes it took."""
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

requests = 0
received = 0
lock = threading.Lock()


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        global requests, received
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            requests += 1
            received += len(body)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print(server.server_address[1], flush=True)


def stop(*_) -> None:
    print(f"otlp-sink: {requests} export requests, {received} bytes", flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
server.serve_forever()
