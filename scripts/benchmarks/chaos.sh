#!/usr/bin/env bash
# make chaos (issue 41): SESSIONS resumable Realtime sessions in conversation against `parley
# mock-llm` (text turns every INTERVAL s each, every third asking for a tool the client answers;
# the first SPOKEN sessions speak their turns instead, in six voices, through Whisper, and hear
# Piper's replies, every CUT_EVERY-th of which they cut and truncate; the last TENANT_SESSIONS
# belong to a tenant capped at TENANT_LIMIT sessions) through a TCP proxy of our own (chaos_proxy.py:
# delays, stalls and cuts, since tc netem is not available here) and HAProxy, to 3 nodes sharing
# a Redis store with its persistence on, for CHAOS_MINUTES, while a schedule seeded by SEED deals
# one fault every FAULT_EVERY seconds, each kind once in every seven: kill -9 of a node and its
# restart, a SIGTERM drain and restart, Redis killed (-9) and restarted from its append-only file,
# a node's speech helper killed (-9), the upstream model answering 500 or stalling for
# FAULT_SECONDS, and a pause. `parley-load survive` resumes every drop and checks every reply's
# status and truncation; at the end it asks for every item it was told was done: an item lost, a
# seq gap or duplicate, a session it could not account for, a truncation wrong fails the run, as
# does the capped tenant holding more than its limit outside Redis's outages (each node counts
# alone while Redis is away, docs/operations.md). Every node's RSS and accounted bytes are sampled
# every 10 s; after the load ends and its sessions close, each node's is compared with its start.
# Calls beside the sessions (issue 73, CALL_EVERY seconds apart, 0 for none): SIP calls in from
# pjsua2 (chaos_phones.py) to the nodes' SIP ports, calls out placed on the nodes' call API to the
# same pjsua2 as callee, and aiortc's WebRTC calls (chaos_calls.py), each talking for CALL_HOLD s;
# every call must end for a reason the faults explain, no node keeps one open, and each node's
# /metrics tells the same story as the callers (chaos_calls_verdict.py).
# The report: $OUT/report.txt (faults, sessions, turns, resumes, items, calls, memory, the load
# client's CPU, steal). Exit 0 when nothing was lost, 1 otherwise, 2 on a setup failure.
#
#   CHAOS_MINUTES=30 SESSIONS=3000 SPOKEN=24 CUT_EVERY=3 TENANT_SESSIONS=60 TENANT_LIMIT=40 \
#   INTERVAL=85 FAULT_EVERY=45 FAULT_SECONDS=15 SEED=1 APPENDFSYNC=always scripts/benchmarks/chaos.sh [OUT_DIR]
set -Eeuo pipefail
CHAOS_MINUTES="${CHAOS_MINUTES:-30}"
SESSIONS="${SESSIONS:-3000}"
# A session holds at most 22 turns with tools (the server keeps 64 messages of history, a weather
# turn adds four; survive checks every item it was told was done): the interval grows with the
# run, 10 s at least.
INTERVAL="${INTERVAL:-$(( CHAOS_MINUTES * 60 / 21 > 10 ? CHAOS_MINUTES * 60 / 21 : 10 ))}"
FAULT_EVERY="${FAULT_EVERY:-45}"
SEED="${SEED:-1}"
FAULT_SECONDS="${FAULT_SECONDS:-15}"
SPOKEN="${SPOKEN:-24}"
CUT_EVERY="${CUT_EVERY:-3}"
TENANT_SESSIONS="${TENANT_SESSIONS:-60}"
TENANT_LIMIT="${TENANT_LIMIT:-40}"
# Redis fsyncs every write by default: with everysec a kill -9 of Redis loses up to a second of
# writes it had acknowledged (make chaos lost 221 items so in 5 minutes; docs/benchmarks.md).
APPENDFSYNC="${APPENDFSYNC:-always}"
CALL_EVERY="${CALL_EVERY:-20}"
CALL_HOLD="${CALL_HOLD:-20}"
OUT="${1:-LoadTests/reports/chaos-$(date -u +%Y%m%dT%H%M%SZ)}"
# A command that fails ends the run (set -e); say which, since a 30-minute run that stops without
# a word cannot be told from one killed from outside.
trap 'echo "chaos.sh: line $LINENO failed with status $?" >&2' ERR
scripts/tools/install-deps.sh haproxy redis-server redis-tools
. "$(dirname "$0")/../lib/bench.sh"
scripts/tools/speech-models.sh > /dev/null
if [ "$CALL_EVERY" -gt 0 ]; then
  scripts/tools/install-deps.sh espeak-ng sox
  venv_sip
  venv_webrtc
  espeak-ng -v en-us -s 150 -w "$OUT/said.wav" "What is twelve times seven?"
  sox "$OUT/said.wav" -r 8000 -c 1 -b 16 "$OUT/question-8k.wav"
  sox "$OUT/said.wav" -r 48000 -c 1 -b 16 "$OUT/question-48k.wav"
  espeak-ng -v en-gb+f3 -s 160 -w "$OUT/said.wav" "Hello? Who is calling, please?"
  sox "$OUT/said.wav" -r 8000 -c 1 -b 16 "$OUT/hello-8k.wav"
