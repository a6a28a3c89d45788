#!/usr/bin/env bash
# A self-signed certificate for local TLS (make run TLS=1): EC P-256, for localhost and 127.0.0.1,
# valid 90 days. Made once into DIR (default .tls/) and reused while it is valid for another day.
#
# Usage: scripts/tools/self-signed-cert.sh [DIR]    prints the certificate and key paths
set -euo pipefail
dir="$(realpath -m "${1:-.tls}")"
. "$(dirname "$0")/../lib/harness.sh"
cert="$dir/localhost.pem"
key="$dir/localhost.key"
mkdir -p "$dir"
if [ -s "$cert" ] && [ -s "$key" ] && openssl x509 -in "$cert" -noout -checkend 86400 >/dev/null 2>&1; then
    echo "$cert $key"
    exit 0
fi
umask 077
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 90 \
    -subj "/CN=localhost" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$key" -out "$cert" >/dev/null 2>&1 || die "openssl could not make the certificate" 2
echo "$cert $key"
