# The test harness every script under scripts/ sources first:
#
#   . "$(dirname "$0")/../lib/harness.sh"
#
# It sets ROOT (the repository) and moves there, NAME (the script's name, for messages) and WORK (a
# temporary directory), and traps EXIT: every process started here is stopped (TERM, then KILL),
# the commands given to on_exit run, and WORK is removed. The caller keeps `set -euo pipefail`.
#
#   say MESSAGE                 a line on stderr, "NAME: MESSAGE"
#   die MESSAGE [STATUS]        "NAME: FAILED: MESSAGE" on stderr, exit STATUS (1; 2 is a setup failure)
#   usage                       the script's opening comment on stderr, exit 2
#   on_exit COMMAND             runs COMMAND at exit, after the processes stop and before WORK goes
#   free_port                   prints a loopback port free for TCP and UDP now, below the kernel's
#                               ephemeral range, so no connection is given it before its server binds it;
#                               from the lane's own slice of that range (PORT_SLICE, scripts/tools/lanes.sh)
#   start NAME COMMAND...       COMMAND in the background, stdout and stderr in $LOGS/NAME.log; sets pid
#   start_parley NAME SUBCOMMAND PORT [OPTIONS...]
#                               $PARLEY_BIN SUBCOMMAND (serve, mock-llm) on 127.0.0.1:PORT (0: the
#                               kernel's choice), waits for its listening line and /healthz; sets
#                               pid, port and scheme (http or https)
#   start_redis NAME PORT       redis-server on 127.0.0.1:PORT, no persistence, waits for PING
#   wait_listening NAME REGEX   sets port from REGEX's first group in NAME's log
#   wait_healthy NAME URL [CURL OPTIONS...]   URL answers 200
#   wait_port NAME PORT         something accepts on 127.0.0.1:PORT
#   wait_until NAME WHAT COMMAND...           COMMAND succeeds (polled every 0.1 s)
#   wait_speech_helper NAME URL  the server at URL reports its speech helper up (/metrics), for up
#                               to 90 s: its models load in seconds of CPU, and turns that come
#                               meanwhile queue behind them past the server's 10 s wait
#                               Each wait gives up after WAIT_SECONDS (30) or when NAME's process
#                               ends, showing its log's last lines, and exits 2.
#   stop NAME [SECONDS]         TERM, then KILL after SECONDS (15); returns the process's status
#   finish NAME                 waits for NAME's process to end by itself; returns its status
#   logs NAME...                the last LOG_LINES (40) lines of each log, on stderr
#   start_mock                  parley mock-llm, fast, as the SDK tests use it; sets mock_port
#   ulaw_speech SENTENCE FILE [VOICE] [SPEED]
#                               espeak-ng's speech as raw 8 kHz µ-law in FILE (VOICE en-us, SPEED 140
#                               words a minute)
#   pcm_speech SENTENCE FILE [VOICE] [SPEED]
#                               the same as raw 24 kHz pcm16 (the Realtime API's audio/pcm) in FILE
#   pinned_venv DIR PINS [NO_DEPS]
#                               a venv in DIR holding PINS (pip requirement words, versions pinned),
#                               made once and reused while DIR/.installed names the same PINS; the
#                               words in NO_DEPS are installed without their dependencies. Sets
#                               venv_made=1 when it (re)made the venv.
#
# Environment: PARLEY_BIN (.build/debug/parley), PYTHON3 (python3), LOGS (WORK), WAIT_SECONDS (30),
# PORT_SLICE (0/1: free_port's slice, I/N),
# MASK (a sed -E script applied to every log shown, to hide what a log must not print),
# PIP_SECONDS (600, the most one pip install may take).

SCRIPT="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
NAME="${NAME:-$(basename "$0" .sh)}"
PARLEY_BIN="${PARLEY_BIN:-.build/debug/parley}"
PYTHON3="${PYTHON3:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/parley-$NAME.XXXXXX")"
LOGS="${LOGS:-$WORK}"

declare -A harness_pids=()
harness_exits=()

