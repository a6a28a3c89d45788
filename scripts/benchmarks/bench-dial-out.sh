#!/usr/bin/env bash
# Calls out (issue 54): how many calls a second Parley places, and how long each takes to set up,
# through a trunk played by SIPp (its built-in UAS: 180, then 200 with SDP at once), on one release
# server with its speech off (the signalling and the sessions' start, not the conversation). At each
# of RATES calls a second for DURATION seconds, every call hung up HOLD s after it was placed
# (`parley-load dial-out`): the API's answer time, the INVITE-to-answer time, the
# calls refused, the server's and the load client's CPU, and the steal. Loopback only; bounded.
#
#   RATES=5,10,20,40 DURATION=10 HOLD=3 scripts/benchmarks/bench-dial-out.sh [OUT_DIR]
set -euo pipefail
RATES="${RATES:-5,10,20,40}"
SECONDS_EACH="${DURATION:-10}"
HOLD="${HOLD:-3}"
OUT="${1:-LoadTests/reports/dial-out-$(date -u +%Y%m%dT%H%M%SZ)}"
. "$(dirname "$0")/../lib/bench.sh"
command -v sipp > /dev/null || die "no sipp (Debian: apt-get install sip-tester)" 2
record_vmstat
machine_state | tee "$OUT/machine.txt"

trunk=$(free_port)
start sipp sipp -sn uas -i 127.0.0.1 -p "$trunk" -mp "$(free_port 4)" -nostdin -l 2000 -max_socket 4000
sip=$(free_port)
start_parley server serve 0 --loops 2 --transcriber none --synthesizer none --log-level warning \
    --sip-port "$sip" --sip-host 127.0.0.1 --sip-media-timeout 30 --sip-trunk "sipp=sip:+15557654321@127.0.0.1:$trunk"
server=$pid
log "placing calls at $RATES a second, $SECONDS_EACH s each, each held $HOLD s"
"$BIN/parley-load" dial-out --url "http://127.0.0.1:$port" --server-pid "$server" --rates "$RATES" \
    --seconds "$SECONDS_EACH" --hold "$HOLD" | tee "$OUT/rates.jsonl"
stop server || true
stop sipp || true
echo "bench-dial-out: steal (vmstat st) over the run: $(steal)" | tee "$OUT/steal.txt"
echo "bench-dial-out: reports in $OUT"
