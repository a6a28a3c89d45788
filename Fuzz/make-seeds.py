#!/usr/bin/env python3
"""Writes the committed seed corpora, Fuzz/corpus/<target>/: a few small valid inputs per target,
the shapes Parley's tests use, for libFuzzer to start from (scripts/tools/libfuzzer.sh grows them in
.build-fuzz/corpus/, which is not committed). Run it again after changing a target's input format;
the ogg and wav targets' real-speech seeds need espeak-ng and opusenc (scripts/tools/install-deps.sh).

The http and frames inputs start with the byte that cuts the stream into reads (Fuzz/Sources/Reads.swift).
"""
import base64
import hashlib
import hmac
import json
import os
import shutil
import struct
import subprocess
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
# Fuzz/Sources/ClientSecretFuzz.swift's key and clock: its seeds expire at 2,000,000,000 (2033).
SECRET_KEY = b"parley fuzz signing key, 32 byte"


def write(target, name, data):
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    with open(os.path.join(ROOT, target, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# -- WebSocket frames (RFC 6455), masked as a client sends them.

def frame(opcode, payload, fin=True, mask=b"\x37\xfa\x21\x3d"):
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def close_frame(code, reason=b""):
    return frame(0x8, struct.pack(">H", code) + reason)


UPGRADE = ("GET /v1/realtime?model=gpt-realtime HTTP/1.1\r\nHost: localhost:8080\r\nUpgrade: websocket\r\n"
           "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
           "Sec-WebSocket-Protocol: realtime, openai-insecure-api-key.sk-test\r\nOrigin: http://localhost:8080\r\n\r\n")


def http():
    write("http", "upgrade-then-frames", b"\x00" + UPGRADE.encode() + frame(0x1, b'{"type":"response.create"}') + close_frame(1000))
    write("http", "azure-upgrade-small-reads", b"\x03" + (
        "GET /openai/realtime?api-version=2024-10-01-preview&deployment=gpt-realtime HTTP/1.1\r\nHost: x\r\n"
        "api-key: sk-test\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n"
        "Sec-WebSocket-Key: AQIDBAUGBwgJCgsMDQ4PEA==\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    write("http", "pipelined-gets", b"\x05" + (
        "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\nHEAD / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        "GET /metrics HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").encode())
    body = '{"session":{"type":"realtime","instructions":"Be brief."}}'
    write("http", "post-with-body", b"\x42" + (
        f"POST /v1/realtime/client_secrets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer sk-test\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}"
        "GET /v1/models HTTP/1.1\r\nHost: a\r\n\r\n").encode())
    write("http", "chunked-refused", b"\x00POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")


def frames():
    write("frames", "text", b"\x00" + frame(0x1, b"Hello"))
    write("frames", "fragmented-with-ping", b"\x02" + frame(0x1, b"Hel", fin=False) + frame(0x9, b"ping")
          + frame(0x0, b"lo, ", fin=False) + frame(0x0, "wörld €𝄞".encode()) + frame(0xA, b""))
    write("frames", "binary-16-bit-length", b"\x06" + frame(0x2, bytes(range(256)) * 2))
    write("frames", "close-with-reason", b"\x00" + frame(0x2, b"\x00\x01") + close_frame(1000, "bye ✓".encode()))
    write("frames", "close-empty", b"\x01" + frame(0x9, b"") + frame(0x8, b""))
    # A 64-bit length past the message limit: the header alone, which must be refused at once.
    write("frames", "too-big", b"\x00\x82\xff\x00\x00\x00\x00\x00\x01\x00\x00\x37\xfa\x21\x3d")
    write("frames", "utf8-split-over-reads", b"\x01" + frame(0x1, "ünïcödé ✓ 𝄞".encode()))


# -- Realtime client events, as the session tests send them.

EVENTS = {
    "session-update": {"type": "session.update", "event_id": "u1", "session": {
        "type": "realtime", "instructions": "Answer in English.", "output_modalities": ["audio"],
        "audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000},
                            "turn_detection": {"type": "server_vad", "threshold": 0.5, "silence_duration_ms": 500,
                                               "interrupt_response": False, "create_response": True}},
                  "output": {"format": {"type": "audio/pcm"}, "voice": "alloy"}},
        "max_output_tokens": 50}},
    "session-update-tools": {"type": "session.update", "session": {
        "tool_choice": "auto", "tools": [{"type": "function", "name": "get_weather", "description": "Weather in a city",
                                          "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                         "required": ["city"]}}]}},
    "session-update-mcp": {"type": "session.update", "session": {
        "tool_choice": {"type": "mcp", "server_label": "weather", "name": "forecast"},
        "tools": [{"type": "mcp", "server_label": "weather", "server_url": "http://127.0.0.1:9/mcp", "authorization": "tok",
                   "headers": {"X-Key": "v"}, "allowed_tools": {"tool_names": ["forecast"], "read_only": True},
                   "require_approval": {"always": {"tool_names": ["delete"]}, "never": {"read_only": True}},
                   "server_description": "Weather"}]}},
    "item-mcp-approval": {"type": "conversation.item.create", "previous_item_id": "item_3", "item": {
        "type": "mcp_approval_response", "approval_request_id": "item_3", "approve": True, "reason": "ok"}},
    "session-update-beta": {"type": "session.update", "session": {
        "modalities": ["text", "audio"], "input_audio_format": "pcm16", "voice": "verse",
        "turn_detection": None, "input_audio_transcription": {"model": "whisper-1"}, "temperature": 0.8}},
    "append": {"type": "input_audio_buffer.append", "event_id": "a1", "audio": base64.b64encode(struct.pack("<8h", 0, 1000, -1000, 32767, -32768, 5, -5, 0)).decode()},
    "commit": {"type": "input_audio_buffer.commit"},
    "clear": {"type": "input_audio_buffer.clear"},
    "item-message": {"type": "conversation.item.create", "previous_item_id": "root", "item": {
        "id": "item_1", "type": "message", "role": "user", "content": [{"type": "input_text", "text": "What is 12 times 7?"}]}},
    "item-function-output": {"type": "conversation.item.create", "item": {
        "type": "function_call_output", "call_id": "call_1", "output": "{\"temperature\":21}"}},
    "item-function-call": {"type": "conversation.item.create", "item": {
        "type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
    "response-create": {"type": "response.create"},
    "response-create-overrides": {"type": "response.create", "response": {
        "instructions": "Say hi.", "output_modalities": ["text"], "conversation": "none", "max_output_tokens": "inf",
        "tool_choice": {"type": "function", "name": "get_weather"}, "metadata": {"k": "v"}}},
    "response-cancel": {"type": "response.cancel", "response_id": "resp_1"},
    "retrieve": {"type": "conversation.item.retrieve", "item_id": "item_1"},
    "delete": {"type": "conversation.item.delete", "item_id": "item_1"},
    "truncate": {"type": "conversation.item.truncate", "item_id": "item_2", "content_index": 0, "audio_end_ms": 1500},
    "output-clear": {"type": "output_audio_buffer.clear"},
    "unsupported": {"type": "transcription_session.update", "session": {}},
}


def json_events():
    for name, event in EVENTS.items():
        write("json-events", name, json.dumps(event, separators=(",", ":"), ensure_ascii=False))
    write("json-events", "escapes", '{"type":"conversation.item.create","item":{"type":"message","role":"user",'
          '"content":[{"type":"input_text","text":"tab\\t quote\\" \\u00e9 \\ud83d\\ude00 lone \\ud800 -0.5e-3"}]},'
          '"n":[1e308,-0,0.25,true,false,null]}')


# -- Client secrets, as ClientSecretSigner.issue mints them.

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def mint(payload):
    body = "ek_" + b64url(json.dumps(payload, separators=(",", ":")).encode())
    return body + "." + b64url(hmac.new(SECRET_KEY, body.encode(), hashlib.sha256).digest())


def client_secret():
    write("client-secret", "session", mint({"exp": 2000000000, "max": 600, "session": {
        "type": "realtime", "model": "gpt-realtime", "instructions": "Be brief.", "audio": {"output": {"voice": "alloy"}}}}))
    write("client-secret", "empty-session", mint({"exp": 2000000000, "max": 60, "session": {}}))
    write("client-secret", "expired", mint({"exp": 1700000000, "max": 60, "session": {}}))
    write("client-secret", "bad-signature", mint({"exp": 2000000000, "max": 60, "session": {}})[:-4] + "AAAA")


# Fuzz/Sources/JWTFuzz.swift's HS256 secret; its ES256 seed (es256-limits) was made with
# `parley token --key` and the P-256 key in that file, which Python's standard library cannot sign with.
JWT_SECRET = b"parley fuzz JWT secret, 32 bytes"


def jwt_token(header, claims, key=JWT_SECRET):
    body = b64url(json.dumps(header, separators=(",", ":")).encode()) + "." + b64url(json.dumps(claims, separators=(",", ":")).encode())
    return body + "." + b64url(hmac.new(key, body.encode(), hashlib.sha256).digest())


def jwt():
    write("jwt", "hs256", jwt_token({"alg": "HS256", "typ": "JWT"}, {"sub": "acme", "iat": 1750000000, "exp": 2000000000}))
    write("jwt", "expired", jwt_token({"alg": "HS256", "typ": "JWT"}, {"sub": "acme", "exp": 1700000000}))
    write("jwt", "alg-none", b64url(b'{"alg":"none"}') + "." + b64url(b'{"sub":"acme","exp":2000000000}') + ".")


# -- Twilio Media Streams messages, as its documentation (and TwilioMessageTests) shows them.

def twilio():
    write("twilio", "connected", '{"event": "connected", "protocol": "Call", "version": "1.0.0"}')
    write("twilio", "start", json.dumps({"event": "start", "sequenceNumber": "1", "start": {
        "accountSid": "AC" + "X" * 32, "streamSid": "MZ" + "X" * 32, "callSid": "CA" + "X" * 32, "tracks": ["inbound", "outbound"],
        "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
        "customParameters": {"FirstName": "Jane", "LastName": "Doe"}}, "streamSid": "MZ" + "X" * 32}))
    payload = base64.b64encode(bytes(range(96, 256))).decode()
    write("twilio", "media", json.dumps({"event": "media", "sequenceNumber": "3", "media": {
        "track": "inbound", "chunk": "1", "timestamp": "5", "payload": payload}, "streamSid": "MZ1"}))
    write("twilio", "mark", '{"event": "mark", "sequenceNumber": "4", "streamSid": "MZ1", "mark": {"name": "m2"}}')
    write("twilio", "dtmf", '{"event": "dtmf", "streamSid": "MZ1", "sequenceNumber": "5", "dtmf": {"track": "inbound_track", "digit": "#"}}')
    write("twilio", "stop", '{"event": "stop", "sequenceNumber": "5", "stop": {"accountSid": "AC1", "callSid": "CA1"}, "streamSid": "MZ1"}')


# -- WAV files: the layouts WAVFileTests builds, and espeak-ng's streaming header.

def riff(chunks):
    body = b"WAVE"
    for cid, data in chunks:
        body += cid + struct.pack("<I", len(data)) + data + (b"\x00" if len(data) % 2 else b"")
    return b"RIFF" + struct.pack("<I", len(body)) + body


def fmt(channels=1, rate=16000, tag=1):
    return struct.pack("<HHIIHH", tag, channels, rate, rate * channels * 2, channels * 2, 16)


def samples(n):
    return struct.pack(f"<{n}h", *[((i * 2654435761) % 65536) - 32768 for i in range(n)])


def wav():
    write("wav", "mono", riff([(b"fmt ", fmt()), (b"data", samples(64))]))
    write("wav", "stereo-list-odd", riff([(b"fmt ", fmt(channels=2, rate=48000)), (b"LIST", b"\x01\x02\x03"), (b"data", samples(64))]))
    subformat = bytes.fromhex("0100000000001000800000aa00389b71")
    extensible = fmt(rate=24000, tag=0xFFFE) + struct.pack("<HHI", 22, 16, 4) + subformat
    write("wav", "extensible", riff([(b"fmt ", extensible), (b"fact", struct.pack("<I", 32)), (b"data", samples(32))]))
    if shutil.which("espeak-ng"):
        speech = subprocess.run(["espeak-ng", "--stdout", "yes"], check=True, capture_output=True).stdout
        write("wav", "espeak-streaming", speech[:2048])  # data size 0x7FFFF000: runs to the end


# -- Ogg Opus: opusenc's encoding of speech, and streams laid out as OggStreamBuilder does.

def crc32_ogg(data):
    crc = 0
    for byte in data:
        crc ^= byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7 if crc & 0x80000000 else crc << 1) & 0xFFFFFFFF
    return crc


def page(lacing, body, flags, granule, serial, sequence):
    head = b"OggS\x00" + bytes([flags]) + struct.pack("<qII", granule, serial, sequence) + b"\x00\x00\x00\x00"
    out = head + bytes([len(lacing)]) + bytes(lacing) + body
    return out[:22] + struct.pack("<I", crc32_ogg(out)) + out[26:]


def stream(packets, granule, per_page, serial=0x5041524C, channels=1, first_sequence=0):
    """Headers on their own pages, then `packets` in pages of at most `per_page` lacing values."""
    head = b"OpusHead" + bytes([1, channels]) + struct.pack("<HIhB", 312, 48000, 0, 0)
    tags = b"OpusTags" + struct.pack("<I", 12) + b"parley tests" + struct.pack("<I", 0)
    pages, sequence, open_packet = [], first_sequence, False
    groups = [[head], [tags], packets]
    for g, group in enumerate(groups):
        segments = []
        for packet in group:
            segments += [packet[i:i + 255] for i in range(0, len(packet) + 1, 255)]
        step = per_page if g == 2 else 255
        for start in range(0, len(segments), step):
            chunk = segments[start:start + step]
            ends = any(len(s) < 255 for s in chunk)
            flags = (1 if open_packet else 0) | (2 if sequence == first_sequence else 0)
            flags |= 4 if g == 2 and start + step >= len(segments) else 0
            pages.append(page([len(s) for s in chunk], b"".join(chunk), flags,
                              (granule if g == 2 else 0) if ends else -1, serial, sequence))
            open_packet = len(chunk[-1]) == 255
            sequence += 1
    return pages


def ogg():
    packets = [bytes([0xF8]) + bytes(range(i, i + 40)) for i in range(3)] + [bytes([0xFC]) + bytes(300)]
    write("ogg", "spanning-pages", b"".join(stream(packets, granule=960 * 4, per_page=3)))
    # A second logical stream interleaved, which the reader checks and skips.
    ours = stream(packets[:2], granule=1920, per_page=255, channels=2)
    other = stream(packets[2:], granule=960, per_page=255, serial=7)
    write("ogg", "two-streams", b"".join(p for pair in zip(ours, other) for p in pair))
    if shutil.which("espeak-ng") and shutil.which("opusenc"):
        with tempfile.TemporaryDirectory() as tmp:
            wav_path, opus_path = os.path.join(tmp, "hi.wav"), os.path.join(tmp, "hi.opus")
            subprocess.run(["espeak-ng", "-w", wav_path, "hi"], check=True)
            subprocess.run(["opusenc", "--quiet", "--bitrate", "6", "--serial", "1", "--padding", "0",
                            "--discard-comments", wav_path, opus_path], check=True)
            with open(opus_path, "rb") as f:
                write("ogg", "opusenc-speech", f.read())


# -- SDP offers (RFC 8866) as /v1/realtime/calls takes them: Chrome's and aiortc's shapes, a SIP
# phone's with LF line endings, Firefox's with session-level transport attributes.

FINGERPRINT = ":".join("%02X" % b for b in hashlib.sha256(b"parley fuzz certificate").digest())


def sdp_text(lines):
    return "".join(line + "\r\n" for line in lines)


def sdp():
    transport = ["a=ice-ufrag:Jpbd", "a=ice-pwd:Fus4hRjMrpP46HRkXRz+RPdL", "a=ice-options:trickle",
                 "a=fingerprint:sha-256 " + FINGERPRINT, "a=setup:actpass"]
    chrome = (["v=0", "o=- 4215775240449105457 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0 1",
               "a=extmap-allow-mixed", "a=msid-semantic: WMS s",
               "m=audio 9 UDP/TLS/RTP/SAVPF 111 63 0 8 110 126", "c=IN IP4 0.0.0.0", "a=rtcp:9 IN IP4 0.0.0.0",
               "a=candidate:1160438246 1 udp 2122260223 192.168.92.78 52133 typ host generation 0"] + transport +
              ["a=mid:0", "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level", "a=sendrecv", "a=msid:s t",
               "a=rtcp-mux", "a=rtcp-rsize", "a=rtpmap:111 opus/48000/2", "a=rtcp-fb:111 transport-cc",
               "a=fmtp:111 minptime=10;useinbandfec=1", "a=rtpmap:63 red/48000/2", "a=fmtp:63 111/111",
               "a=rtpmap:0 PCMU/8000", "a=rtpmap:8 PCMA/8000", "a=rtpmap:110 telephone-event/48000",
               "a=rtpmap:126 telephone-event/8000", "a=ssrc:3485940486 cname:r87hndGyheuxZxzo",
               "m=application 9 UDP/DTLS/SCTP webrtc-datachannel", "c=IN IP4 0.0.0.0"] + transport +
              ["a=mid:1", "a=sctp-port:5000", "a=max-message-size:262144"])
    write("sdp", "chrome-offer", sdp_text(chrome))
    aiortc_transport = ["a=candidate:8d7c 1 udp 2130706431 192.168.1.20 54321 typ host", "a=end-of-candidates",
                        "a=ice-ufrag:lZ6W", "a=ice-pwd:5kJbBGyEWr0Ma9eoZ6dPYw3b",
                        "a=fingerprint:sha-256 " + FINGERPRINT,
                        "a=fingerprint:sha-384 " + ":".join("%02X" % b for b in hashlib.sha384(b"x").digest()),
                        "a=setup:actpass"]
    aiortc = (["v=0", "o=- 3946593090 3946593090 IN IP4 0.0.0.0", "s=-", "t=0 0", "a=group:BUNDLE 0 1",
               "a=msid-semantic:WMS *", "m=audio 54321 UDP/TLS/RTP/SAVPF 96 0 8", "c=IN IP4 192.168.1.20",
               "a=sendrecv", "a=mid:0", "a=msid:a b", "a=rtcp:9 IN IP4 0.0.0.0", "a=rtcp-mux",
               "a=ssrc:1627437442 cname:c", "a=rtpmap:96 opus/48000/2", "a=rtpmap:0 PCMU/8000",
               "a=rtpmap:8 PCMA/8000"] + aiortc_transport +
              ["m=application 54321 UDP/DTLS/SCTP webrtc-datachannel", "c=IN IP4 192.168.1.20", "a=mid:1",
               "a=sctp-port:5000", "a=max-message-size:65536"] + aiortc_transport)
    write("sdp", "aiortc-offer", sdp_text(aiortc))
    write("sdp", "sip-offer-lf", "v=0\no=alice 2890844526 2890844527 IN IP4 198.51.100.7\ns=call\n"
          "c=IN IP4 198.51.100.7\nt=0 0\nm=audio 49170 RTP/AVP 0 8 101\na=rtpmap:0 PCMU/8000\n"
          "a=rtpmap:8 PCMA/8000\na=rtpmap:101 telephone-event/8000\na=fmtp:101 0-16\na=ptime:20\n")
    write("sdp", "firefox-session-level", sdp_text([
        "v=0", "o=mozilla...THIS_IS_SDPARTA-99.0 7514673380034989017 0 IN IP4 0.0.0.0", "s=-", "t=0 0",
        "a=fingerprint:sha-256 " + FINGERPRINT, "a=group:BUNDLE 0 1", "a=ice-options:trickle",
        "a=ice-ufrag:9889e0c4", "a=ice-pwd:d30a5aec4dd81f07d4ff3344209400ab", "a=setup:actpass",
        "m=audio 9 UDP/TLS/RTP/SAVPF 109 101", "c=IN IP4 0.0.0.0", "a=mid:0", "a=sendrecv", "a=rtcp-mux",
        "a=rtpmap:109 opus/48000/2", "a=rtpmap:101 telephone-event/48000/1",
        "m=application 9 UDP/DTLS/SCTP webrtc-datachannel", "c=IN IP4 0.0.0.0", "a=mid:1", "a=sctp-port:5000"]))


# -- multipart/form-data bodies (RFC 7578): the first line is the request's Content-Type, the rest
# the body (Fuzz/Sources/MultipartFuzz.swift).

def multipart():
    offer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
    session = '{"type":"realtime","model":"gpt-realtime"}'
    b = "------------------------d74496d66958873e"
    write("multipart", "curl-sdp-session", "multipart/form-data; boundary=" + b + "\n"
          + "--" + b + "\r\nContent-Disposition: form-data; name=\"sdp\"\r\nContent-Type: application/sdp\r\n\r\n"
          + offer + "\r\n--" + b + "\r\nContent-Disposition: form-data; name=\"session\"\r\n\r\n" + session
          + "\r\n--" + b + "--\r\n")
    b = "----WebKitFormBoundary7MA4YWxkTrZu0gW"
    write("multipart", "browser-quoted-preamble", 'multipart/form-data; boundary="' + b + '"\n'
          + "preamble\r\n--" + b + "\r\nContent-Disposition: form-data; name=\"sdp\"; filename=\"offer.sdp\"\r\n\r\n"
          + offer + "\r\n--" + b + "--\r\nepilogue")
    write("multipart", "lf-line-endings", "multipart/form-data; boundary=b\n--b\nContent-Disposition: form-data; "
          "name=\"session\"\n\n" + session + "\n--b--\n")

# -- RTP and RTCP (RFC 3550), as a browser and a phone send them.

def rtp():
    # Opus from a browser: marker, PT 111, a one-byte (RFC 8285) extension with the audio level
    # (id 1) and a transport-wide sequence number (id 3), a short payload.
    write("rtp", "browser-opus", bytes([0x90, 0xEF, 0x12, 0x34, 0x00, 0x01, 0xE2, 0x40, 0xCA, 0xFE, 0xBA, 0xBE,
                                        0xBE, 0xDE, 0x00, 0x02, 0x10, 0xAA, 0x31, 0x00, 0x07, 0x00, 0x00, 0x00,
                                        0x78, 0x01, 0x02]))
    # PCMU from a phone: a CSRC, 20 ms of silence (0xFF), four octets of padding.
    write("rtp", "pcmu-csrc-padding", bytes([0xA1, 0x00]) + struct.pack(">HII", 65535, 0xFFFFFF00, 42)
          + struct.pack(">I", 7) + b"\xff" * 160 + bytes([0, 0, 0, 4]))
    ntp = struct.pack(">IIIII", 0xE9A5_0000, 0x8000_0000, 96000, 100, 16000)
    block = struct.pack(">IIIIII", 0x11112222, (25 << 24) | 0xFFFFFD, 0x00010005, 480, 0xB7052000, 0x00054000)
    sr = bytes([0x81, 200, 0, 12]) + struct.pack(">I", 7) + ntp + block
    cname = b"parley@example"
    chunk = struct.pack(">I", 7) + bytes([1, len(cname)]) + cname + b"\0"
    chunk += b"\0" * (-len(chunk) % 4)
    sdes = bytes([0x81, 202, 0, len(chunk) // 4]) + chunk
    write("rtp", "rtcp-sr-sdes", sr + sdes)
    rr = bytes([0x81, 201, 0, 7]) + struct.pack(">I", 8) + block
    reason = b"hung up"
    bye_body = struct.pack(">I", 8) + bytes([len(reason)]) + reason
    bye = bytes([0x81, 203, 0, len(bye_body) // 4]) + bye_body
    write("rtp", "rtcp-rr-sdes-bye", rr + sdes + bye)
    # A picture-loss indication and a generic NACK (RFC 4585), after an empty RR.
    write("rtp", "rtcp-feedback", bytes([0x80, 201, 0, 1, 0, 0, 0, 8, 0x81, 206, 0, 2, 0, 0, 0, 8, 0, 0, 0, 7,
                                         0x81, 205, 0, 3, 0, 0, 0, 8, 0, 0, 0, 7, 0x12, 0x34, 0x00, 0x05]))


# -- The jitter buffer's scripts (Fuzz/Sources/JitterFuzz.swift): a clock byte, then operations.

def jitter():
    insert = lambda dt, seq, frames, flags=0: bytes([(dt << 4) | 1 | flags, seq & 0xFF, frames & 0xFF])
    pop = lambda dt: bytes([dt << 4])
    # A steady stream: a packet and a tick every 20 ms.
    steady = b"\0" + b"".join(insert(4 if i else 0, 1 if i else 0, 1 if i else 0) + pop(0) for i in range(40))
    write("jitter", "steady", steady)
    # Loss, reordering (a step back and forward again) and a duplicate.
    script = b"\0" + insert(0, 0, 0) + pop(4) + insert(0, 1, 1) + pop(4) + insert(0, 2, 2) + insert(0, 0xFF, 0xFF)
    script += pop(4) + insert(0, 1, 1) + insert(0, 0, 0) + pop(4) + pop(4) + pop(4) + pop(4)
    write("jitter", "loss-reorder-duplicate", script)
    # G.711, a talk spurt, silence with the timestamps running on, another spurt, and a new source.
    spurt = b"".join(insert(4, 1, 1) + pop(0) for _ in range(10))
    gap = b"".join(pop(4) for _ in range(20))
    write("jitter", "dtx-and-new-source", b"\1" + spurt + gap + insert(0, 1, 20) + spurt + insert(0, 0x40, 0, 12) + spurt)
    # A flood: packets with no ticks.
    write("jitter", "flood", b"\0" + b"".join(insert(0, 1, 1, 6) for _ in range(80)) + pop(2))


# -- SCTP packets (RFC 9260) as DTLS carries them for data channels. Fuzz/Sources/SCTPFuzz.swift
# rewrites the verification tag for its established association, whose peer's next TSN is 8 and
# whose "oai-events" channel is on stream 0 with sequence number 0 used.
def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def sctp_chunk(kind, flags, value):
    body = struct.pack(">BBH", kind, flags, 4 + len(value)) + value
    return body + bytes(-len(body) % 4)


def sctp_packet(tag, *chunks):
    packet = struct.pack(">HHII", 5000, 5000, tag, 0) + b"".join(chunks)
    return packet[:8] + struct.pack("<I", crc32c(packet)) + packet[12:]


def sctp_data(tsn, stream, ssn, ppid, data, flags=3):
    return sctp_chunk(0, flags, struct.pack(">IHHI", tsn, stream, ssn, ppid) + data)


def sctp():
    tag = 0x5E5E5E5E
    extensions = struct.pack(">HH", 0x8008, 6) + bytes([0x82, 0xC0]) + bytes(2)
    forward_tsn = struct.pack(">HH", 0xC000, 4)
    write("sctp", "browser-init", sctp_packet(0, sctp_chunk(1, 0, struct.pack(">IIHHI", 0x0C11E417, 131072, 65535, 65535, 7) + forward_tsn + extensions)))
    label = b"oai-events"
    dcep_open = struct.pack(">BBHIHH", 3, 0, 256, 0, len(label), 0) + label
    write("sctp", "dcep-open", sctp_packet(tag, sctp_data(8, 2, 0, 50, dcep_open)))
    event = json.dumps({"type": "session.update", "session": {"instructions": "Be brief."}}).encode()
    half = len(event) // 2
    write("sctp", "json-in-two-fragments", sctp_packet(tag, sctp_data(9, 0, 1, 51, event[half:], flags=1), sctp_data(8, 0, 1, 51, event[:half], flags=2)))
    write("sctp", "sack-with-gaps", sctp_packet(tag, sctp_chunk(3, 0, struct.pack(">IIHHHHHHI", 1000, 65536, 2, 1, 2, 3, 5, 5, 999))))
    reset = struct.pack(">HHIII", 13, 18, 7, 1000, 7) + struct.pack(">H", 0) + bytes(2)
    write("sctp", "reconfig-reset-stream-0", sctp_packet(tag, sctp_chunk(130, 0, reset)))
    heartbeat = struct.pack(">HH", 1, 12) + b"\x00\x01\x02\x03\x04\x05\x06\x07"
    write("sctp", "heartbeat-unknown-shutdown", sctp_packet(tag, sctp_chunk(4, 0, heartbeat), sctp_chunk(0xC3, 0, b"\x01"), sctp_chunk(7, 0, struct.pack(">I", 1000))))


# -- MCP answers (Fuzz/Sources/MCPAnswerFuzz.swift): a head byte (bit 0 an event stream, bit 1 a
# session carried, bits 2-3 the status 200/202/404/500, bit 4 a notification), a Reads byte, the
# body, as PyPI mcp 2.3.0's server writes it.
def mcp_answer():
    tools = {"jsonrpc": "2.0", "id": 7, "result": {"tools": [
        {"name": "add", "description": "Adds two numbers.", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}}},
        {"name": "slow", "annotations": {"readOnlyHint": True}}], "nextCursor": "2"}}
    write("mcp-answer", "json-tool-page", bytes([0b00, 0]) + json.dumps(tools).encode())
    call = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "3.0"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}],
                                                   "isError": False, "structuredContent": {"result": "3.0"}}}
    stream = "id: 1\ndata:\n\nevent: message\ndata: " + json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}) + \
        "\n\nevent: message\ndata: " + json.dumps(call) + "\n\n"
    write("mcp-answer", "sse-call-small-reads", bytes([0b11, 3]) + stream.encode())
    failed = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "Error executing tool fail: the tool failed on purpose"}], "isError": True}}
    write("mcp-answer", "json-tool-failed", bytes([0b10, 5]) + json.dumps(failed).encode())
    write("mcp-answer", "http-500-oauth-body", bytes([0b1100, 0]) + json.dumps({"error": "invalid_token", "error_description": "a bearer token is required"}).encode())
    write("mcp-answer", "notification-202", bytes([0b10110, 0]))


