#!/usr/bin/env bash
# What a running server hears (issue 74): scripts/benchmarks/hearing_bench.py against one release
# server on the defaults (`parley serve`, the speech models installed), in four voices no test
# tunes on, 20 sentences each, at five start phases: the word error rate's median and spread per
# carrier and line. Two passes: the box idle (the noisy line on /v1/realtime pcm16, one phase's
# four sessions at once), then loaded (LOAD, 10 sessions at once: at 20 the helper's decodes passed
# their 10 s and turns failed, `transcription_failed`, which the bench reports) on every
# carrier and line: /v1/realtime pcm16 at 24 kHz (clean, G.711, noisy) and µ-law (G.711, noisy),
# /twilio (G.711, noisy), and SIP (G.711, noisy: calls placed through a trunk to pjsua2 phones,
# hearing_sip_callee.py, that answer and say the sentences; 4 at once, PJSIP's limit). About an hour.
#   IDLE_CARRIERS (pcm), IDLE_LINES (noisy), CARRIERS (pcm,pcmu,twilio,sip), LINES (clean,g711,noisy),
#   PHASES (0,6,12,18,24), VOICES (4), SENTENCES (20), MODELS (default: the server's; a list such as
#   whisper-tiny.en,whisper-base measures each, asked for by the sessions, side by side on one
#   server), LOAD (10; 0 skips the pass), IDLE (1; 0 skips it), SERVE_ARGS (more `parley serve` options, as `--transcriber whisper-base`), BIN
#   (.build/release), OUT (LoadTests/reports/bench-hearing-<UTC>)
set -euo pipefail
. "$(dirname "$0")/../lib/bench.sh"

venv_webrtc
machine_state | tee "$OUT/machine.txt"
record_vmstat
sip_args=() bench_sip=()
if [[ ",${CARRIERS:-pcm,pcmu,twilio,sip}," == *,sip,* ]]; then
  # The phones the SIP carrier calls (pjsua2), and a trunk to them.
  venv_sip
  mkdir -p "$OUT/sip-wav"
  "$ROOT/.venv-sip/bin/python" -u scripts/benchmarks/hearing_sip_callee.py --wav-dir "$OUT/sip-wav" --log "$OUT/pjsua.log" \
    > "$OUT/callee.log" 2>&1 &
  callee=$!
  # PJSIP says its start-up on stdout before its log is set up: its port line comes after.
  for _ in $(seq 300); do
    callee_port=$(sed -n 's/^port \([0-9]*\)$/\1/p' "$OUT/callee.log" | head -1)
    [ -n "$callee_port" ] && break
    sleep 0.1
  done
  [ -n "$callee_port" ] || die "the SIP callee did not start (pjsua2): $OUT/callee.log"
  sip_args=(--sip-port "$(free_port)" --sip-host 127.0.0.1 --sip-trunk "hearing=sip:127.0.0.1:$callee_port")
  bench_sip=(--sip-trunk hearing --sip-wav-dir "$OUT/sip-wav")
fi
# shellcheck disable=SC2086
serve_speech server "${sip_args[@]}" ${SERVE_ARGS:-}
echo "server: $PARLEY_BIN serve --port $port ${sip_args[*]} ${SERVE_ARGS:-} (pid $server)" | tee "$OUT/run.txt"
status=0
# pass NAME SESSIONS CARRIERS LINES: one bench run, its CPU and steal beside it.
pass() {
  local name=$1 sessions=$2 carriers=$3 lines=$4 cpu_before helper helper_before line_start
  helper=$(pgrep -P "$server" -f parley_speech | head -1)
  cpu_before=$(cpu "$server") helper_before=$(cpu "$helper") line_start=$(wc -l < "$OUT/vmstat.log")
  log "$name: $sessions sessions at once, $carriers, $lines"
  timeout 7200 "$ROOT/.venv-webrtc/bin/python" -u scripts/benchmarks/hearing_bench.py --url "http://127.0.0.1:$port" \
    --carriers "$carriers" --lines "$lines" --phases "${PHASES:-0,6,12,18,24}" --voices "${VOICES:-4}" \
    --sentences "${SENTENCES:-20}" --models "${MODELS:-default}" "${bench_sip[@]}" --sessions "$sessions" --json "$OUT/hearing-$name.json" | tee -a "$OUT/run.txt" || status=$?
  echo "$name: server CPU $(awk -v a="$cpu_before" -v b="$(cpu "$server")" 'BEGIN { printf "%.0f", b - a }') s," \
    "helper CPU $(awk -v a="$helper_before" -v b="$(cpu "$helper")" 'BEGIN { printf "%.0f", b - a }') s;" \
    "steal (vmstat st, seconds at each %): $(steal "$line_start" "$(wc -l < "$OUT/vmstat.log")")" | tee -a "$OUT/run.txt"
}
[ "${IDLE:-1}" = 0 ] || pass idle "${VOICES:-4}" "${IDLE_CARRIERS:-pcm}" "${IDLE_LINES:-noisy}"
[ "${LOAD:-10}" = 0 ] || pass loaded "${LOAD:-10}" "${CARRIERS:-pcm,pcmu,twilio,sip}" "${LINES:-clean,g711,noisy}"
echo "helper RSS at the end: $(awk '/VmRSS/ { print $2 }' "/proc/$(pgrep -P "$server" -f parley_speech | head -1)/status") KiB" | tee -a "$OUT/run.txt"
stop server || true
[ -z "${callee:-}" ] || { kill "$callee" 2>/dev/null; wait "$callee" 2>/dev/null || true; }
echo "bench-hearing: $OUT/{run.txt,hearing-*.json,server.log,vmstat.log}"
exit "$status"