fi
record_vmstat
ulimit -n "$(ulimit -Hn)"
RANDOM=$SEED
# CHAOS_SECONDS, when given, is the length instead (make test's short run).
seconds=${CHAOS_SECONDS:-$((CHAOS_MINUTES * 60))}

faults=()
fault() { faults+=("$1"); log "fault: $*"; }

# The upstream model, restarted on its port with a fault for a while (FAULT: none, 500, stall).
MP=$(free_port)
mock() {
  stop mock-llm 5 || true
  start_parley mock-llm mock-llm "$MP" --first-token-ms 50 --tokens-per-second 50 --reply-tokens 20 --fault "$1"
}
mock none

# Redis with its append-only file, so that a kill -9 loses at most a second of writes.
RP=$(free_port)
mkdir -p "$OUT/redis"
start_redis_persistent() {
  start redis redis-server --port "$RP" --bind 127.0.0.1 --save '' --appendonly yes --appendfsync "$APPENDFSYNC" --dir "$OUT/redis" --daemonize no
  wait_until redis "answering PING on port $RP" harness_pong "$RP"
}
start_redis_persistent

# Credentials: every session presents a JWT; the capped tenant's carries parley_max_sessions.
secret="$OUT/jwt-secret"
head -c 48 /dev/urandom | base64 | tr -d '\n' > "$secret"
chmod 600 "$secret"
key=$("$PARLEY_BIN" token --secret-file "$secret" --sub chaos --ttl 86400)
capped_key=""
[ "$TENANT_SESSIONS" -eq 0 ] || capped_key=$("$PARLEY_BIN" token --secret-file "$secret" --sub capped --ttl 86400 --max-sessions "$TENANT_LIMIT")

declare -a node_pid node_port node_name node_starts node_sip callee_port
mkdir -p "$OUT/pids"
# The calls' far end (pjsua2), one process a node (chaos_phones.py says why): its SIP port is
# the node's trunk, so it starts before the node.
if [ "$CALL_EVERY" -gt 0 ]; then
  for i in 1 2 3; do
    node_sip[$i]=$(free_port)
    start "phones$i" "$ROOT/.venv-sip/bin/python" -u scripts/benchmarks/chaos_phones.py --sip-port "${node_sip[$i]}" --node $((i - 1)) \
      --every $((3 * CALL_EVERY)) --offset $(((i - 1) * CALL_EVERY + 1)) --hold "$CALL_HOLD" --question "$OUT/question-8k.wav" \
      --hello "$OUT/hello-8k.wav" --seconds $((seconds - 60)) --report "$OUT/phones.jsonl" --log "$OUT/pjsua-$i.log" --start-file "$OUT/calls.start"
    wait_until "phones$i" "its SIP port said" grep -q '^port ' "$LOGS/phones$i.log"
    callee_port[$i]=$(grep -m1 '^port ' "$LOGS/phones$i.log" | cut -d' ' -f2)
  done
