#!/usr/bin/env bash
# Prints an HAProxy configuration for Parley nodes: deploy/haproxy.cfg listening on FRONT_HOST:PORT
# (default 127.0.0.1; * for every address) and its example servers replaced by one per NODE_PORT
# (on NODE_HOST, default 127.0.0.1).
# The stats frontend listens on 127.0.0.1:STATS_PORT (default 8404). The rules stay in
# deploy/haproxy.cfg; this only fills in the lines marked FRONT, STATS and BEGIN/END NODES.
#
#   scripts/tools/haproxy-config.sh 8080 8081 8082 > /tmp/haproxy.cfg && haproxy -f /tmp/haproxy.cfg
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

[ $# -ge 2 ] || usage
for p in "$@" "${STATS_PORT:-8404}"; do
  [[ "$p" =~ ^[0-9]+$ ]] && [ "$p" -ge 1 ] && [ "$p" -le 65535 ] || die "not a port: $p" 2
done

template=deploy/haproxy.cfg
port=$1
shift
servers=""
i=1
for node in "$@"; do
  servers+="    server node$i ${NODE_HOST:-127.0.0.1}:$node"$'\n'
  i=$((i + 1))
done

SERVERS="$servers" FRONT="${FRONT_HOST:-127.0.0.1}:$port" STATS="${STATS_PORT:-8404}" awk '
  /# BEGIN NODES/ { print; printf "%s", ENVIRON["SERVERS"]; skipping = 1; found++; next }
  /# END NODES/   { skipping = 0 }
  skipping        { next }
  /^[ \t]*bind .*# FRONT/ { sub(/bind [^ ]+ /, "bind " ENVIRON["FRONT"] " "); found++ }
  /^[ \t]*bind .*# STATS/ { sub(/:[0-9]+ /, ":" ENVIRON["STATS"] " "); found++ }
  { print }
  END { if (found != 3) { print "haproxy-config.sh: markers missing in the template" > "/dev/stderr"; exit 1 } }
' "$template"
