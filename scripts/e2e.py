#!/usr/bin/env python3
"""End-to-end test of the browser client: headless Chromium opens Parley's page with a fake
microphone that plays a sentence spoken by espeak-ng, and the test checks, over Chrome's DevTools
protocol, that the user's words and the agent's reply appear on the page.

    scripts/e2e.py --url http://127.0.0.1:PORT --wav speech.wav [--screenshot docs/screenshot.png]

Chromium reaches nothing off this machine: a fresh profile, every non-loopback request sent to a
dead local proxy (127.0.0.1:9), background traffic off, and alternate error pages off in the
profile. Standard library only (the DevTools WebSocket client is below). Exit 0 when the page
shows both, 1 when it does not (with what it showed), 2 when Chromium could not be driven.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request


class DevTools:
    """A minimal WebSocket client for Chrome's DevTools protocol: text frames, masked, in order."""

    def __init__(self, url: str) -> None:
        rest = url.split("://", 1)[1]
        hostport, path = rest.split("/", 1)
        host, port = hostport.split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise RuntimeError("DevTools closed the connection during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"DevTools refused the WebSocket: {head[:200]!r}")
        self.buffer = head.split(b"\r\n\r\n", 1)[1]
        self.next_id = 0

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("DevTools closed the connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def _frame(self) -> tuple[int, bytes]:
        b0, b1 = self._read(2)
        length = b1 & 0x7F
        if length == 126:
            length = struct.unpack(">H", self._read(2))[0]
        elif length == 127:
            length = struct.unpack(">Q", self._read(8))[0]
        return b0 & 0x0F, self._read(length)

    def _message(self) -> dict:
        data = b""
        while True:
            opcode, payload = self._frame()
            if opcode == 8:
                raise RuntimeError("DevTools closed the session")
            if opcode in (0, 1):
                data += payload
                return json.loads(data)

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        payload = json.dumps(message).encode()
        mask = os.urandom(4)
        header = bytes([0x81])
        if len(payload) < 126:
            header += bytes([0x80 | len(payload)])
        elif len(payload) < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", len(payload))
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", len(payload))
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)
        while True:
            reply = self._message()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})


def find_chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("e2e: no chromium on PATH (Debian: apt-get install chromium; make e2e installs it)")


def launch(profile: str, wav: str) -> subprocess.Popen:
    os.makedirs(os.path.join(profile, "Default"), exist_ok=True)
    with open(os.path.join(profile, "Default", "Preferences"), "w") as prefs:
        json.dump({"alternate_error_pages": {"enabled": False}}, prefs)
    flags = [
        "--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}", "--remote-debugging-port=0",
        "--remote-debugging-address=127.0.0.1", "--no-first-run", "--no-default-browser-check",
        # Nothing leaves the machine.
        "--proxy-server=http://127.0.0.1:9", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-pings", "--disable-domain-reliability", "--disable-features=OptimizationHints,MediaRouter",
        # The microphone is the WAV file, granted without a prompt; audio may play without a gesture.
        "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream", f"--use-file-for-fake-audio-capture={wav}",
        "--autoplay-policy=no-user-gesture-required",
        "about:blank",
    ]
    return subprocess.Popen([find_chromium(), *flags], stdout=subprocess.DEVNULL, stderr=open(os.path.join(profile, "chromium.log"), "w"))


def devtools_port(profile: str, chromium: subprocess.Popen) -> int:
    path = os.path.join(profile, "DevToolsActivePort")
    for _ in range(300):
        if chromium.poll() is not None:
            raise RuntimeError(f"chromium exited with {chromium.returncode}; see {profile}/chromium.log")
        if os.path.exists(path):
            lines = open(path).read().split()
            if lines:
                return int(lines[0])
        time.sleep(0.1)
    raise RuntimeError("chromium did not open its DevTools port within 30 s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the Parley server, e.g. http://127.0.0.1:8080")
    parser.add_argument("--wav", required=True, help="the fake microphone's audio (WAV)")
    parser.add_argument("--screenshot", help="write a PNG of the page once the reply is there")
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for the words and the reply")
    args = parser.parse_args()

    profile = tempfile.mkdtemp(prefix="parley-e2e-")
    chromium = launch(profile, os.path.abspath(args.wav))
    try:
        port = devtools_port(profile, chromium)
        version = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=10))
        tools = DevTools(version["webSocketDebuggerUrl"])
        target = tools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = tools.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        tools.call("Page.enable", session=session)
        tools.call("Emulation.setDeviceMetricsOverride", {"width": 1000, "height": 760, "deviceScaleFactor": 1, "mobile": False}, session=session)
        tools.call("Page.navigate", {"url": args.url.rstrip("/") + "/?autostart=1"}, session=session)

        probe = """JSON.stringify({
            state: document.getElementById('state')?.textContent,
            notice: document.getElementById('notice')?.textContent,
            user: [...document.querySelectorAll('.turn.user .text')].map(e => e.textContent),
            agent: [...document.querySelectorAll('.turn.agent .text')].map(e => e.textContent)})"""
        deadline = time.time() + args.timeout
        seen: dict = {}
        while time.time() < deadline:
            result = tools.call("Runtime.evaluate", {"expression": probe, "returnByValue": True}, session=session)
            seen = json.loads(result.get("result", {}).get("value") or "{}")
            heard = any("weather" in text.lower() for text in seen.get("user", []))
            answered = any(len(text.strip()) > 5 for text in seen.get("agent", []))
            if heard and answered:
                break
            time.sleep(0.5)
        else:
            print(f"e2e: FAIL: within {args.timeout:.0f} s the page showed {json.dumps(seen)}")
            return 1
        # Let the reply stream a little further for the picture.
        time.sleep(1.5)
        if args.screenshot:
            shot = tools.call("Page.captureScreenshot", {"format": "png"}, session=session)
            with open(args.screenshot, "wb") as out:
                out.write(base64.b64decode(shot["data"]))
        print(f"e2e: PASS: the page heard {seen['user']!r} and showed the reply {seen['agent'][0][:80]!r}")
        return 0
    except Exception as error:  # noqa: BLE001 - any failure to drive the browser is reported as such
        print(f"e2e: could not drive chromium: {error}")
        return 2
    finally:
        chromium.terminate()
        try:
            chromium.wait(timeout=10)
        except subprocess.TimeoutExpired:
            chromium.kill()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
