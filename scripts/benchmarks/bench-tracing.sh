#!/usr/bin/env bash
# What tracing costs, side by side in one run: the agent-turns scenario (docs/benchmarks.md,
# "Agent turns": SESSIONS sessions, a text turn every INTERVAL s each, against parley mock-llm)
# with tracing off, on at 100 % and on at 1 % (traceidratio), the spans going to a collector that
# only counts (scripts/benchmarks/otlp_sink.py). Each run on a fresh server; the figures are the server's CPU
# over the measured window, the server-added latency from parley-load's report, and the spans
# exported or dropped. Loopback only; every run is bounded; vmstat (for steal) runs throughout.
#
#   SESSIONS=10000 INTERVAL=10 MEASURE=30 RUNS=1 PORT=9700 scripts/benchmarks/bench-tracing.sh [OUT_DIR]
set -euo pipefail
PORT="${PORT:-9700}"
SESSIONS="${SESSIONS:-10000}"
INTERVAL="${INTERVAL:-10}"
MEASURE="${MEASURE:-30}"
RUNS="${RUNS:-1}"
OUT="${1:-LoadTests/reports/tracing-$(date -u +%Y%m%dT%H%M%SZ)}"
. "$(dirname "$0")/../lib/bench.sh"
record_vmstat

start_parley mock mock-llm $((PORT + 1)) --loops 1 --first-token-ms 200 --tokens-per-second 50 --reply-tokens 20
start sink "$PYTHON3" scripts/benchmarks/otlp_sink.py
wait_listening sink '^([0-9]+)$'
SINK_PORT=$port

: > "$OUT/summary.txt"
for round in $(seq "$RUNS"); do
  for mode in off all one-percent; do
    case "$mode" in
      off) tracing=() ;;
      all) tracing=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$SINK_PORT" OTEL_TRACES_SAMPLER=always_on OTEL_BSP_SCHEDULE_DELAY=1000) ;;
      one-percent) tracing=(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$SINK_PORT" OTEL_TRACES_SAMPLER=traceidratio OTEL_TRACES_SAMPLER_ARG=0.01 OTEL_BSP_SCHEDULE_DELAY=1000) ;;
    esac
    for setting in "${tracing[@]}"; do export "${setting?}"; done
    start_parley "$mode-$round" serve "$PORT" --loops 2 --log-level warning \
      --llm openai --llm-base-url "http://127.0.0.1:$((PORT + 1))/v1" --llm-model mock
    for setting in "${tracing[@]}"; do unset "${setting%%=*}"; done
    # The measured window's CPU: sampled after the turns' warm-up, and at the end.
    ( sleep $((10 + SESSIONS / 5000 * 5)); cpu "$pid" > "$OUT/$mode-$round.cpu-start" ) &
    run "$mode-$round" turns "$SESSIONS" --url "ws://127.0.0.1:$PORT/v1/realtime" --duration "$MEASURE" --turn-interval "$INTERVAL" || true
    end=$(cpu "$pid")
    start_cpu=$(cat "$OUT/$mode-$round.cpu-start" 2>/dev/null || echo 0)
    exported=$(metric "$PORT" parley_trace_spans_exported_total)
    dropped=$(metric "$PORT" parley_trace_spans_dropped_total)
    {
      echo "$mode run $round: server CPU $(awk -v a="$end" -v b="$start_cpu" 'BEGIN { printf "%.2f", a - b }') s from the warm-up's end to the run's end; spans exported ${exported:-n/a}, dropped ${dropped:-n/a}"
      grep -m3 -E "server-added|client CPU|responses" "$OUT/$mode-$round.txt" | sed "s/^/$mode run $round: /" || true
    } | tee -a "$OUT/summary.txt"
    stop "$mode-$round" || true
    sleep 2
  done
done
stop sink || true
tail -n 1 "$OUT/sink.log" | tee -a "$OUT/summary.txt"
echo "bench-tracing: steal (vmstat st) over the run: $(steal)" | tee -a "$OUT/summary.txt"
echo "bench-tracing: reports in $OUT"
