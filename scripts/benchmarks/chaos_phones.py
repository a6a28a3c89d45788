"""Drives pjsua2 (PJSIP, a SIP stack nobody here wrote): the phones of one node in `make chaos` (issue 73).

One pjsua2 endpoint (scripts/tests/sip_phone.py) for one node, while chaos.sh deals its faults:

  calls in   every --every seconds (the first after --offset) a call to the node's SIP port, which
             says --question once it is up and hangs up (BYE) --hold seconds after the answer;
  calls out  answers every INVITE the node places through its trunk (180, then 200 after 0.3 s),
             says --hello once the line is up, and waits for Parley's BYE (the application's
             hangup, chaos_calls.py); one still up --hold + 20 s after its answer is hung up here.

One process a node because pjsua2's wheel holds at most 4 calls at once (PJ_ETOOMANY past them,
486 to an INVITE), whatever `maxCalls` says; a node's calls stay under that at make chaos's pace.
Every call, when it has ended (or at --seconds, as it stands), is one JSON line in --report: its
kind, node (calls in: --node; calls out: the number dialled), when it was placed, answered and
ended (Unix seconds), its last SIP status, who hung up, the speech it heard.
chaos_calls_verdict.py judges them against the faults. Prints "port N" (the callee's SIP port,
the node's trunk) first.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import pjsua2 as pj  # noqa: E402
from sip_phone import Phone, PhoneCall  # noqa: E402


def wall(monotonic: float) -> float:
    return time.time() - (time.monotonic() - monotonic)


class Record:
    """What the report says of one call."""

    def __init__(self, kind: str, node: str, call: PhoneCall):
        self.kind, self.node, self.call = kind, node, call
        self.placed = time.monotonic()
        self.answered: float | None = None
        self.ended: float | None = None
        self.said = False
        self.hang_up_at: float | None = None
        self.written = False

    def line(self) -> str:
        call = self.call
        return json.dumps({
            "kind": self.kind, "node": self.node,
            "placed": round(wall(self.placed), 3),
            "answered": round(wall(self.answered), 3) if self.answered else None,
            "ended": round(wall(self.ended), 3) if self.ended else None,
            "final": call.final_code, "hung_up_here": call.hung_up_here,
            "heard_ms": call.heard_ms(), "states": [s for s, _ in call.states][-6:],
        })


class Callee(pj.Account):
    """The far end of the nodes' calls out."""

    def __init__(self, phone: Phone, records: list[Record]):
        super().__init__()
        self.phone, self.records = phone, records
        self.due: list[tuple[float, PhoneCall]] = []

    def onIncomingCall(self, prm):
        try:
            call = PhoneCall(self.phone, self, "callee", call_id=prm.callId)
            self.phone.calls.append(call)
            uri = call.getInfo().localUri
            number = uri.split("sip:", 1)[-1].split("@", 1)[0]
            self.records.append(Record("sip_out", number, call))
            call.respond(180)
            self.due.append((time.monotonic() + 0.3, call))
        except Exception as error:  # noqa: BLE001  (never into PJSIP)
            self.phone.note(f"onIncomingCall: {error!r}")

    def tick(self) -> None:
        now = time.monotonic()
        for item in [d for d in self.due if d[0] <= now]:
            self.due.remove(item)
            if not item[1].ended:
                item[1].respond(200)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sip-port", type=int, required=True, help="the node's SIP port")
    parser.add_argument("--node", required=True, help="the node's index, as the report names it")
    parser.add_argument("--every", type=float, default=30, help="seconds between calls in")
    parser.add_argument("--offset", type=float, default=1, help="seconds before the first call in")
    parser.add_argument("--hold", type=float, default=20, help="seconds a call stays up after its answer")
    parser.add_argument("--question", required=True, help="8 kHz WAV a caller says")
    parser.add_argument("--hello", required=True, help="8 kHz WAV a callee says")
    parser.add_argument("--seconds", type=float, required=True, help="how long calls are placed")
    parser.add_argument("--report", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--start-file", required=True, help="calls in are placed once this file exists (the nodes are up)")
    args = parser.parse_args()
    phone = Phone(log=args.log, max_calls=4)
    records: list[Record] = []
    refused: list[dict] = []  # calls in PJSIP would not place
    callee = Callee(phone, records)
    config = pj.AccountConfig()
    config.idUri = f"sip:callee@127.0.0.1:{phone.port}"
    media = config.mediaConfig.transportConfig
    media.boundAddress = media.publicAddress = "127.0.0.1"
    callee.create(config)
    caller = phone.account("chaos-caller")
    print(f"port {phone.port}", flush=True)

    report = open(args.report, "a", buffering=1)
    # The callee answers from now on; calls in wait for the nodes (the start file).
    while not os.path.exists(args.start_file):
        phone.pump(0.1)
        callee.tick()
    start = time.monotonic()
    placing_until = start + args.seconds
    next_call, placed = start + args.offset, 0
    # After the last call is placed: its hold, then 40 s for BYEs a dead node never answers
    # (pjsua2 gives up on a transaction at 32 s, RFC 3261's timer F).
    end = placing_until + args.hold + 60
    while time.monotonic() < end:
        phone.pump(0.02)
        callee.tick()
        now = time.monotonic()
        if now >= next_call and now < placing_until:
            node = args.node
            placed += 1
            next_call = now + args.every
            try:
                call = phone.call(caller, f"sip:agent@127.0.0.1:{args.sip_port}", f"in-{placed}")
            except pj.Error as error:
                # PJSIP would not send it (the node's port refused the last datagram: it is down).
                phone.calls.pop()
                refused.append({"kind": "sip_in", "node": node, "placed": round(time.time(), 3), "answered": None,
                                "ended": round(time.time(), 3), "final": 0, "hung_up_here": False, "heard_ms": 0,
                                "states": [], "error": f"{getattr(error, 'reason', '')} ({getattr(error, 'status', '')})"})
                report.write(json.dumps(refused[-1]) + "\n")
                continue
            records.append(Record("sip_in", node, call))
        for record in records:
            call = record.call
            if call.confirmed and record.answered is None:
                record.answered = now
                limit = args.hold if record.kind == "sip_in" else args.hold + 20
                record.hang_up_at = now + limit
            if record.answered and call.audio is not None and not record.said and not call.ended:
                record.said = True
                try:
                    call.play(args.question if record.kind == "sip_in" else args.hello)
                    # The bridge measures what a port hears only while something listens to it.
                    call.audio.startTransmit(phone.ep.audDevManager().getPlaybackDevMedia())
                except pj.Error as error:
                    phone.note(f"{call.name}: play: {getattr(error, 'reason', error)}")
            if record.hang_up_at and now >= record.hang_up_at and not call.ended and not call.hung_up_here:
                try:
                    call.hangup_here()
                except pj.Error as error:
                    phone.note(f"{call.name}: hangup: {error!r}")
            if call.ended and record.ended is None:
                record.ended = now
                # Its player is a port of the conference bridge, which holds a few dozen: let go.
                call.players.clear()
            if record.ended and not record.written:
                record.written = True
                report.write(record.line() + "\n")
        if now >= placing_until and all(r.written for r in records):
            break
    for record in records:
        if not record.written:
            report.write(record.line() + "\n")
    report.close()
    print(f"calls: {sum(r.kind == 'sip_in' for r in records) + len(refused)} in, {sum(r.kind == 'sip_out' for r in records)} out; "
          f"{sum(1 for r in records if r.ended is None)} not ended", flush=True)
    phone.close()
    os._exit(0)  # pjsua2's calls must not be collected after close


if __name__ == "__main__":
    sys.exit(main())
