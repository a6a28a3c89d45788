#!/usr/bin/env bash
# A function-tool round trip with the OpenAI Agents SDK's realtime agents (openai-agents, Python)
# against a Parley server started here on loopback: a RealtimeAgent with a function_tool, run by
# RealtimeRunner on the SDK's own WebSocket model pointed at Parley by its `url` option. Parley's
# model is `parley mock-llm` (started here too), which calls a declared tool when the prompt names
# it and answers with the tool's output. Then the SDK's telephony settings (G.711 µ-law both ways,
# as its Twilio example sets them) with spoken µ-law. The checks are in scripts/tests/agents_sdk_client.py.
#
# Usage:
#   scripts/tests/agents-sdk-test.sh                                # uses .build/debug/parley
#   PARLEY_BIN=.build-sdk/debug/parley scripts/tests/agents-sdk-test.sh
#
# Environment:
#   PARLEY_BIN      server binary (default: .build/debug/parley; build it with `swift build`)
#   PYTHON3         Python 3 for the venv (default: python3)
#   AGENTS_TIMEOUT  seconds for the client's whole run (default: 20)
#
# The venv .venv-agents is made once and reused while its marker file names the same pinned versions.
# Exit status: 0 all checks passed; 1 a check failed; 2 setup failed (venv, PyPI, server start).
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

AGENTS_TIMEOUT="${AGENTS_TIMEOUT:-20}"

# openai-agents, with the openai and websockets releases it resolved to when this was written pinned
# as well (the SDK validates server events against openai's models and dials with websockets).
VENV="$ROOT/.venv-agents"
venv_agents

# --- mock-llm and the server ----------------------------------------------------------------------
start_mock
start_parley server serve 0 --loops 1 --llm openai --llm-base-url "http://127.0.0.1:$mock_port/v1" --llm-model mock
say "$PARLEY_BIN serving on 127.0.0.1:$port, its model parley mock-llm on 127.0.0.1:$mock_port"

# --- the client -----------------------------------------------------------------------------------
status=0
timeout 120 "$VENV/bin/python" scripts/tests/agents_sdk_client.py --url "ws://127.0.0.1:$port/v1/realtime?model=gpt-realtime" \
    --timeout "$AGENTS_TIMEOUT" || status=$?
if [[ $status -ne 0 ]]; then
    logs server mock
    [[ $status -eq 124 ]] && die "the Agents SDK client did not finish within 120 s"
    die "Agents SDK round trip against Parley failed (exit $status; see the FAIL lines above)"
fi

# The SDK's telephony settings (its Twilio example's g711_ulaw and semantic VAD, with the agent's
# instructions) and µ-law speech through send_audio, against the same server (pocketsphinx hears
# the caller, mock-llm answers, espeak-ng speaks it as µ-law).
ulaw_speech "Good morning" "$WORK/said.ulaw"
timeout 120 "$VENV/bin/python" scripts/tests/agents_sdk_client.py --url "ws://127.0.0.1:$port/v1/realtime?model=gpt-realtime" \
    --timeout "$AGENTS_TIMEOUT" --g711 "$WORK/said.ulaw" || status=$?
if [[ $status -ne 0 ]]; then
    logs server mock
    [[ $status -eq 124 ]] && die "the Agents SDK telephony client did not finish within 120 s"
    die "Agents SDK telephony round trip against Parley failed (exit $status; see the FAIL lines above)"
fi
kill -0 "$pid" 2>/dev/null || { logs server; die "the server died during the run"; }

say "passed, telephony included (openai-agents $AGENTS_VERSION)"
