#!/usr/bin/env bash
# Run the Autobahn|Testsuite fuzzingclient (case groups 1-10) against Parley's
# /echo endpoint and summarise the result.
#
# Usage:
#   scripts/tools/autobahn.sh                      # build first: swift build -c release
#   CASES='["1.*"]' scripts/tools/autobahn.sh      # subset of cases
#   AUTOBAHN_URL=ws://127.0.0.1:9002/echo scripts/tools/autobahn.sh   # external server
#   TLS=1 scripts/tools/autobahn.sh                # the same over wss (TLS), see below
#
# Environment:
#   PYTHON2        Python 2.7 interpreter (default: $(pyenv root)/versions/2.7.18/bin/python)
#   PYTHON3        Python 3 used for the tool venv and the summariser (default: python3)
#   PARLEY_BIN     server binary (default: .build/release/parley)
#   PORT           port for the server started here (default: 9001)
#   AUTOBAHN_URL   test this URL instead of starting Parley (loopback only unless
#                  AUTOBAHN_ALLOW_REMOTE=1)
#   TLS            1: test over wss. A throwaway self-signed EC P-256 certificate for
#                  localhost/127.0.0.1 is made with the openssl CLI in a temp dir, Parley
#                  is started with --tls-cert/--tls-key and tested at
#                  wss://127.0.0.1:PORT/echo (with AUTOBAHN_URL: it must be wss://).
#                  0 (default): plain ws.
#   AGENT          agent name in the reports (default: Parley; with TLS=1: Parley (wss))
#   CASES          JSON list of case patterns (default: groups 1-10)
#   EXCLUDE_CASES  JSON list of case patterns to skip (default: [])
#   WSTEST_TIMEOUT seconds before wstest is killed (default: 1200)
#
# Output: LoadTests/reports/autobahn/ (index.json, HTML/JSON per case, wstest.log,
# server.log, spec.json) and LoadTests/reports/autobahn-summary.md; with TLS=1
# LoadTests/reports/autobahn-wss/ and LoadTests/reports/autobahn-wss-summary.md
# instead (the ws reports are left alone).
#
# Exit status: 0 all cases OK/NON-STRICT/INFORMATIONAL; 1 failing cases, an
# incomplete run, or a wstest error/timeout; 2 missing prerequisites / setup error.
set -euo pipefail

PARLEY_BIN="${PARLEY_BIN:-.build/release/parley}"
. "$(dirname "$0")/../lib/harness.sh"

PORT="${PORT:-9001}"
TLS="${TLS:-0}"
case "$TLS" in
  0|1) ;;
  *) die "TLS must be 0 or 1, got $TLS" 2 ;;
esac
if [[ "$TLS" == 1 ]]; then
  AGENT="${AGENT:-Parley (wss)}"
else
  AGENT="${AGENT:-Parley}"
fi
CASES="${CASES:-[\"1.*\",\"2.*\",\"3.*\",\"4.*\",\"5.*\",\"6.*\",\"7.*\",\"8.*\",\"9.*\",\"10.*\"]}"
EXCLUDE_CASES="${EXCLUDE_CASES:-[]}"
WSTEST_TIMEOUT="${WSTEST_TIMEOUT:-1200}"

TOOLS_VENV="$ROOT/.venv-tools"
AB_VENV="$ROOT/.venv-autobahn"
if [[ "$TLS" == 1 ]]; then
  REPORT_DIR="LoadTests/reports/autobahn-wss"
  SUMMARY_MD="LoadTests/reports/autobahn-wss-summary.md"
else
  REPORT_DIR="LoadTests/reports/autobahn"
  SUMMARY_MD="LoadTests/reports/autobahn-summary.md"
fi

