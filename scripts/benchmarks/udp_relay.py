"""Not a load client: a lossy, jittery UDP relay, the WebRTC path of `make bench-webrtc-loss`.

A lossy, jittery UDP path between one WebRTC client and Parley's media port, for
`make bench-webrtc-loss` (scripts/benchmarks/webrtc-loss.sh), since `tc netem` is not available
here. The client sends to --listen (the benchmark's client puts this port in the answer's
candidate before setRemoteDescription); the relay forwards from a socket of its own to --to, the
server's media port, and the server's datagrams back to the last client address it heard from.

Each way, every datagram but STUN is dropped with probability --loss, drawn from a
`random.Random` seeded with --seed and the direction, so a run's drops are the same sequence
each time; what passes waits --delay-ms plus or minus --jitter-ms (uniform, per datagram), so
datagrams sent less than twice the jitter apart can arrive out of order, as on a real path.
At most --queue datagrams wait at once each way; more are dropped and counted as overflow.
It exits after --seconds (or at SIGTERM), printing its counts as JSON.

  udp_relay.py --listen PORT --to PORT --seed N --seconds S [--loss 0.05] [--delay-ms 40] [--jitter-ms 20]"""
import argparse
import asyncio
import json
import random
import signal
import sys


def is_stun(datagram: bytes) -> bool:
    """RFC 7983 section 7: a first byte of 0 to 3 is STUN (20-63 DTLS, 128-191 RTP and RTCP)."""
    return len(datagram) > 0 and datagram[0] <= 3


class Direction:
    """One way through the relay: its own seeded draws, its pending datagrams, its counts."""

    def __init__(self, name: str, seed: int, loss: float, delay_ms: float, jitter_ms: float, queue: int) -> None:
        # A string seed is hashed the same way in every run (random.seed, version 2).
        self.random = random.Random(f"{seed}-{name}")
        self.loss = loss
        self.delay_ms = delay_ms
        self.jitter_ms = jitter_ms
        self.queue = queue
        self.pending = 0
        self.counts = {"datagrams": 0, "dropped": 0, "stun": 0, "overflow": 0, "sent": 0}

    def admit(self) -> float | None:
        """The delay, in seconds, of the next non-STUN datagram, or None when it is dropped."""
        dropped = self.random.random() < self.loss
        # Drawn whether dropped or not, so the drops do not shift the delays that follow.
        delay = self.random.uniform(self.delay_ms - self.jitter_ms, self.delay_ms + self.jitter_ms)
        return None if dropped else max(0.0, delay) / 1000

    def stun_delay(self) -> float:
        # STUN waits the mean delay without a draw: the seeded sequence stays the media's alone.
        return max(0.0, self.delay_ms) / 1000


class Relay:
    def __init__(self, arguments: argparse.Namespace) -> None:
        self.loop = asyncio.get_running_loop()
        self.target = ("127.0.0.1", arguments.to)
        self.client: tuple[str, int] | None = None
        make = lambda name: Direction(name, arguments.seed, arguments.loss, arguments.delay_ms, arguments.jitter_ms, arguments.queue)
        self.up = make("up")      # client to server
        self.down = make("down")  # server to client
        self.front: asyncio.DatagramTransport | None = None
        self.back: asyncio.DatagramTransport | None = None

    async def open(self, port: int) -> None:
        relay = self

        class Front(asyncio.DatagramProtocol):
            def datagram_received(self, data: bytes, address: tuple[str, int]) -> None:
                relay.client = address
                relay.forward(relay.up, data, lambda: relay.back.sendto(data))

        class Back(asyncio.DatagramProtocol):
            def datagram_received(self, data: bytes, address: tuple[str, int]) -> None:
                if relay.client is not None:
                    client = relay.client
                    relay.forward(relay.down, data, lambda: relay.front.sendto(data, client))

        self.front, _ = await self.loop.create_datagram_endpoint(Front, local_addr=("127.0.0.1", port))
        self.back, _ = await self.loop.create_datagram_endpoint(Back, local_addr=("127.0.0.1", 0), remote_addr=self.target)

    def forward(self, direction: Direction, data: bytes, send) -> None:
        direction.counts["datagrams"] += 1
        if is_stun(data):
            # Never dropped: Parley is ICE-lite and answers only what the client asks, and the
            # client keeps the path only while its consent checks are answered (RFC 7675 section
            # 5.1: consent expires 30 s after the last answered check). Dropping these would
            # measure aioice's check schedule, not how the audio fares; the media, DTLS and SCTP
            # (the data channel) all take the loss.
            direction.counts["stun"] += 1
            delay = direction.stun_delay()
        else:
            delay = direction.admit()
            if delay is None:
                direction.counts["dropped"] += 1
                return
        if direction.pending >= direction.queue:
            direction.counts["overflow"] += 1
            return
        direction.pending += 1

        def release() -> None:
            direction.pending -= 1
            direction.counts["sent"] += 1
            send()

        self.loop.call_later(delay, release)

    def counts(self) -> dict:
        return {"up": self.up.counts, "down": self.down.counts}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen", type=int, required=True, help="the port the client sends to")
    parser.add_argument("--to", type=int, required=True, help="the server's media port")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--loss", type=float, default=0.05, help="the fraction of datagrams dropped each way (not STUN)")
    parser.add_argument("--delay-ms", type=float, default=40)
    parser.add_argument("--jitter-ms", type=float, default=20, help="the delay is uniform in delay +- jitter")
    parser.add_argument("--queue", type=int, default=2000, help="the most datagrams waiting each way")
    arguments = parser.parse_args()
    relay = Relay(arguments)
    await relay.open(arguments.listen)
    print(f"udp-relay: listening on 127.0.0.1:{arguments.listen} for 127.0.0.1:{arguments.to}, "
          f"loss {arguments.loss:.3f}, delay {arguments.delay_ms:.0f} +- {arguments.jitter_ms:.0f} ms, seed {arguments.seed}", flush=True)
    stopped = asyncio.Event()
    relay.loop.add_signal_handler(signal.SIGTERM, stopped.set)
    try:
        await asyncio.wait_for(stopped.wait(), arguments.seconds)
    except asyncio.TimeoutError:
        pass
    print("udp-relay: " + json.dumps(relay.counts()), flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