fi
start_node() {
  local i=$1
  node_starts[$i]=$(( ${node_starts[$i]:-0} + 1 ))
  node_name[$i]="node$i-${node_starts[$i]}"
  # When this incarnation is spawned, not when it is ready: a call can reach it in between (its
  # /readyz answers before the helper and the RSS sample below), and its /metrics count that call.
  local spawned
  spawned=$(date +%s.%N)
  # Speech for every session that asks: the capacity is above the node's share of the load, as
  # text sessions take a seat too.
  local calls=()
  [ "$CALL_EVERY" -eq 0 ] || calls=(--sip-port "${node_sip[$i]}" --sip-host 127.0.0.1 --sip-trunk "chaos=sip:+15550000000@127.0.0.1:${callee_port[$i]}")
  OPENAI_API_KEY=sk-chaos WAIT_SECONDS=60 start_parley "${node_name[$i]}" serve "${node_port[$i]}" --loops 1 --store "redis://127.0.0.1:$RP" \
    --llm openai --llm-base-url "http://127.0.0.1:$MP/v1" --llm-model m --jwt-secret-file "$secret" \
    --speech-capacity $((SESSIONS + 100)) --drain-seconds 5 --log-level warning "${calls[@]}"
  node_pid[$i]=$pid
  wait_healthy "${node_name[$i]}" "http://127.0.0.1:${node_port[$i]}/readyz"
  wait_until "${node_name[$i]}" "its speech helper up" helper_up "${node_port[$i]}"
  echo "$pid" > "$OUT/pids/node$i"
  # This incarnation's memory before any session: what it is compared with at the end.
  echo "$(awk '/VmRSS/ { print $2 }' "/proc/$pid/status") $(metric "${node_port[$i]}" parley_accounted_bytes)" | tee "$OUT/pids/node$i.start" >> "$OUT/pids/starts"
  echo "$i $spawned" >> "$OUT/node-starts.txt"
}
for i in 1 2 3; do node_port[$i]=$(free_port); start_node "$i"; done
FRONT=$(free_port)
STATS_PORT=$(free_port) scripts/tools/haproxy-config.sh "$FRONT" "${node_port[1]}" "${node_port[2]}" "${node_port[3]}" > "$OUT/haproxy.cfg"
start haproxy haproxy -f "$OUT/haproxy.cfg" -db
wait_healthy haproxy "http://127.0.0.1:$FRONT/readyz"
PROXY=$(free_port)
start proxy "${PYTHON3:-python3}" -u scripts/benchmarks/chaos_proxy.py --listen "$PROXY" --to "$FRONT" --seed "$SEED" --seconds $((seconds + 120)) \
    --faults-seconds "$seconds"
wait_port proxy "$PROXY"
log "redis :$RP, nodes :${node_port[1]} :${node_port[2]} :${node_port[3]}, haproxy :$FRONT, proxy :$PROXY, mock-llm :$MP; seed $SEED"

