"""Not a load client: a TCP relay with delay and stalls, the WebSocket path of `make bench-webrtc-loss`.

The WebSocket half of `make bench-webrtc-loss` (scripts/benchmarks/webrtc-loss.sh): a TCP relay
on 127.0.0.1 that gives each chunk read the same delay as udp_relay.py gives a datagram
(--delay-ms plus or minus --jitter-ms, uniform, seeded), and stands for the loss TCP hides.

TCP cannot drop: a lost segment is sent again, and everything behind it waits. So loss here is a
stall: on --stall-fraction of the chunks (0.05, the UDP relay's loss), the chunk and all behind it
wait --stall-ms more (200 ms, Linux's minimum retransmission timeout, RFC 6298 section 2.4's
1 s floor lowered as Linux does; a fast retransmit after three duplicate ACKs would be sooner on
a busy stream, a lost tail segment later). A chunk never overtakes the one before it: its
release is the later of its own due time and the previous chunk's release, which is what TCP's
in-order delivery does to jitter.

chaos_proxy.py is not reused: its delay is served in turn by the one pump that also reads, so
each chunk's wait adds to the next's and a stream of 20 ms chunks falls ever further behind;
here a chunk's delay runs from when it was read, and reading goes on while earlier chunks wait
(at most --queue chunks each way, then reading pauses, as a full TCP window does).

  tcp_relay.py --listen PORT --to PORT --seed N --seconds S [--delay-ms 40] [--jitter-ms 20]
               [--stall-fraction 0.05] [--stall-ms 200]"""
import argparse
import asyncio
import json
import random
import signal
import sys
import time


class Relay:
    def __init__(self, arguments: argparse.Namespace) -> None:
        self.arguments = arguments
        self.connections = 0
        self.counts = {"connections": 0, "chunks": 0, "bytes": 0, "stalled": 0}

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.arguments.to)
        except OSError:
            writer.transport.abort()
            return
        self.counts["connections"] += 1
        number = self.counts["connections"]
        ends = (writer, upstream_writer)
        await asyncio.gather(self.pipe(f"{self.arguments.seed}-{number}-up", reader, upstream_writer),
                             self.pipe(f"{self.arguments.seed}-{number}-down", upstream_reader, writer),
                             return_exceptions=True)
        for end in ends:
            end.transport.abort()

    async def pipe(self, seed: str, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        """One way of one connection: a reader that stamps each chunk with its release time, and a
        writer that sends them in order when due."""
        draws = random.Random(seed)
        queue: asyncio.Queue = asyncio.Queue(self.arguments.queue)
        a = self.arguments

        async def read() -> None:
            last_release = 0.0
            while True:
                try:
                    chunk = await source.read(65536)
                except OSError:
                    chunk = b""  # reset: the other side is closed after what came before
                delay = draws.uniform(a.delay_ms - a.jitter_ms, a.delay_ms + a.jitter_ms)
                if chunk and draws.random() < a.stall_fraction:
                    self.counts["stalled"] += 1
                    delay += a.stall_ms
                last_release = max(last_release, time.monotonic() + max(0.0, delay) / 1000)
                await queue.put((last_release, chunk))
                if not chunk:
                    return

        async def write() -> None:
            while True:
                release, chunk = await queue.get()
                wait = release - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not chunk:
                    sink.transport.abort()
                    return
                self.counts["chunks"] += 1
                self.counts["bytes"] += len(chunk)
                sink.write(chunk)
                await sink.drain()

        reading = asyncio.ensure_future(read())
        try:
            await write()
        finally:
            reading.cancel()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--to", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--delay-ms", type=float, default=40)
    parser.add_argument("--jitter-ms", type=float, default=20)
    parser.add_argument("--stall-fraction", type=float, default=0.05, help="chunks held back as a lost segment holds a TCP stream")
    parser.add_argument("--stall-ms", type=float, default=200, help="how long: about one retransmission timeout")
    parser.add_argument("--queue", type=int, default=1000, help="the most chunks waiting each way")
    arguments = parser.parse_args()
    relay = Relay(arguments)
    server = await asyncio.start_server(relay.serve, "127.0.0.1", arguments.listen)
    print(f"tcp-relay: listening on 127.0.0.1:{arguments.listen} for 127.0.0.1:{arguments.to}, "
          f"delay {arguments.delay_ms:.0f} +- {arguments.jitter_ms:.0f} ms, {arguments.stall_ms:.0f} ms stall on "
          f"{arguments.stall_fraction:.3f} of chunks, seed {arguments.seed}", flush=True)
    stopped = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopped.set)
    async with server:
        try:
            await asyncio.wait_for(stopped.wait(), arguments.seconds)
        except asyncio.TimeoutError:
            pass
    print("tcp-relay: " + json.dumps(relay.counts), flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
