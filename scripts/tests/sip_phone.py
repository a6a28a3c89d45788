"""A telephone for the SIP tests: PJSIP's pjsua2 (PyPI's pjsua2-python 2.15.1, written by Teluu,
not from Parley's code) with no sound card, one UDP transport on 127.0.0.1, and calls that play WAV
files into the line and record what comes back.

pjsua2 runs on this thread only (`mainThreadOnly`, no worker threads): nothing happens unless
`Phone.pump` (or `Phone.wait`) is running, and every callback comes from inside it. Media runs on
PJSIP's own media thread, paced by its null sound device, so a recording holds real time.

    phone = Phone(log="pjsua.log")
    caller = phone.account("caller")
    call = phone.call(caller, "sip:agent@127.0.0.1:5060", "q1", record="reply.wav")
    phone.wait("the call is answered", lambda: call.confirmed, timeout=10)
    phone.pump(call.play("question.wav"))
"""
from __future__ import annotations

import ctypes
import glob
import os
import time
import wave
from typing import Callable

import pjsua2 as pj

# What pjsua2 reports of a call's received audio (0 silence .. 255), over which it is speech.
# G.711 silence, which Parley sends while it has nothing to say, reads 0; speech reads 5 to 40.
HEARD_LEVEL = 3


class Abort(Exception):
    """A wait ran out: the scenario cannot go on."""


def _digests_loaded() -> None:
    """The wheel bundles OpenSSL 1.0.2, whose digests must be registered before PJSIP can name
    them (it does so only when a TLS transport starts): without this its digest authentication
    can answer neither SHA-256 nor MD5 ("the algorithm ... is not supported")."""
    libs = glob.glob(os.path.join(os.path.dirname(pj.__file__), "..", "pjsua2_python.libs", "libcrypto-*"))
    if libs:
        ctypes.CDLL(libs[0]).OpenSSL_add_all_digests()


def wav_seconds(path: str) -> float:
    with wave.open(path) as w:
        return w.getnframes() / w.getframerate()


def wav_frame_peaks(path: str, frame_ms: int = 20) -> list[int]:
    """The loudest sample of each `frame_ms` of a 16-bit mono WAV (what pjsua2 records)."""
    with wave.open(path) as w:
        rate, data = w.getframerate(), w.readframes(w.getnframes())
    samples = memoryview(data).cast("h")
    step = rate * frame_ms // 1000
    return [max((abs(s) for s in samples[i:i + step]), default=0) for i in range(0, len(samples), step)]


