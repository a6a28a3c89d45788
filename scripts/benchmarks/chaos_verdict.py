"""Not a load client: the verdict `make chaos` draws from its reports once its run is over.

The checks `make chaos` makes after its run, beyond the load client's own (chaos.sh):

- the capped tenant: the most of its sessions open at once (the load client's timeline of
  [unix seconds, open]) never above its limit before Redis's first outage, and never above the
  limit times the nodes at all (while Redis is away each node counts alone, docs/operations.md,
  "How tenant limits are counted": sessions it admits then stay open after);
- memory: every node's accounted bytes back to their start's (the sessions are gone); its RSS at
  the end is reported beside the spread of its first minute under load.

Prints one line per check; exits 1 when one fails.

  chaos_verdict.py OUT_DIR TENANT_LIMIT NODES"""
import json
import sys

out, limit, nodes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
failed = []

survive = json.load(open(f"{out}/survive.json"))
timeline = survive.get("tenant_open", [])
outages = []
try:
    for line in open(f"{out}/redis-outages.txt"):
        at, what = line.split()
        outages.append((int(at), what))
except FileNotFoundError:
    pass
first_outage = min((at for at, what in outages if what == "down"), default=None)
before = [count for at, count in timeline if first_outage is None or at < first_outage]
most_before = max(before, default=0)
most = max((count for _, count in timeline), default=0)
print(f"tenant capped at {limit}: at most {most_before} open before Redis's first outage, {most} in all "
      f"(bound {limit * nodes} with {nodes} nodes counting alone); "
      f"{survive.get('tenant_refusals_429', 0)} opens refused")
if limit > 0 and not timeline:
    failed.append("no tenant timeline in the load client's report")
if most_before > limit:
    failed.append(f"the capped tenant held {most_before} sessions (limit {limit}) while Redis was up")
if most > limit * nodes:
    failed.append(f"the capped tenant held {most} sessions, over {limit} on each of {nodes} nodes")

# Memory. Accounted bytes (what the connections hold, by their own accounts) must be back to
# their start's: exact, so a session's state kept after it ended shows. RSS must be back within
# the spread of the node's first minute under load: freed heap stays resident until HeapReturn
# trims it (after a wave of 1,000 closes), so RSS at the end says whether memory grew over the
# run, not whether it went back to an idle start.
samples = {}
for line in open(f"{out}/memory.txt"):
    parts = line.split()
    if len(parts) == 5 and parts[3] != "down":
        samples.setdefault(parts[2], []).append((int(parts[0]), int(parts[3])))
for line in open(f"{out}/memory-ends.txt"):
    name, pid, start_kb, end_kb, start_acc, end_acc = line.split()
    if end_kb == "?" or end_acc == "?":
        failed.append(f"{name}: not running at the end")
        continue
    mine = sorted(samples.get(pid, []))
    first = [kb for at, kb in mine if at - mine[0][0] <= 60] if mine else [int(start_kb)]
    bound = int(max(first) * 1.05)
    verdict = "within" if int(end_kb) <= bound else "above it"
    print(f"{name}: RSS {start_kb} KiB at its start, {min(first)}-{max(first)} in its first minute under load, "
          f"{end_kb} at the end (bound {bound}) {verdict}; accounted bytes {start_acc} at its start, {end_acc} at the end")
    # Reported, not judged: RSS kept what glibc does not give back even after a trim (10 to 15 MB
    # a node after every session ended, while accounted bytes were back to the byte), so it
    # cannot tell a leak from the allocator here; accounted bytes can.
    if float(end_acc) > float(start_acc) + 65536:
        failed.append(f"{name}: {end_acc} accounted bytes at the end, {start_acc} at its start")

for problem in failed:
    print("FAILED: " + problem)
sys.exit(1 if failed else 0)
