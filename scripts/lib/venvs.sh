# The Python environments the tests and benchmarks drive third-party clients and peers from, each
# made by harness.sh's pinned_venv (once, reused while its pins hold), pinned here and nowhere else.
# harness.sh sources this file; `make test` makes every one of them while Parley builds
# (scripts/tools/prepare-tests.sh), so that no phase waits on pip.
#
#   venv_sdk      .venv-sdk: the openai SDK (realtime, live), for the SDK, SIP, Twilio and MCP tests
#   venv_sip      .venv-sip: pjsua2, the phones of the SIP tests and the chaos run
#   venv_webrtc   .venv-webrtc: aiortc, numpy and the openai SDK, WebRTC's peers and the hearing bench
#   venv_agents   .venv-agents: the OpenAI Agents SDK, with the openai and websockets it resolved to
#   venv_otlp     .venv-otlp: OpenTelemetry's protobufs, what the OTLP and secrets tests decode
#   venv_deploy   .venv-deploy: kubernetes-validate, for the deploy manifests
#   venv_mcp      .venv-mcp: the `mcp` package's server, the MCP tests' peer
#   all_venvs     every one of them, one after another

OPENAI_VERSION="3.54.0"
WEBSOCKETS_VERSION="15.0.1"
# openai-agents 0.24.0 resolved websockets 16.1.1 when its test was written.
AGENTS_VERSION="0.24.0"
AGENTS_WEBSOCKETS_VERSION="16.1.1"
# The newest mcp release at the time of writing (it names the server class `MCPServer`).
MCP_VERSION="2.3.0"
KV_VERSION="1.37.0"

venv_sdk() { pinned_venv "$ROOT/.venv-sdk" "openai[realtime]==$OPENAI_VERSION websockets==$WEBSOCKETS_VERSION"; }
venv_sip() { pinned_venv "$ROOT/.venv-sip" "pjsua2-python==2.15.1"; }
venv_webrtc() { pinned_venv "$ROOT/.venv-webrtc" "aiortc==1.16.0 numpy==2.4.6 websockets==$WEBSOCKETS_VERSION openai==$OPENAI_VERSION"; }
venv_agents() { pinned_venv "$ROOT/.venv-agents" "openai-agents==$AGENTS_VERSION openai==$OPENAI_VERSION websockets==$AGENTS_WEBSOCKETS_VERSION"; }
venv_otlp() { pinned_venv "$ROOT/.venv-otlp" "opentelemetry-proto==1.45.2 websockets==$WEBSOCKETS_VERSION"; }
venv_deploy() { pinned_venv "$ROOT/.venv-deploy" "kubernetes-validate==$KV_VERSION"; }
venv_mcp() { pinned_venv "$ROOT/.venv-mcp" "mcp==$MCP_VERSION"; }
all_venvs() { venv_sdk && venv_sip && venv_webrtc && venv_agents && venv_otlp && venv_deploy && venv_mcp; }
