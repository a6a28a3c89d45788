#!/usr/bin/env python3
"""Not a load client: a relay that stands in the speech helper's place and counts the bytes each way.

Counts the bytes between Parley and its speech helper, for
scripts/benchmarks/bench-speech-helper.sh: run in the helper's place (`parley serve --speech-helper
scripts/benchmarks/speech-helper-meter.py`), it starts the real helper (METER_HELPER, default
helpers/parley_speech.py) on a socket of its own, listens on the one the server gave, and relays
every connection, adding what crosses each way to METER_OUT ("to_helper from_helper", rewritten as
the totals change). No tracing of either process: strace on the helper slowed it until the
server's requests timed out."""

import os
import socket
import subprocess
import sys
import threading

arguments = sys.argv[1:]
path = arguments[arguments.index("--socket") + 1]
inner = path + ".inner"
out = os.environ.get("METER_OUT", "/tmp/speech-helper-meter.txt")
totals = {"to": 0, "from": 0}
lock = threading.Lock()


def pump(source, sink, key):
    while True:
        try:
            data = source.recv(65536)
        except OSError:
            data = b""
        if not data:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            return
        sink.sendall(data)
        with lock:
            totals[key] += len(data)
            with open(out + ".tmp", "w") as f:
                f.write(f"{totals['to']} {totals['from']}\n")
            os.replace(out + ".tmp", out)


listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    os.unlink(path)
except FileNotFoundError:
    pass
listener.bind(path)
listener.listen(64)
helper = arguments.copy()
helper[helper.index("--socket") + 1] = inner
child = subprocess.Popen([sys.executable, os.environ.get("METER_HELPER", "helpers/parley_speech.py")] + helper)
threading.Thread(target=lambda: os._exit(child.wait()), daemon=True).start()
while True:
    server, _ = listener.accept()
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    upstream.connect(inner)
    threading.Thread(target=pump, args=(server, upstream, "to"), daemon=True).start()
    threading.Thread(target=pump, args=(upstream, server, "from"), daemon=True).start()
