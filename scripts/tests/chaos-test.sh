#!/usr/bin/env bash
# make chaos, short (issue 41), in `make test`: 300 sessions for 3 minutes, a few of them spoken
# and a few of a capped tenant, through the same faults as the 30-minute run, one every few
# seconds so that each of the seven kinds comes at least once (the deck, scripts/benchmarks/chaos.sh).
# Debug binaries, as the rest of `make test` builds; it fails on any item lost or duplicated, a
# check of the load client's, the tenant's limit or memory (chaos_verdict.py).
#
#   scripts/tests/chaos-test.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
export BIN="${BIN:-.build/debug}" CHAOS_MINUTES=3 SESSIONS=300 SPOKEN=6 CUT_EVERY=2 TENANT_SESSIONS=12 TENANT_LIMIT=8 \
       INTERVAL=10 FAULT_EVERY=3 FAULT_SECONDS=5 SEED="${SEED:-7}"
exec scripts/benchmarks/chaos.sh "${1:-$(mktemp -d /tmp/parley-chaos-test.XXXXXX)}"