VIRTUALENV_VERSION="20.21.1"
AUTOBAHNTESTSUITE_VERSION="25.10.1"
# Known-good Python 2.7 dependency set for autobahntestsuite 25.10.1 (it pins
# autobahn 0.10.9, Twisted 19.10.0, ... itself; the rest are frozen here so a
# new PyPI release cannot break the py2 install). pyOpenSSL, service-identity,
# cryptography, cffi/pycparser, pyasn1(-modules), idna and ipaddress are what
# Twisted's TLS (twisted.internet.ssl) needs for TLS=1; autobahntestsuite
# requires pyOpenSSL and service-identity itself, so they are always installed.
AB_CONSTRAINTS="Automat==22.10.0
PyHamcrest==1.10.1
Twisted==19.10.0
Werkzeug==1.0.1
argparse==1.4.0
attrs==21.4.0
autobahn==0.10.9
cffi==1.15.1
constantly==15.1.0
cryptography==3.3.2
enum34==1.1.10
hyperlink==21.0.0
idna==2.10
incremental==16.10.1
ipaddress==1.0.23
Jinja2==2.11.3
klein==17.10.0
linecache2==1.0.0
MarkupSafe==1.1.1
pyasn1==0.5.1
pyasn1-modules==0.3.0
pycparser==2.21
pyOpenSSL==19.1.0
service-identity==18.1.0
setuptools==44.0.0
six==1.16.0
traceback2==1.4.0
txaio==2.1.0
typing==3.10.0.0
ujson==2.0.3
unittest2==1.1.0
wsaccel==0.6.6
zope.interface==4.6.0"
# The marker records the recipe, so changing a pin triggers a reinstall.
AB_RECIPE="autobahntestsuite==$AUTOBAHNTESTSUITE_VERSION virtualenv==$VIRTUALENV_VERSION
$AB_CONSTRAINTS"

log() { say "$*"; }

# --- 1. Python 2.7 --------------------------------------------------------------
find_python2() {
  if [[ -n "${PYTHON2:-}" ]]; then
    printf '%s' "$PYTHON2"
    return
  fi
  local pyenv_root="${PYENV_ROOT:-}"
  if [[ -z "$pyenv_root" ]] && command -v pyenv >/dev/null 2>&1; then
    pyenv_root="$(pyenv root 2>/dev/null || true)"
  fi
  [[ -n "$pyenv_root" ]] || pyenv_root="$HOME/.pyenv"
  printf '%s' "$pyenv_root/versions/2.7.18/bin/python"
}

PY2="$(find_python2)"
if [[ ! -x "$PY2" ]] || ! "$PY2" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (2, 7) else 1)' >/dev/null 2>&1; then
  cat >&2 <<EOF
[autobahn] ERROR: Python 2.7 not found (looked for: $PY2).
  Autobahn|Testsuite (PyPI 'autobahntestsuite') only runs on Python 2.7.
  Get it with pyenv:   pyenv install 2.7.18
  (needs the usual build deps: apt-get install build-essential libssl-dev zlib1g-dev
   libbz2-dev libreadline-dev libsqlite3-dev libffi-dev)
  or point PYTHON2 at an existing 2.7 interpreter: PYTHON2=/path/to/python2.7 $0
EOF
  exit 2
fi

if ! command -v "$PYTHON3" >/dev/null 2>&1 || ! "$PYTHON3" -c 'import venv' >/dev/null 2>&1; then
  die "python3 with the venv module not found ('$PYTHON3'); install python3 and python3-venv (apt-get install python3-venv) or set PYTHON3" 2
fi
command -v curl >/dev/null 2>&1 || die "curl not found (apt-get install curl)" 2
command -v timeout >/dev/null 2>&1 || die "timeout not found (coreutils)" 2
if [[ "$TLS" == 1 && -z "${AUTOBAHN_URL:-}" ]]; then
  command -v openssl >/dev/null 2>&1 || die "openssl CLI not found (apt-get install openssl); TLS=1 needs it for the test certificate" 2
fi

# Validate CASES / EXCLUDE_CASES before spending time on installs or servers.
CASES="$CASES" EXCLUDE_CASES="$EXCLUDE_CASES" "$PYTHON3" - <<'PY' || die "invalid CASES / EXCLUDE_CASES" 2
import json, os, sys
for name in ("CASES", "EXCLUDE_CASES"):
    try:
        v = json.loads(os.environ[name])
    except ValueError:
        v = None
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        sys.exit("%s must be a JSON list of strings like '[\"1.*\",\"2.1.1\"]', got %r"
                 % (name, os.environ[name]))
PY

# --- 2. Tool venvs (cached; a marker file records a finished install) ------------
AB_MARKER="$AB_VENV/.parley-installed"

pinned_venv "$TOOLS_VENV" "virtualenv==$VIRTUALENV_VERSION"
[[ $venv_made -eq 0 ]] || rm -f "$AB_MARKER"   # rebuild the py2 env with the new virtualenv

