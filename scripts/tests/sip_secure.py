"""Calls over TCP and TLS, with SRTP (scripts/tests/sip-secure-test.sh): pjsua2 (PyPI's
pjsua2-python, its own TLS and SRTP) as the phones, and this script as the application that places
calls through Parley's API (over https, verifying the server against the test CA).

  out over TCP       Parley calls +15550000030 through a trunk `;transport=tcp`: the callee's
                     account takes plain RTP over TCP; it says hello and hears the agent's answer
  out over TLS+SRTP  Parley calls +15550000031 through a TLS trunk with `srtp`: the callee's
                     account takes SRTP only (mandatory), so a call it answers and hears is SDES
  in over TLS+SRTP   a phone set to SRTP only calls Parley's TLS port: answered, the greeting heard
  in over TLS, plain a phone without SRTP calls Parley's TLS port: 488 (Parley is --sip-srtp required)
  in over UDP+SRTP   a phone offers SDES keys over UDP: 488 (keys are taken only over TLS)

Prints one ok/FAIL line a check; exit status 0 when all passed.
"""
import argparse
import os
import ssl
import sys
import time

import pjsua2 as pj
from http_json import request  # beside this file
from sip_phone import Phone, PhoneCall  # beside this file

TCP_CALLEE, TLS_CALLEE = "+15550000030", "+15550000031"


class Callee(pj.Account):
    """Answers after a moment, says hello once the line is up (`tick`)."""

    def __init__(self, phone: Phone, hello: str):
        super().__init__()
        self.phone = phone
        self.hello = hello
        self.calls: list[PhoneCall] = []
        self.answer_at: dict[int, float] = {}

    def onIncomingCall(self, prm):
        try:
            # Recorded: the bridge takes (and levels) a call's audio only when it goes somewhere.
            call = PhoneCall(self.phone, self, "callee", record=f"{RECORD}.{len(self.calls)}.{id(self)}.wav", call_id=prm.callId)
            self.phone.calls.append(call)
            self.calls.append(call)
            ringing = pj.CallOpParam()
            ringing.statusCode = 180
            call.answer(ringing)
            self.answer_at[id(call)] = time.monotonic() + 0.5
        except Exception as error:  # noqa: BLE001  (never into PJSIP)
            self.phone.note(f"onIncomingCall: {error!r}")

    def tick(self) -> None:
        now = time.monotonic()
        for call in self.calls:
            due = self.answer_at.get(id(call))
            if due is not None and now >= due:
                del self.answer_at[id(call)]
                ok = pj.CallOpParam()
                ok.statusCode = 200
                call.answer(ok)
            if call.audio is not None and not call.ended and not getattr(call, "spoke", False):
                call.spoke = True
                call.answered_at = now
                call.play(self.hello)


def make(phone: Phone, user: str, transport: str, srtp: bool, cls=pj.Account) -> pj.Account:
    config = pj.AccountConfig()
    suffix = "" if transport == "udp" else f";transport={transport}"
    config.idUri = f"sip:{user}@127.0.0.1:{phone.transport_port(transport)}{suffix}"
    config.sipConfig.transportId = phone.transports[transport]
    config.mediaConfig.srtpUse = pj.PJMEDIA_SRTP_MANDATORY if srtp else pj.PJMEDIA_SRTP_DISABLED
    config.mediaConfig.srtpSecureSignaling = 0
    media = config.mediaConfig.transportConfig
    media.boundAddress = media.publicAddress = "127.0.0.1"
    account = cls(phone, HELLO) if cls is Callee else cls()
    account.create(config)
    phone.accounts.append(account)
    return account


HELLO = ""
RECORD = ""


