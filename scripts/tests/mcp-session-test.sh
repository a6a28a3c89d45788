#!/usr/bin/env bash
# MCP tools run by Parley, end to end (issue 40): the official openai Python SDK's realtime client
# (scripts/tests/mcp_session_client.py) against `parley serve` with the built-in agent, and a real
# MCP server (PyPI's mcp, scripts/tests/mcp_test_server.py) on loopback: tools listed over every
# transport, calls forced by tool_choice and chosen by the agent from speech (espeak-ng, several
# voices), approvals, each kind of error, servers that misbehave, the allow-list, secrets kept out
# of the log, the events and /metrics; then a phone call on /twilio whose tool is slow, so the
# caller hears the filler while it runs and the answer after (scripts/tests/mcp_phone_call.py).
# Run by `make test`.
#
#   scripts/tests/mcp-session-test.sh          # uses .build/debug/parley
#
# Environment: PARLEY_BIN (.build/debug/parley), PYTHON3, MCP_TIMEOUT (10, seconds for each wait
# of the client), KEEP_LOG=DIR (keeps the servers' logs and the MCP server's events there).
# Exit status: 0 passed; 1 a check failed; 2 setup failed (venvs, PyPI, a server's start).
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

# The SDK's venv, as realtime-sdk-test.sh pins it; the MCP server's, as the Swift tests' (made once).
VENV="$ROOT/.venv-sdk"
venv_sdk
scripts/tools/mcp-test-server.sh --install-only || die "the MCP server's venv could not be made" 2
[[ -z "${KEEP_LOG:-}" ]] || on_exit 'mkdir -p "$KEEP_LOG" && cp "$LOGS"/*.log "$KEEP_LOG"/'

# The secrets: random, in the environment only (never on a command line, never printed). The MCP
# server wants the token on /protected and from its `secret` tool; the header's value is one that
# its `fail` tool quotes back.
MCP_TEST_TOKEN="tok-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
MCP_HEADER_SECRET="hdr-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export MCP_TEST_TOKEN
MASK="s/$MCP_TEST_TOKEN/<TOKEN>/g; s/$MCP_HEADER_SECRET/<HEADER>/g"

# The speech: a question for the weather in three voices at three speeds (pcm16 24 kHz, for the
# Realtime API), and once more as a phone line carries it (µ-law 8 kHz).
QUESTION="What's the weather like in Paris today?"
speech=()
for voice in en-us:150 en-gb-x-rp:175 en-us+f3:125; do
    pcm_speech "$QUESTION" "$WORK/${voice%%:*}-${voice##*:}.pcm" "${voice%%:*}" "${voice##*:}"
    speech+=("$WORK/${voice%%:*}-${voice##*:}.pcm")
done
ulaw_speech "What is the weather like in Paris" "$WORK/call.ulaw"

# The MCP server: every variant on one port; its get_weather on /agent-slow takes 3 s.
mcp_port=$(free_port)
start mcp scripts/tools/mcp-test-server.sh --port "$mcp_port" --events "$WORK/mcp-events.log" --slow-seconds 3
wait_port mcp "$mcp_port"
MCP="http://127.0.0.1:$mcp_port"

# Phone calls start with the slow agent's tools, which need no approval.
cat > "$WORK/twilio-session.json" <<EOF
{"tools": [{"type": "mcp", "server_label": "agent", "server_url": "$MCP/agent-slow", "require_approval": "never"}]}
EOF

# A server that may call only the MCP server's /json (and says so at debug level, as it all does),
start_parley allow serve 0 --loops 1 --log-level debug --transcriber none --synthesizer none --mcp-allow "$MCP/json"
allow_port=$port
# and the one under test: loopback only, so any MCP URL; time-outs short enough for the servers that
# hang (5 s, well above what a list takes on a loaded machine), the filler after 1 s.
start_parley server serve 0 --log-level debug --mcp-list-timeout 5 --mcp-call-timeout 8 --tool-filler-after 1 \
    --twilio-session "$WORK/twilio-session.json"
wait_speech_helper server "http://127.0.0.1:$port"
say "$PARLEY_BIN serving on 127.0.0.1:$port (and :$allow_port with --mcp-allow); the MCP server on :$mcp_port"

# --- the sessions ----------------------------------------------------------------------------------
status=0
(IFS=,; MCP_TOKEN="$MCP_TEST_TOKEN" MCP_HEADER_SECRET="$MCP_HEADER_SECRET" timeout 150 "$VENV/bin/python" scripts/tests/mcp_session_client.py \
    --base-url "http://127.0.0.1:$port/v1" --allow-base-url "http://127.0.0.1:$allow_port/v1" --mcp "$MCP" \
    --closed-port "$(free_port)" --speech "${speech[*]}" --timeout "${MCP_TIMEOUT:-10}") | tee "$WORK/client.out" || status=$?
if [[ $status -ne 0 ]]; then
    logs server allow mcp
    [[ $status -eq 124 ]] && die "the SDK client did not finish within 150 s"
    die "MCP sessions against Parley failed (exit $status; see the FAIL lines above)"
