#!/usr/bin/env bash
# The OTLP trace round trip against a real receiver (scripts/tests/otlp_trace_check.py says what it
# checks): the receiver decodes what Parley exports with the opentelemetry-proto package. Run by
# `make test` after the Swift tests.
#
#   scripts/tests/otlp-test.sh                     # uses .build/debug/parley
#   PARLEY_BIN=.build/release/parley scripts/tests/otlp-test.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
PARLEY_BIN="${PARLEY_BIN:-.build/debug/parley}"
PYTHON3="${PYTHON3:-python3}"
VENV="$ROOT/.venv-otlp"
PINS="opentelemetry-proto==1.45.2 websockets==15.0.1"
say() { echo "otlp-test: $*"; }
die() { echo "otlp-test: FAILED: $1" >&2; exit "${2:-1}"; }
# shellcheck source=scripts/lib/sdk-common.sh
source scripts/lib/sdk-common.sh
pinned_venv "$VENV" "$PINS"
[[ -x "$PARLEY_BIN" ]] || die "no server binary at $PARLEY_BIN (build it with: swift build)" 2
timeout 120 "$VENV/bin/python" scripts/tests/otlp_trace_check.py "$PARLEY_BIN" || die "the OTLP round trip failed (see the FAIL lines above)" $?
