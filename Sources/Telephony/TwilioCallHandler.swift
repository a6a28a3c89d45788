import Session
import Access
import Codec
import Loop
import Server
import SessionEngine

/// One phone call on a Twilio Media Streams WebSocket, a media leg: Twilio's messages in (`start`
/// makes the call's conversation, `media` feeds it µ-law at 8 kHz, `mark` says what played,
/// `dtmf` and `stop`), and the session's reply out as `media` in 20 ms chunks, each followed by a
/// `mark`; a barge-in sends `clear` and cuts the reply in the history where the marks say the
/// caller stopped hearing it. The conversation is whichever API the stream asked for (its
/// `<Parameter name="api">`: `realtime`, the default, or `live`), reached by the call's CallSid
/// for sidebands (`/v1/realtime?call_id=CA…`, `/v1/live/sessions/CA…/attach`).
///
/// Malformed messages are counted and ignored (a carrier's stream is not the caller's fault); a
/// call whose audio format is not µ-law at 8 kHz mono is closed, saying so.
final class TwilioCallHandler: WebSocketHandler, SessionSocket, MediaLeg, CallCarrier {
    private let endpoint: TwilioEndpoint
    private var conversation: (any CallConversation)?
    /// The call as sidebands and call control reach it by its CallSid (or its stream's id).
    private var line: CallLine?
    private var socket: WebSocket?
    private var streamSid = ""
    private var callSid = ""
    private var playback = TwilioPlayback()
    /// The reply whose audio went out last: a new one's first piece forgets the old marks.
    private var playing = ""
    private var stopped = false
    /// Call control hung the call up (its conversation's reason: `close_requested`).
    private var hungUp = false
    private var keypad = KeypadEntry()
    private var keypadTimer: ScheduledTask?
    private let metrics = TwilioMetrics.shared

    init(endpoint: TwilioEndpoint) {
        self.endpoint = endpoint
    }

    func webSocketDidOpen(_ socket: WebSocket) { self.socket = socket }

