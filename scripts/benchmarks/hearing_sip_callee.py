"""Drives pjsua2 (PJSIP, PyPI's pjsua2-python, written by Teluu): the phones `make bench-hearing`'s
SIP carrier calls.

hearing_bench.py places each session's call through Parley's trunk to a number of its own
(`POST /v1/realtime/calls`), having written what that phone is to say as WAV_DIR/NUMBER.wav (the
session's sentences, each with its lead and trail of the line, 8 kHz pcm16). This side answers
every INVITE at once and, once the call's media is up, plays the number's file into the line, a
20 ms RTP packet of G.711 at a time as PJSIP's clock paces it; Parley hangs up when the bench is
done with the call. PJSIP as PyPI builds it holds 4 calls at most: the bench's SIP sessions are
4 at once at most.

Prints "port N" (its SIP port) first, then pumps for --seconds or until it is killed (as
bench-hearing.sh does at its end), with a line per call answered and played.

    .venv-sip/bin/python hearing_sip_callee.py --wav-dir DIR --log FILE --seconds N
"""
import argparse
import os
import re
import sys
import time

import pjsua2 as pj

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from sip_phone import Phone, PhoneCall  # noqa: E402  (the tests' telephone)


class Callee(pj.Account):
    def __init__(self, phone, wav_dir):
        super().__init__()
        self.phone = phone
        self.wav_dir = wav_dir
        self.waiting = []  # (call, number): answered, media not yet up

    def onIncomingCall(self, prm):
        try:
            call = PhoneCall(self.phone, self, "hearing", record=None, call_id=prm.callId)
            self.phone.calls.append(call)
            number = re.search(r"sip:([^@;>]+)", call.getInfo().localUri).group(1)
            call.respond(200)
            self.waiting.append((call, number))
        except Exception as error:  # noqa: BLE001  (never into PJSIP)
            self.phone.note(f"onIncomingCall: {error!r}")

    def tick(self):
        for call, number in list(self.waiting):
            if call.ended:
                self.waiting.remove((call, number))
            elif call.audio is not None:
                self.waiting.remove((call, number))
                path = os.path.join(self.wav_dir, number + ".wav")
                seconds = call.play(path) if os.path.exists(path) else 0.0
                print(f"played {number} {seconds:.1f} s", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--wav-dir", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--seconds", type=float, default=7200)
    args = parser.parse_args()
    phone = Phone(log=args.log, max_calls=4)
    callee = Callee(phone, args.wav_dir)
    phone.answer_as(callee, "hearing")
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        phone.pump(0.02)
        callee.tick()
    phone.close()
    os._exit(0)  # pjsua2's calls must not be collected after close


if __name__ == "__main__":
    main()
