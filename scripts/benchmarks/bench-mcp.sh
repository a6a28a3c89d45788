#!/usr/bin/env bash
# What MCP tools add to a Realtime session (issue 40): the time discovery adds to a session's start,
# and what a tool call adds beyond the MCP server's own time. One release server (`parley serve
# --loops 2`, the built-in agent, no speech: text sessions) and one MCP server
# (scripts/benchmarks/mcp_bench_server.py: PyPI's `mcp`, stateful, JSON answers, a fast tool, and
# a log of its own time on every request), both on free loopback ports; the client,
# `parley-load mcp-bench` (its --help says what is timed), measures
#   1. discovery: SESSIONS sessions at each of LEVELS concurrencies, no MCP, cold (a credential of
#      their own, so nothing is cached) and warm (one credential, cached on both loops);
#   2. calls: CALL_LEVELS sessions at once each making tool calls forced by tool_choice (CALLS_ALONE
#      for a lone session, CALLS each otherwise), less the server's own time per call;
# with its own CPU, Parley's, the MCP server's and other processes', and steal, beside each block. vmstat runs
# throughout. make bench-mcp runs it after make release; about a minute; the client is bounded
# by TIME_LIMIT seconds (and `timeout` a minute past that).
#   SESSIONS (500), LEVELS (1,10,50), CALL_LEVELS (1,10,50), CALLS_ALONE (500), CALLS (20),
#   TIME_LIMIT (600), BIN (.build/release), OUT (LoadTests/reports/bench-mcp-<UTC time>),
#   MCP_VENV (a venv with mcp; default .venv-mcp, made here as scripts/tools/mcp-test-server.sh
#   makes it)
set -euo pipefail
. "$(dirname "$0")/../lib/bench.sh"
SESSIONS="${SESSIONS:-500}" LEVELS="${LEVELS:-1,10,50}" CALL_LEVELS="${CALL_LEVELS:-1,10,50}"
CALLS_ALONE="${CALLS_ALONE:-500}" CALLS="${CALLS:-20}" TIME_LIMIT="${TIME_LIMIT:-600}"

if [ -n "${MCP_VENV:-}" ]; then mcp="$MCP_VENV"; else mcp="$ROOT/.venv-mcp"; venv_mcp; fi

machine_state | tee "$OUT/machine.txt"
record_vmstat
serve=(--loops 2 --log-level warning --transcriber none --synthesizer none --turn-model none --vad energy)
start_parley server serve "$(free_port)" "${serve[@]}"
server=$pid parley_port=$port
mcp_port=$(free_port)
start mcp "$mcp/bin/python" scripts/benchmarks/mcp_bench_server.py --port "$mcp_port" --log "$OUT/mcp-requests.jsonl"
mcp_pid=$pid
wait_port mcp "$mcp_port"

client=("$BIN/parley-load" mcp-bench --url "ws://127.0.0.1:$parley_port/v1/realtime"
        --mcp-url "http://127.0.0.1:$mcp_port/mcp" --server-log "$OUT/mcp-requests.jsonl" --parley-pid "$server" --mcp-pid "$mcp_pid"
        --metrics --out "$OUT" --sessions "$SESSIONS" --levels "$LEVELS"
        --call-levels "$CALL_LEVELS" --calls-alone "$CALLS_ALONE" --calls "$CALLS" --time-limit "$TIME_LIMIT")
{
  echo "\$ $PARLEY_BIN serve ${serve[*]}   # on 127.0.0.1:$parley_port"
  echo "\$ $mcp/bin/python scripts/benchmarks/mcp_bench_server.py --port $mcp_port --log $OUT/mcp-requests.jsonl"
  echo "\$ ${client[*]}"
} | tee "$OUT/run.txt"
status=0
timeout $((TIME_LIMIT + 60)) "${client[@]}" | tee -a "$OUT/run.txt" || status=${PIPESTATUS[0]}

echo "steal (vmstat st, seconds at each %): $(steal)" | tee -a "$OUT/run.txt"
echo "Parley's log: warnings and errors: $(grep -ciE 'warn|error' "$OUT/server.log" || true)" | tee -a "$OUT/run.txt"
stop server || true
stop mcp || true
echo "bench-mcp: $OUT/{run.txt,mcp-bench.json,mcp-requests.jsonl,server.log,vmstat.log}"
exit "$status"
