#!/usr/bin/env bash
# The two Python WebSocket servers that Parley is compared against ("peers"), installed from
# PyPI into .venv-peers and run one process each, on loopback only:
#   fastapi     LoadTests/peers/fastapi_echo.py     FastAPI on uvicorn (uvloop, httptools)
#   websockets  LoadTests/peers/websockets_echo.py  the websockets library's asyncio server
# Both serve /echo, /healthz, and Parley's voice-turn path: /ws (Opus packets in, VAD and turn
# events out, as Parley's /ws) with /metrics (its lag and frame counts under Parley's names), so
# `parley-load voice` runs against them unchanged (LoadTests/peers/peer_voice.py; the system's
# libopus, Debian's libopus0, through ctypes). Self-check of that path, about 20 s:
#   .venv-peers/bin/python LoadTests/peers/test_peer_voice.py
#
# Usage:
#   scripts/benchmarks/peers.sh install                         # make .venv-peers (once; reused while the pins match)
#   scripts/benchmarks/peers.sh run fastapi|websockets PORT [options for the server]
#
# `run` installs first if needed, then execs the server in the foreground (its pid is the caller's
# $! when backgrounded, so `kill $!` stops it). PORT 0 picks a free port; the server prints
# "<name> listening on http://HOST:PORT/ (pid N)" once it listens. Extra options go to the server,
# e.g. --host 127.0.0.2 (loopback only); see `.venv-peers/bin/python LoadTests/peers/X_echo.py --help`.
#
# Environment:
#   PYTHON3   Python 3 for the venv (default: python3)
#
# Exit status: 2 on a setup failure (venv, PyPI, bad arguments); otherwise the server's own.
set -euo pipefail

NAME=peers
. "$(dirname "$0")/../lib/harness.sh"

# Pinned: the peers' versions are part of any comparison with them. Of what fastapi and
# uvicorn[standard] bring in, the packages the echo and voice paths run through (starlette under FastAPI;
# uvloop, httptools and websockets under uvicorn) are pinned too, so that a later release of one of
# them does not silently change the figures; the rest (pydantic, watchfiles, PyYAML, ...) is not.
FASTAPI_VERSION="0.165.0"
STARLETTE_VERSION="1.10.0"
UVICORN_VERSION="0.54.0"
PEERS_WEBSOCKETS_VERSION="17.4"
UVLOOP_VERSION="0.23.0"
HTTPTOOLS_VERSION="0.9.0"
VENV="$ROOT/.venv-peers"
PINS="fastapi==$FASTAPI_VERSION starlette==$STARLETTE_VERSION uvicorn[standard]==$UVICORN_VERSION websockets==$PEERS_WEBSOCKETS_VERSION uvloop==$UVLOOP_VERSION httptools==$HTTPTOOLS_VERSION"

install() {
    pinned_venv "$VENV" "$PINS"
    # The servers refuse to start without their fast paths rather than fall back silently.
    [[ $venv_made -eq 0 ]] || "$VENV/bin/python" -c 'import fastapi, uvicorn, uvloop, httptools, websockets' \
        || { rm -rf "$VENV"; die "the installed packages do not import (see the traceback above)" 2; }
}

[[ $# -ge 1 ]] || usage
case "$1" in
    install)
        [[ $# -eq 1 ]] || usage
        install
        say "ready: $VENV ($PINS)"
        ;;
    run)
        [[ $# -ge 3 ]] || usage
        name=$2 port=$3
        shift 3
        case "$name" in
            fastapi|websockets) ;;
            *) say "unknown peer '$name' (fastapi or websockets)"; usage ;;
        esac
        [[ "$port" =~ ^[0-9]+$ && "$port" -le 65535 ]] || die "PORT must be a number from 0 to 65535, not '$port'" 2
        install
        rm -rf "$WORK"  # exec ends this shell without its EXIT trap
        # -u: unbuffered, so the listening line reaches a caller's log file at once.
        exec "$VENV/bin/python" -u "LoadTests/peers/${name}_echo.py" --port "$port" "$@"
        ;;
    -h|--help|help)
        usage
        ;;
    *)
        usage
        ;;
esac
