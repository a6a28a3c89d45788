#!/usr/bin/env bash
# The layers hold (docs/architecture.md): each module imports only the modules below it, and no
# file outside Sys (Sources/Loop/Sys.swift) calls epoll, socket, connect or getaddrinfo itself.
# make test runs this first; it prints every violation and fails if there is one.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

# What each module may import besides the system (Glibc, Synchronization, Testing) and its own
# C wrappers. A module not listed here may import nothing of Parley's.
declare -A allowed=(
  [Metrics]=""
  [JSON]=""
  [Codec]="COpus CSpeexDSP"
  [Loop]="CLinux Metrics"
  [TLS]="Loop COpenSSL CTLS CSRTP"
  [Upstream]="Loop TLS Logging"
  [Server]="Loop TLS Metrics JSON CLinux Logging"
  [Store]="Loop Metrics JSON CSQLite CHiredis Logging"
  [Models]="Upstream Loop Metrics JSON Logging"
  [SpeechContracts]="Models Loop Metrics JSON"
  [MCP]="Upstream Loop JSON Logging"
  [Telemetry]="Upstream Loop Metrics Tracing"
  [Access]="Server Store TLS Loop Metrics JSON Logging"
  [Session]="SessionEngine Models SpeechContracts MCP Access Store Telemetry Tracing Server TLS Loop Metrics Codec JSON Logging"
  [Media]="Loop"
  [SIP]="Media TLS Loop JSON"
  [WebRTC]="Media Session SessionEngine Access Server TLS Loop Metrics Codec JSON CSRTP COpenSSL CTLS Logging"
  [Telephony]="SIP Media Upstream Session SessionEngine Models Access Server TLS Loop Metrics Codec JSON Logging"
  [Speech]="Models SpeechContracts Upstream Loop Metrics Codec JSON CPocketSphinx CEspeak CONNXRuntime"
  [MockLLM]="Server Models Loop Codec JSON"
  [parley]="Server Session SessionEngine Telephony WebRTC Access Models SpeechContracts MCP Speech MockLLM Store Upstream Telemetry Tracing TLS Loop Metrics Codec JSON CLinux CClientPage ArgumentParser Logging"
  [parley-fuzz]="Server Session SessionEngine Access Telephony Media SIP WebRTC Models MCP Codec JSON Loop TLS TestSupport"
  # The session engine and the Realtime protocol are values: events in, actions out. They know the
  # models' and MCP's vocabulary (messages, tools, usage; an MCP server's tools and errors), the
  # speech contracts' (a turn's verdict, the helper's limits) and JSON, never a loop, a socket or
  # a store.
  [SessionEngine]="Models SpeechContracts MCP Codec JSON"
)
# Where a module's sources are when not in Sources/<module>.
declare -A paths=([parley-fuzz]=Fuzz/Sources)
system="Glibc Synchronization"
ours="Metrics JSON Codec Media SIP Loop TLS Upstream Server Store Models SpeechContracts SessionEngine MCP Telemetry Access Session WebRTC Telephony Speech MockLLM CLinux COpus CSpeexDSP COpenSSL CTLS CPocketSphinx CEspeak CSQLite CHiredis CSRTP CONNXRuntime CClientPage"

failures=0
# Every Swift module under Sources has its row above: a new module states what it may import.
for dir in Sources/*/; do
  module=$(basename "$dir")
  case " $ours " in *" $module "*) case "$module" in C*) continue ;; esac ;; esac
  [ -n "${allowed[$module]+set}" ] || { echo "check-layers: $dir has no row in check-layers.sh's allowed list" >&2; failures=$((failures + 1)); }
done
for module in "${!allowed[@]}"; do
  dir=${paths[$module]:-Sources/$module}
  [ -d "$dir" ] || { echo "check-layers: $dir is missing" >&2; failures=$((failures + 1)); continue; }
  while IFS=: read -r file line text; do
    imported=$(sed -E 's/^(@testable |@_exported |internal |public |private |fileprivate )*import +([A-Za-z0-9_]+).*/\2/' <<<"$text")
    case " $system ${allowed[$module]} " in *" $imported "*) continue ;; esac
    case " $ours " in
      *" $imported "*) echo "$file:$line: $module imports $imported, which is not below it" ;;
      *) echo "$file:$line: $module imports $imported, which is not one of its declared dependencies" ;;
    esac
    failures=$((failures + 1))
  done < <(grep -rnE '^(@testable |@_exported |internal |public |private |fileprivate )*import ' "$dir" --include='*.swift' || true)
done

# One wrapper per system call: the raw calls appear in Sys only (comments aside).
while IFS= read -r hit; do
  echo "$hit: a raw system call outside Sys (Sources/Loop/Sys.swift)"
  failures=$((failures + 1))
done < <(grep -rnE '(^|[^A-Za-z_.])epoll_(create1|ctl|wait)\(|(^|[^A-Za-z_.])getaddrinfo\(|(^|[^A-Za-z_.])socket\( *(AF_|PF_|info|[A-Za-z.]*[Ff]amily)|(^|[^A-Za-z_.]|Glibc\.)connect\( *([A-Za-z]*[Ff][Dd]|s|sock) *,' \
          Sources LoadTests Tests Fuzz --include='*.swift' | grep -v '^Sources/Loop/Sys.swift:' | grep -vE '^[^:]+:[0-9]+: *//' | grep -vE '"[^"]*(getaddrinfo|socket|connect)\(' || true)

if [ "$failures" -gt 0 ]; then
  echo "check-layers: $failures violation(s)" >&2
  exit 1
fi
echo "check-layers: every module imports only what is below it; system calls only in Sys"
