#!/usr/bin/env bash
# A real MCP server for the Swift tests of Parley's MCP client (Tests/MCPTests/MCPServerTests):
# PyPI's `mcp`, pinned, in the venv .venv-mcp under the repository (git-ignored), running
# scripts/tests/mcp_test_server.py with the arguments given. The venv is made once and reused
# while its marker file names the same pinned version.
#
# Usage:
#   scripts/tools/mcp-test-server.sh --install-only          # make the venv, start nothing
#   scripts/tools/mcp-test-server.sh --port N [--json] [--stateless] [--page-size N]
#
# Environment: PYTHON3 (python3), PIP_SECONDS (600).
# Exit status: the server's; 2 when the venv could not be made.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

VENV="$ROOT/.venv-mcp"
venv_mcp

[[ "${1:-}" == "--install-only" ]] && exit 0
rm -rf "$WORK"  # exec skips the harness's clean-up
exec "$VENV/bin/python" "$ROOT/scripts/tests/mcp_test_server.py" "$@"
