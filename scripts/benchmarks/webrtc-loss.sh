#!/usr/bin/env bash
# WebRTC under loss against WebSocket under the same delays (issue 38; make bench-webrtc-loss).
# One release server with the default speech (Whisper in, Piper out, the built-in agent), then:
#   WebRTC     an aiortc call (webrtc_loss_call.py) through udp_relay.py: LOSS of the datagrams
#              dropped each way (never STUN), each delayed DELAY_MS +- JITTER_MS (so reordered);
#   WebSocket  a Realtime session on /v1/realtime (`parley-load loss-call`) through tcp_relay.py:
#              the same delays per chunk, in order, and a STALL_MS stall on LOSS of the chunks
#              (TCP retransmits what is lost: its loss is delay).
# Each asks the same spoken questions (espeak-ng en-us and en-gb+f3, Piper's joe) in turn for
# MINUTES and reports reply latency p50/p95 (the question's last sample sent to the reply's first
# audio received) and gaps per minute of reply audio on a 20 ms playout clock started PLAYOUT_MS
# after the reply's first audio (scripts/benchmarks/loss_measure.py says how each transport plays).
# Prints the table side by side, the relays' counts, the server's view of the caller's audio, the
# clients' CPU, vmstat's steal and the command. Loopback only; every process bounded.
#
# Then (CONTROL=1, the default) both again through the relays with no loss, delay or stall: what the
# server and this machine do to the replies (a synthesis late under load) shows there too, and the
# path's own share is the difference. About 4 * MINUTES + 2 minutes (2 * MINUTES + 1 with CONTROL=0).
#
#   scripts/benchmarks/webrtc-loss.sh       MINUTES (3) per run, SEED (1), LOSS (0.05), DELAY_MS (40),
#                                           JITTER_MS (20), STALL_MS (200), PLAYOUT_MS (60), CONTROL (1)
set -euo pipefail
MINUTES="${MINUTES:-3}"
SEED="${SEED:-1}"
LOSS="${LOSS:-0.05}"
DELAY_MS="${DELAY_MS:-40}"
JITTER_MS="${JITTER_MS:-20}"
STALL_MS="${STALL_MS:-200}"
PLAYOUT_MS="${PLAYOUT_MS:-60}"
. "$(dirname "$0")/../lib/bench.sh"

VENV=.venv-webrtc
venv_webrtc
PY="$VENV/bin/python"
HERE=scripts/benchmarks
COMMAND="make bench-webrtc-loss MINUTES=$MINUTES SEED=$SEED LOSS=$LOSS DELAY_MS=$DELAY_MS JITTER_MS=$JITTER_MS STALL_MS=$STALL_MS PLAYOUT_MS=$PLAYOUT_MS CONTROL=${CONTROL:-1}"

