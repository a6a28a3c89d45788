"""No third-party client exists for a carrier's side: Twilio's, written here from its documented messages.

A simulated Twilio carrier: places calls on a Media Streams endpoint the way Twilio does.

Written from Twilio's documented messages (https://www.twilio.com/docs/voice/media-streams/
websocket-messages) and its request signature (webhooks security: base64 HMAC-SHA1 of the URL,
key = the auth token), not from Parley's code. It plays a phone: caller audio goes out as µ-law
media every 20 ms at real-time pace; the server's media is "played" at real-time pace too, each
mark echoed once the audio before it has played, and on `clear` the queue is dropped and the
pending marks echoed at once, as Twilio does.

    twilio_carrier.py --url ws://127.0.0.1:PORT/twilio --speech said.ulaw --metrics http://127.0.0.1:PORT/metrics

The auth token comes from TWILIO_AUTH_TOKEN. Prints one line per check; exit 1 on the first failure.
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import sys
import threading
import time
import urllib.request

from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

CHUNK = 160  # 20 ms of 8 kHz µ-law
SILENCE = b"\xff" * CHUNK  # µ-law's zero
TIMEOUT = float(os.environ.get("CARRIER_TIMEOUT", "20"))


def fail(message):
    print(f"twilio-carrier: FAILED: {message}", flush=True)
    sys.exit(1)


def ok(message):
    print(f"twilio-carrier: ok: {message}", flush=True)


def signature(token, url):
    return base64.b64encode(hmac.new(token.encode(), url.encode(), hashlib.sha1).digest()).decode()


class Call:
    """One call: the WebSocket, the phone's playback queue, and what the server sent."""

    def __init__(self, url, signed_url=None, token=None, headers=None):
        extra = dict(headers or {})
        if token is not None:
            extra["X-Twilio-Signature"] = signature(token, signed_url or url)
        self.ws = connect(url, additional_headers=extra, open_timeout=TIMEOUT, max_size=2**20)
        self.stream_sid = "MZ" + os.urandom(16).hex()
        self.call_sid = "CA" + os.urandom(16).hex()
        self.sequence = 0
        self.chunk = 0
        self.lock = threading.RLock()  # wait() holds it while its condition reads the media
        self.send_lock = threading.Lock()  # the main thread speaks while the player echoes marks
        self.media = []  # (arrival time, payload bytes) of the server's audio
        self.marks_received = []
        self.clears = 0
        self.closed = None  # (code, reason) once the server closed
        self.playing_until = 0.0  # when the queued audio will have played
        self.pending_marks = []  # (due time, name)
        self.played_ms = 0  # audio the phone has played in all
        self.played_at_clear = None
        self.errors = []
        self.receiver = threading.Thread(target=self.receive, daemon=True)
        self.receiver.start()
        self.player = threading.Thread(target=self.play, daemon=True)
        self.player.start()

    def send(self, message):
        with self.send_lock:
            self.sequence += 1
            message = dict(message)
            if message.get("event") != "connected":
                message.setdefault("sequenceNumber", str(self.sequence))
                message.setdefault("streamSid", self.stream_sid)
            self.ws.send(json.dumps(message))

    def send_raw(self, data):
        with self.send_lock:
            self.ws.send(data)

    def start(self, parameters=None, encoding="audio/x-mulaw", rate=8000):
        self.send({"event": "connected", "protocol": "Call", "version": "1.0.0"})
        self.send({"event": "start", "start": {
            "accountSid": "AC" + "0" * 32, "streamSid": self.stream_sid, "callSid": self.call_sid, "tracks": ["inbound"],
            "mediaFormat": {"encoding": encoding, "sampleRate": rate, "channels": 1},
            "customParameters": parameters or {}}})

    def speak(self, audio, pace=True):
        """Caller audio as Twilio sends it: 160-byte chunks, one every 20 ms."""
        started = time.monotonic()
        for i in range(0, len(audio), CHUNK):
            piece = audio[i:i + CHUNK].ljust(CHUNK, b"\xff")
            self.chunk += 1
            self.send({"event": "media", "media": {"track": "inbound", "chunk": str(self.chunk),
                                                    "timestamp": str(self.chunk * 20), "payload": base64.b64encode(piece).decode()}})
            if pace:
                delay = started + (i // CHUNK + 1) * 0.02 - time.monotonic()
                if delay > 0:
                    time.sleep(delay)

    def silence(self, seconds):
        self.speak(SILENCE * int(seconds * 50))

    def receive(self):
        try:
            for text in self.ws:
                now = time.monotonic()
                if isinstance(text, bytes):
                    self.errors.append("a binary frame from the server")
                    continue
                message = json.loads(text)
                event = message.get("event")
                with self.lock:
                    if message.get("streamSid") != self.stream_sid:
                        self.errors.append(f"{event} names streamSid {message.get('streamSid')!r}")
                    if event == "media":
                        payload = base64.b64decode(message["media"]["payload"])
                        self.media.append((now, payload))
                        self.playing_until = max(self.playing_until, now) + len(payload) / 8000
                    elif event == "mark":
                        name = message["mark"]["name"]
                        self.marks_received.append(name)
                        self.pending_marks.append((self.playing_until, name))
                    elif event == "clear":
                        self.clears += 1
                        # Twilio drops the queued audio and answers every pending mark at once.
                        self.played_at_clear = self.played_ms_now(now)
                        self.playing_until = now
                        for _, name in self.pending_marks:
                            self.echo(name)
                        self.pending_marks = []
                    else:
                        self.errors.append(f"unexpected event {event!r}")
        except ConnectionClosed as closed:
            self.closed = (closed.rcvd.code if closed.rcvd else 1006, closed.rcvd.reason if closed.rcvd else "")
            return
        self.closed = (self.ws.close_code, self.ws.close_reason)

    def played_ms_now(self, now):
        queued = max(0.0, self.playing_until - now)
        return int(sum(len(p) for _, p in self.media) / 8 - queued * 1000)

    def play(self):
        """Echoes each mark when the audio before it has played."""
        while self.closed is None:
            now = time.monotonic()
            with self.lock:
                due = [m for m in self.pending_marks if m[0] <= now]
                self.pending_marks = [m for m in self.pending_marks if m[0] > now]
                for _, name in due:
                    self.echo(name)
            time.sleep(0.005)

    def echo(self, name):
        try:
            self.send({"event": "mark", "mark": {"name": name}})
        except ConnectionClosed:
            pass

    def wait(self, condition, what, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if condition():
                    return
            if self.closed is not None and not condition():
                fail(f"{what}: the server closed the call ({self.closed})")
            time.sleep(0.02)
        fail(f"{what}: not within {timeout} s")

    def media_after(self, t):
        with self.lock:
            return [p for at, p in self.media if at > t]


def metric(url, series):
    with urllib.request.urlopen(url, timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(series + " "):
                return float(line.split()[-1])
    return 0.0


def check_conversation(args, token):
    call = Call(args.url, signed_url=args.signed_url, token=token)
    call.start({"greeting": "Hello, you are talking to Parley.", "FirstName": "Jane"})
    # The greeting is spoken first: 20 ms chunks, each followed by a mark.
    call.wait(lambda: len(call.media) >= 25, "the greeting's audio")
    call.wait(lambda: not call.pending_marks and call.playing_until < time.monotonic(), "the greeting played out")
    sizes = {len(p) for _, p in call.media}
    if sizes != {CHUNK}:
        fail(f"media payloads of {sorted(sizes)} bytes, not {CHUNK}")
    if len(call.marks_received) != len(call.media):
        fail(f"{len(call.marks_received)} marks for {len(call.media)} media chunks")
    ok(f"greeting: {len(call.media)} chunks of 160 bytes, a mark after each, all echoed")

    greeting_ms = sum(len(p) for _, p in call.media) // 8
    asked = time.monotonic()
    call.speak(args.speech_bytes)
    call.silence(1.2)
    call.wait(lambda: len([1 for at, _ in call.media if at > asked]) >= 50, "a spoken reply (1 s of audio)")
    ok(f"reply: {len(call.media_after(asked))} chunks within {time.monotonic() - asked:.1f} s of the question's start")

    # Barge in: the caller asks again over the reply; the server must clear what Twilio queued.
    # The whole question, not its first second: a second of it cut mid-word was heard "Well, it's
    # the whander." with little confidence, which over a reply counts as no words (as a hum
    # written as words does), and a second is under the 1.5 s that cuts a reply by length alone.
    call.speak(args.speech_bytes)
    call.wait(lambda: call.clears >= 1, "clear after the caller spoke over the reply")
    cleared_at = time.monotonic()
    ok(f"barge-in: clear received; the phone had played {call.played_at_clear - greeting_ms} ms of the reply")
    # For the wrapper to hold against what the server says the caller heard.
    print(f"twilio-carrier: reply_heard_ms={call.played_at_clear - greeting_ms}", flush=True)
    call.silence(1.2)

    # Keys: 1, 2, # reach the conversation, and are answered.
    pressed = time.monotonic()
    for digit in "12#":
        call.send({"event": "dtmf", "dtmf": {"track": "inbound_track", "digit": digit}})
    call.wait(lambda: len(call.media_after(pressed)) >= 10, "a reply to the keys pressed")
    ok("dtmf: 1 2 # answered")
    if call.errors:
        fail("; ".join(call.errors[:3]))
    call.send({"event": "stop", "stop": {"accountSid": "AC" + "0" * 32, "callSid": call.call_sid}})
    call.wait(lambda: call.closed is not None, "the server closing after stop", timeout=5)
    ok(f"stop: the server closed the stream ({call.closed[0]})")
    print(f"twilio-carrier: barge-in at {cleared_at - asked:.1f} s after the question", flush=True)


def check_bad_input(args, token):
    before = {reason: metric(args.metrics, f'parley_twilio_messages_rejected_total{{reason="{reason}"}}')
              for reason in ["media_before_start", "invalid_base64", "payload_size", "unknown_event", "not_json", "binary_frame"]}
    no_stop_before = metric(args.metrics, 'parley_twilio_calls_total{end="no_stop"}')
    call = Call(args.url, signed_url=args.signed_url, token=token)
    call.send({"event": "media", "media": {"track": "inbound", "payload": base64.b64encode(SILENCE).decode()}})
    call.start()
    call.send({"event": "media", "media": {"track": "inbound", "payload": "not base64!"}})
    call.send({"event": "media", "media": {"track": "inbound", "payload": base64.b64encode(b"\xff" * 9000).decode()}})
    call.send({"event": "media", "media": {"track": "inbound", "payload": ""}})
    call.send({"event": "hangup"})
    call.send_raw("this is not JSON")
    call.send_raw(b"\x00\x01")
    # The call goes on: keys are still answered.
    pressed = time.monotonic()
    call.send({"event": "dtmf", "dtmf": {"track": "inbound_track", "digit": "5"}})
    call.send({"event": "dtmf", "dtmf": {"track": "inbound_track", "digit": "#"}})
    call.wait(lambda: len(call.media_after(pressed)) >= 5, "a reply after the bad messages")
    for reason, was in before.items():
        now = metric(args.metrics, f'parley_twilio_messages_rejected_total{{reason="{reason}"}}')
        if now < was + 1:
            fail(f"{reason} was not counted ({was} -> {now})")
    ok("bad input: media before start, invalid base64, 9,000- and 0-byte payloads, unknown event, non-JSON, binary: each counted, the call went on")
    # A stream that ends without stop.
    call.ws.close()
    deadline = time.monotonic() + 5
    while metric(args.metrics, 'parley_twilio_calls_total{end="no_stop"}') < no_stop_before + 1:
        if time.monotonic() > deadline:
            fail("a call that ended without stop was not counted")
        time.sleep(0.05)
    ok("a stream closed without stop: counted as no_stop")


def check_format_and_signature(args, token):
    call = Call(args.url, signed_url=args.signed_url, token=token)
    call.start(encoding="audio/x-alaw")
    call.wait(lambda: call.closed is not None, "the server refusing A-law media", timeout=5)
    if call.closed[0] != 1003:
        fail(f"a call in A-law was closed with {call.closed}, not 1003")
    ok(f"a start in audio/x-alaw: closed 1003 ({call.closed[1]})")
    if token is None:
        return
    for name, headers in [("no signature", {}), ("a wrong signature", {"X-Twilio-Signature": signature("not-the-token", args.signed_url)})]:
        try:
            connect(args.url, additional_headers=headers, open_timeout=TIMEOUT).close()
            fail(f"an upgrade with {name} was accepted")
        except InvalidStatus as refused:
            if refused.response.status_code != 403:
                fail(f"an upgrade with {name} got {refused.response.status_code}, not 403")
    ok("signature: missing and wrong refused with 403, right accepted")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--signed-url", help="the URL as Twilio was given it (default: --url)")
    parser.add_argument("--speech", required=True, help="raw 8 kHz µ-law, the caller's question")
    parser.add_argument("--metrics", required=True)
    args = parser.parse_args()
    args.signed_url = args.signed_url or args.url
    with open(args.speech, "rb") as f:
        args.speech_bytes = f.read()
    token = os.environ.get("TWILIO_AUTH_TOKEN")
    check_format_and_signature(args, token)
    check_bad_input(args, token)
    check_conversation(args, token)
    print("twilio-carrier: all checks passed", flush=True)


if __name__ == "__main__":
    main()
