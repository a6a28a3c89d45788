# What the SDK round-trip scripts (realtime-sdk-test.sh, agents-sdk-test.sh) and e2e.sh share,
# sourced by them: a pinned venv made once, starting Parley's processes on ports they choose, and
# stopping them. The caller defines say, die and logs (its processes' output), and sets WORK.

# pinned_venv DIR PINS: a venv in DIR holding PINS (pip requirement words), made once and reused
# while its marker file names the same pins.
pinned_venv() {
    local venv=$1 pins=$2 marker="$1/.parley-pins" pip_status=0
    [[ -x "$venv/bin/python" && "$(cat "$marker" 2>/dev/null)" == "$pins" ]] && return 0
    say "installing $pins into $(basename "$venv") (once)"
    rm -rf "$venv"
    "$PYTHON3" -m venv "$venv" || die "could not create the venv with $PYTHON3 -m venv (Debian: apt-get install python3-venv)" 2
    # shellcheck disable=SC2086
    timeout 300 "$venv/bin/pip" install --quiet --disable-pip-version-check $pins || pip_status=$?
    if [[ $pip_status -ne 0 ]]; then
        rm -rf "$venv"
        [[ $pip_status -eq 124 ]] && die "pip install $pins did not finish within 300 s (is PyPI reachable from this machine?)" 2
        die "pip could not install $pins from PyPI (exit $pip_status; is PyPI reachable from this machine? see pip's message above)" 2
    fi
    echo "$pins" > "$marker"
}

# ulaw_speech SENTENCE FILE: espeak-ng says SENTENCE, sox makes it raw 8 kHz G.711 µ-law in FILE
# (what a phone line carries).
ulaw_speech() {
    espeak-ng -v en-us -s 140 -w "$2.wav" "$1" || die "espeak-ng could not make the speech" 2
    sox "$2.wav" -r 8000 -c 1 -e u-law -t raw "$2" || die "sox could not make µ-law (Debian: apt-get install sox)" 2
}

# stop PID: TERM, up to 5 s, then KILL.
stop() {
    local pid=$1
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    fi
}

# wait_listening PID FILE REGEX WHAT [SECONDS]: sets PORT from the first line of FILE (REGEX's
# first group), within SECONDS (10); fails if the process ends first.
wait_listening() {
    local pid=$1 file=$2 regex=$3 what=$4 seconds=${5:-10} line
    PORT=""
    for _ in $(seq $((seconds * 10))); do
        if ! kill -0 "$pid" 2>/dev/null; then logs; die "$what exited before listening" 2; fi
        line="$(head -n 1 "$file")"
        if [[ "$line" =~ $regex ]]; then PORT="${BASH_REMATCH[1]}"; return 0; fi
        sleep 0.1
    done
    logs; die "no listening line from $what within $seconds s" 2
}

# wait_healthy SCHEME PORT: /healthz answers 200 within about 10 s (-k: a probe only).
wait_healthy() {
    for _ in $(seq 50); do
        curl -fsSk --max-time 1 -o /dev/null "$1://127.0.0.1:$2/healthz" 2>/dev/null && return 0
        sleep 0.1
    done
    logs; die "$1://127.0.0.1:$2/healthz did not answer 200" 2
}

# start_mock: parley mock-llm on a port it picks, fast (5 ms to the first token); sets MOCK_PID
# and MOCK_PORT.
start_mock() {
    "$PARLEY_BIN" mock-llm --host 127.0.0.1 --port 0 --loops 1 --first-token-ms 5 --tokens-per-second 1000 \
        > "$WORK/mock.out" 2> "$WORK/mock.err" &
    MOCK_PID=$!
    wait_listening "$MOCK_PID" "$WORK/mock.out" '^parley mock-llm listening on http://127\.0\.0\.1:([0-9]+)/' "parley mock-llm"
    MOCK_PORT=$PORT
}