# Memory: every node's RSS (KiB) and accounted bytes every 10 s, whichever incarnation is up.
( while true; do
    for i in 1 2 3; do
      p=$(cat "$OUT/pids/node$i" 2>/dev/null || true)
      kb=$(awk '/VmRSS/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo "")
      accounted=$(metric "${node_port[$i]}" parley_accounted_bytes 2>/dev/null || echo "")
      echo "$(date +%s) node$i $p ${kb:-down} ${accounted:-?}"
    done
    sleep 10
  done ) >> "$OUT/memory.txt" &
sampler=$!
on_exit "kill $sampler 2>/dev/null || true"

vm_from=$(wc -l < "$OUT/vmstat.log")
survive_args=("$SESSIONS" --url "ws://127.0.0.1:$PROXY/v1/realtime?resume=1" --turn-interval "$INTERVAL" --duration "$seconds"
              --tools --spoken "$SPOKEN" --cut-every "$CUT_EVERY")
# The keys by environment: out of the process list and of the command line the report shows.
export PARLEY_LOAD_API_KEY="$key"
if [ "$TENANT_SESSIONS" -gt 0 ]; then
  survive_args+=(--tenant-sessions "$TENANT_SESSIONS" --tenant-limit "$TENANT_LIMIT")
  export PARLEY_LOAD_TENANT_KEY="$capped_key"
fi
echo "\$ parley-load survive ${survive_args[*]}" > "$OUT/survive.txt"
start survive timeout $((seconds + 600)) "$BIN/parley-load" survive "${survive_args[@]}" --json "$OUT/survive.json"
started=$(date +%s)
sleep 2
kill -0 "$pid" 2>/dev/null || { cat "$OUT/survive.log" >&2; die "the load client did not start" 2; }
if [ "$CALL_EVERY" -gt 0 ]; then
  touch "$OUT/calls.start"
  start calls "$ROOT/.venv-webrtc/bin/python" -u scripts/benchmarks/chaos_calls.py \
    --nodes "http://127.0.0.1:${node_port[1]},http://127.0.0.1:${node_port[2]},http://127.0.0.1:${node_port[3]}" \
    --every "$CALL_EVERY" --hold "$CALL_HOLD" --question "$OUT/question-48k.wav" --seconds $((seconds - 60)) --report "$OUT/calls.jsonl"
fi

# The schedule: one fault every FAULT_EVERY s until a minute before the load ends, so the last
# resumes settle while it still runs; the kinds dealt from a deck shuffled by SEED each round, so
# that every kind comes once in every seven, however short the run.
deck=()
deal() {
  if [ ${#deck[@]} -eq 0 ]; then
    deck=(0 1 2 3 4 5 6)
    for ((k = 6; k > 0; k--)); do j=$((RANDOM % (k + 1))); t=${deck[$k]}; deck[$k]=${deck[$j]}; deck[$j]=$t; done
  fi
  card=${deck[0]}
  deck=("${deck[@]:1}")
}
sleep 20
while (( $(date +%s) - started < seconds - 60 )); do
  i=$((RANDOM % 3 + 1))
  deal
  case $card in
    0) fault "kill -9 node$i"
       from=$(date +%s.%N)
       kill -9 "${node_pid[$i]}"; stop "${node_name[$i]}" 5 || true; start_node "$i"
       echo "$from $(date +%s.%N) kill $i" >> "$OUT/node-faults.txt" ;;
    1) fault "SIGTERM node$i (drain, then start again)"
       from=$(date +%s.%N)
       stop "${node_name[$i]}" 30 || true; start_node "$i"
       echo "$from $(date +%s.%N) term $i" >> "$OUT/node-faults.txt" ;;
    2) fault "kill -9 redis, restart from its append-only file after 3 s"
       echo "$(date +%s) down" >> "$OUT/redis-outages.txt"
       kill -9 "${harness_pids[redis]}"; stop redis 5 || true; sleep 3; start_redis_persistent
       # The nodes reconnect within 2 s (their backoff) and count tenants together again at their
       # next heartbeat (10 s).
       echo "$(( $(date +%s) + 15 )) up" >> "$OUT/redis-outages.txt" ;;
    3) fault "upstream answers 500 for $FAULT_SECONDS s"
       mock 500; sleep "$FAULT_SECONDS"; mock none ;;
    4) fault "upstream stalls for $FAULT_SECONDS s"
       mock stall; sleep "$FAULT_SECONDS"; mock none ;;
    5) helper=$(pgrep -P "${node_pid[$i]}" -f parley_speech | head -1 || true)
       fault "kill -9 node$i's speech helper (pid ${helper:-none})"
       [ -n "$helper" ] && kill -9 "$helper" ;;
    6) fault "none this time (the proxy's own windows go on)" ;;
  esac
  sleep "$FAULT_EVERY"
done
log "faults stopped"

finish survive || true
cat "$OUT/survive.log" >> "$OUT/survive.txt" 2>/dev/null || true
if [ "$CALL_EVERY" -gt 0 ]; then
  finish calls || true
  for i in 1 2 3; do finish "phones$i" || true; done
fi
touch "$OUT/node-faults.txt"
load_cpu=$(awk '/client CPU/ { print }' "$OUT/survive.txt" | tail -1)
vm_to=$(wc -l < "$OUT/vmstat.log")
log "load ended; its sessions closed, memory settles for 40 s (parked copies expire after 30)"
sleep 40
kill "$sampler" 2>/dev/null || true
stop proxy 5 || true
for i in 1 2 3; do
  curl -fsS "http://127.0.0.1:${node_port[$i]}/metrics" | grep -E '^parley_(sip_calls_open|sip_calls_total|webrtc_calls_open|webrtc_calls_ended_total|accounted_bytes_by_carrier)' \
    > "$OUT/metrics-node$i.txt" || true
done

