#!/usr/bin/env bash
# make test: WebRTC calls to a real `parley serve` (issue 38), with aiortc 1.16.0 as the browser.
#
#   1. An offer authorised by an ek_ client secret (minted with the server's API key): 201 and
#      Location, the oai-events channel, session.created and .updated, a spoken question
#      (espeak-ng, en-us) transcribed, the spoken reply on the audio track (at least 0.5 s of
#      speech, and Whisper hears in it the words the reply's transcript says), the sideband
#      WebSocket (/v1/realtime?call_id=…) in and out, a barge-in (en-gb+f3) that cuts a long reply
#      (cancelled, output_audio_buffer.cleared), and the hangup (scripts/tests/webrtc_call.py).
#   2. The multipart shape (sdp and session parts) with the API key itself.
#   3. Offers refused with a clear status: no key, not SDP, malformed SDP, no data channel.
#   4. Neither the key nor the secret in the server's log; every call counted as ended.
#
# Exit status: 0 passed; 1 a check failed; 2 set-up failed (venv, PyPI, server start).
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
unset PARLEY_API_KEY PARLEY_API_KEYS PARLEY_API_KEYS_FILE PARLEY_CONFIG
VENV="$ROOT/.venv-webrtc"
venv_webrtc
# Whisper (tiny.en, the speech helper's) hears what the call heard: make deps installed it.
scripts/tools/speech-models.sh >/dev/null

speech() { # VOICE SPEED SENTENCE FILE: espeak-ng at 48 kHz mono, as a browser's microphone gives it
    espeak-ng -v "$1" -s "$2" -w "$WORK/said.wav" "$3" || die "espeak-ng could not make the speech" 2
    sox "$WORK/said.wav" -r 48000 -c 1 -b 16 "$4" || die "sox could not resample the speech" 2
}
speech en-us 150 "What is twelve times seven?" "$WORK/question.wav"
# Past 1.5 s of speech a barge-in needs no words (docs/protocol.md, "Barge-in"): a margin on a busy machine.
speech en-gb+f3 170 "Stop, stop. Wait a moment, I have another question for you." "$WORK/interruption.wav"

key="sk-webrtc+$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
MASK="s/$key/<key>/g"
PARLEY_API_KEY="$key" start_parley server serve 0 --loops 2 --log-level debug
url="http://127.0.0.1:$port"
wait_speech_helper server "$url"
[[ -z "${KEEP_LOG:-}" ]] || on_exit 'cp "$LOGS/server.log" "$KEEP_LOG"'

secret=$(curl -sf -X POST -H "Authorization: Bearer $key" -H "Content-Type: application/json" -d '{}' "$url/v1/realtime/client_secrets" \
         | "$VENV/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["value"])') || die "no client secret from the server" 2
[[ "$secret" == ek_* ]] || die "the client secret does not start with ek_"

"$VENV/bin/python" scripts/tests/webrtc_call.py --url "$url" --key "$secret" --question "$WORK/question.wav" \
    --interruption "$WORK/interruption.wav" --heard "$WORK/heard.wav" | tee "$WORK/call.out" || { logs server; die "the call's checks failed"; }
grep -q "all checks passed" "$WORK/call.out" || { logs server; die "the call's checks failed"; }

# What the caller heard is the reply's speech: Whisper's words against the reply's transcript.
heard=$("$ROOT/.venv-speech/bin/python" scripts/tests/recognise.py "$WORK/heard.wav")
said=$(cat "$WORK/heard.wav.txt")
say "the reply said: $said; the caller heard: $heard"
"$VENV/bin/python" - "$said" "$heard" <<'EOF' || die "the reply's words were not heard on the audio track"
import re, sys
words = lambda text: re.findall(r"[a-z0-9]+", text.lower())
said, heard = words(sys.argv[1]), set(words(sys.argv[2]))
found = [w for w in said if w in heard]
print(f"webrtc-test: {len(found)} of the reply's {len(said)} words heard")
sys.exit(0 if said and len(found) * 2 >= len(said) else 1)
EOF

"$VENV/bin/python" scripts/tests/webrtc_call.py --url "$url" --key "$key" --multipart --quick --question "$WORK/question.wav" \
    --interruption "$WORK/interruption.wav" --heard "$WORK/unused.wav" | tee "$WORK/multipart.out" || { logs server; die "the multipart call's checks failed"; }
grep -q "all checks passed" "$WORK/multipart.out" || { logs server; die "the multipart call's checks failed"; }

# GPT-Live over WebRTC: client.live.create with the offer, the session on the data channel.
"$VENV/bin/python" scripts/tests/live_webrtc_call.py --url "$url" --key "$key" --question "$WORK/question.wav" | tee "$WORK/live.out" \
    || { logs server; die "the Live WebRTC call's checks failed"; }
grep -q "all checks passed" "$WORK/live.out" || { logs server; die "the Live WebRTC call's checks failed"; }

# Refusals: each a status and a JSON error naming the problem, and the server goes on.
refused() { # STATUS CODE CURL-ARGS...: the offer is refused with STATUS and error.code CODE
    local want=$1 code=$2 out status
    shift 2
    out=$(curl -s -o "$WORK/refusal.json" -w '%{http_code}' -X POST "$@" "$url/v1/realtime/calls")
    status=$out
    [[ "$status" == "$want" ]] || die "expected $want for $*, got $status: $(cat "$WORK/refusal.json")"
    grep -q "\"code\":\"$code\"" "$WORK/refusal.json" || die "expected error code $code: $(cat "$WORK/refusal.json")"
    say "refused $want $code"
}
offer="v=0
o=- 1 1 IN IP4 0.0.0.0
s=-
t=0 0
a=group:BUNDLE 0
m=audio 9 UDP/TLS/RTP/SAVPF 111
c=IN IP4 0.0.0.0
a=mid:0
a=rtcp-mux
a=rtpmap:111 opus/48000/2
a=ice-ufrag:abcd
a=ice-pwd:abcdefghijklmnopqrstuvwx
a=fingerprint:sha-256 $(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' | sed 's/../&:/g; s/:$//' | tr a-f A-F)
a=setup:actpass"
refused 401 missing_api_key -H "Content-Type: application/sdp" --data-binary "$offer"
refused 415 unsupported_content_type -H "Authorization: Bearer $key" -H "Content-Type: text/plain" --data-binary "$offer"
refused 400 invalid_sdp -H "Authorization: Bearer $key" -H "Content-Type: application/sdp" --data-binary "not an offer"
refused 400 invalid_offer -H "Authorization: Bearer $key" -H "Content-Type: application/sdp" --data-binary "$offer"

curl -sf "$url/healthz" >/dev/null || die "the server stopped answering after the refusals"
metrics=$(curl -sf "$url/metrics")
ended=$(grep -E '^parley_webrtc_calls_ended_total\{reason="hangup"\}' <<<"$metrics" | awk '{print $2}')
open=$(grep -E '^parley_webrtc_calls_open ' <<<"$metrics" | awk '{print $2}')
[[ "${ended:-0}" -ge 2 && "${open:-1}" -eq 0 ]] || die "expected the calls hung up and none open: ended=$ended open=$open"
grep -qF "$key" "$LOGS/server.log" && die "the API key reached the server's log"
grep -qF "$secret" "$LOGS/server.log" && die "the client secret reached the server's log"
say "passed"
