#!/usr/bin/env bash
# GPT-Live (`WS /v1/live/sessions`) with the official openai Python SDK's Live client against a
# Parley server started here on loopback: the protocol's commands and errors, then spoken turns in
# several espeak-ng voices and speeds that the voice front delegates to the application, whose
# commentary is spoken. The voice front's model is `parley mock-llm` (it calls the function the
# user names); recognition, synthesis and the VAD are the server's defaults. The last spoken session
# is stored (`store: true`), forked over the fork WebSocket, and its recording downloaded (the server
# records to a directory of this run's). Run by `make test`;
# the checks are in scripts/tests/live_sdk_client.py.
#
# Usage:
#   scripts/tests/live-sdk-test.sh                               # uses .build/debug/parley
#
# Environment:
#   PARLEY_BIN    server binary (default: .build/debug/parley)
#   SDK_TIMEOUT   seconds for each wait in the client (default: 10)
#
# Exit status: 0 all checks passed; 1 a check failed; 2 setup failed.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

SDK_TIMEOUT="${SDK_TIMEOUT:-10}"
VENV="$ROOT/.venv-sdk"
venv_sdk

# Voices and speeds no other test of delegation uses; each says something while muted (never heard)
# and then asks for a task to be delegated.
speech=()
i=0
for voice_speed in en-us:150 en-gb+f3:135 en-us+m3:170; do
    voice=${voice_speed%%:*}; speed=${voice_speed##*:}
    pcm_speech "Good morning, this should not be heard." "$WORK/muted$i.pcm" "$voice" "$speed"
    pcm_speech "Please delegate checking the weather in Paris." "$WORK/request$i.pcm" "$voice" "$speed"
    speech+=("$voice@$speed:$WORK/muted$i.pcm:$WORK/request$i.pcm")
    i=$((i + 1))
done

pcm_speech "Please delegate checking the status of my order, number forty two." "$WORK/order.pcm" en-gb-x-rp 150
pcm_speech "Please delegate checking the weather in Paris." "$WORK/weather.pcm" en-us+f3 140

scripts/tools/mcp-test-server.sh --install-only || die "the MCP server's venv could not be made" 2
mcp_port=$(free_port)
start mcp scripts/tools/mcp-test-server.sh --port "$mcp_port" --events "$WORK/mcp-events.log"
wait_port mcp "$mcp_port"

start_mock
start_parley server serve 0 --loops 1 --llm openai --llm-base-url "http://127.0.0.1:$mock_port/v1" --llm-model mock --recordings "$WORK/recordings"
wait_speech_helper server "$scheme://127.0.0.1:$port"
status=0
timeout 400 "$VENV/bin/python" scripts/tests/live_sdk_client.py --base-url "$scheme://127.0.0.1:$port/v1" --timeout "$SDK_TIMEOUT" \
    --speech "${speech[@]}" --order "$WORK/order.pcm" --weather "$WORK/weather.pcm" --mcp "http://127.0.0.1:$mcp_port/agent" || status=$?
if [[ $status -ne 0 ]]; then
    logs server
    die "GPT-Live sessions with the SDK failed (exit $status; see the FAIL lines above)"
fi
kill -0 "$pid" 2>/dev/null || { logs server; die "the server died during the run"; }
stop server
say "passed: the Live protocol and spoken delegations in ${#speech[@]} voices (openai $OPENAI_VERSION)"