# -- SIP messages (RFC 3261), RFC 4475's torture messages as Tests/SIPTests/Fixtures holds them
# (byte for byte from the RFC's archive). The first byte cuts the input into reads, as for http.

def torture(name):
    path = os.path.join(os.path.dirname(ROOT), "..", "Tests", "SIPTests", "Fixtures", name + ".dat")
    with open(path, "rb") as f:
        return f.read()


def sip():
    write("sip", "wsinv-one-read", b"\x00" + torture("wsinv"))
    write("sip", "intmeth-small-reads", b"\x03" + torture("intmeth"))
    write("sip", "esc01-keepalive-then-lwsdisp", b"\x05" + torture("esc01") + b"\r\n\r\n" + torture("lwsdisp"))
    write("sip", "mpart01-binary-body", b"\x00" + torture("mpart01"))
    write("sip", "unreason-response", b"\x02" + torture("unreason"))
    write("sip", "badinv01-refused", b"\x00" + torture("badinv01"))
    # Every message of RFC 4475 (Tests/SIPTests/Fixtures), whole: the first byte says how the
    # fuzz target splits its reads (0: one read).
    fixtures = os.path.join(os.path.dirname(ROOT), "..", "Tests", "SIPTests", "Fixtures")
    for name in sorted(os.listdir(fixtures)):
        if name.endswith(".dat"):
            write("sip", "rfc4475-" + name[:-4], b"\x00" + torture(name[:-4]))


if __name__ == "__main__":
    for make in (http, frames, json_events, client_secret, jwt, twilio, wav, ogg, sdp, multipart, rtp, jitter, sctp, mcp_answer, sip):
        make()
