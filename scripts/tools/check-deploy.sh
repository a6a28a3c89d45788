#!/usr/bin/env bash
# Checks deploy/ (docs/operations.md, "Deploying"); make test runs it after check-layers.sh.
#   - every manifest in deploy/k8s passes kubernetes-validate --strict (unknown fields fail), the
#     kustomization lists them all, the PARLEY_* variables they set exist, and the pod's grace
#     period covers preStop + --drain-seconds + the 1 s of close handshakes after it;
#   - deploy/grafana-dashboard.json parses, each panel has queries, and every metric they name is
#     one Parley serves (the list below);
#   - a configuration made by scripts/tools/haproxy-config.sh, and deploy/haproxy.cfg itself, pass
#     haproxy -c without a warning;
#   - deploy/prometheus.yml parses and has its two scrape jobs.
# Its tools live in .venv-deploy (kubernetes-validate, which brings PyYAML) and come from Debian
# (haproxy); both are installed on the first run only, so later runs take a few seconds.
set -euo pipefail
. "$(dirname "$0")/../lib/harness.sh"

K8S_VERSION=1.35.0     # the Kubernetes API the manifests are checked against
venv=.venv-deploy
venv_deploy
command -v haproxy >/dev/null || scripts/tools/install-deps.sh haproxy

