#!/usr/bin/env bash
# SIP calls at scale (issue 39): for each of LEVELS concurrent calls, a fresh release server taking
# SIP on a free port (UDP and TCP, every loop; RTP from RTP_PORTS) and `parley-load sip`, which
# places each call over UDP as a phone does (INVITE with a PCMU offer, ACK, RTP both ways every
# 20 ms, TALKING of them the recording as µ-law and the rest silence, BYE at the end). Reported per
# level: set-up INVITE → 200 (the client's clock and parley_sip_call_setup_seconds), how late the
# server's frames arrive against their own 20 ms schedule (kernel receive times: p50 / p99 / max,
# missing, holes), the server's parley_audio_input_lag_seconds, its CPU (/proc) and RSS per call,
# the client's CPU, other processes' CPU and vmstat's steal. Then `parley-load sip-ramp` on a fresh
# server: calls at RAMP rates (INVITE → 200 → ACK → BYE at once), the rate accepted and the
# server's CPU per call. With TWILIO=1 (the default), /twilio's `parley-load calls` at the top level
# on the same kind of server, for the two side by side in one run; with PROFILE=1, a perf profile
# of the server at the top level. NICE=19 runs the load clients niced, so that on a small machine
# the server's loops are not kept waiting for a core by the client. Speech is cheap on purpose, as
# in the other call benchmarks: the built-in agent, no recognition or synthesis, energy VAD, no
# turn model (SERVE_OPTIONS overrides). Loopback only; every run is bounded (--connect-timeout,
# --warmup, --duration, the ramp's steps).
#
#   LEVELS="100 500 1000" TALKING=0.2 MEASURE=20 RAMP=50,100,200,400,800 PROFILE=0 NICE=0 \
#     scripts/benchmarks/sip-calls.sh [OUT_DIR]
set -euo pipefail
LEVELS="${LEVELS:-100 500 1000}"
TALKING="${TALKING:-0.2}"
MEASURE="${MEASURE:-20}"
WARMUP="${WARMUP:-5}"
RATE="${RATE:-100}"
LOOPS="${LOOPS:-2}"
RAMP="${RAMP:-50,100,200,400,800}"
RAMP_SECONDS="${RAMP_SECONDS:-5}"
TWILIO="${TWILIO:-1}"
NICE="${NICE:-0}"
# Below the kernel's ephemeral ports (32768 up), where the client's sockets are.
RTP_PORTS="${RTP_PORTS:-20000-24999}"
read -r -a SERVE_OPTIONS <<< "${SERVE_OPTIONS:---transcriber none --synthesizer none --vad energy --turn-model none}"
OUT="${1:-LoadTests/reports/sip-$(date -u +%Y%m%dT%H%M%SZ)}"
. "$(dirname "$0")/../lib/bench.sh"
record_vmstat
machine_state > "$OUT/machine.txt" 2>&1 || true

espeak-ng -v en-us -s 140 -w "$OUT/speech.wav" \
  "What is the weather like in Paris. I would like to book a table for two at eight o'clock tonight, near the river."

# sip_server NAME: a fresh release server with SIP on a free port; sets server, port and sip_port.
sip_server() {
  sip_port=$(free_port)
  start_parley "$1" serve 0 --loops "$LOOPS" --sip-port "$sip_port" --sip-host 127.0.0.1 --sip-rtp-ports "$RTP_PORTS" \
    "${SERVE_OPTIONS[@]}" --log-level warning
  server=$pid
}
# bench.sh's run, the client niced by NICE.
run_load() {
  local name=$1; shift
  echo "\$ $([[ "$NICE" != 0 ]] && echo "nice -n $NICE ")parley-load $*" | tee "$OUT/$name.txt"
  nice -n "$NICE" "$BIN/parley-load" "$@" --json "$OUT/$name.json" 2>&1 | grep --line-buffered -Ev '^(measuring|streaming|opening|hanging up|warm-up|connecting|holding)  |^ramp ' | tee -a "$OUT/$name.txt"
  return "${PIPESTATUS[0]}"
}

top=${LEVELS##* }
for calls in $LEVELS; do
  sip_server "server-$calls"
  # Other work on the machine shows here (steal does not count it): the load average at each level.
  log "level $calls: server pid $server, SIP on UDP $sip_port; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  run_load "sip-$calls" sip "$calls" --talking "$TALKING" --sip-port "$sip_port" --url "http://127.0.0.1:$port" \
    --input "$OUT/speech.wav" --rate "$RATE" --warmup "$WARMUP" --duration "$MEASURE" --connect-timeout 90 --server-pid "$server" || true
  if [[ "${PROFILE:-0}" == 1 && "$calls" == "$top" ]] && command -v perf > /dev/null; then
    # The same load again, profiled while it streams (not measured: perf costs some).
    start sip-profiled nice -n "$NICE" "$BIN/parley-load" sip "$calls" --talking "$TALKING" --sip-port "$sip_port" \
      --input "$OUT/speech.wav" --rate "$RATE" --warmup 2 --duration 15 --connect-timeout 90
    sleep $((calls / ${RATE%.*} + 6))
    perf record -F 999 -g -p "$server" -o "$OUT/perf.data" -- sleep 8 > /dev/null 2>&1 || true
    finish sip-profiled || true
    perf report -i "$OUT/perf.data" --no-children --sort dso,symbol --stdio 2> /dev/null | grep -v '^#' | grep '%' | head -40 > "$OUT/profile.txt" || true
    # Inclusive shares of the steps a tick and a packet go through.
    perf report -i "$OUT/perf.data" --children --sort symbol --stdio -g none 2> /dev/null \
      | grep -E 'PlayoutClock|SIPCallMedia|feedAudio|Engine.*receive|takeOutbox|denoised|JitterBuffer|sendto|recvfrom|epoll_wait|fireTimers' \
      | head -30 > "$OUT/profile-steps.txt" || true
    rm -f "$OUT/perf.data"
  fi
  log "level $calls done; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  stop "server-$calls" || true
done

sip_server server-ramp
log "ramp: server pid $server, SIP on UDP $sip_port; load average $(cut -d' ' -f1-3 /proc/loadavg)"
run_load sip-ramp sip-ramp --sip-port "$sip_port" --rates "$RAMP" --step-seconds "$RAMP_SECONDS" --server-pid "$server" || true
stop server-ramp || true

if [[ "$TWILIO" == 1 ]]; then
  start_parley server-twilio serve 0 --loops "$LOOPS" "${SERVE_OPTIONS[@]}" --log-level warning
  server=$pid
  log "twilio: server pid $server; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  run_load "twilio-$top" calls "$top" --talking "$TALKING" --url "ws://127.0.0.1:$port/twilio" --input "$OUT/speech.wav" \
    --warmup "$WARMUP" --duration "$MEASURE" --server-pid "$server" || true
  stop server-twilio || true
fi
echo "sip-calls: steal (vmstat st) over the run: $(steal)"
echo "sip-calls: reports in $OUT (levels: $LEVELS)"