def main() -> int:
    global HELLO, RECORD
    parser = argparse.ArgumentParser()
    parser.add_argument("--ca", required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--sip-tls-port", type=int, required=True)
    parser.add_argument("--sip-port", type=int, required=True)
    parser.add_argument("--hello", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--ports-file", required=True, help="where the phone's TCP and TLS ports are written, for the server's trunks")
    parser.add_argument("--go-file", required=True, help="appears once the server is up, holding its API's port")
    args = parser.parse_args()
    HELLO = args.hello
    RECORD = args.log + ".heard"
    failed = 0

    def check(ok: bool, text: str) -> None:
        nonlocal failed
        failed += 0 if ok else 1
        print(("ok   " if ok else "FAIL ") + text, flush=True)

    phone = Phone(log=args.log, tls=(args.ca, args.cert, args.key))
    tcp_callee = make(phone, TCP_CALLEE, "tcp", srtp=False, cls=Callee)
    tls_callee = make(phone, TLS_CALLEE, "tls", srtp=True, cls=Callee)
    secure_caller = make(phone, "secure-caller", "tls", srtp=True)
    plain_caller = make(phone, "plain-caller", "tls", srtp=False)
    udp_srtp_caller = make(phone, "udp-srtp-caller", "udp", srtp=True)
    with open(args.ports_file + ".tmp", "w") as out:
        out.write(f"{phone.transport_port('tcp')} {phone.transport_port('tls')}\n")
    os.rename(args.ports_file + ".tmp", args.ports_file)
    end = time.monotonic() + 120
    while not os.path.exists(args.go_file) and time.monotonic() < end:
        phone.pump(0.1)

    with open(args.go_file) as given:
        url = f"https://127.0.0.1:{given.read().strip()}"
    context = ssl.create_default_context(cafile=args.ca)

    def post(path: str, body: dict | None) -> tuple[int, dict]:
        status, _, answer = request(url + path, body, context=context)
        return status, answer

    placed = {}
    for number, trunk in ((TCP_CALLEE, "tcp"), (TLS_CALLEE, "tls")):
        status, body = post("/v1/realtime/calls", {"transport": {"type": "sip", "destination": number, "trunk": trunk},
                                                   "session": {"instructions": "You are Parley's secure-trunk test. Answer briefly."}})
        check(status == 201, f"out over {trunk}: placed ({status} {body})")
        placed[number] = body.get("id", "")

    secure = PhoneCall(phone, secure_caller, "secure-caller", record=RECORD + ".caller.wav")
    phone.calls.append(secure)
    secure.makeCall(f"sip:+15550001000@127.0.0.1:{args.sip_tls_port};transport=tls", pj.CallOpParam(True))
    plain = PhoneCall(phone, plain_caller, "plain-caller")
    phone.calls.append(plain)
    plain.makeCall(f"sip:+15550001000@127.0.0.1:{args.sip_tls_port};transport=tls", pj.CallOpParam(True))
    udp = PhoneCall(phone, udp_srtp_caller, "udp-srtp-caller")
    phone.calls.append(udp)
    udp.makeCall(f"sip:+15550001000@127.0.0.1:{args.sip_port}", pj.CallOpParam(True))

    def heard(call: PhoneCall | None, since: float) -> int:
        return call.heard_ms(since=since) if call is not None else 0

    end = time.monotonic() + 45
    while time.monotonic() < end:
        phone.pump(0.05)
        tcp_callee.tick()
        tls_callee.tick()
        callees = tcp_callee.calls + tls_callee.calls
        talking = [c for c in callees if getattr(c, "answered_at", None)]
        if (len(talking) == 2 and all(heard(c, c.answered_at + 1.0) >= 1500 for c in talking)
                and heard(secure, 0) >= 1500 and plain.ended and udp.ended):
            break

    for number, callee, label in ((TCP_CALLEE, tcp_callee, "out over TCP (plain RTP)"), (TLS_CALLEE, tls_callee, "out over TLS with SRTP")):
        call = callee.calls[0] if callee.calls else None
        check(call is not None and call.confirmed, f"{label}: the callee's phone took the call")
        since = getattr(call, "answered_at", 1e12) + 1.0 if call else 1e12
        check(heard(call, since) >= 1500, f"{label}: the callee heard the agent answer its hello ({heard(call, since)} ms)")
        status, _ = post(f"/v1/realtime/calls/{placed[number]}/hangup", None)
        check(status == 200, f"{label}: hung up by the application ({status})")
    check(secure.confirmed and heard(secure, 0) >= 1500, f"in over TLS with SRTP: answered, the greeting heard ({heard(secure, 0)} ms)")
    check(plain.ended and plain.final_code == 488, f"in over TLS without SRTP, on a server that requires it: 488 ({plain.final_code})")
    check(udp.ended and udp.final_code == 488, f"SDES keys offered over UDP: 488 ({udp.final_code})")
    phone.pump(1.0)
    phone.close()
    print(f"secure: {'all passed' if not failed else f'{failed} failed'}", flush=True)
    os._exit(1 if failed else 0)  # pjsua2's calls must not be collected after close


if __name__ == "__main__":
    sys.exit(main())