# Kubernetes manifests (the kustomization is kustomize's, not an API object: checked below).
manifests=()
for f in deploy/k8s/*.yaml; do
  [ "$(basename "$f")" = kustomization.yaml ] || manifests+=("$f")
done
"$venv/bin/kubernetes-validate" --strict --quiet -k "$K8S_VERSION" "${manifests[@]}"

# HAProxy: the template as it is, and as the multi-node test makes it.
work=$WORK
STATS_PORT=18404 scripts/tools/haproxy-config.sh 18080 18081 18082 18083 > "$work/haproxy.cfg"
grep -q 'server node3 127.0.0.1:18083' "$work/haproxy.cfg" || die "haproxy-config.sh did not list the nodes"
for cfg in deploy/haproxy.cfg "$work/haproxy.cfg"; do
  if ! haproxy -c -f "$cfg" > "$work/haproxy.out" 2>&1 || grep -qE 'WARNING|ALERT' "$work/haproxy.out"; then
    echo "check-deploy: haproxy -c -f $cfg:" >&2
    cat "$work/haproxy.out" >&2
    exit 1
  fi
done

"$venv/bin/python" - <<'EOF'
import glob, json, os, re, sys
import yaml

failures = []
def fail(message):
    if message not in failures:
        failures.append(message)

# The metric families Parley serves, as `GET /metrics` names them (its `# TYPE` lines). This is a
# list kept here, not read from docs/operations.md's table: that table groups some names
# (`..._sent_total`) and leaves out the series only a worker supervisor adds. The last group is
# what the session store and draining add. A histogram's _bucket, _sum and _count count as it.
METRICS = """
parley_connections_open parley_connections_accepted_total parley_connections_refused_total
parley_connections_closed_total parley_websocket_messages_received_total
parley_websocket_messages_sent_total parley_network_received_bytes_total
parley_network_sent_bytes_total parley_accounted_bytes parley_process_resident_memory_bytes
parley_process_proportional_memory_bytes parley_process_cpu_seconds_total
parley_process_startup_resident_memory_bytes parley_resident_bytes_per_connection
parley_accounted_bytes_per_connection parley_loop_iteration_seconds parley_sessions_open
parley_session_turns_total parley_session_responses_total parley_upstream_first_token_seconds
parley_server_added_latency_seconds parley_speech_stopped_to_response_created_seconds
parley_audio_input_frames_total parley_audio_input_lag_seconds parley_session_limit_closes_total
parley_tool_calls_total parley_tool_client_seconds parley_speech_recognition_real_time_factor
parley_speech_synthesis_real_time_factor parley_speech_encoding_real_time_factor
parley_voice_to_voice_seconds parley_transcription_seconds parley_speech_recognizers_busy
parley_speech_overloaded_total parley_speech_queue_depth parley_speech_workers_busy
parley_tenant_sessions_open parley_tenant_sessions_total parley_tenant_refusals_total
parley_upstream_retries_total parley_upstream_fallbacks_total parley_upstream_stalls_total
parley_upstream_apologies_total parley_upstream_circuit_open
parley_twilio_calls_open parley_twilio_calls_total parley_twilio_marks_outstanding
parley_twilio_clears_total parley_twilio_dtmf_digits_total parley_twilio_messages_rejected_total
parley_twilio_signature_refusals_total
parley_tls_handshakes_total parley_tls_handshakes_in_progress parley_tls_certificate_reloads_total
parley_tls_certificate_expiry_timestamp_seconds
parley_workers parley_worker_restarts_total parley_worker_info parley_worker_resident_memory_bytes
parley_worker_proportional_memory_bytes parley_worker_sessions_open
parley_sessions_resumed_total parley_sessions_detached parley_draining parley_store_writes_total
parley_redis_up
""".split()
known = set(METRICS)

# Grafana.
with open("deploy/grafana-dashboard.json") as f:
    dashboard = json.load(f)
if dashboard.get("schemaVersion") != 39:
    fail("grafana-dashboard.json: schemaVersion is not 39")
if not any(i.get("name") == "DS_PROMETHEUS" for i in dashboard.get("__inputs", [])):
    fail("grafana-dashboard.json: no DS_PROMETHEUS input")
panels = [p for p in dashboard.get("panels", []) if p.get("type") != "row"]
if not panels:
    fail("grafana-dashboard.json: no panels")
ids = [p.get("id") for p in dashboard.get("panels", [])]
if len(ids) != len(set(ids)):
    fail("grafana-dashboard.json: panel ids repeat")
used = set()
for p in panels:
    targets = p.get("targets") or []
    if not targets or not all(isinstance(t.get("expr"), str) and t["expr"].strip() for t in targets):
        fail(f"grafana-dashboard.json: panel {p.get('title')!r} has a target without an expr")
    for t in targets:
        expr = t.get("expr") or ""
        if expr.count("(") != expr.count(")"):
            fail(f"grafana-dashboard.json: unbalanced parentheses in {expr!r}")
        for name in re.findall(r"\bparley_[a-z0-9_]+", expr):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            if name not in known and base not in known:
                fail(f"grafana-dashboard.json: panel {p.get('title')!r} uses {name}, which Parley does not serve")
            used.add(base if base in known else name)
        if "_bucket" in expr and "histogram_quantile" not in expr:
            fail(f"grafana-dashboard.json: buckets without histogram_quantile in {expr!r}")

# Kubernetes: what kubernetes-validate cannot know.
k8s = "deploy/k8s"
with open(f"{k8s}/kustomization.yaml") as f:
    kustomization = yaml.safe_load(f)
files = {os.path.basename(p) for p in glob.glob(f"{k8s}/*.yaml")} - {"kustomization.yaml"}
listed = set(kustomization.get("resources", []))
if listed != files:
    fail(f"kustomization.yaml: resources {sorted(listed)} are not the manifests {sorted(files)}")
docs = []
for name in sorted(files):
    with open(f"{k8s}/{name}") as f:
        docs += [d for d in yaml.safe_load_all(f) if d]
by_kind = {(d["kind"], d["metadata"]["name"]): d for d in docs}
options = "".join(open(p).read() for p in glob.glob("Sources/parley/*.swift"))
config = by_kind[("ConfigMap", "parley-config")]["data"]
deployment = by_kind[("Deployment", "parley")]
pod = deployment["spec"]["template"]["spec"]
container = next(c for c in pod["containers"] if c["name"] == "parley")
variables = list(config) + [e["name"] for e in container.get("env", [])]
for v in variables:
    if v.startswith("PARLEY_") and not re.search(rf"\b{v}\b", options):
        fail(f"{k8s}: {v} is no parley serve option's environment variable")
args = container["args"]
def arg(flag):
    return args[args.index(flag) + 1] if flag in args else None
for flag in ("--store", "--drain-seconds", "--resume-grace-seconds", "--metrics-listen"):
    if arg(flag) is None:
        fail(f"deployment.yaml: no {flag}")
pre_stop = container["lifecycle"]["preStop"]["exec"]["command"]
sleep = int(pre_stop[-1]) if pre_stop[0] == "sleep" else 0
drain = int(arg("--drain-seconds") or 0)
shutdown = 1  # the close handshakes after the drain's deadline (ServingLoop.beginShutdown)
grace = pod["terminationGracePeriodSeconds"]
if grace < sleep + drain + shutdown:
    fail(f"deployment.yaml: terminationGracePeriodSeconds {grace} < preStop {sleep} + drain {drain} + shutdown {shutdown}")
if container["readinessProbe"]["httpGet"]["path"] != "/readyz":
    fail("deployment.yaml: the readiness probe is not /readyz")
annotations = deployment["spec"]["template"]["metadata"].get("annotations", {})
if annotations.get("prometheus.io/port") != arg("--metrics-listen").rsplit(":", 1)[-1]:
    fail("deployment.yaml: prometheus.io/port is not the --metrics-listen port")

# Prometheus.
with open("deploy/prometheus.yml") as f:
    prometheus = yaml.safe_load(f)
jobs = prometheus.get("scrape_configs") or []
if not any(j.get("kubernetes_sd_configs") and j.get("relabel_configs") for j in jobs):
    fail("prometheus.yml: no kubernetes_sd_configs job with relabel_configs")
if not any("127.0.0.1:9100" in t for j in jobs for s in j.get("static_configs", []) for t in s.get("targets", [])):
    fail("prometheus.yml: no static 127.0.0.1:9100 target")
for j in jobs:
    for r in j.get("relabel_configs", []):
        if "regex" in r:
            try:
                re.compile(r["regex"])
            except re.error as e:
                fail(f"prometheus.yml: job {j.get('job_name')}: bad regex {r['regex']!r}: {e}")

for message in failures:
    print("check-deploy:", message, file=sys.stderr)
if failures:
    sys.exit(1)
print(f"check-deploy: {len(files)} manifests, {len(panels)} dashboard panels over {len(used)} metrics, "
      f"haproxy and prometheus configurations: ok")
EOF
