#!/usr/bin/env bash
# No secret in any output (issue 41; scripts/tests/secrets_check.py says what it drives and
# searches): a server holding every kind of secret, at --log-level debug with tracing, recording
# and reports on, driven down every path that handles one, twice (an upstream key of OpenAI's
# shape, and one of no known shape). Run by `make test` after the Swift tests.
#
#   scripts/tests/secrets-test.sh                     # uses .build/debug/parley
#   PARLEY_BIN=.build/release/parley scripts/tests/secrets-test.sh
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
VENV="$ROOT/.venv-otlp"
venv_otlp
[[ -x "$PARLEY_BIN" ]] || die "no server binary at $PARLEY_BIN (build it with: swift build)" 2
timeout 180 "$VENV/bin/python" scripts/tests/secrets_check.py "$PARLEY_BIN" || die "a secret reached an output (see the FAIL lines above)" $?
