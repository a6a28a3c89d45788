#!/usr/bin/env bash
# What a running server hears beyond English (issue 75): scripts/benchmarks/languages_bench.py
# against one release server started with `--language $LANGUAGE` (auto, or auto:en,es,... to find
# a session's language among those; the speech models installed), for
# English, Spanish, German, French, Italian, Portuguese and Dutch, each in three of espeak-ng's
# voices of the language: the word error rate with the language set, and found (a session per
# sentence, none set), then the helper's CPU per spoken turn and its memory with Whisper base
# loaded. One pass per language, so that each language's CPU is its own. About 15 minutes.
#   LANGUAGE (auto), LANGUAGES (en,es,de,fr,it,pt,nl), MODES (set,found), SENTENCES (10), SESSIONS (6), SERVE_ARGS,
#   BIN (.build/release), OUT (LoadTests/reports/bench-languages-<UTC>)
set -euo pipefail
. "$(dirname "$0")/../lib/bench.sh"

venv_webrtc
machine_state | tee "$OUT/machine.txt"
record_vmstat
# shellcheck disable=SC2086
serve_speech server --language "${LANGUAGE:-auto}" ${SERVE_ARGS:-}
echo "server: $PARLEY_BIN serve --port $port --language ${LANGUAGE:-auto} ${SERVE_ARGS:-} (pid $server)" | tee "$OUT/run.txt"
helper=$(pgrep -P "$server" -f parley_speech | head -1)
helper_rss() { awk '/VmRSS/ { printf "%.0f MiB", $2 / 1024 }' "/proc/$helper/status"; }
echo "helper RSS at start (tiny.en, Smart Turn, Piper): $(helper_rss)" | tee -a "$OUT/run.txt"
status=0
IFS=, read -ra languages <<< "${LANGUAGES:-en,es,de,fr,it,pt,nl}"
for language in "${languages[@]}"; do
  helper_before=$(cpu "$helper") line_start=$(wc -l < "$OUT/vmstat.log")
  timeout 3600 "$ROOT/.venv-webrtc/bin/python" -u scripts/benchmarks/languages_bench.py --url "http://127.0.0.1:$port" \
    --languages "$language" --modes "${MODES:-set,found}" --sentences "${SENTENCES:-10}" --sessions "${SESSIONS:-6}" \
    --json "$OUT/languages-$language.json" | tee -a "$OUT/run.txt" || status=$?
  # Spoken turns: three voices, each sentence once per mode.
  modes=$(tr ',' '\n' <<< "${MODES:-set,found}" | wc -l)
  turns=$(( 3 * ${SENTENCES:-10} * modes ))
  echo "$language: helper CPU $(awk -v a="$helper_before" -v b="$(cpu "$helper")" -v t="$turns" 'BEGIN { printf "%.0f s, %.2f s a spoken turn", b - a, (b - a) / t }')" \
    "($turns turns); helper RSS $(helper_rss); steal (vmstat st, seconds at each %): $(steal "$line_start" "$(wc -l < "$OUT/vmstat.log")")" | tee -a "$OUT/run.txt"
done
stop server || true
echo "bench-languages: $OUT/{run.txt,languages-*.json,server.log,vmstat.log}"
exit "$status"