free_udp_port() {
    "$PYTHON3" -c 'import socket; s = socket.socket(type=socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The questions, each in every voice, at 48 kHz for the call's track and 24 kHz for pcm16.
questions="$WORK/questions"
mkdir -p "$questions"
sentences=("What is twelve times seven?" "What time is it right now?" "Hello there, thank you for your help." "What is one hundred divided by four?")
scripts/tools/speech-models.sh > /dev/null
for i in "${!sentences[@]}"; do
    espeak-ng -v en-us -s 150 -w "$WORK/raw.wav" "${sentences[$i]}" || die "espeak-ng could not speak" 2
    for rate in 48000 24000; do sox -V1 "$WORK/raw.wav" -r $rate -c 1 -b 16 "$questions/$i-en-us.$rate.wav"; done
    espeak-ng -v en-gb+f3 -s 150 -w "$WORK/raw.wav" "${sentences[$i]}"
    for rate in 48000 24000; do sox -V1 "$WORK/raw.wav" -r $rate -c 1 -b 16 "$questions/$i-en-gb-f3.$rate.wav"; done
    echo "${sentences[$i]}" | .venv-speech/bin/python -m piper -m .venv-speech/piper-voice/en_US-joe-medium.onnx -f "$WORK/raw.wav" 2> /dev/null \
        || die "Piper could not speak (scripts/tools/speech-models.sh installs it)" 2
    for rate in 48000 24000; do sox -V1 "$WORK/raw.wav" -r $rate -c 1 -b 16 "$questions/$i-piper-joe.$rate.wav"; done
done

machine_state | tee "$OUT/machine.txt"
media=$(free_udp_port)
serve_speech server --loops 1 --webrtc-host 127.0.0.1 --webrtc-public-ip 127.0.0.1 --webrtc-ports "$media-$media"
log "server on 127.0.0.1:$port, media port $media (udp); $COMMAND"
record_vmstat
vmstat_line() { wc -l < "$OUT/vmstat.log"; }
caller_audio() { curl -fsS "http://127.0.0.1:$port/metrics" | grep '^parley_webrtc_audio_frames_total' || true; }
relay_seconds=$(( ${MINUTES%.*} * 60 + 300 ))

# run_pair TAG LOSS DELAY_MS JITTER_MS STALL_MS: both transports, one after the other, through
# relays with these settings; reports in $OUT/TAG-webrtc.json and $OUT/TAG-websocket.json.
run_pair() {
    local tag=$1 loss=$2 delay=$3 jitter=$4 stall=$5 relay from
    relay=$(free_udp_port)
    start "$tag-udp-relay" "$PY" $HERE/udp_relay.py --listen "$relay" --to "$media" --seed "$SEED" --seconds "$relay_seconds" \
        --loss "$loss" --delay-ms "$delay" --jitter-ms "$jitter"
    wait_until "$tag-udp-relay" "listening" grep -q listening "$OUT/$tag-udp-relay.log"
    log "$tag: WebRTC for $MINUTES min (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    from=$(vmstat_line)
    if ! "$PY" $HERE/webrtc_loss_call.py --url "http://127.0.0.1:$port" --relay-port "$relay" --questions "$questions" \
        --minutes "$MINUTES" --playout-ms "$PLAYOUT_MS" --label "WebRTC, $tag" --report "$OUT/$tag-webrtc.json" 2>&1 | tee "$OUT/$tag-webrtc.txt"; then
        logs server "$tag-udp-relay"; die "the WebRTC client failed"
    fi
    steals+=("$tag WebRTC [$(steal "$from" "$(vmstat_line)")]")
    stop "$tag-udp-relay" || true
    caller_audio > "$OUT/$tag-caller-audio.txt"

    relay=$(free_port)
    start "$tag-tcp-relay" "$PY" $HERE/tcp_relay.py --listen "$relay" --to "$port" --seed "$SEED" --seconds "$relay_seconds" \
        --delay-ms "$delay" --jitter-ms "$jitter" --stall-fraction "$loss" --stall-ms "$stall"
    wait_port "$tag-tcp-relay" "$relay"
    log "$tag: WebSocket for $MINUTES min (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    from=$(vmstat_line)
    if ! PARLEY_LOAD_API_KEY=bench "$BIN/parley-load" loss-call --relay-port "$relay" --questions "$questions" \
        --minutes "$MINUTES" --playout-ms "$PLAYOUT_MS" --label "WebSocket, $tag" --report "$OUT/$tag-websocket.json" 2>&1 | tee "$OUT/$tag-websocket.txt"; then
        logs server "$tag-tcp-relay"; die "the WebSocket client failed"
    fi
    steals+=("$tag WebSocket [$(steal "$from" "$(vmstat_line)")]")
    stop "$tag-tcp-relay" || true
}
steals=()

# The path under test, then (CONTROL=1) a clean one through the same relays, so that what the
# server and this machine do to the audio (a late synthesis, a busy core) is seen apart from
# what the path does.
run_pair lossy "$LOSS" "$DELAY_MS" "$JITTER_MS" "$STALL_MS"
tables=("$OUT/lossy-webrtc.json" "$OUT/lossy-websocket.json")
if [[ "${CONTROL:-1}" == 1 ]]; then
    run_pair clean 0 0 0 0
    tables+=("$OUT/clean-webrtc.json" "$OUT/clean-websocket.json")
fi

{
    echo
    echo "lossy: loss $LOSS each way, delay $DELAY_MS +- $JITTER_MS ms, TCP stall $STALL_MS ms on $LOSS of chunks; clean: none; playout $PLAYOUT_MS ms, seed $SEED"
    "$PY" $HERE/loss_measure.py table "${tables[@]}"
    echo
    for tag in lossy clean; do
        [[ -f "$OUT/$tag-webrtc.json" ]] || continue
        echo "$tag udp relay: $(grep -o '{.*}' "$OUT/$tag-udp-relay.log" | tail -1)"
        echo "$tag tcp relay: $(grep -o '{.*}' "$OUT/$tag-tcp-relay.log" | tail -1)"
        echo "$tag aiortc's own track: $(json_field "$OUT/$tag-webrtc.json" aiortc_frames) frames, $(json_field "$OUT/$tag-webrtc.json" aiortc_frames_skipped) skipped"
        echo "$tag: the caller's audio at the server's playout (WebRTC, counted from the server's start):"
        sed 's/^/  /' "$OUT/$tag-caller-audio.txt"
    done
    echo "clients' CPU: in the table; vmstat steal (seconds at each %): ${steals[*]}"
    echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (each run's start: $OUT/timeline.txt)"
    echo "command: $COMMAND"
    echo "report: $OUT"
} | tee "$OUT/summary.txt"
