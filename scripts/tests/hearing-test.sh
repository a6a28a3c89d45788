#!/usr/bin/env bash
# What the server hears, held (issue 74): scripts/benchmarks/hearing_bench.py's short version
# against `parley serve` on its defaults: two voices no test tunes on (flite kal, espeak-ng en+m3),
# eight sentences each, on a clean and a noisy line (G.711, then pink noise 10 dB under the speech)
# sent as 24 kHz pcm16 on /v1/realtime at real-time pace, at three start phases, six sessions at
# once (of twelve: CI's two cores carry the other lane beside it, and a decode past the helper's
# 10 s fails its turn, which fails this test). Fails when a line's median word error rate rises past the figure recorded in
# scripts/tests/hearing-baseline.json by more than its spread and MARGIN points (2), or the server
# reports an error. The figures are the decodes of fixed audio in fixed windows, the same at any
# load (the windows end where the VAD said quiet); `make bench-hearing` is the whole bench. Run by
# `make test`; RECORD=1 writes the baseline from this run instead of checking it.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
VENV="$ROOT/.venv-webrtc"
venv_webrtc
baseline=scripts/tests/hearing-baseline.json
start_parley server serve 0
wait_speech_helper server "http://127.0.0.1:$port"
check=(--baseline "$baseline" --margin "${MARGIN:-2}")
[ "${RECORD:-0}" = 1 ] && check=()
timeout 600 "$VENV/bin/python" -u scripts/benchmarks/hearing_bench.py --url "http://127.0.0.1:$port" --carriers pcm \
  --lines clean,noisy --phases 0,11,22 --voices 2 --sentences 8 --sessions 6 --json "$WORK/hearing.json" "${check[@]}" \
  || { logs server; die "what the server heard got worse (above)"; }
if [ "${RECORD:-0}" = 1 ]; then
  cp "$WORK/hearing.json" "$baseline"
  say "recorded $baseline"
fi