fi

# What the MCP server saw: the timed-out call cancelled at the server, and each misbehaving server's
# connection dropped (the 50 MB list after a few MB, not read to its end).
events_show() { grep -q "$1" "$WORK/mcp-events.log"; }
wait_until mcp "the timed-out call cancelled at the MCP server" events_show "tool slow cancelled"
for gone in "hang client gone" "endless-sse client gone" "huge-list client gone after"; do
    wait_until mcp "told by Parley's hang-up ($gone)" events_show "$gone"
done
# What the server wrote before Parley hung up includes what the kernel's buffers took (up to
# tcp_rmem's and tcp_wmem's maxima, 32 and 4 MiB here): only "not sent whole" is Parley's doing.
! grep -q "huge-list sent whole" "$WORK/mcp-events.log" || die "Parley read the whole 50 MB tool list"
sent_mb=$(grep -o 'huge-list client gone after [0-9]*' "$WORK/mcp-events.log" | head -1 | awk '{print int($NF / 1048576)}')
say "the MCP server: the timed-out call cancelled; the hanging, endless and 50 MB answers dropped (the list after $sent_mb MB were sent)"

# /metrics counts what happened, by outcome.
curl -fsS --max-time 5 "http://127.0.0.1:$port/metrics" > "$WORK/metrics.txt" || die "no /metrics"
at_least() {
    local value
    value=$(awk -v s="$1" '$1 == s { print $2 }' "$WORK/metrics.txt")
    awk -v v="${value:-0}" -v n="$2" 'BEGIN { exit !(v >= n) }' || { logs server; die "/metrics: $1 is ${value:-absent}, not >= $2"; }
}
at_least 'parley_mcp_calls_total{result="ok"}' 4
at_least 'parley_mcp_calls_total{result="tool_execution_error"}' 1
at_least 'parley_mcp_calls_total{result="http_error"}' 1
at_least 'parley_mcp_calls_total{result="protocol_error"}' 2
at_least 'parley_mcp_lists_total{result="ok"}' 4
at_least 'parley_mcp_lists_total{result="http_error"}' 1
at_least 'parley_mcp_lists_total{result="protocol_error"}' 5
at_least 'parley_mcp_call_seconds_count' 1
at_least 'parley_mcp_list_seconds_count' 1
say "/metrics: calls and lists counted by outcome, their seconds observed"

# --- the phone call ----------------------------------------------------------------------------------
timeout 120 "$VENV/bin/python" scripts/tests/mcp_phone_call.py --url "ws://127.0.0.1:$port/twilio" --speech "$WORK/call.ulaw" \
    --metrics "http://127.0.0.1:$port/metrics" --events "$WORK/mcp-events.log" --keep "$WORK/heard.ulaw" | tee "$WORK/call.out" \
    || { logs server mcp; die "the phone call's checks failed"; }
grep -q "all checks passed" "$WORK/call.out" || { logs server mcp; die "the phone call's checks failed"; }
# What the caller heard, recognised by Whisper (the speech helper's model): the filler, then the answer.
if [[ -x .venv-speech/bin/python ]]; then
    sox -t raw -e u-law -r 8000 -c 1 "$WORK/heard.ulaw" "$WORK/heard.wav" || die "sox could not read the call's audio" 2
    words=$(timeout 120 .venv-speech/bin/python scripts/tests/recognise.py "$WORK/heard.wav" | tr '[:upper:]' '[:lower:]') \
        || die "recognise.py failed on the call's audio" 2
    filler_at=$(grep -bo -E 'moment|let me|check' <<< "$words" | head -1 | cut -d: -f1 || true)
    answer_at=$(grep -bo -E '21|twenty|degrees|sunny' <<< "$words" | head -1 | cut -d: -f1 || true)
    [[ -n "$filler_at" && -n "$answer_at" ]] && (( filler_at < answer_at )) \
        || die "the caller did not hear the filler, then the answer: Whisper heard \"$words\""
    say "the caller heard: \"$words\""
else
    say "no .venv-speech (make deps makes it): what the caller heard is not recognised"
fi

# --- secrets -------------------------------------------------------------------------------------------
curl -fsS --max-time 5 "http://127.0.0.1:$port/metrics" > "$WORK/metrics.txt" || die "no /metrics"
for where in "$LOGS/server.log" "$LOGS/allow.log" "$WORK/metrics.txt" "$WORK/client.out" "$WORK/call.out"; do
    if grep -qF -e "$MCP_TEST_TOKEN" -e "$MCP_HEADER_SECRET" "$where"; then
        die "the authorization token or a header's value is in $(basename "$where")"
    fi
done
grep -q 'level=debug' "$LOGS/server.log" || die "the server's log has no debug lines: the secrets check saw too little"
say "the token and the header's value are in no log (debug level), no event and not in /metrics"
kill -0 "${harness_pids[server]}" 2>/dev/null || die "the server died"
say "passed"
