"""The phones Parley calls (scripts/tests/sip-dial-out-test.sh): pjsua2 taking the INVITEs a
Parley server places through its trunk, each number its own callee:

  +15550000001  rings, answers after a second, says its hello once the line is up, hears the
                agent's answer, and is hung up on by Parley (the application's hangup)
  +15550000002  rings, then is busy (486)
  +15550000003  rings and never answers (Parley cancels it)

Prints "port N" (its SIP port) first, then pumps until every callee is done (or --seconds pass),
and prints one ok/FAIL line for each check.
"""
import argparse
import os
import sys
import time

import pjsua2 as pj
from sip_phone import Phone, PhoneCall  # beside this file

ANSWER, BUSY, SILENT = "+15550000001", "+15550000002", "+15550000003"


class Callee(pj.Account):
    def __init__(self, phone: Phone, hello: str, record: str):
        super().__init__()
        self.phone = phone
        self.hello = hello
        self.record = record
        self.calls: dict[str, PhoneCall] = {}
        self.due: list[tuple[float, str, int]] = []  # (when, number, status to answer with)
        self.said_at = 0.0

    def onIncomingCall(self, prm):
        try:
            call = PhoneCall(self.phone, self, "callee", record=None, call_id=prm.callId)
            self.phone.calls.append(call)
            uri = call.getInfo().localUri  # the To: the number dialled
            number = next((n for n in (ANSWER, BUSY, SILENT) if n in uri), "?")
            if number == ANSWER:
                call.record_path = self.record
            self.calls[number] = call
            ringing = pj.CallOpParam()
            ringing.statusCode = 180
            call.answer(ringing)
            if number == ANSWER:
                self.due.append((time.monotonic() + 1.0, number, 200))
            elif number == BUSY:
                self.due.append((time.monotonic() + 1.0, number, 486))
        except Exception as error:  # noqa: BLE001  (never into PJSIP)
            self.phone.note(f"onIncomingCall: {error!r}")

    def tick(self) -> None:
        now = time.monotonic()
        for item in [d for d in self.due if d[0] <= now]:
            self.due.remove(item)
            _, number, status = item
            call = self.calls[number]
            prm = pj.CallOpParam()
            prm.statusCode = status
            if status == 200:
                call.answer(prm)
            else:
                call.hangup(prm)
        answered = self.calls.get(ANSWER)
        if answered is not None and answered.audio is not None and not self.said_at:
            self.said_at = now + 0.8
        if self.said_at and now >= self.said_at and answered is not None and not answered.ended and not getattr(answered, "spoke", False):
            answered.spoke = True
            answered.play(self.hello)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hello", required=True, help="8 kHz WAV the callee says once the call is up")
    parser.add_argument("--log", required=True)
    parser.add_argument("--seconds", type=float, default=90)
    args = parser.parse_args()
    phone = Phone(log=args.log)
    callee = Callee(phone, args.hello, args.log + ".heard.wav")
    config = pj.AccountConfig()
    config.idUri = f"sip:callee@127.0.0.1:{phone.port}"
    media = config.mediaConfig.transportConfig
    media.boundAddress = media.publicAddress = "127.0.0.1"
    callee.create(config)
    print(f"port {phone.port}", flush=True)
    end = time.monotonic() + args.seconds
    started = 0.0
    while time.monotonic() < end:
        phone.pump(0.02)
        callee.tick()
        calls = callee.calls
        if ANSWER in calls and calls[ANSWER].confirmed and not started:
            started = time.monotonic()
        if len(calls) == 3 and all(call.ended for call in calls.values()):
            break
    failed = 0

    def check(ok: bool, text: str) -> None:
        nonlocal failed
        failed += 0 if ok else 1
        print(("ok   " if ok else "FAIL ") + text, flush=True)

    calls = callee.calls
    answered = calls.get(ANSWER)
    check(answered is not None and answered.confirmed, "the call Parley placed rang, was answered and confirmed (its ACK came)")
    heard = answered.heard_ms(since=started) if answered is not None else 0
    check(heard >= 1000, f"the callee heard the agent answer its hello ({heard} ms of speech)")
    check(answered is not None and answered.ended and not answered.hung_up_here, "the application's hangup reached the callee as Parley's BYE")
    busy = calls.get(BUSY)
    check(busy is not None and busy.ended, "the busy callee's 486 ended its call")
    silent = calls.get(SILENT)
    check(silent is not None and silent.ended and silent.final_code == 487, f"the call no one answered was cancelled (final {silent.final_code if silent else None})")
    phone.close()
    os._exit(1 if failed else 0)  # pjsua2's calls must not be collected after close


if __name__ == "__main__":
    sys.exit(main())