[ -s "$OUT/survive.json" ] || die "the load client wrote no report (its output: $OUT/survive.txt)" 1
lost=$(json_field "$OUT/survive.json" items_lost)
gaps=$(json_field "$OUT/survive.json" seq_gaps)
dups=$(json_field "$OUT/survive.json" seq_duplicates)
{
  echo "chaos: $SESSIONS sessions, $seconds s, a turn every $INTERVAL s each, seed $SEED"
  echo "faults injected (${#faults[@]}):"
  printf '  %s\n' "${faults[@]}"
  echo "proxy: $(grep -h '^proxy: {' "$OUT/proxy.log" | tail -1)"
  echo
  sed -n '2,$p' "$OUT/survive.txt"
  echo
  echo "memory: each node's last incarnation right after its start, its peak, and at the end (RSS KiB / accounted bytes)"
  for i in 1 2 3; do
    p=$(cat "$OUT/pids/node$i"); read -r start_kb start_acc < "$OUT/pids/node$i.start"
    end_kb=$(awk '/VmRSS/ { print $2 }' "/proc/$p/status" 2>/dev/null || echo "?")
    end_acc=$(metric "${node_port[$i]}" parley_accounted_bytes 2>/dev/null || echo "?")
    # Ended calls' stories are kept 5 minutes on purpose (docs/protocol.md, "The call's story"):
    # accounted under ended_calls, and left out of what must be back by now.
    kept=$(metric "${node_port[$i]}" 'parley_accounted_bytes_by_carrier{carrier="ended_calls"}' 2>/dev/null || echo 0)
    [ "$end_acc" = "?" ] || end_acc=$(awk -v a="$end_acc" -v k="${kept:-0}" 'BEGIN { printf "%d", a - k }')
    peak=$(awk -v p="$p" '$3 == p && $4 != "down" { if ($4 > m) m = $4 } END { print m + 0 }' "$OUT/memory.txt")
    peak_acc=$(awk -v p="$p" '$3 == p && $5 != "?" { if ($5 > m) m = $5 } END { print m + 0 }' "$OUT/memory.txt")
    echo "  node$i (pid $p, started ${node_starts[$i]} times): RSS start $start_kb, peak $peak, end $end_kb; accounted start $start_acc, peak $peak_acc, end $end_acc (and ${kept:-0} of ended calls' stories, kept 5 minutes)"
    echo "node$i $p $start_kb $end_kb $start_acc $end_acc" >> "$OUT/memory-ends.txt"
  done
  echo "every incarnation's RSS at its start (KiB): $(cut -d' ' -f1 "$OUT/pids/starts" | sort -n | tr '\n' ' ')"
  echo "load client: $load_cpu"
  echo "steal (vmstat st) over the run: $(steal "$vm_from" "$vm_to")"
  echo "items lost $lost, seq gaps $gaps, seq duplicates $dups"
  python3 scripts/benchmarks/chaos_verdict.py "$OUT" "$TENANT_LIMIT" 3 > "$OUT/verdict.txt" && verdict=ok || verdict=failed
  if [ "$CALL_EVERY" -gt 0 ]; then
    python3 scripts/benchmarks/chaos_calls_verdict.py "$OUT" >> "$OUT/verdict.txt" || verdict=failed
  fi
  cat "$OUT/verdict.txt"
  echo "$verdict" > "$OUT/verdict.status"
} | tee "$OUT/report.txt"
# A node that is not running at the end died of something no fault here does (a crash: a Redis
# kill -9 once segfaulted one, CI 2026-11-28): its log's end says what.
for i in 1 2 3; do kill -0 "${node_pid[$i]}" 2>/dev/null || logs "${node_name[$i]}"; done
for i in 1 2 3; do stop "${node_name[$i]}" 15 || true; done
passed=$(json_field "$OUT/survive.json" passed)
[ "$lost" = 0 ] && [ "$dups" = 0 ] || die "completed items were lost or duplicated (report: $OUT/report.txt)" 1
# survive's own verdict: sessions that could not be accounted for, resumes refused, turns unanswered.
[ "$passed" = True ] || die "the load client's checks failed: $(json_field "$OUT/survive.json" problems) (report: $OUT/report.txt)" 1
[ "$(cat "$OUT/verdict.status")" = ok ] || die "$(grep FAILED "$OUT/verdict.txt" | tr '\n' ' ')(report: $OUT/report.txt)" 1
echo "chaos: nothing lost; report in $OUT/report.txt"