    func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        guard kind == .text else { return reject(.binaryFrame) }
        let parsed: TwilioMessage
        do {
            parsed = try TwilioMessage.parse(String(decoding: message, as: UTF8.self))
        } catch {
            return reject(error.reason, error.message)
        }
        switch parsed {
        case .connected: break
        case .start(let call): start(call, on: socket)
        case .media(let track, let payload):
            guard let conversation else { return reject(.mediaBeforeStart) }
            // With both tracks streamed, the outbound one is our own voice coming back.
            guard track == nil || track == "inbound" else { return }
            guard conversation.driver.admitEvent() else { return }
            conversation.hear { $0.g711(payload, .muLaw) }
        case .mark(let name):
            // An echo covers the marks before it too.
            let before = playback.outstanding
            if playback.echoed(name) { metrics.marksOutstanding.add(playback.outstanding - before) }
        case .dtmf(let digit): pressed(digit)
        case .stop:
            stopped = true
            socket.close(.normal, reason: "stream stopped")
        }
    }

    func webSocketDidClose(_ socket: WebSocket, code: WebSocketCloseCode) {
        keypadTimer?.cancel()
        metrics.marksOutstanding.add(-playback.outstanding)
        guard let conversation else { return }
        metrics.callsOpen.add(-1)
        metrics.calls.add(1, stopped ? .stop : .noStop)
        sessionLog.info("call ended", metadata: ["session": "\(conversation.driver.engine.sessionID)", "call": "\(callSid)",
                                                 "stop": "\(stopped)", "code": "\(code)"])
        line?.end(reason: hungUp ? "hangup" : stopped ? "remote_hangup" : "connection_lost")
        line = nil
        conversation.close(SessionEnding(code), reason: hungUp ? "close_requested" : stopped ? "remote_hangup" : "connection_lost")
        self.conversation = nil
    }

    // MARK: The call

    private func start(_ call: TwilioStart, on socket: WebSocket) {
        guard conversation == nil else { return reject(.missingField, "a second start") }
        guard call.encoding == "audio/x-mulaw", call.sampleRate == 8000, call.channels == 1 else {
            sessionLog.warning("call refused", metadata: ["call": "\(call.callSid ?? "")", "encoding": "\(call.encoding)", "rate": "\(call.sampleRate)"])
            return socket.close(.unsupportedData, reason: "media must be audio/x-mulaw at 8000 Hz, mono")
        }
        streamSid = call.streamSid
        callSid = call.callSid ?? ""
        let settings = endpoint.settings
        let sessions = endpoint.sessions
        var options = SessionEngine.Options(phoneCall: sessions, format: .pcmu, sessions: [settings.session])
        var configuration = options.configuration
        configuration.instructions = call.parameter("instructions") ?? settings.instructions
        configuration.voice = call.parameter("voice") ?? settings.voice
        if var vad = configuration.turnDetection {
            if let threshold = call.parameter("vad_threshold").flatMap(Double.init), (0...1).contains(threshold) { vad.threshold = threshold }
            if let silence = call.parameter("vad_silence_ms").flatMap(Int.init), (100...5000).contains(silence) { vad.silenceDurationMs = silence }
            configuration.turnDetection = vad
        }
        options.configuration = configuration
        let api: CallAPI
        if call.parameter("api") == "live" {
            var config = LiveSessionConfig(model: call.parameter("model") ?? "gpt-live")
            config.format = .negotiated
            config.instructions = configuration.instructions
            config.voice = configuration.voice
            api = .live(config)
        } else {
            api = .realtime(nil)
        }
        let id = callSid.isEmpty ? streamSid : callSid
        let made = api.conversation(CallOpening(callID: id, endpoint: sessions, admitted: .phoneCall, carrier: settings.path, leg: self, options: { _ in options }))
        conversation = made
        metrics.callsOpen.add(1)
        made.open(self)
        let line = CallLine(id: id, on: socket.loop)
        line.carrier = self
        line.converse(made)
        line.moved(to: .answered)
        line.list()
        self.line = line
        let greeting = call.parameter("greeting") ?? settings.greeting
        if !greeting.isEmpty { made.greet(greeting) }
    }

    /// Keys reach the conversation as a user turn ("The caller pressed 1 2 3 #.", `KeypadEntry`)
    /// and are answered.
    private func pressed(_ digit: Character) {
        metrics.dtmf.add(1)
        guard let conversation, let loop = socket?.loop else { return reject(.mediaBeforeStart) }
        conversation.keyPressed(digit)
        keypadTimer?.cancel()
        keypadTimer = nil
        if let entry = keypad.pressed(digit, now: loop.nanoseconds()) { return conversation.userSaid(entry) }
        keypadTimer = keypad.deadline.map { loop.schedule(at: $0) { [weak self] in self?.keypadPaused(loop) } }
    }

    private func keypadPaused(_ loop: EventLoop) {
        keypadTimer = nil
        if let entry = keypad.fire(now: loop.nanoseconds()) { conversation?.userSaid(entry) }
    }

    private func reject(_ reason: TwilioRejection, _ why: String = "") {
        metrics.rejected.add(1, reason)
        sessionLog.debug("twilio message ignored", metadata: ["call": "\(callSid)", "reason": "\(reason.rawValue)", "detail": "\(why)"])
    }

    // MARK: The session's socket: the stream (Twilio hears only its own messages)

    var loop: EventLoop { socket!.loop }
    func send(text: String) {}
    func close(_ ending: SessionEnding, reason: String) { socket?.close(ending, reason: reason) }
    var isOpen: Bool { socket?.isOpen ?? false }
    var hasClient: Bool { true }
    func account(handlerBytes: Int) { socket?.account(handlerBytes: handlerBytes) }

    // MARK: Reached by its CallSid: sidebands, and a hangup

    func control(_ action: CallControl) {
        guard case .hangUp = action else { return }
        hungUp = true
        socket?.close(.normal, reason: "hung up")
    }

    // MARK: The media leg

    func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on _: any SessionSocket) {
        guard case .pcm(let bytes) = piece, !streamSid.isEmpty, let socket else { return }
        if at.responseID != playing {
            playback.forgetAll(except: at.responseID)
            playing = at.responseID
        }
        socket.send(text: TwilioOutbound.media(streamSid: streamSid, audio: bytes))
        // 8 bytes of µ-law a millisecond.
        let ms = bytes.count / 8
        socket.send(text: TwilioOutbound.mark(streamSid: streamSid, name: playback.sent(ms, of: at.responseID)))
        metrics.marksOutstanding.add(1)
    }

    func heardMs(of responseID: String) -> Int? { playback.heard(responseID) }

    /// A pause is a `clear` (Twilio drops what it queued) and the marks say what the caller heard;
    /// the reply's audio from there is sent again on resume.
    var resendsAfterPause: Bool { true }

    func speechPaused(responseID: String, on _: any SessionSocket) -> Int? {
        let heard = playback.heard(responseID)
        if playback.isPlaying, let socket {
            socket.send(text: TwilioOutbound.clear(streamSid: streamSid))
            metrics.clears.add(1)
            metrics.marksOutstanding.add(-playback.cleared())
        }
        playback.rewind(responseID, toMs: heard)
        return heard
    }

    func speechStopped(responseID: String, on _: any SessionSocket) {
        guard playback.isPlaying, let socket else { return }
        socket.send(text: TwilioOutbound.clear(streamSid: streamSid))
        metrics.clears.add(1)
        metrics.marksOutstanding.add(-playback.cleared())
    }
}