class PhoneCall(pj.Call):
    """One call and what happened on it: its states and status codes, the audio heard (levels
    sampled while pumping, and a recording), transfers asked of it."""

    def __init__(self, phone: "Phone", account: pj.Account, name: str, record: str | None = None, call_id: int = pj.PJSUA_INVALID_ID):
        super().__init__(account, call_id)
        self.phone = phone
        self.account = account
        self.name = name
        self.record_path = record
        self.states: list[tuple[str, int]] = []  # (state text, last status code) at each change
        self.confirmed = False
        self.ended = False
        self.final_code = 0
        self.hung_up_here = False
        self.audio: pj.AudioMedia | None = None
        self.recorder: pj.AudioMediaRecorder | None = None
        self.recording_since = 0.0
        self.players: list[pj.AudioMediaPlayer] = []
        self.levels: list[tuple[float, int]] = []  # (monotonic time, level heard)
        self.transfer_to: str | None = None
        self.transferred: PhoneCall | None = None
        self.transfer_statuses: list[int] = []
        self.digits = ""  # keys the far end pressed (RFC 4733 events, as pjsua2 hears them)
        self.media_changes = 0  # SDP negotiations completed (the answer, each re-INVITE's and UPDATE's)
        self.media_status = -1  # the audio's last pjsua status (PJSUA_CALL_MEDIA_ACTIVE, ..._LOCAL_HOLD)

    # Callbacks: inside `pump`, on this thread. An exception must not escape into PJSIP.
    def onCallState(self, prm):
        try:
            info = self.getInfo()
            self.states.append((info.stateText, info.lastStatusCode))
            if info.state == pj.PJSIP_INV_STATE_CONFIRMED:
                self.confirmed = True
            elif info.state == pj.PJSIP_INV_STATE_DISCONNECTED:
                self.ended = True
                self.final_code = info.lastStatusCode
                if self.recorder is not None and self.audio is not None:
                    self.recorder = None  # closes the WAV
        except Exception as error:  # noqa: BLE001
            self.phone.note(f"{self.name}: onCallState: {error!r}")

    def onDtmfDigit(self, prm):
        try:
            self.digits += prm.digit
        except Exception as error:  # noqa: BLE001
            self.phone.note(f"{self.name}: onDtmfDigit: {error!r}")

    def onCallMediaState(self, prm):
        try:
            info = self.getInfo()
            self.media_changes += 1
            for index, media in enumerate(info.media):
                if media.type == pj.PJMEDIA_TYPE_AUDIO:
                    self.media_status = media.status
                    if media.status == pj.PJSUA_CALL_MEDIA_ACTIVE and self.audio is not None:
                        self.audio = self.getAudioMedia(index)  # resumed after a hold: its port anew
                if media.type == pj.PJMEDIA_TYPE_AUDIO and media.status == pj.PJSUA_CALL_MEDIA_ACTIVE and self.audio is None:
                    self.audio = self.getAudioMedia(index)
                    if self.record_path:
                        self.recorder = pj.AudioMediaRecorder()
                        self.recorder.createRecorder(self.record_path)
                        self.audio.startTransmit(self.recorder)
                        self.recording_since = time.monotonic()
        except Exception as error:  # noqa: BLE001
            self.phone.note(f"{self.name}: onCallMediaState: {error!r}")

    def onCallTransferRequest(self, prm):
        # Accept the REFER (202) and place the new call through a PhoneCall of ours.
        try:
            self.transfer_to = prm.dstUri
            prm.statusCode = 202
            self.transferred = PhoneCall(self.phone, self.account, self.name + "-transferred")
            prm.newCall = self.transferred
            self.phone.calls.append(self.transferred)
        except Exception as error:  # noqa: BLE001
            self.phone.note(f"{self.name}: onCallTransferRequest: {error!r}")

    def onCallTransferStatus(self, prm):
        self.transfer_statuses.append(prm.statusCode)

    # What the test does with it.
    def play(self, wav: str) -> float:
        """Starts `wav` into the line; returns its length in seconds."""
        player = pj.AudioMediaPlayer()
        player.createPlayer(wav, pj.PJMEDIA_FILE_NO_LOOP)
        player.startTransmit(self.audio)
        self.players.append(player)
        return wav_seconds(wav)

    def respond(self, status: int) -> None:
        """A response to the INVITE taken: provisional (180), the answer (200), or a refusal."""
        prm = pj.CallOpParam()
        prm.statusCode = status
        if status < 300:
            self.answer(prm)
        else:
            self.hangup(prm)

    def hangup_here(self, code: int = 0) -> None:
        """BYE (or CANCEL before the answer)."""
        self.hung_up_here = True
        prm = pj.CallOpParam(True)
        if code:
            prm.statusCode = code
        self.hangup(prm)

    def dial(self, digits: str) -> None:
        """Keys as RFC 4733 events (pjsua2's default when the answer has telephone-event)."""
        self.dialDtmf(digits)

    def hold(self) -> None:
        """A re-INVITE offering sendonly (pjsua2's hold)."""
        self.setHold(pj.CallOpParam(True))

    def unhold(self) -> None:
        """A re-INVITE offering sendrecv again."""
        prm = pj.CallOpParam(True)
        prm.opt.flag = pj.PJSUA_CALL_UNHOLD
        self.reinvite(prm)

    def refresh(self) -> None:
        """An UPDATE carrying an offer (RFC 3311), as a carrier's session refresh sends it."""
        self.update(pj.CallOpParam(True))

    def dial_info(self, digit: str) -> None:
        """A key as SIP INFO (application/dtmf-relay), as some PBXs send keys."""
        prm = pj.CallSendDtmfParam()
        prm.method = pj.PJSUA_DTMF_METHOD_SIP_INFO
        prm.digits = digit
        prm.duration = 160
        self.sendDtmf(prm)

    def sample(self, now: float) -> None:
        if self.audio is not None and not self.ended and self.media_status == pj.PJSUA_CALL_MEDIA_ACTIVE:
            # The call's port transmits into the conference bridge what came from the line.
            try:
                self.levels.append((now, self.audio.getTxLevel()))
            except pj.Error:
                pass  # its port is being replaced (a re-INVITE under way)

    def heard_ms(self, since: float = 0.0) -> int:
        """Milliseconds of audio heard after `since`, from the sampled levels."""
        total = 0.0
        for (t0, level), (t1, _) in zip(self.levels, self.levels[1:]):
            if t0 >= since and level >= HEARD_LEVEL:
                total += t1 - t0
        return int(total * 1000)

    def quiet_for(self) -> float:
        """Seconds since audio was last heard (since the call's media began, if never)."""
        if not self.levels:
            return 0.0
        last = next((t for t, level in reversed(self.levels) if level >= HEARD_LEVEL), self.levels[0][0])
        return self.levels[-1][0] - last

    def rtp_received(self) -> int:
        try:
            return self.getStreamStat(0).rtcp.rxStat.pkt
        except pj.Error:
            return 0

    def remote_rtp(self) -> tuple[str, int]:
        """Where this call's RTP goes (the server's port for it)."""
        address = self.getStreamInfo(0).remoteRtpAddress
        host, _, port = address.rpartition(":")
        return host, int(port)