if [[ ! -f "$AB_MARKER" || "$(cat "$AB_MARKER")" != "$AB_RECIPE" ]]; then
  log "creating $AB_VENV (Python 2.7 virtualenv + autobahntestsuite==$AUTOBAHNTESTSUITE_VERSION); takes ~1 min"
  rm -rf "$AB_VENV"
  "$TOOLS_VENV/bin/virtualenv" -q -p "$PY2" "$AB_VENV"
  printf '%s\n' "$AB_CONSTRAINTS" >"$AB_VENV/constraints.txt"
  PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_PYTHON_VERSION_WARNING=1 \
    "$AB_VENV/bin/python" -m pip install -q \
      -c "$AB_VENV/constraints.txt" "autobahntestsuite==$AUTOBAHNTESTSUITE_VERSION"
  "$AB_VENV/bin/wstest" --autobahnversion >/dev/null
  printf '%s' "$AB_RECIPE" >"$AB_MARKER"
fi
if [[ "$TLS" == 1 ]]; then
  "$AB_VENV/bin/python" -W ignore -c 'import OpenSSL.SSL, service_identity, twisted.internet.ssl' 2>/dev/null \
    || die "$AB_VENV lacks TLS support for Twisted (pyOpenSSL / service_identity); remove $AB_VENV and run again" 2
fi
WSTEST="$AB_VENV/bin/wstest"

# --- 3. Server under test ----------------------------------------------------------
rm -rf "$REPORT_DIR" "$SUMMARY_MD"
mkdir -p "$REPORT_DIR"
LOGS="$REPORT_DIR"

