"""The phones Parley calls (scripts/tests/sip-dial-out-test.sh): pjsua2 taking the INVITEs a
Parley server places through its trunk, each number its own callee:

  +15550000001  rings, answers after a second, says its hello once the line is up, hears the
                agent's answer, and is hung up on by Parley (the application's hangup)
  +15550000002  rings, then is busy (486)
  +15550000003  rings and never answers (Parley cancels it)
  +15550000004  as the first, for a GPT-Live session placed on `POST /v1/live/sessions`
  +15550000005  a voicemail: answers, plays its greeting and a beep (--voicemail), and records the
                message Parley leaves after the beep (Parley hangs up once it is said)
  +15550000006  the same voicemail, called with `hang_up` for a machine: Parley hangs up at the
                verdict, the session never having said a word into the greeting
  +155500001NN  answers at once (180 and 200 as fast as loopback lets it) and says nothing: the
                calls whose progress a sideband attached late must still hear (issue 73)

Prints "port N" (its SIP port) first, then pumps until every callee is done (or --seconds pass),
and prints one ok/FAIL line for each check.
"""
import argparse
import os
import sys
import time

import pjsua2 as pj
from sip_phone import Phone, PhoneCall  # beside this file

ANSWER, BUSY, SILENT, LIVE, VOICEMAIL, MACHINE = "+15550000001", "+15550000002", "+15550000003", "+15550000004", "+15550000005", "+15550000006"
NUMBERS = (ANSWER, BUSY, SILENT, LIVE, VOICEMAIL, MACHINE)
TALKERS = (ANSWER, LIVE, VOICEMAIL, MACHINE)
MACHINES = (VOICEMAIL, MACHINE)
QUICK = "+1555000010"
QUICK_CALLS = 7


class Callee(pj.Account):
    def __init__(self, phone: Phone, hello: str, voicemail: str, record: str):
        super().__init__()
        self.phone = phone
        self.hello = hello
        self.voicemail = voicemail
        self.record = record
        self.calls: dict[str, PhoneCall] = {}
        self.due: list[tuple[float, str, int]] = []  # (when, number, status to answer with)
        self.say_at: dict[str, float] = {}
        self.answered_at: dict[str, float] = {}
        self.greeting_ends: dict[str, float] = {}
        self.quick: list[PhoneCall] = []

    def onIncomingCall(self, prm):
        try:
            call = PhoneCall(self.phone, self, "callee", record=None, call_id=prm.callId)
            self.phone.calls.append(call)
            uri = call.getInfo().localUri  # the To: the number dialled
            if QUICK in uri:
                self.quick.append(call)
                for status in (180, 200):
                    call.respond(status)
                return
            number = next((n for n in NUMBERS if n in uri), "?")
            if number in TALKERS:
                call.record_path = f"{self.record}.{number[-1]}.wav"
            self.calls[number] = call
            call.respond(180)
            if number in TALKERS:
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
            self.calls[number].respond(status)
        for number in TALKERS:
            answered = self.calls.get(number)
            if answered is None or answered.audio is None:
                continue
            if answered.confirmed and number not in self.answered_at:
                self.answered_at[number] = now
            if number not in self.say_at:
                # A person waits a moment and says hello; a machine starts its greeting at once.
                self.say_at[number] = now + (0.2 if number in MACHINES else 0.8)
            if now >= self.say_at[number] and not answered.ended and not getattr(answered, "spoke", False):
                answered.spoke = True
                self.greeting_ends[number] = now + answered.play(self.voicemail if number in MACHINES else self.hello)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hello", required=True, help="8 kHz WAV the callee says once the call is up")
    parser.add_argument("--voicemail", required=True, help="8 kHz WAV of a voicemail greeting and its beep")
    parser.add_argument("--log", required=True)
    parser.add_argument("--seconds", type=float, default=90)
    args = parser.parse_args()
    phone = Phone(log=args.log)
    callee = Callee(phone, args.hello, args.voicemail, args.log + ".heard.wav")
    phone.answer_as(callee, "callee")
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        phone.pump(0.02)
        callee.tick()
        calls = callee.calls
        # Every numbered callee done, and the quick ones sip_dial_out.py places (its late listener's
        # and six rounds of its attach race) all hung up.
        quick_done = len(callee.quick) >= QUICK_CALLS and all(call.ended for call in callee.quick)
        if len(calls) == len(NUMBERS) and all(call.ended for call in calls.values()) and quick_done:
            break
    failed = 0

    def check(ok: bool, text: str) -> None:
        nonlocal failed
        failed += 0 if ok else 1
        print(("ok   " if ok else "FAIL ") + text, flush=True)

    calls = callee.calls
    for number, kind in ((ANSWER, "Realtime"), (LIVE, "GPT-Live")):
        answered = calls.get(number)
        check(answered is not None and answered.confirmed, f"{kind}: the call Parley placed rang, was answered and confirmed (its ACK came)")
        heard = answered.heard_ms(since=callee.answered_at.get(number, 0.0)) if answered is not None else 0
        check(heard >= 1000, f"{kind}: the callee heard the agent answer its hello ({heard} ms of speech)")
        check(answered is not None and answered.ended and not answered.hung_up_here, f"{kind}: the application's hangup reached the callee as Parley's BYE")
        wanted = "4123" if number == ANSWER else "9"  # the agent's key (its tool), then the application's
        check(answered is not None and answered.digits == wanted, f"{kind}: the keys the application pressed reached the callee as RFC 4733 events ({answered.digits if answered else None!r})")
    voicemail = calls.get(VOICEMAIL)
    left = voicemail.heard_ms(since=callee.greeting_ends.get(VOICEMAIL, 1e12)) if voicemail is not None else 0
    check(left >= 1500, f"leave_message: the voicemail recorded the message after its beep ({left} ms of speech)")
    check(voicemail is not None and voicemail.confirmed and voicemail.ended and not voicemail.hung_up_here,
          "leave_message: Parley hung up once the message was said")
    machine = calls.get(MACHINE)
    spoken = machine.heard_ms(since=callee.answered_at.get(MACHINE, 0.0)) if machine is not None else -1
    check(machine is not None and machine.ended and not machine.hung_up_here and spoken == 0,
          f"hang_up: Parley hung up on the machine, never having said a word into its greeting ({spoken} ms heard)")
    busy = calls.get(BUSY)
    check(busy is not None and busy.ended, "the busy callee's 486 ended its call")
    silent = calls.get(SILENT)
    check(silent is not None and silent.ended and silent.final_code == 487, f"the call no one answered was cancelled (final {silent.final_code if silent else None})")
    phone.close()
    os._exit(1 if failed else 0)  # pjsua2's calls must not be collected after close


if __name__ == "__main__":
    sys.exit(main())
