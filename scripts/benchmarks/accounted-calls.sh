#!/usr/bin/env bash
# Memory accounted per call (issue 71): CALLS SIP calls, then CALLS WebRTC calls, each set held on a
# fresh release server (defaults but cheap speech: the built-in agent, energy VAD, no recogniser,
# no voice), by parley-load's own UAC and WebRTC caller (nobody talking). For each: the heap in use
# (glibc's mallinfo2, parley_process_heap_in_use_bytes) and parley_accounted_bytes, with its
# carrier's share (parley_accounted_bytes_by_carrier), before the calls, while they are all up, and
# after they ended; what a call adds to each, and the accounted share of the heap's growth. Prints
# one table; bench-density.sh runs it after its sessions. Loopback only, bounded by --duration.
#
#   CALLS=100 scripts/benchmarks/accounted-calls.sh [OUT_DIR]
set -euo pipefail
CALLS="${CALLS:-100}"
HOLD="${HOLD:-12}"
RTP_PORTS="${RTP_PORTS:-20000-24999}"
read -r -a SERVE_OPTIONS <<< "${SERVE_OPTIONS:---transcriber none --synthesizer none --vad energy --turn-model none}"
OUT="${1:-LoadTests/reports/accounted-calls-$(date -u +%Y%m%dT%H%M%SZ)}"
. "$(dirname "$0")/../lib/bench.sh"
record_vmstat

espeak-ng -v en-us -s 150 -w "$OUT/speech-22k.wav" "Hello there, this is a call held open to measure its memory."
sox "$OUT/speech-22k.wav" -r 48000 -c 1 -b 16 "$OUT/speech.wav"

# sample PORT CARRIER: heap in use, accounted, and the carrier's accounted share, on one line.
sample() {
  curl -fsS "http://127.0.0.1:$1/metrics" | awk -v c="parley_accounted_bytes_by_carrier{carrier=\"$2\"}" '
    $1 == "parley_process_heap_in_use_bytes" { h = $2 } $1 == "parley_accounted_bytes" { a = $2 } $1 == c { k = $2 }
    END { printf "%d %d %d\n", h, a, k }'
}

# The clients: COUNT calls of a kind, then the client's own options.
sip_client() { "$BIN/parley-load" sip "$1" --talking 0 --input "$OUT/speech.wav" --sip-port "$sip_port" --rate 50 "${@:2}"; }
webrtc_client() { "$BIN/parley-load" webrtc "$1" --talking 0 --input "$OUT/speech.wav" --url "http://127.0.0.1:$port" --rate 25 "${@:2}"; }

# hold NAME CARRIER CLIENT: a fresh server, CALLS calls held for HOLD s, sampled before, during and after.
hold() {
  local name=$1 carrier=$2 client=$3
  sip_port=$(free_port)
  start_parley "server-$name" serve 0 --loops 2 --sip-port "$sip_port" --sip-host 127.0.0.1 --sip-rtp-ports "$RTP_PORTS" \
    "${SERVE_OPTIONS[@]}" --log-level warning
  local server=$pid
  # One call first, so that what the first call of a kind allocates once (codec tables, libsrtp's
  # and OpenSSL's set-up) is not counted as the calls'.
  "$client" 1 --warmup 0 --duration 2 > "$OUT/$name-first.txt" 2>&1 || true
  sleep 2
  read -r h0 a0 k0 < <(sample "$port" "$carrier")
  "$client" "$CALLS" --warmup 2 --duration "$HOLD" --connect-timeout 90 > "$OUT/$name.txt" 2>&1 &
  local load=$!
  # Sampled while every call is up: the client says "measuring" once they all are.
  for _ in $(seq 1 240); do grep -q "^measuring" "$OUT/$name.txt" 2>/dev/null && break; sleep 0.5; done
  sleep 2
  read -r h1 a1 k1 < <(sample "$port" "$carrier")
  wait "$load" || true
  sleep 3
  read -r h2 a2 k2 < <(sample "$port" "$carrier")
  stop "server-$name"
  python3 - "$name" "$CALLS" "$h0" "$a0" "$k0" "$h1" "$a1" "$k1" "$h2" "$a2" "$k2" <<'PY' | tee -a "$OUT/summary.txt"
import sys
name, calls = sys.argv[1], int(sys.argv[2])
h0, a0, k0, h1, a1, k1, h2, a2, k2 = map(int, sys.argv[3:])
heap, acc = h1 - h0, a1 - a0
print(f"{name:7} {calls} calls up: heap +{heap / calls / 1024:5.1f} KiB a call, accounted +{acc / calls / 1024:5.1f} KiB a call "
      f"({(k1 - k0) / calls / 1024:5.1f} under its carrier), accounted/heap {acc / heap if heap > 0 else 0:4.0%}; "
      f"ended: heap {h2 - h0:+,d} B, accounted {a2 - a0:+,d} B")
PY
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores; CALLS=$CALLS HOLD=$HOLD; steal in $OUT/vmstat.log" | tee "$OUT/summary.txt"
hold sip sip sip_client
hold webrtc webrtc webrtc_client
