#!/usr/bin/env python3
"""Sessions of one kind held on a Parley server, for bench-density.sh: `text` sessions (open, send
nothing), `mic` sessions (a live microphone with no speech: 20 ms pcm16 24 kHz frames of faint
noise, about -66 dBFS, `input_audio_buffer.append`, at real-time pace) or `room` sessions (the same
with a room's noise, about -46 dBFS: loud enough that every window goes to the VAD model). Opens COUNT on /v1/realtime, holds them for
SECONDS, and prints one JSON line: sessions opened, refusals, frames sent, its own CPU seconds.
`live-text` and `live-mic` are the same on GPT-Live's /v1/live/sessions: each session started with
`session.start` (audio/pcm at 24 kHz), the microphone's frames as `session.input_audio.append`.
One thread, non-blocking sockets; WebSocket framing by hand (RFC 6455 §5.2, masked client frames)."""
import base64, json, os, random, select, socket, struct, sys, time

def frame(payload, opcode=0x1):
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536
                                     else bytes([0x80 | 127]) + struct.pack(">Q", n))
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))

def main():
    port, kind, count, seconds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    rng = random.Random(7)
    # Noise, no speech: no turn and no model work beyond the VAD.
    level = 300 if kind == "room" else 30
    live = kind.startswith("live-")
    frames = []
    for _ in range(50):
        pcm = struct.pack("<480h", *(rng.randint(-level, level) for _ in range(480)))
        event = json.dumps({"type": "session.input_audio.append" if live else "input_audio_buffer.append", "audio": base64.b64encode(pcm).decode()}).encode()
        frames.append(frame(event))
    start_event = frame(json.dumps({"type": "session.start", "session": {
        "model": "gpt-live-1", "audio": {"format": {"type": "audio/pcm", "rate": 24000}}}}).encode())
    socks, refused = [], 0
    for i in range(count):
        s = socket.create_connection(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall(f"GET {'/v1/live/sessions' if live else '/v1/realtime'} HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
        head = s.recv(4096)
        if not head.startswith(b"HTTP/1.1 101"):
            refused += 1
            s.close()
            continue
        if live:
            s.sendall(start_event)
        s.setblocking(False)
        socks.append(s)
    start = time.monotonic()
    cpu = time.process_time()
    sent, tick = 0, 0
    while time.monotonic() - start < seconds:
        readable, _, _ = select.select(socks, [], [], 0)
        for s in readable:
            try:
                s.recv(65536)
            except OSError:
                pass
        if kind in ("mic", "room", "live-mic"):
            for n, s in enumerate(socks):
                try:
                    s.send(frames[(tick + n) % len(frames)])
                    sent += 1
                except OSError:
                    pass
        tick += 1
        delay = start + tick * 0.020 - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    print(json.dumps({"kind": kind, "opened": len(socks), "refused": refused, "frames": sent,
                      "client_cpu_seconds": round(time.process_time() - cpu, 2), "seconds": round(time.monotonic() - start, 1)}), flush=True)
    # Held until told to go (stdin closes), so the server's figures are read with the sessions open.
    sys.stdin.read()

if __name__ == "__main__":
    main()
