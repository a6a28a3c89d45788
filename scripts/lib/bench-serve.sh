# Shared by the speech benchmarks (bench-turns.sh, bench-talkers.sh): the binaries and speech
# models checked, then release servers on free loopback ports, each stopped at the end whatever
# happens. The caller sets BIN and OUT first.

mkdir -p "$OUT"
for tool in parley parley-load; do
  [ -x "$BIN/$tool" ] || { echo "$(basename "$0"): $BIN/$tool is missing; run 'swift build -c release'" >&2; exit 2; }
done
scripts/tools/speech-models.sh >/dev/null

started=()
trap 'for pid in "${started[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true' EXIT

# A port nothing listens on now: the kernel's choice for a socket bound to port 0.
free_port() { .venv-speech/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# serve NAME [serve options...]: starts a server on a free port, its log in $OUT/NAME.log, waits for
# /healthz and, with Smart Turn, for its speech helper; sets $port and $server (its process id).
serve() {
  local name=$1; shift
  port=$(free_port)
  "$BIN/parley" serve --host 127.0.0.1 --port "$port" "$@" > "$OUT/$name.log" 2>&1 &
  server=$!
  started+=("$server")
  for _ in $(seq 300); do
    if curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
      # The helper loads Smart Turn in about half a second after the server is up.
      grep -q -- '--turn-model none' <<< "$*" && return 0
      curl -fsS "http://127.0.0.1:$port/metrics" 2>/dev/null | grep -q '^parley_speech_helper_up 1' && return 0
    fi
    kill -0 "$server" 2>/dev/null || { cat "$OUT/$name.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "$(basename "$0"): $name did not become ready on port $port" >&2
  cat "$OUT/$name.log" >&2
  exit 1
}

# stop: stops the server `serve` started last, before the next is started.
stop() { kill -TERM "$server"; wait "$server" || true; }
