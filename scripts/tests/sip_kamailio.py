"""Calls through Kamailio, a trunk and registrar nobody here wrote (scripts/tests/sip-kamailio-test.sh),
with pjsua2 phones registered at it and this script as the application:

  out   Parley, registered at Kamailio, calls +15550000040 (a pjsua2 phone registered there too)
        through it: Kamailio challenges the INVITE (407), Parley answers, the call is routed to
        the phone, which says hello and hears the agent answer; the application hangs up (the BYE
        through Kamailio's Record-Route).
  in    a phone calls Parley's number at Kamailio: Kamailio finds Parley's registered contact and
        routes the call there; Parley answers with its greeting, which the caller hears.

Prints one ok/FAIL line a check; exit status 0 when all passed.
"""
import argparse
import os
import sys
import time
import urllib.request

import pjsua2 as pj
from http_json import request  # beside this file
from sip_phone import Phone, PhoneCall  # beside this file

CALLEE = "+15550000040"


class Callee(pj.Account):
    def __init__(self, phone: Phone, hello: str, record: str):
        super().__init__()
        self.phone, self.hello, self.record = phone, hello, record
        self.call: PhoneCall | None = None
        self.answer_at = 0.0
        self.answered_at = 0.0

    def onIncomingCall(self, prm):
        try:
            self.call = PhoneCall(self.phone, self, "callee", record=self.record, call_id=prm.callId)
            self.phone.calls.append(self.call)
            ringing = pj.CallOpParam()
            ringing.statusCode = 180
            self.call.answer(ringing)
            self.answer_at = time.monotonic() + 0.5
        except Exception as error:  # noqa: BLE001  (never into PJSIP)
            self.phone.note(f"onIncomingCall: {error!r}")

    def tick(self) -> None:
        call = self.call
        if call is None:
            return
        if self.answer_at and time.monotonic() >= self.answer_at:
            self.answer_at = 0.0
            ok = pj.CallOpParam()
            ok.statusCode = 200
            call.answer(ok)
        if call.audio is not None and not call.ended and not self.answered_at:
            self.answered_at = time.monotonic()
            call.play(self.hello)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--kamailio-port", type=int, required=True)
    parser.add_argument("--parley-number", required=True)
    parser.add_argument("--phone-password", required=True)
    parser.add_argument("--hello", required=True)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    failed = 0

    def check(ok: bool, text: str) -> None:
        nonlocal failed
        failed += 0 if ok else 1
        print(("ok   " if ok else "FAIL ") + text, flush=True)

    def post(path: str, body: dict | None) -> tuple[int, dict]:
        status, _, answer = request(args.url + path, body)
        return status, answer

    def metrics() -> str:
        with urllib.request.urlopen(args.url + "/metrics", timeout=10) as response:
            return response.read().decode()

    kamailio = f"127.0.0.1:{args.kamailio_port}"
    phone = Phone(log=args.log)
    config = pj.AccountConfig()
    config.idUri = f"sip:{CALLEE}@127.0.0.1"
    config.regConfig.registrarUri = f"sip:{kamailio}"
    config.regConfig.timeoutSec = 300
    config.sipConfig.authCreds.append(pj.AuthCredInfo("digest", "*", CALLEE, 0, args.phone_password))
    config.sipConfig.contactForced = f"<sip:{CALLEE}@127.0.0.1:{phone.port}>"
    media = config.mediaConfig.transportConfig
    media.boundAddress = media.publicAddress = "127.0.0.1"
    callee = Callee(phone, args.hello, args.log + ".callee.wav")
    callee.create(config)
    phone.accounts.append(callee)
    caller = phone.account("kamailio-caller")

    # Both registered: the phone (pjsua2's registration) and Parley (its /metrics).
    end = time.monotonic() + 30
    while time.monotonic() < end and not (callee.getInfo().regIsActive and 'parley_sip_registrations_total{result="registered"} 1' in metrics()):
        phone.pump(0.2)
    check(callee.getInfo().regIsActive, "the phone registered at Kamailio")
    check('parley_sip_registrations_total{result="registered"} 1' in metrics(), "Parley registered at Kamailio (its digest challenge answered)")

    status, body = post("/v1/realtime/calls", {"transport": {"type": "sip", "destination": CALLEE, "trunk": "kamailio"},
                                               "session": {"instructions": "You are Parley's Kamailio test. Answer briefly."}})
    check(status == 201, f"out: placed through the trunk ({status} {body})")
    incoming = PhoneCall(phone, caller, "caller", record=args.log + ".caller.wav")
    phone.calls.append(incoming)
    incoming.makeCall(f"sip:{args.parley_number}@{kamailio}", pj.CallOpParam(True))

    end = time.monotonic() + 45
    while time.monotonic() < end:
        phone.pump(0.05)
        callee.tick()
        call = callee.call
        if call is not None and callee.answered_at and call.heard_ms(since=callee.answered_at + 1.0) >= 1500 and incoming.heard_ms() >= 1500:
            break
    call = callee.call
    check(call is not None and call.confirmed, "out: Kamailio routed Parley's call to the registered phone, which answered")
    heard = call.heard_ms(since=callee.answered_at + 1.0) if call is not None else 0
    check(heard >= 1500, f"out: the phone heard the agent answer its hello ({heard} ms)")
    status, _ = post(f"/v1/realtime/calls/{body.get('id', '')}/hangup", None)
    check(status == 200, f"out: hung up by the application ({status})")
    check(incoming.confirmed and incoming.heard_ms() >= 1500,
          f"in: Kamailio routed a call for Parley's number to its registered contact; the greeting heard ({incoming.heard_ms()} ms)")
    if not incoming.ended:
        incoming.hangup_here()
    end = time.monotonic() + 5
    while time.monotonic() < end and not (call is None or call.ended):
        phone.pump(0.1)
    check(call is not None and call.ended and not call.hung_up_here, "out: Parley's BYE reached the phone through Kamailio")
    phone.close()
    print(f"kamailio: {'all passed' if not failed else f'{failed} failed'}", flush=True)
    os._exit(1 if failed else 0)  # pjsua2's calls must not be collected after close


if __name__ == "__main__":
    sys.exit(main())
