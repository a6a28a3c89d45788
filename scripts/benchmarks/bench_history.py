#!/usr/bin/env python3
"""What a session's conversation history costs: SESSIONS sessions on one server, each given
MESSAGES text items (conversation.item.create, no responses) of about BYTES bytes each, then the
server's resident memory and its accounted bytes (parley_accounted_bytes) read against the same
sessions idle. Prints one JSON line. Standard library only: a bare RFC 6455 client.

    bench_history.py PORT [SESSIONS] [MESSAGES] [BYTES]
"""
import json, os, random, socket, struct, sys, time, urllib.request

port = int(sys.argv[1])
sessions = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
messages = int(sys.argv[3]) if len(sys.argv) > 3 else 64
size = int(sys.argv[4]) if len(sys.argv) > 4 else 94
words = "the a of to and in is you that it he was for on are as with his they at be this have from or one had by word but not what all were we when your can said there use an each which she do how their if will up other about out many then them these so some her would make like him into time has look two more write go see number no way could people my than first been call who oil its now find long down day did get come made may part".split()


def frame(payload: bytes) -> bytes:
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n))
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def connect():
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /v1/realtime HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    reply = b""
    while b"\r\n\r\n" not in reply:
        reply += s.recv(4096)
    assert reply.startswith(b"HTTP/1.1 101"), reply[:80]
    return s


def drain(s, until_bytes):
    """Reads (and drops) what the server sent, for at least `until_bytes` bytes or a quiet 2 s."""
    s.settimeout(2)
    got = 0
    try:
        while got < until_bytes:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            got += len(chunk)
    except socket.timeout:
        pass


def metric(name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024


pid = int(os.environ["SERVER_PID"])
random.seed(7)
socks = [connect() for _ in range(sessions)]
for s in socks:
    drain(s, 1)
time.sleep(1)
idle_rss, idle_acc = rss(pid), metric("parley_accounted_bytes")
text_bytes = 0
for s in socks:
    batch = b""
    for _ in range(messages):
        text = ""
        while len(text) < size:
            text += random.choice(words) + " "
        text = text[:size]
        text_bytes += len(text)
        event = {"type": "conversation.item.create", "item": {"type": "message", "role": random.choice(["user", "assistant"]),
                                                              "content": [{"type": "input_text" if random.random() < 0.5 else "text", "text": text}]}}
        if event["item"]["role"] == "assistant":
            event["item"]["content"][0]["type"] = "output_text"
        batch += frame(json.dumps(event).encode())
    s.sendall(batch)
for s in socks:
    drain(s, messages * 2 * 200)
time.sleep(1)
full_rss, full_acc = rss(pid), metric("parley_accounted_bytes")
per_text = text_bytes / sessions
print(json.dumps({"sessions": sessions, "messages": messages, "text_bytes_per_session": round(per_text),
                  "resident_bytes_per_session": round((full_rss - idle_rss) / sessions),
                  "accounted_bytes_per_session": round((full_acc - idle_acc) / sessions),
                  "resident_over_text": round((full_rss - idle_rss) / sessions / per_text, 2),
                  "accounted_over_text": round((full_acc - idle_acc) / sessions / per_text, 2)}))
for s in socks:
    s.close()