class Phone:
    """The endpoint: pjsua2 set up for tests, its calls, and the pump that runs them."""

    def __init__(self, log: str, max_calls: int = 24, note: Callable[[str], None] | None = None,
                 tls: tuple[str, str, str] | None = None):
        """`tls`: (CA, certificate, key) PEM files: TCP and TLS transports too (`tcp_port`,
        `tls_port`), the TLS one presenting that certificate and verifying peers against the CA."""
        _digests_loaded()
        self.note = note or (lambda text: print(f"note {text}", flush=True))
        self.calls: list[PhoneCall] = []
        self.accounts: list[pj.Account] = []
        self.ep = pj.Endpoint()
        self.ep.libCreate()
        config = pj.EpConfig()
        config.uaConfig.threadCnt = 0
        config.uaConfig.mainThreadOnly = True
        config.uaConfig.maxCalls = max_calls
        config.uaConfig.userAgent = "parley-sip-test pjsua2/" + self.ep.libVersion().full
        config.logConfig.level = 4
        config.logConfig.consoleLevel = 0
        config.logConfig.filename = log
        # The bridge at 8 kHz, as the line is; no VAD (a packet every 20 ms, speech or not) and no
        # echo canceller (nothing plays into a microphone here).
        config.medConfig.clockRate = 8000
        config.medConfig.sndClockRate = 8000
        config.medConfig.noVad = True
        config.medConfig.ecTailLen = 0
        self.ep.libInit(config)
        self.ep.audDevManager().setNullDev()
        transport = pj.TransportConfig()
        transport.port = 0
        transport.boundAddress = "127.0.0.1"
        transport.publicAddress = "127.0.0.1"
        transport_id = self.ep.transportCreate(pj.PJSIP_TRANSPORT_UDP, transport)
        self.port = int(self.ep.transportGetInfo(transport_id).localName.rpartition(":")[2])
        self.transports = {"udp": transport_id}
        if tls is not None:
            stream = pj.TransportConfig()
            stream.port = 0
            stream.boundAddress = stream.publicAddress = "127.0.0.1"
            self.transports["tcp"] = self.ep.transportCreate(pj.PJSIP_TRANSPORT_TCP, stream)
            secure = pj.TransportConfig()
            secure.port = 0
            secure.boundAddress = secure.publicAddress = "127.0.0.1"
            secure.tlsConfig.CaListFile, secure.tlsConfig.certFile, secure.tlsConfig.privKeyFile = tls
            secure.tlsConfig.method = pj.PJSIP_TLSV1_2_METHOD
            secure.tlsConfig.verifyServer = True
            self.transports["tls"] = self.ep.transportCreate(pj.PJSIP_TRANSPORT_TLS, secure)
        self.ep.libStart()
        self.codecs("PCMU")

    def codecs(self, *names: str) -> None:
        """Offers only G.711 `names` (PCMU, PCMA), in that order, from the next call on."""
        for codec in self.ep.codecEnum2():
            self.ep.codecSetPriority(codec.codecId, 0)
        for rank, name in enumerate(names):
            self.ep.codecSetPriority(f"{name}/8000/1", 255 - rank)

    def transport_port(self, name: str) -> int:
        return int(self.ep.transportGetInfo(self.transports[name]).localName.rpartition(":")[2])

    def account(self, user: str, password: str | None = None, transport: str = "udp", srtp: bool = False) -> pj.Account:
        """`transport`: its calls' SIP transport ("udp", "tcp", "tls"); `srtp`: SRTP (SDES)
        mandatory on its calls, as a phone set to secure calls only."""
        config = pj.AccountConfig()
        suffix = "" if transport == "udp" else f";transport={transport}"
        config.idUri = f"sip:{user}@127.0.0.1:{self.transport_port(transport)}{suffix}"
        config.sipConfig.transportId = self.transports[transport]
        if srtp:
            config.mediaConfig.srtpUse = pj.PJMEDIA_SRTP_MANDATORY
            config.mediaConfig.srtpSecureSignaling = 0
        else:
            config.mediaConfig.srtpUse = pj.PJMEDIA_SRTP_DISABLED
        if password is not None:
            config.sipConfig.authCreds.append(pj.AuthCredInfo("digest", "*", user, 0, password))
        media = config.mediaConfig.transportConfig
        media.boundAddress = "127.0.0.1"
        media.publicAddress = "127.0.0.1"
        media.port = 0
        account = pj.Account()
        account.create(config)
        self.accounts.append(account)
        return account

    def answer_as(self, account: pj.Account, user: str) -> None:
        """`account` (a subclass that takes calls in its onIncomingCall) made `user` on the UDP
        transport, its media on 127.0.0.1; then "port N" on stdout, what the callers wait for."""
        config = pj.AccountConfig()
        config.idUri = f"sip:{user}@127.0.0.1:{self.port}"
        media = config.mediaConfig.transportConfig
        media.boundAddress = media.publicAddress = "127.0.0.1"
        account.create(config)
        self.accounts.append(account)
        print(f"port {self.port}", flush=True)

    def call(self, account: pj.Account, uri: str, name: str, record: str | None = None) -> PhoneCall:
        call = PhoneCall(self, account, name, record)
        self.calls.append(call)
        call.makeCall(uri, pj.CallOpParam(True))
        return call

    def pump(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while True:
            self.ep.libHandleEvents(10)
            now = time.monotonic()
            for call in self.calls:
                call.sample(now)
            if now >= end:
                return

    def wait(self, what: str, condition: Callable[[], bool], timeout: float) -> None:
        end = time.monotonic() + timeout
        while not condition():
            if time.monotonic() >= end:
                raise Abort(f"{what}: not within {timeout:g} s")
            self.pump(0.02)

    def close(self) -> None:
        """Hangs up what is still up and stops PJSIP (the log closes). The Python call objects
        must not be collected after this (pjsua2 asserts): end the process with os._exit."""
        for call in self.calls:
            if not call.ended and call.isActive():
                try:
                    call.hangup_here()
                except pj.Error:
                    pass
        try:
            self.pump(0.3)
        finally:
            self.ep.libDestroy()
