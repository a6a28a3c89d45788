"""Places calls out at a steady rate through Parley's API (scripts/benchmarks/bench-dial-out.sh):
for each RATE, `POST /v1/realtime/calls` with a SIP transport every 1/RATE s for SECONDS, each call
hung up HOLD s after it was placed. Prints one JSON line a rate: calls placed and refused, the API's
answer time (the call is placed when it answers 201), the answered calls and their INVITE-to-answer
time from /metrics (parley_sip_call_answer_seconds), the server's and this client's CPU seconds.
Bounded: at most RATE * SECONDS calls a rate, each held HOLD s.
"""
import argparse
import json
import os
import threading
import time
import urllib.error
import urllib.request


def metrics(base: str) -> dict[str, float]:
    with urllib.request.urlopen(base + "/metrics", timeout=10) as response:
        values = {}
        for line in response.read().decode().splitlines():
            if line.startswith("parley_sip_call"):
                name, _, value = line.rpartition(" ")
                values[name] = float(value)
        return values


def cpu(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def post(base: str, path: str, body: dict | None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else b""
    request = urllib.request.Request(base + path, data=data, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def percentile(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def bucket_quantile(before: dict, after: dict, q: float) -> float:
    """The answer-time quantile q from the histogram's buckets (upper bound of the bucket it falls in)."""
    prefix = 'parley_sip_call_answer_seconds_bucket{le="'
    buckets = sorted((float(k[len(prefix):-2]) if k[len(prefix):-2] != "+Inf" else float("inf"), after[k] - before.get(k, 0))
                     for k in after if k.startswith(prefix))
    total = buckets[-1][1] if buckets else 0
    for bound, count in buckets:
        if total and count >= q * total:
            return bound
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--server-pid", type=int, required=True)
    parser.add_argument("--rates", default="5,10,20,40")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--hold", type=float, default=3)
    args = parser.parse_args()
    for rate in (float(r) for r in args.rates.split(",")):
        before = metrics(args.url)
        server_before, client_before = cpu(args.server_pid), time.process_time()
        latencies: list[float] = []
        statuses: dict[int, int] = {}
        lock = threading.Lock()
        threads: list[threading.Thread] = []

        def one(number: str) -> None:
            started = time.monotonic()
            status, body = post(args.url, "/v1/realtime/calls", {"transport": {"type": "sip", "destination": number, "trunk": "sipp"}})
            took = time.monotonic() - started
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
                if status == 201:
                    latencies.append(took)
            if status == 201:
                time.sleep(args.hold)
                post(args.url, f"/v1/realtime/calls/{body['id']}/hangup", None)

        start = time.monotonic()
        count = int(rate * args.seconds)
        for i in range(count):
            due = start + i / rate
            time.sleep(max(0.0, due - time.monotonic()))
            thread = threading.Thread(target=one, args=(f"+1555{i % 10_000_000:07d}",))
            thread.start()
            threads.append(thread)
        placing = time.monotonic() - start
        for thread in threads:
            thread.join()
        time.sleep(1.0)
        after = metrics(args.url)
        answered = after.get("parley_sip_call_answer_seconds_count", 0) - before.get("parley_sip_call_answer_seconds_count", 0)
        answer_sum = after.get("parley_sip_call_answer_seconds_sum", 0) - before.get("parley_sip_call_answer_seconds_sum", 0)
        print(json.dumps({
            "rate_asked": rate, "placed_per_second": round(count / placing, 1), "calls": count, "statuses": statuses, "answered": int(answered),
            "api_p50_ms": round(percentile(latencies, 0.5) * 1000, 1), "api_p95_ms": round(percentile(latencies, 0.95) * 1000, 1),
            "answer_mean_ms": round(answer_sum / answered * 1000, 1) if answered else None,
            "answer_p95_bucket_s": bucket_quantile(before, after, 0.95),
            "server_cpu_s": round(cpu(args.server_pid) - server_before, 2), "client_cpu_s": round(time.process_time() - client_before, 2),
            "window_s": round(time.monotonic() - start, 1),
        }), flush=True)


if __name__ == "__main__":
    main()
