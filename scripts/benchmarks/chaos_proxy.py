"""Not a load client: the TCP proxy that puts the network's faults between `make chaos`'s clients and HAProxy.

The network's faults for `make chaos`, since `tc netem` is not available here: a TCP proxy of our
own between the clients and HAProxy. Its seeded schedule moves through windows of
  calm   bytes pass as they come;
  delay  each chunk waits 20-200 ms (per connection, in order);
  stall  a tenth of the connections stop passing bytes either way for 2-6 s, then go on;
  cut    a twentieth of the connections are closed at once, both sides, with no close frame
         (what a phone leaving Wi-Fi does to a session);
and prints one line per window and, at the end, its counts as JSON (connections, bytes, cut,
stalled, delayed). Faults come for the first --faults-seconds (all of the run by default); then it
is calm, so that the run's verdict (the clients' final check of every session) is taken on a line
that holds: a cut during it was counted as items lost (41 sessions in one `make test`, when the
run's length put a cut window there). Bounded: it exits after --seconds.

  chaos_proxy.py --listen PORT --to PORT --seed N --seconds S [--faults-seconds F] [--calm-only]"""
import argparse
import asyncio
import json
import random
import signal
import sys
import time

WINDOWS = ("calm", "delay", "stall", "cut")


class Proxy:
    def __init__(self, target: int, seed: int, calm_only: bool) -> None:
        self.target = target
        self.random = random.Random(seed)
        self.calm_only = calm_only
        self.mode = "calm"
        self.links: set["Link"] = set()
        self.counts = {"connections": 0, "bytes": 0, "cut": 0, "stalled": 0, "delayed_chunks": 0, "windows": []}

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.transport.abort()
            return
        link = Link(self, writer, upstream_writer)
        self.links.add(link)
        self.counts["connections"] += 1
        await asyncio.gather(link.pump(reader, upstream_writer), link.pump(upstream_reader, writer), return_exceptions=True)
        link.close()
        self.links.discard(link)

    async def schedule(self, seconds: float, faults_seconds: float) -> None:
        end = time.monotonic() + seconds
        faults_end = time.monotonic() + faults_seconds
        while time.monotonic() < faults_end:
            self.mode = "calm" if self.calm_only else self.random.choice(WINDOWS)
            length = self.random.uniform(10, 30)
            self.counts["windows"].append(self.mode)
            print(f"proxy: {self.mode} for {length:.0f} s ({len(self.links)} connections)", flush=True)
            if self.mode == "cut":
                for link in self.random.sample(sorted(self.links, key=id), len(self.links) // 20):
                    self.counts["cut"] += 1
                    link.close()
            elif self.mode == "stall":
                for link in self.random.sample(sorted(self.links, key=id), len(self.links) // 10):
                    self.counts["stalled"] += 1
                    link.stall_until = time.monotonic() + self.random.uniform(2, 6)
            await asyncio.sleep(min(length, max(0, faults_end - time.monotonic())))
            self.mode = "calm"
        print(f"proxy: calm until the end ({len(self.links)} connections)", flush=True)
        await asyncio.sleep(max(0, end - time.monotonic()))


class Link:
    def __init__(self, proxy: Proxy, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.proxy = proxy
        self.ends = (client, upstream)
        self.stall_until = 0.0
        self.closed = False

    async def pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while not self.closed:
            chunk = await source.read(65536)
            if not chunk:
                break
            if self.proxy.mode == "delay":
                self.proxy.counts["delayed_chunks"] += 1
                await asyncio.sleep(self.proxy.random.uniform(0.02, 0.2))
            while time.monotonic() < self.stall_until and not self.closed:
                await asyncio.sleep(0.1)
            if self.closed:
                break
            self.proxy.counts["bytes"] += len(chunk)
            sink.write(chunk)
            await sink.drain()
        self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            for end in self.ends:
                end.transport.abort()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--to", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--faults-seconds", type=float, help="faults only this long from the start, then calm (default: --seconds)")
    parser.add_argument("--calm-only", action="store_true")
    arguments = parser.parse_args()
    proxy = Proxy(arguments.to, arguments.seed, arguments.calm_only)
    server = await asyncio.start_server(proxy.serve, "127.0.0.1", arguments.listen, backlog=4096)
    print(f"proxy: listening on 127.0.0.1:{arguments.listen} for 127.0.0.1:{arguments.to}", flush=True)
    # Stopped early (the run is over), it still says what it did.
    faults = arguments.seconds if arguments.faults_seconds is None else min(arguments.faults_seconds, arguments.seconds)
    schedule = asyncio.ensure_future(proxy.schedule(arguments.seconds, faults))
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, schedule.cancel)
    async with server:
        try:
            await schedule
        except asyncio.CancelledError:
            pass
    print("proxy: " + json.dumps(proxy.counts), flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
