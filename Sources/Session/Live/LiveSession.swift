import Access
import Codec
import JSON
import Loop
import Server
import SessionEngine

/// One GPT-Live session, whatever carries it: `LiveConversation`'s steps carried out on the
/// session's driver (the same driver as a Realtime session's: turn-taking, recognition,
/// synthesis, limits, reports, traces, metrics), its timers, its Responses backend, and its
/// sidebands (`WS /v1/live/sessions/{id}/attach`). The carrier in front of it (`LiveSessionHandler`
/// for the primary WebSocket) hands it the client's commands and audio.
package final class LiveSession: CallConversation, LegCarried, CallCarrier {
    package private(set) var driver: SessionDriver!
    private var live: LiveConversation
    private var openedAt: UInt64 = 0
    private var acknowledgementTimer: ScheduledTask?
    private var lifeTimer: ScheduledTask?
    /// The Responses backend, made with the first task or command for it (`delegation: responses`).
    private var backend: (session: LiveBackend, delegation: LiveResponsesDelegation)?
    private var sidebands = CallSidebands()
    /// Its own line in `CallDirectory` (for sidebands and call control), listed once started,
    /// when it lists itself.
    private var ownLine: CallLine?
    /// The line that keeps its call's story: its own, or its carrier's (a phone line).
    private weak var callLine: CallLine?
    private let caller: Caller
    private let endpoint: RealtimeEndpoint
    package let endpointName: String
    /// A call's leg that plays the replies' audio itself (a WebRTC call's track, a SIP call's RTP):
    /// their audio, its pauses and its keys go to it; nil: audio as events (a WebSocket).
    package private(set) weak var leg: (any MediaLeg)?
    /// Whether the session registers itself in `CallDirectory` once started; a carrier that is
    /// registered already (a phone line, by the session's id) forwards to it instead.
    private let listsItself: Bool
    /// A fork's connection: the stored session it starts from (set before its first message).
    package var forking: LiveStoredSession?
    /// A call's session: started with this as it opens (`CallAPI`), as its webhook or request said.
    package var startsWith: LiveSessionConfig?

    /// A Live session lasts at most two hours (OpenAI's limit), or the server's limit if shorter.
    static let maxSeconds = 7_200.0

    /// Who sent a command: its errors go back to it alone, everything else to every listener.
    package enum Origin: Equatable {
        case primary
        case sideband(ObjectIdentifier)
        case server
    }

    /// `leg`: a call's media, which plays the replies' audio (a WebRTC call's track, a SIP call's
    /// RTP). `callID`: a phone line's call, whose id its webhook or request named and the session
    /// takes, which its carrier lists in `CallDirectory`, and whose echo guard is always on, as a
    /// handset's is; nil: the session lists itself by its own id once started.
    package init(endpoint: RealtimeEndpoint, admitted: Admitted, options: SessionEngine.Options, endpointName: String, traceparent: String?,
                 leg: (any MediaLeg)? = nil, callID: String? = nil) {
        self.endpoint = endpoint
        self.endpointName = endpointName
        caller = admitted.caller
        self.leg = leg
        listsItself = callID == nil
        live = LiveConversation(sessionID: "", seed: 0, expiresAt: 0)
        driver = SessionDriver(endpoint: endpoint, admitted: admitted, options: options, wire: self)
        driver.echoGuardByDefault = endpoint.echoGuardByDefault
        driver.echoGuardAlways = callID != nil
        driver.startTrace(traceparent: traceparent, endpointName: endpointName)
        // The driver's limit is the tightest of the server's, the tenant's and the client secret's.
        let life = min(Self.maxSeconds, driver.maxSessionSeconds)
        live = LiveConversation(sessionID: callID ?? driver.engine.sessionID, seed: MonotonicClock.nanoseconds(),
                                expiresAt: WallClock.seconds() + Int(life), recordsStored: endpoint.recordings != nil)
    }

    package var sessionID: String { live.sessionID }

    private var nowMs: Int {
        guard let loop = driver.loop else { return 0 }
        return Int((loop.nanoseconds() &- openedAt) / 1_000_000)
    }

    /// The session begins on `socket` (its primary client's events), without announcing: Live
    /// has no `session.created`; `session.start` begins it.
    package func open(_ socket: any SessionSocket) {
        openedAt = socket.loop.nanoseconds()
        driver.open(socket, announce: false)
        lifeTimer = socket.loop.schedule(after: Self.maxSeconds) { [weak self] in self?.expire() }
        if let config = startsWith {
            startsWith = nil
            start(config)
        }
    }

    /// A client event on a call's own channel (a WebRTC call's data channel): the primary's.
    package func receive(clientText text: UnsafeRawBufferPointer) { receive(text) }

    /// One text message of the primary client's (or, `from` a sideband, of a sideband's).
    package func receive(_ message: UnsafeRawBufferPointer, from origin: Origin = .primary) {
        guard origin != .primary || driver.admitEvent() else { return }
        do {
            let command = try LiveCommand.parse(message, forking: forking)
            switch (origin, command.kind) {
            case (.sideband, .audio), (.sideband, .start):
                // A sideband watches and steers; the microphone and the start are the primary's.
                return perform(live.refuse(ProtocolError(.invalidValue, "a sideband cannot start the session or send audio: the session's primary connection does",
                                                         param: "type", eventID: command.eventID)), from: origin)
            case (.primary, .fixture) where live.format == .negotiated:
                // A fixture comes from the primary WebSocket or a trusted sideband, never from a
                // WebRTC front end's data channel (`OutputAudioFixturePlayEvent`).
                return perform(live.refuse(ProtocolError(.invalidValue, "a fixture is played from a Live WebSocket or a sideband, not from a call's data channel",
                                                         param: "type", eventID: command.eventID)), from: origin)
            default: break
            }
            if case .audio(let bytes) = command.kind {
                if !sidebands.isEmpty, let format = live.format { reflect(bytes, format: format) }
                // A microphone's frame: fed without the steps `command` would make for it.
                if let heard = live.heard(bytes) { return feed(heard, from: origin) }
            }
            // A WebRTC front end's channel (no microphone frames: its audio is the track's).
            if origin == .primary, let refusal = live.refusal(ofPrimary: command) { return perform(live.refuse(refusal), from: origin) }
            perform(live.command(command, nowMs: nowMs), from: origin)
        } catch {
            perform(live.refuse(error), from: origin)
        }
    }

    /// Made with the first audio reflected at another rate than 24 kHz: sidebands hear 24 kHz.
    private var reflector: (rate: Int, resampler: Resampler)?

    /// The primary's audio as its sidebands hear it, before any muting: `session.input_audio.append`
    /// with PCM16LE at 24 kHz, whatever the session's format.
    private func reflect(_ bytes: [UInt8], format: LiveAudioFormat) {
        switch format {
        case .pcmu, .pcma:
            if let law = format.engineFormat?.g711Law { reflect(samples: G711.decode(bytes, law), rate: G711.sampleRate) }
        case .pcm16k:
            reflect(samples: bytes.withUnsafeBytes { PCM.int16s(littleEndian: $0) }, rate: 16_000)
        case .pcm24k, .negotiated:
            sidebands.send(text: Self.reflection(bytes))
        }
    }

    private func reflect(samples: [Int16], rate: Int) {
        if reflector?.rate != rate {
            reflector = (try? Resampler(from: rate, to: 24_000)).map { (rate, $0) }
        }
        guard let reflector else { return }
        sidebands.send(text: Self.reflection(reflector.resampler.process(samples).withUnsafeBytes { Array($0) }))
    }

    private static func reflection(_ pcm: [UInt8]) -> String {
        JSON.object([("type", .string("session.input_audio.append")), ("audio", .string(Base64.encode(pcm)))]).description
    }

    /// A call's audio (`convert` decodes it), heard as the session hears a WebSocket's: silence
    /// while muted or while a fixture plays, and reflected to the sidebands before that.
    package func hear(_ convert: (AudioInput) throws -> [Int16]) {
        guard live.hasStarted else { return }
        driver.feedAudio { input in
            let samples = try convert(input)
            if !sidebands.isEmpty { reflect(samples: samples, rate: driver.configuration.inputAudioFormat.engineRate) }
            return live.hearsSilence ? [Int16](repeating: 0, count: samples.count) : samples
        }
    }

    /// A call's session starts as its call opens, with the settings its offer or webhook gave.
    package func start(_ config: LiveSessionConfig) {
        perform(live.command(LiveCommand(eventID: nil, kind: .start(config)), nowMs: nowMs))
    }

    /// The primary sent something that is not a Live event.
    package func refuse(_ error: ProtocolError) { perform(live.refuse(error), from: .primary) }

    /// The session's connection is gone: its work stops.
    /// `reason`: what `session.closed` says, if it has not been said (`close_requested` for a
    /// client's own close, `remote_hangup` for a caller's, `connection_lost` for a dropped one).
    package func close(_ ending: SessionEnding, reason: String? = nil) {
        sayClosed(reason ?? (ending == .ended ? "close_requested" : "connection_lost"))
        keepIfStored()
        for timer in [acknowledgementTimer, lifeTimer] { timer?.cancel() }
        backend?.session.close()
        backend = nil
        ownLine?.end(reason: closedReason ?? (ending == .ended ? "close_requested" : "connection_lost"))
        let closing = ownLine ?? callLine
        ownLine = nil
        sidebands.closeAll(reason: closing?.closeReason)
        driver.close(ending)
    }

    /// A session started with `store: true`, kept as it ended (its configuration, conversation and
    /// recording's name) for its forks and its recording's download.
    private func keepIfStored() {
        guard let config = live.config, config.store, let loop = driver.loop else { return }
        let stored = LiveStoredSession(tenant: caller.tenant ?? "", config: config, history: LiveStoredSession.history(driver.engine.history),
                                       recording: driver.isRecording ? RecordingFile.name(of: driver.engine.sessionID) : nil, endedAt: WallClock.seconds())
        endpoint.liveSessions.write(id: live.sessionID, text: stored.json.description, on: loop)
    }

    /// Whether `session.closed` went out: it is the session's last event, said once.
    private var closedSaid = false
    /// Its reason, for the line's end.
    private var closedReason: String?

    private func sayClosed(_ reason: String) {
        guard !closedSaid, live.hasStarted else { return }
        closedSaid = true
        closedReason = reason
        let text = live.closed(reason, nowMs: nowMs).description
        callLine?.keep(text)
        broadcast(text)
    }

    /// The session's two hours are over: its last event, then a normal close.
    private func expire() {
        sayClosed("expired")
        driver.socket?.close(.ended, reason: "session expired")
    }

    /// To the primary connection (a front end's channel, if its permissions let `event` through)
    /// and every sideband.
    private func broadcast(_ text: String, _ event: JSON? = nil) {
        if event.map(live.reachesPrimary) ?? true { driver.socket?.send(text: text) }
        sidebands.send(text: text)
    }

    private func perform(_ steps: [LiveConversation.Step], from origin: Origin = .server) {
        guard let socket = driver.socket else { return }
        for step in steps {
            switch step {
            case .send(let event):
                let text = event.description
                let type = event["type"]?.string
                if type == "session.closed" {
                    closedSaid = true
                    closedReason = event["reason"]?.string
                    callLine?.keep(text)
                }
                switch (type == "error", origin) {
                case (true, .primary): if live.reachesPrimary(event) { socket.send(text: text) }
                case (true, .sideband): sidebands.send(text: text)
                default: broadcast(text, event)
                }
                if type == "session.started", let notice = live.permissionsNotice() { socket.send(text: notice.description) }
                if ownLine == nil, listsItself, live.hasStarted, let loop = driver.loop {
                    let listed = CallLine(id: live.sessionID, on: loop)
                    listed.carrier = self
                    listed.converse(self)
                    listed.moved(to: .answered)
                    listed.list()
                    ownLine = listed
                }
            case .engine(let event):
                driver.handle(.client(event))
            case .audio(let bytes):
                feed(bytes, from: origin)
            case .arm(let timer, let afterMs):
                acknowledgementTimer?.cancel()
                acknowledgementTimer = socket.loop.schedule(after: Double(afterMs) / 1000) { [weak self] in
                    guard let self else { return }
                    self.perform(self.live.timer(timer, nowMs: self.nowMs))
                }
            case .pressKey(let key, let eventID):
                // Only sidebands are told (`TransportDtmfSent`: "delivered only to sideband observers").
                let text = live.keyPressed(key, sent: leg?.press(key) ?? false, eventID: eventID).description
                callLine?.keep(text)
                sidebands.send(text: text)
            case .playFixture(let samples, let id):
                driver.playAudio(samples, rate: LiveConversation.fixtureRate, id: id) { [weak self] played in
                    guard let self else { return }
                    self.perform(self.live.fixturePlayed(played, nowMs: self.nowMs))
                }
            case .delegate(let task, _):
                backendSession()?.run(task: task, conversation: driver.engine.history)
            case .backend(let event):
                backendSession()?.handle(event)
            case .close:
                socket.close(.ended, reason: "session closed")
            }
        }
    }

    /// Microphone bytes in the session's format, under the session's audio limits.
    private func feed(_ bytes: [UInt8], from origin: Origin) {
        if let refusal = driver.refusal(of: .append(bytes: bytes.count)) { return perform(live.refuse(refusal), from: origin) }
        let format = driver.inputAudioFormat
        driver.feedAudio { try $0.appended(bytes, as: format) }
    }

    /// The backend for the session's Responses delegation as it now is: made anew when the
    /// delegation changed (a `session.update`), nil when there is none.
    private func backendSession() -> LiveBackend? {
        guard let delegation = live.delegation?.backend, let loop = driver.loop else { return nil }
        if let backend, backend.delegation == delegation { return backend.session }
        backend?.session.close()
        let made = LiveBackend(endpoint: endpoint, caller: caller, delegation: delegation, on: loop) { [weak self] outcome in
            guard let self else { return }
            self.perform(self.live.backend(outcome, nowMs: self.nowMs))
        }
        backend = (made, delegation)
        return made
    }

    // MARK: SessionWire

    package func send(_ event: ServerEvent, on socket: any SessionSocket) {
        // The driver's own end of a session (its length limit) is Live's `session.closed`.
        if case .error(let error) = event.kind, error.code == "session_expired" {
            return sayClosed("expired")
        }
        perform(live.engine(event, nowMs: nowMs))
    }

    package func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on socket: any SessionSocket) {
        if let leg { return leg.sendAudio(piece, at: at, on: socket) }
        // A WebSocket's audio, as Live's events (Opus is a call's alone).
        guard case .pcm(let bytes) = piece, let event = live.replyAudio(bytes, responseID: at.responseID, nowMs: nowMs) else { return }
        broadcast(event.description)
    }

    /// GPT-Live's client speaks first (`session.start` says what the session does): no greeting.
    package func greet(_ text: String) {}

    /// A turn that came as keys (a phone's keypad), answered as a spoken one would be.
    package func userSaid(_ text: String) { driver.userSaid(text) }

    /// A caller's key, as its sidebands see it (`transport.dtmf.received`).
    package func keyPressed(_ key: Character) {
        sidebands.send(text: JSON.object([("type", .string("transport.dtmf.received")), ("event", .string(String(key))),
                                          ("event_id", .string(live.newEventID()))]).description)
    }

    // MARK: Sidebands and call control (its line's, or its call's), on this session's loop

    package func attach(sideband: Handoff<WebSocket>, on remote: LoopHandle, id: ObjectIdentifier) {
        guard let loop = driver.loop else { return }
        sidebands.attach(sideband, on: remote, id: id, home: loop)
    }

    package func detach(sideband id: ObjectIdentifier) { sidebands.detach(id) }

    /// Who answered a call Parley placed: for the report and trace, and an `info` to every listener.
    package func answered(by verdict: AnsweringMachineDetector.Verdict) {
        driver.noteAnsweredBy(verdict)
        guard live.hasStarted else { return }
        let text = live.info("answered_by", "\(verdict.answer.rawValue) (\(verdict.reason)), decided \(verdict.afterMs) ms after the answer").description
        callLine?.keep(text)
        broadcast(text)
    }

    /// Sidebands its carrier held before the session began (a placed call's, while it rang).
    package func adopt(_ attached: CallSidebands) { sidebands.take(attached) }
    package func joined(_ line: CallLine) { callLine = line }

    package func receive(sidebandText: String) {
        var text = sidebandText
        // The sideband's identity is not carried here: its errors go to every sideband.
        text.withUTF8 { receive(UnsafeRawBufferPointer($0), from: .sideband(ObjectIdentifier(self))) }
    }

    /// Call control on its own line: a WebSocket's or a WebRTC call's session has no SIP call to
    /// answer or transfer.
    package func control(_ action: CallControl) {
        switch action {
        case .hangUp:
            sayClosed("close_requested")
            driver.socket?.close(.ended, reason: "hung up")
        case .accept, .acceptLive, .reject, .refer:
            break
        }
    }
}
