#!/usr/bin/env bash
# make bench-density: what a session of each kind costs one release server with its defaults
# (speech on: the helper, Silero in-process), side by side in one run: COUNTS sessions that send no
# audio (text), live microphones with no speech in them (mic: 20 ms pcm16 24 kHz frames of faint
# noise, -66 dBFS, at real-time pace) and the same in a room's noise (room: -46 dBFS, so every
# window goes to Silero), each held SECONDS_HELD. For each: the server's RSS and CPU (from /proc,
# over the held window), the load client's CPU, the machine's steal (vmstat st), and per session.
# After each kind, the marginal cost of a session between the first and last counts: RSS and the
# heap in use (parley_process_heap_in_use_bytes, mallinfo2) over the sessions added. The first
# count is 20, not 1, so that both loops have loaded their Silero model (14 MiB each, once) before
# it: from 1, the second loop's model was counted as 72 KiB a session. The heap is the figure to
# read: RSS hides what new sessions take from memory freed earlier (a model's load leaves some).
# Talkers: `make bench-talkers`. The sessions are `parley-load density` (beside PARLEY_BIN).
#   COUNTS (20 200), SECONDS_HELD (20), KINDS (text mic room; live-text live-mic on GPT-Live),
#   PARLEY_BIN (.build/release/parley), PARLEY_LOAD (parley-load beside PARLEY_BIN)
set -euo pipefail
PARLEY_BIN=${PARLEY_BIN:-.build/release/parley}
. "$(dirname "$0")/../lib/harness.sh"
LOAD=${PARLEY_LOAD:-$(dirname "$PARLEY_BIN")/parley-load}
[ -x "$LOAD" ] || die "$LOAD is missing; run 'swift build -c release'" 2
counts=${COUNTS:-20 200}
seconds=${SECONDS_HELD:-20}
cpu_ticks() { awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat"; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
heap_bytes() { curl -s "http://127.0.0.1:$port/metrics" | awk '/^parley_process_heap_in_use_bytes / {print $2}'; }
accounted_bytes() { curl -s "http://127.0.0.1:$port/metrics" | awk '/^parley_accounted_bytes / {print $2}'; }
hz=$(getconf CLK_TCK)
printf "%-5s %9s %8s %9s %9s %14s %16s %12s %6s\n" kind sessions opened "rss MiB" "heap MiB" "server cores" "millicores/sess" "client cores" steal
for kind in ${KINDS:-text mic room}; do
  first=""
  for count in $counts; do
    WAIT_SECONDS=90 start_parley server serve 0 --log-level warning
    server=$pid
    fifo="$WORK/hold-$kind-$count"; mkfifo "$fifo"
    "$LOAD" density "$kind" "$count" --url "ws://127.0.0.1:$port" --seconds "$seconds" < "$fifo" > "$WORK/out" 2> "$WORK/client.log" &
    client=$!
    exec 3>"$fifo"
    # Warm-up: the sessions open and their first audio makes their streams; then the window.
    sleep 3
    t0=$(cpu_ticks "$server"); st0=$(vmstat 1 2 | tail -1 | awk '{print $17}')
    sleep $((seconds - 6))
    t1=$(cpu_ticks "$server"); st1=$(vmstat 1 2 | tail -1 | awk '{print $17}')
    after=$(rss_kib "$server")
    heap=$(heap_bytes)
    accounted=$(accounted_bytes)
    until [ -s "$WORK/out" ] || ! kill -0 "$client" 2>/dev/null; do sleep 0.2; done
    [ -s "$WORK/out" ] || { cat "$WORK/client.log" >&2; die "parley-load density ended without its figures"; }
    exec 3>&-
    wait "$client" || true
    opened=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["opened"])' "$WORK/out")
    client_cpu=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(round(d["client_cpu_seconds"]/d["seconds"],3))' "$WORK/out")
    window=$((seconds - 6 + 1))
    awk -v k="$kind" -v n="$count" -v o="$opened" -v a="$after" -v h="$heap" -v t0="$t0" -v t1="$t1" -v hz="$hz" -v w="$window" -v c="$client_cpu" -v s="$(( (st0 + st1) / 2 ))" \
      'BEGIN { cores = (t1 - t0) / hz / w; printf "%-5s %9d %8d %9.1f %9.1f %14.3f %16.3f %12.3f %5d%%\n", k, n, o, a / 1024, h / 1048576, cores, cores * 1000 / (o > 0 ? o : 1), c, s }'
    if [ -z "$first" ]; then
      first="$opened $after $heap $accounted"
    else
      read -r o0 a0 h0 c0 <<<"$first"
      awk -v k="$kind" -v o0="$o0" -v o="$opened" -v a0="$a0" -v a="$after" -v h0="$h0" -v h="$heap" -v c0="$c0" -v c="$accounted" \
        'BEGIN { d = o - o0; if (d > 0) printf "%-5s a session more (%d to %d): RSS %.1f KiB, heap in use %.1f KiB, accounted %.1f KiB\n", k, o0, o, (a - a0) / d, (h - h0) / 1024 / d, (c - c0) / 1024 / d }'
    fi
    stop server
    rm -f "$fifo" "$WORK/out" "$WORK/client.log"
  done
done

# Calls (issue 71): SIP and WebRTC calls held, their accounted bytes beside the heap's growth.
[[ "${CALLS_ACCOUNTED:-1}" == 0 ]] || "$(dirname "$0")/accounted-calls.sh"