say() { echo "$NAME: $*" >&2; }
die() { echo "$NAME: FAILED: $1" >&2; exit "${2:-1}"; }
on_exit() { harness_exits+=("$1"); }
usage() { sed -n '2,/^set -euo/p' "$SCRIPT" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

harness_cleanup() {
    local name
    for name in "${!harness_pids[@]}"; do kill -TERM "${harness_pids[$name]}" 2>/dev/null || true; done
    for _ in $(seq 50); do
        local alive=0
        for name in "${!harness_pids[@]}"; do kill -0 "${harness_pids[$name]}" 2>/dev/null && alive=1; done
        [[ $alive -eq 1 ]] || break
        sleep 0.1
    done
    for name in "${!harness_pids[@]}"; do kill -KILL "${harness_pids[$name]}" 2>/dev/null || true; done
    for name in "${!harness_pids[@]}"; do wait "${harness_pids[$name]}" 2>/dev/null || true; done
    local command
    for command in "${harness_exits[@]}"; do eval "$command" || true; done
    rm -rf "$WORK"
}
trap harness_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
    # free_port [RUN]: with RUN > 1, the first of RUN free ports in a row, from 10,000-19,999 as
    # sip_calls.py takes SIPp's (its -mp port and the three after it, RTCP and video): one port
    # checked where SIPp binds four met "Unable to bind video RTP socket ... Address already in
    # use" in make test from a clean clone (2026-11-28), its third port another phase's.
    # A port the kernel picks (bind to 0) is in its ephemeral range, where the next outgoing
    # connection may be given it between this check and the server's bind: seen in make test from
    # a clean clone, a SIP port free for UDP here was "Address already in use" at the server's bind.
    # Below that range the kernel gives no connection a port of its own accord. PORT_SLICE "I/N"
    # (scripts/tools/lanes.sh): the I-th of N equal slices of it, one per lane running at once.
    PORT_RUN="${1:-1}" PORT_SLICE="${PORT_SLICE:-0/1}" "$PYTHON3" - <<'PORT'
import os, random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
index, count = (int(n) for n in os.environ["PORT_SLICE"].split("/"))
run = int(os.environ["PORT_RUN"])
# 30,000 up to the range: sip_calls.py takes 10,000-19,999, and --sip-rtp-ports 20,000-29,999.
first = max(1024, low - 2700) if run == 1 else 10_000
width = ((low if run == 1 else 20_000 - run) - first) // count
for _ in range(500):
    port = random.randrange(first + index * width, first + (index + 1) * width)
    free = True
    for each in range(port, port + run):
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            s = socket.socket(socket.AF_INET, kind)
            try:
                s.bind(("127.0.0.1", each))
            except OSError:
                free = False
            finally:
                s.close()
    if free:
        print(port)
        break
else:
    raise SystemExit("no free loopback port below the ephemeral range")
PORT
}

start() {
    local name=$1; shift
    mkdir -p "$LOGS"
    # Emptied here, before the child starts, and appended to by it: a redirection made by the
    # child would empty it after `start` returned, so a wait on a name reused (a restarted mock)
    # could read the last process's lines, and the grep after it an empty log (issue 50).
    : > "$LOGS/$name.log"
    "$@" >> "$LOGS/$name.log" 2>&1 &
    pid=$!
    harness_pids[$name]=$pid
}

logs() {
    local name
    for name in "$@"; do
        echo "--- $name's log (last ${LOG_LINES:-40} lines):"
        tail -n "${LOG_LINES:-40}" "$LOGS/$name.log" 2>/dev/null | sed -E "${MASK:-}"
    done >&2
}

wait_until() {
    local name=$1 what=$2; shift 2
    local seconds=${WAIT_SECONDS:-30}
    local deadline=$((SECONDS + seconds))
    while ((SECONDS < deadline)); do
        "$@" && return 0
        if ! kill -0 "${harness_pids[$name]}" 2>/dev/null; then
            logs "$name"; die "$name exited before $what" 2
        fi
        sleep 0.1
    done
    logs "$name"; die "$name: not $what within $seconds s" 2
}

harness_listening() {
    local line
    line=$(grep -m1 -oE "$2" "$LOGS/$1.log" 2>/dev/null) || return 1
    [[ "$line" =~ $2 ]] && port=${BASH_REMATCH[1]}
}
wait_listening() { wait_until "$1" "listening (a line matching $2)" harness_listening "$1" "$2"; }

harness_healthy() { curl -fsS --max-time 1 -o /dev/null "${@:2}" "$1" 2>/dev/null; }
wait_healthy() { local name=$1 url=$2; shift 2; wait_until "$name" "answering $url" harness_healthy "$url" "$@"; }

harness_accepts() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# How long a server may take to have its speech helper up: the server itself waits up to 60 s for it.
harness_helper_seconds=90
wait_speech_helper() { WAIT_SECONDS=$harness_helper_seconds wait_until "$1" "its speech helper up" harness_speech_helper_up "$2"; }
harness_speech_helper_up() { curl -s "$1/metrics" | grep -qx 'parley_speech_helper_up 1'; }
wait_port() { wait_until "$1" "accepting on port $2" harness_accepts "$2"; }

