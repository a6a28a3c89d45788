#!/usr/bin/env bash
# Counts the instructions the Swift Opus wrapper and the plain C loop execute over the same
# packets, with callgrind: unlike timings on a shared VM, the counts repeat exactly.
#   scripts/tools/codec-instructions.sh [speech.wav]
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"
command -v valgrind >/dev/null || die "needs valgrind (apt-get install valgrind)" 2
bin=.build/release/parley-load
[ -x "$bin" ] || die "build first: swift build -c release" 2
work=$WORK
wav=${1:-$work/speech.wav}
[ -f "$wav" ] || espeak-ng -v en-us -s 140 -w "$wav" \
  "What is the weather like in Paris. I would like to book a table for two at eight o'clock tonight, near the river."
# valgrind 3.19 cannot read this toolchain's DWARF; the symbol table is enough for --toggle-collect.
objcopy --strip-debug "$bin" "$work/parley-load"

count() {  # instructions executed inside functions matching $1
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" --toggle-collect="$1" \
    "$work/parley-load" codec --input "$wav" --complexities 10 --trials 1 --trial-seconds 0.02 >/dev/null 2>&1
  awk '/^summary:/ {print $2}' "$work/cg.out"
}
# Both loops make the same number of passes over the same packets (see CodecTrial.compare).
for what in decode encode; do
  c=$(count "parley_bench_$what")
  swift=$(count "*${what}WithSwift*")
  awk -v w="$what" -v c="$c" -v s="$swift" 'BEGIN { printf "%s: C %.0f instructions, Swift %.0f, Swift/C %.4f%%\n", w, c, s, 100 * s / c }'
done