if [[ -n "${AUTOBAHN_URL:-}" ]]; then
  URL="$AUTOBAHN_URL"
  hostport="${URL#*://}"; hostport="${hostport%%/*}"
  if [[ "$hostport" == \[* ]]; then host="${hostport%%]*}]"; else host="${hostport%%:*}"; fi
  case "$host" in
    127.*|localhost|"[::1]") ;;
    *) [[ "${AUTOBAHN_ALLOW_REMOTE:-0}" == 1 ]] \
         || die "AUTOBAHN_URL host '$host' is not a loopback address; set AUTOBAHN_ALLOW_REMOTE=1 to allow" 2 ;;
  esac
  if [[ "$TLS" == 1 && "$URL" != wss://* ]]; then
    die "TLS=1 needs a wss:// AUTOBAHN_URL, got '$URL'" 2
  fi
  log "testing external server at $URL"
else
  [[ -x "$PARLEY_BIN" ]] || die "server binary '$PARLEY_BIN' not found or not executable; build it with 'swift build -c release' or set PARLEY_BIN (or AUTOBAHN_URL to test a running server)" 2
  if harness_accepts "$PORT"; then
    die "port $PORT on 127.0.0.1 is already in use; stop whatever listens there or set PORT" 2
  fi
  server_args=(serve --host 127.0.0.1 --port "$PORT" --max-message-bytes 16777216)
  health_url="http://127.0.0.1:$PORT/healthz"
  curl_tls=()
  if [[ "$TLS" == 1 ]]; then
    # Throwaway self-signed certificate (EC P-256, 1 day) for localhost/127.0.0.1,
    # deleted on exit. The fuzzingclient does not check it: with no "hostname" in
    # its spec's server entry, autobahntestsuite 0.x (fuzzing.py,
    # FuzzingClientFactory.nextServer) connects with Twisted's plain
    # ssl.ClientContextFactory(), a bare pyOpenSSL context (SSLv23 method, SSLv2
    # off) with no set_verify call, i.e. VERIFY_NONE: no chain or hostname check
    # and no SNI. (A "hostname" would switch it to ssl.optionsForClientTLS, which
    # verifies against the platform trust store and would reject this
    # certificate.) The health probe below does verify it, with curl --cacert.
    CERT_DIR="$WORK"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
      -subj "/CN=localhost" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
      -keyout "$CERT_DIR/key.pem" -out "$CERT_DIR/cert.pem" >"$CERT_DIR/openssl.log" 2>&1 \
      || { cat "$CERT_DIR/openssl.log" >&2; die "openssl could not make the test certificate" 2; }
    server_args+=(--tls-cert "$CERT_DIR/cert.pem" --tls-key "$CERT_DIR/key.pem")
    health_url="https://127.0.0.1:$PORT/healthz"
    curl_tls=(--cacert "$CERT_DIR/cert.pem")
    URL="wss://127.0.0.1:$PORT/echo"
  else
    URL="ws://127.0.0.1:$PORT/echo"
  fi
  log "starting $PARLEY_BIN on 127.0.0.1:$PORT${CERT_DIR:+ (TLS)} (log: $REPORT_DIR/server.log)"
  start server "$PARLEY_BIN" "${server_args[@]}"
  WAIT_SECONDS=20 wait_healthy server "$health_url" "${curl_tls[@]}"
  log "server healthy (pid $pid)"
fi

# --- 4. Fuzzingclient spec + run ---------------------------------------------------
SPEC="$REPORT_DIR/spec.json"
AGENT="$AGENT" URL="$URL" CASES="$CASES" EXCLUDE_CASES="$EXCLUDE_CASES" OUTDIR="$REPORT_DIR" \
"$PYTHON3" - "$SPEC" <<'PY' || die "could not write $SPEC" 2
import json, os, sys
spec = {
    "outdir": os.environ["OUTDIR"],
    "servers": [{"agent": os.environ["AGENT"], "url": os.environ["URL"]}],
    "cases": json.loads(os.environ["CASES"]),
    "exclude-cases": json.loads(os.environ["EXCLUDE_CASES"]),
    "exclude-agent-cases": {},
}
with open(sys.argv[1], "w") as f:
    json.dump(spec, f, indent=2)
    f.write("\n")
PY

# wstest never exits when the patterns match no case, so count them first (with
# the test suite's own pattern resolver); the count also tells the summariser
# how many results to expect.
expected="$("$AB_VENV/bin/python" - "$SPEC" <<'PY'
import json, sys
from autobahntestsuite.case import Cases, CaseCategories, CaseSubCategories, CaseSetname, CaseBasename
from autobahntestsuite.caseset import CaseSet
cs = CaseSet(CaseSetname, CaseBasename, Cases, CaseCategories, CaseSubCategories)
print(len(cs.parseSpecCases(json.load(open(sys.argv[1])))))
PY
)" || die "could not resolve the case patterns in $SPEC" 2
(( expected > 0 )) || die "CASES=$CASES (minus EXCLUDE_CASES=$EXCLUDE_CASES) matches no Autobahn test case" 2

log "running wstest fuzzingclient against $URL: $expected cases from $CASES (timeout ${WSTEST_TIMEOUT}s)"
start=$SECONDS
rc=0
# Run in the background and `wait`, so INT/TERM traps (and the cleanup) fire at
# once instead of after wstest ends; its output goes to the log and to stderr.
PYTHONUNBUFFERED=1 start wstest timeout --kill-after=10 "$WSTEST_TIMEOUT" "$WSTEST" -m fuzzingclient -s "$SPEC"
tail -n +1 -f --pid="$pid" "$REPORT_DIR/wstest.log" >&2 &
tail=$!
finish wstest || rc=$?
wait "$tail" 2>/dev/null || true
log "wstest finished in $((SECONDS - start)) s (exit $rc)"
if (( rc == 124 || rc == 137 )); then
  die "wstest timed out after ${WSTEST_TIMEOUT}s (log: $REPORT_DIR/wstest.log)" 1
elif (( rc != 0 )); then
  die "wstest failed with exit $rc (log: $REPORT_DIR/wstest.log)" 1
fi
if grep -q '^Connection to .* failed' "$REPORT_DIR/wstest.log"; then
  log "WARNING: wstest could not connect at some point; the run is incomplete"
fi
[[ -f "$REPORT_DIR/index.json" ]] || die "wstest wrote no $REPORT_DIR/index.json (log: $REPORT_DIR/wstest.log)" 1

# --- 5. Summary ----------------------------------------------------------------------
summary_args=("$REPORT_DIR/index.json" --agent "$AGENT" --out "$SUMMARY_MD" --expected "$expected")
src=0
"$PYTHON3" "$ROOT/scripts/tools/autobahn_summary.py" "${summary_args[@]}" || src=$?
[[ -f "$SUMMARY_MD" ]] && log "summary written to $SUMMARY_MD; per-case reports in $REPORT_DIR/index.html"
exit "$src"
