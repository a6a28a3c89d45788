#!/usr/bin/env bash
# libFuzzer over Parley's parsers under AddressSanitizer (Fuzz/; docs/architecture.md, "Fuzzing").
#
#   scripts/tools/libfuzzer.sh smoke   every target: its committed seeds (Fuzz/corpus/<target>) replayed,
#                                then FUZZ_SECONDS (default 2) of fuzzing; make test runs this (2 s, not
#                                5: 17 targets, 50 s off make test; the seeds are the regression check).
#                                A debug build (.build-fuzz/debug): 59 s from nothing where the release
#                                build took about 130 (2026-11-27), and the seeds and two seconds need
#                                no speed
#   scripts/tools/libfuzzer.sh deep    every target for FUZZ_SECONDS (default 300), or until FUZZ_RUNS
#                                executions if that is given (then with no time limit unless
#                                FUZZ_SECONDS is given too), growing .build-fuzz/corpus/<target>
#   scripts/tools/libfuzzer.sh build   only the build: .build-fuzz/release/parley-fuzz (deep's)
#
# FUZZ_TARGETS="http frames" runs only those. Prints a table (target, seconds, executions, exec/s,
# coverage: the edges (cov) and features (ft) reached, and the corpus's inputs at the end; crashes) and exits non-zero if any target crashed, hung (-timeout) or ran out of memory
# (-rss_limit_mb), leaving the input that did it in Fuzz/crashes/<target>/ (not committed); replay
# it with `.build-fuzz/<release or debug>/parley-fuzz --target=<target> <file>`. Logs: .build-fuzz/logs/<mode>/.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

mode=${1:-}
case "$mode" in
  smoke) seconds=${FUZZ_SECONDS:-2} config=debug ;;
  deep) seconds=${FUZZ_SECONDS:-$([ -n "${FUZZ_RUNS:-}" ] && echo 0 || echo 300)} config=release ;;
  build) config=release ;;
  *) echo "usage: $0 smoke|deep|build  (FUZZ_SECONDS, FUZZ_RUNS, FUZZ_TARGETS)" >&2; exit 2 ;;
esac

# The Codec module links libopus and libspeexdsp; libFuzzer and ASan come with the Swift toolchain.
scripts/tools/install-deps.sh
# Release for deep runs, because the fuzzer runs several times faster optimised (debug for the smoke); -enable-testing, because the
# targets reach the parsers' internals with @testable import; PARLEY_FUZZ declares the target
# (Package.swift). Its own scratch path, so it never touches .build.
# The sanitizers: swiftc keeps only the last -sanitize= it is given, and SwiftPM's
# `--sanitize fuzzer --sanitize address` passes two, in no fixed order, so a build got one or the
# other. `--sanitize fuzzer` is still given, because with it SwiftPM lets libFuzzer supply `main`;
# the combined flag after it is the one swiftc uses.
PARLEY_FUZZ=1 "${SWIFT:-swift}" build -c "$config" --scratch-path .build-fuzz --product parley-fuzz \
  --sanitize fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing
fuzzer=.build-fuzz/$config/parley-fuzz
# Fuzzing without coverage would be blind, and without ASan would miss what it is for: check that a
# parser's code has both (coverage counters, ASan checks) rather than trust the flags.
symbols=$(nm ".build-fuzz/$config/Server.build/HTTPRequestParser.swift.o")
grep -q __sancov <<<"$symbols" && grep -q __asan_ <<<"$symbols" || {
  echo "libfuzzer: the build lacks coverage or ASan instrumentation (see the flags above)" >&2
  exit 1
}
[ "$mode" = build ] && exit 0

# Listing is not fuzzing: LeakSanitizer's report at exit (the list's own array, freed by the exit)
# could otherwise end the process before its output is flushed.
list=$(ASAN_OPTIONS=detect_leaks=0 "$fuzzer" --list 2>/dev/null)
declare -A max_len
while read -r name length; do max_len[$name]=$length; done <<<"$list"
targets=${FUZZ_TARGETS:-$(cut -d' ' -f1 <<<"$list")}

# Each mode its own logs: a make test (its smoke) run beside a deep run must not write over the deep
# run's logs, which the table below is read from.
logs=.build-fuzz/logs/$mode
mkdir -p "$logs"
failed=0
rows=()
for target in $targets; do
  [ -n "${max_len[$target]:-}" ] || { echo "libfuzzer: no target named $target" >&2; exit 2; }
  crashes=Fuzz/crashes/$target
  mkdir -p "$crashes"
  # libFuzzer writes what it finds into the first corpus directory: smoke mode's is thrown away,
  # deep mode's is kept between runs; the committed seeds are only read.
  if [ "$mode" = smoke ]; then
    grown=$(mktemp -d "$WORK/corpus.XXXXXX")
  else
    grown=.build-fuzz/corpus/$target
    mkdir -p "$grown"
  fi
  flags=(-max_len="${max_len[$target]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048
         -print_final_stats=1 -artifact_prefix="$crashes/")
  [ -n "${FUZZ_RUNS:-}" ] && flags+=(-runs="$FUZZ_RUNS")
  log=$logs/$target.log
  before=$(find "$crashes" -type f | wc -l)
  start=$(date +%s)
  status=0
  "$fuzzer" --target="$target" "${flags[@]}" "$grown" "Fuzz/corpus/$target" >"$log" 2>&1 || status=$?
  elapsed=$(($(date +%s) - start))
  [ "$mode" = smoke ] && rm -rf "$grown"
  found=$(($(find "$crashes" -type f | wc -l) - before))

  runs=$(sed -nE 's/^stat::number_of_executed_units: ([0-9]+)/\1/p' "$log")
  rate=$(sed -nE 's/^stat::average_exec_per_sec: +([0-9]+)/\1/p' "$log")
  # libFuzzer's last status line: "#N  DONE  cov: C ft: F corp: K/…".
  coverage=$(grep -E 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1 | sed -nE 's/.*cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+).*/\1 \2 \3/p')
  read -r cov ft corp <<<"${coverage:-? ? ?}"
  if [ "$status" -ne 0 ] || [ "$found" -gt 0 ]; then
    failed=1
    found=$((found > 0 ? found : 1))
    echo "libfuzzer: $target failed (exit $status); the end of $log:" >&2
    grep -E '^(==[0-9]+==ERROR|SUMMARY|Fatal error|.*Test unit written to|artifact_prefix)' "$log" >&2 || tail -20 "$log" >&2
  fi
  rows+=("$(printf '%-14s %8s %14s %10s %7s %7s %7s %8s' "$target" "$elapsed" "${runs:-?}" "${rate:-?}" "$cov" "$ft" "$corp" "$found")")
done

printf '%-14s %8s %14s %10s %7s %7s %7s %8s\n' target seconds executions exec/s cov ft corpus crashes
printf '%s\n' "${rows[@]}"
[ "$failed" -eq 0 ] || { echo "libfuzzer: crash inputs are in Fuzz/crashes/; logs in $logs/" >&2; exit 1; }
