# What the benchmarks under scripts/benchmarks/ add to the harness (scripts/lib/harness.sh, which
# this sources): release binaries, a report folder, parley-load runs kept there, CPU and steal.
#
#   . "$(dirname "$0")/../lib/bench.sh"     after setting OUT, if wanted
#
# BIN is the folder of the binaries measured (.build/release; BIN=DIR measures another build, the
# other half of a before/after pair).
#
# It checks that $BIN/parley-load exists (exit 2: build with `swift build -c release`; start_parley
# checks $BIN/parley when it is first needed), makes OUT and puts the servers' logs there (LOGS=OUT, NAME.log each), and serves
# with $BIN/parley (PARLEY_BIN).
#
#   run NAME ARGS...     parley-load ARGS, the command and its output in $OUT/NAME.txt (but for
#                        the once-a-second progress lines), its JSON report in $OUT/NAME.json;
#                        returns parley-load's status
#   cpu PID              CPU seconds (user + system) of a process so far, all its threads
#   record_vmstat        vmstat every second into $OUT/vmstat.log until the script ends
#   steal [FROM TO]      vmstat's steal (st) over the run (or its lines FROM to TO): how many
#                        seconds at each percentage
#   machine_state        the cores and two seconds of vmstat: a busy machine or steal inflates figures
#   metric PORT NAME     the value of the series NAME (with its labels, as /metrics writes it) on PORT
#   json_field FILE KEY  the top-level KEY of the JSON report FILE (0 when it or the file is missing)
#   log MESSAGE          "[HH:MM:SS] MESSAGE" on stdout and appended to $OUT/timeline.txt
#   handshake_rate LABEL COUNT CPU_BEFORE CPU_AFTER
#                        "LABEL: COUNT handshakes, server CPU S s, R handshakes per server CPU-second"
#   serve_speech NAME [SERVE OPTIONS...]
#                        a release server on a free port with the speech models installed, ready
#                        when its speech helper is (unless --turn-model none); sets port and server

BIN="${BIN:-.build/release}"
# shellcheck source=scripts/lib/harness.sh
. "$(dirname "${BASH_SOURCE[0]}")/harness.sh"
OUT="${OUT:-LoadTests/reports/$NAME-$(date -u +%Y%m%dT%H%M%SZ)}"
LOGS="$OUT"
PARLEY_BIN="$BIN/parley"
mkdir -p "$OUT"
[ -x "$BIN/parley-load" ] || die "$BIN/parley-load is missing; run 'swift build -c release'" 2

run() {
    local name=$1; shift
    echo "\$ parley-load $*" | tee "$OUT/$name.txt"
    "$BIN/parley-load" "$@" --json "$OUT/$name.json" 2>&1 | grep --line-buffered -Ev '^(measuring|warm-up|connecting|holding)  ' | tee -a "$OUT/$name.txt"
    return "${PIPESTATUS[0]}"
}

cpu() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"; }

metric() { curl -fsS "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }

json_field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], 0))' "$1" "$2" 2>/dev/null || echo 0; }

log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/timeline.txt"; }

record_vmstat() { start vmstat vmstat 1; }

steal() {
    awk -v from="${1:-1}" -v to="${2:-1000000000}" 'NR > 2 && NR - 2 >= from && NR - 2 <= to && $17 ~ /^[0-9]+$/ { print $17 }' "$OUT/vmstat.log" \
        | sort -n | uniq -c | tr '\n' ' '
}

machine_state() {
    echo "machine: $(nproc) cores; vmstat 1 3 (r: runnable, us/sy/id/st: CPU %):"
    vmstat 1 3 | tail -2
}

serve_speech() {
    local name=$1; shift
    scripts/tools/speech-models.sh > /dev/null
    WAIT_SECONDS=30 start_parley "$name" serve "$(free_port)" "$@"
    server=$pid
    # The helper loads Smart Turn in about half a second after the server is up.
    [[ " $* " == *" --turn-model none "* ]] || wait_until "$name" "its speech helper up" helper_up "$port"
}
helper_up() { curl -fsS "http://127.0.0.1:$1/metrics" 2>/dev/null | grep -q '^parley_speech_helper_up 1'; }

# handshake_rate LABEL COUNT CPU_BEFORE CPU_AFTER: COUNT handshakes over the server's CPU seconds.
handshake_rate() {
    awk -v k="$1" -v n="$2" -v b="$3" -v a="$4" \
        'BEGIN { s = a - b; printf "%s: %d handshakes, server CPU %.2f s, %.0f handshakes per server CPU-second\n", k, n, s, n / s }'
}
