# Shared by the load scripts (bench-tls.sh, bench-auth.sh, bench-calls.sh): start a server, run
# parley-load with its report kept, read a process's CPU time. The caller sets BIN and OUT first.

started=()
trap 'for pid in "${started[@]}"; do kill "$pid" 2>/dev/null || true; done' EXIT

# start NAME PORT LOOPS [serve options...]: starts a server, waits for /healthz, sets $pid.
start() {
  local name=$1 port=$2 loops=$3; shift 3
  "$BIN/parley" serve --host 127.0.0.1 --port "$port" --loops "$loops" "$@" > "$OUT/$name.log" 2>&1 &
  pid=$!
  started+=("$pid")
  for _ in $(seq 100); do
    # A health probe only: -k, as the load client is what checks the certificate.
    curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0
    curl -fsSk "https://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$OUT/$name.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "$(basename "$0"): $name did not answer on port $port" >&2
  exit 1
}

# run NAME ARGS...: one parley-load run, its text in $OUT/NAME.txt and its JSON beside it. A run
# that misses its target says FAIL in its report, and the script goes on to the next run.
run() {
  local name=$1; shift
  echo "\$ parley-load $*" | tee "$OUT/$name.txt"
  "$BIN/parley-load" "$@" --json "$OUT/$name.json" 2>&1 | tee -a "$OUT/$name.txt" || true
}

# CPU seconds (user + system) of a process so far.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"; }

# prepare_run: the binaries are there, OUT exists, and vmstat records the run (steal: its `st`).
prepare_run() {
  mkdir -p "$OUT"
  for tool in parley parley-load; do
    [ -x "$BIN/$tool" ] || { echo "$(basename "$0"): $BIN/$tool is missing; run 'swift build -c release'" >&2; exit 2; }
  done
  vmstat 1 > "$OUT/vmstat.txt" &
  started+=("$!")
}
