#!/usr/bin/env bash
# What `make test`'s phases install for themselves, installed while Parley builds (issue 72): the
# speech models (.venv-speech), every test's Python environment (scripts/lib/venvs.sh) and the
# Debian packages only the script phases start (Kamailio, HAProxy, Chromium). The build takes both
# cores and waits on nothing, while these wait mostly on PyPI and the Debian mirror; each phase
# that needed one of them made it itself, at its start, on the clock of the lanes after the Swift
# tests: from a clean clone, the chaos run's first 70 s were pip (2026-11-29). Each phase still
# makes what it needs when it is missing (the same pins, made once), so every phase runs alone.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

scripts/tools/install-deps.sh kamailio haproxy redis-tools chromium fonts-liberation
scripts/tools/speech-models.sh >/dev/null
all_venvs
