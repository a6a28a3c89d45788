#!/usr/bin/env bash
# Installs the Debian packages Parley builds and tests with, only those that are missing.
# Called by `make run` and `make test`, so that on a fresh machine those two commands are the set-up.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

# Build: libopus, OpenSSL, libspeexdsp (resampling), pocketsphinx with its en-us model (recognition),
# libespeak-ng (synthesis), libsqlite3 and libhiredis (the conversation stores: SQLite on one node,
# Redis through hiredis's async client on Parley's loops across many), libsrtp2 (WebRTC's SRTP, pure
# functions on buffers, no thread of its own). Tests: espeak-ng, flite and
# opus-tools make speech vectors, sox is the outside G.711 encoder the codec is checked against (and
# makes the SDK tests' µ-law speech), and redis-server is what RedisTests start on a free port.
# libpocketsphinx-dev and libespeak-ng-dev give the headers Parley compiles against and depend on
# the runtime libraries (libpocketsphinx3, libespeak-ng1), which Parley opens with dlopen when first
# used rather than links (Sources/Speech/SpeechLibrary.swift). So does libsrtp2-dev: its header, and
# libsrtp2-1 (libsrtp2.so.1, with NSS under it), opened when a WebRTC call first needs it
# (Sources/CSRTP/SRTPLibrary.c). sip-tester is SIPp, the SIP tests' raw scenarios, floods and
# transfer target (scripts/tests/sip-call-test.sh).
packages=(libopus-dev libssl-dev libspeexdsp-dev pkg-config curl espeak-ng flite opus-tools sox
          libpocketsphinx-dev pocketsphinx-en-us libespeak-ng-dev libsqlite3-dev libhiredis-dev redis-server libsrtp2-dev sip-tester "$@")

missing_packages() {
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
}
missing_packages
[ ${#missing[@]} -eq 0 ] && exit 0

# Tests that need a server (haproxy, redis) install it as they start, and Swift Testing runs them
# in parallel: one install at a time (apt's own lock refuses a second rather than waiting), and
# what the one before installed is not installed again.
exec 9>"${TMPDIR:-/tmp}/parley-install-deps.lock"
flock 9
missing_packages
[ ${#missing[@]} -eq 0 ] && exit 0

say "installing missing packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "need root (or sudo) to install: ${missing[*]}"
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq -o DPkg::Lock::Timeout=300
$sudo apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends "${missing[@]}"
