#!/usr/bin/env bash
# The OTLP trace round trip against a real receiver (scripts/tests/otlp_trace_check.py says what it
# checks): the receiver decodes what Parley exports with the opentelemetry-proto package. Run by
# `make test` after the Swift tests.
#
#   scripts/tests/otlp-test.sh                     # uses .build/debug/parley
#   PARLEY_BIN=.build/release/parley scripts/tests/otlp-test.sh
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
VENV="$ROOT/.venv-otlp"
venv_otlp
[[ -x "$PARLEY_BIN" ]] || die "no server binary at $PARLEY_BIN (build it with: swift build)" 2
timeout 120 "$VENV/bin/python" scripts/tests/otlp_trace_check.py "$PARLEY_BIN" || die "the OTLP round trip failed (see the FAIL lines above)" $?