start_parley() {
    local name=$1 command=$2 wanted=$3; shift 3
    [[ -x "$PARLEY_BIN" ]] || die "no server binary at $PARLEY_BIN (build it with: swift build$([[ $PARLEY_BIN == *release* ]] && echo ' -c release'))" 2
    start "$name" "$PARLEY_BIN" "$command" --host 127.0.0.1 --port "$wanted" "$@"
    # `serve` listens once its speech helper has loaded its models (SpeechOptions.startHelper), so
    # its listening line gets the helper's time: under make test's load, the chaos run's three nodes
    # loading theirs beside it, one took more than the harness's 30 s and live-sdk-test failed to
    # start (2026-11-29).
    local WAIT_SECONDS=${WAIT_SECONDS:-30}
    [[ $command != serve ]] || WAIT_SECONDS=$(( WAIT_SECONDS > harness_helper_seconds ? WAIT_SECONDS : harness_helper_seconds ))
    wait_listening "$name" 'listening on https?://127\.0\.0\.1:([0-9]+)/'
    scheme=$(grep -m1 -oE 'listening on https?' "$LOGS/$name.log"); scheme=${scheme##* }
    # -k: a probe only; the clients check the certificate.
    wait_healthy "$name" "$scheme://127.0.0.1:$port/healthz" -k
}

start_redis() {
    start "$1" redis-server --port "$2" --bind 127.0.0.1 --save '' --appendonly no --daemonize no
    wait_until "$1" "answering PING on port $2" harness_pong "$2"
}
harness_pong() { [[ "$(redis-cli -p "$1" ping 2>/dev/null)" == PONG ]]; }

stop() {
    local name=$1 seconds=${2:-15} status=0
    local pid=${harness_pids[$name]:-}
    [[ -n "$pid" ]] || return 0
    unset "harness_pids[$name]"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq $((seconds * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || status=$?
    return "$status"
}

finish() {
    local pid=${harness_pids[$1]:-} status=0
    [[ -n "$pid" ]] || return 0
    wait "$pid" || status=$?
    unset "harness_pids[$1]"
    return "$status"
}

harness_venv_made() { [[ -x "$1/bin/python" && "$(cat "$1/.installed" 2>/dev/null)" == "$2" ]]; }
pinned_venv() {
    local venv=$1 pins=$2 no_deps=${3:-} status=0 word with_deps=()
    venv_made=0
    harness_venv_made "$venv" "$pins" && return 0
    # One maker of a venv at a time (lanes run scripts at once that share one): the second waits,
    # then finds it made.
    local lock
    exec {lock}>"$venv.lock"
    flock "$lock"
    harness_venv_made "$venv" "$pins" && { exec {lock}>&-; return 0; }
    say "installing $pins into $venv (once)"
    rm -rf "$venv"
    "$PYTHON3" -m venv "$venv" || die "could not create the venv with $PYTHON3 -m venv (Debian: apt-get install python3-venv)" 2
    for word in $pins; do [[ " $no_deps " == *" $word "* ]] || with_deps+=("$word"); done
    local pip=(timeout "${PIP_SECONDS:-600}" "$venv/bin/pip" install --quiet --disable-pip-version-check)
    "${pip[@]}" "${with_deps[@]}" || status=$?
    # shellcheck disable=SC2086
    [[ $status -ne 0 || -z "$no_deps" ]] || "${pip[@]}" --no-deps $no_deps || status=$?
    if [[ $status -ne 0 ]]; then
        rm -rf "$venv"
        [[ $status -eq 124 ]] && die "pip install $pins did not finish within ${PIP_SECONDS:-600} s (is PyPI reachable from this machine?)" 2
        die "pip could not install $pins from PyPI (exit $status; is PyPI reachable from this machine? see pip's message above)" 2
    fi
    echo "$pins" > "$venv/.installed"
    exec {lock}>&-
    venv_made=1
}

# start_mock: `parley mock-llm` as the SDK tests use it, on a port it picks, fast (5 ms to the first
# token, 1,000 tokens/s); sets mock_port.
start_mock() {
    start_parley mock mock-llm 0 --loops 1 --first-token-ms 5 --tokens-per-second 1000
    mock_port=$port
}

# ulaw_speech SENTENCE FILE [VOICE] [SPEED]: espeak-ng says SENTENCE (in VOICE, en-us, at SPEED words
# a minute, 140), sox makes it raw 8 kHz G.711 µ-law in FILE (what a phone line carries).
ulaw_speech() {
    espeak-ng -v "${3:-en-us}" -s "${4:-140}" -w "$2.wav" "$1" || die "espeak-ng could not make the speech" 2
    sox "$2.wav" -r 8000 -c 1 -e u-law -t raw "$2" || die "sox could not make µ-law (Debian: apt-get install sox)" 2
}

# pcm_speech SENTENCE FILE [VOICE] [SPEED]: the same speech as raw 24 kHz mono pcm16 little-endian in
# FILE (the Realtime API's audio/pcm).
pcm_speech() {
    espeak-ng -v "${3:-en-us}" -s "${4:-140}" -w "$2.wav" "$1" || die "espeak-ng could not make the speech" 2
    sox "$2.wav" -r 24000 -c 1 -b 16 -e signed-integer -L -t raw "$2" || die "sox could not make pcm16 (Debian: apt-get install sox)" 2
}

# The tests' Python environments, pinned in one place: venv_sdk, venv_sip, venv_webrtc, ...
. "$ROOT/scripts/lib/venvs.sh"
