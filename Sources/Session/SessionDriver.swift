import Access
import Codec
import JSON
import Logging
import Models
import Server
import Loop

/// The session layer's log: one line when a session opens and closes, a warning when its model or
/// speech fails, each with `session=sess_…` so that every line about a session can be found.
/// Shared, not per session: a per-session Logger would cost an idle session a few hundred bytes.
/// `package`, so that the calls on /twilio (Telephony) log on the same one.
package let sessionLog = Logger(label: "parley.session")

/// How a session's events and audio are written on its socket: the Realtime API's JSON events in
/// the client's dialect (`RealtimeSessionHandler`), or a carrier's media messages.
package protocol SessionWire: AnyObject {
    /// What the session writes for `event` (nothing, for events the wire does not carry).
    func send(_ event: ServerEvent, on socket: any SessionSocket)
    /// One piece of a reply's audio.
    func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on socket: any SessionSocket)
    /// How far into a reply the listener has heard, when the wire knows better than the pace of
    /// sending does (a carrier's marks); nil: estimate it from the pace.
    func heardMs(of responseID: String) -> Int?
    /// A reply's speech was stopped (a barge-in, a cancel): what is queued at the listener should go.
    func speechStopped(responseID: String, on socket: any SessionSocket)
    /// The user's speech paused a reply. A wire that drops what the listener has queued (a
    /// carrier's `clear`) returns how much the listener heard, so that the rest is sent again on
    /// resume; nil: what was sent plays out and the reply goes on after it.
    func speechPaused(responseID: String, on socket: any SessionSocket) -> Int?
    /// Whether `speechPaused` clears the listener's queue, so that a reply must keep the audio it
    /// sent lately to send it again.
    var resendsAfterPause: Bool { get }
    /// Names the endpoint in the session's log lines.
    var endpointName: String { get }
}

extension SessionWire {
    func heardMs(of responseID: String) -> Int? { nil }
    func speechStopped(responseID: String, on socket: any SessionSocket) {}
    func speechPaused(responseID: String, on socket: any SessionSocket) -> Int? { nil }
    var resendsAfterPause: Bool { false }
}

/// One session on one connection: the `SessionEngine` and the work its actions start (model
/// calls on this connection's loop, recognition, spoken replies), its limits, and the connection's
/// memory account. The handler in front of it turns frames into engine inputs; its `SessionWire`
/// writes what comes out.
///
/// An idle session holds only the engine's small state: the Opus decoder and resamplers exist
/// while audio flows and are let go after `codecIdleSeconds` without any.
package final class SessionDriver {
    static let codecIdleSeconds = 2.0

    private let endpoint: RealtimeEndpoint
    package private(set) var engine: SessionEngine
    // Fields are laid out as written: these three bytes sit in the engine's last word.
    /// Whether the guard is on for a session whose client has not said (`echo_guard`): the
    /// server's `--echo-guard` on /v1/realtime and /ws.
    package var echoGuardByDefault = false
    /// On whatever the client says: a phone call, whose handset the server cannot count on.
    package var echoGuardAlways = false
    /// Depth of `perform`: the in-flight box is given back only when the outermost one ends,
    /// never under a field being written (a byte: with the flags, in the engine's tail padding).
    private var performing: UInt8 = 0
    private weak var wire: (any SessionWire)?
    private(set) var socket: (any SessionSocket)?
    /// What exists while the client's audio flows (its decoder, the stream's clock), made with the
    /// first frame and let go `codecIdleSeconds` after the last.
    private var listening: Listening?

    private final class Listening {
        let input = AudioInput()
        var lastArrival: UInt64 = 0
        var clock = AudioStreamClock()
        var idleCheck: ScheduledTask?
    }
    /// Discounts the reply's echo from the input, for a client without echo cancellation; made
    /// with the first reply audio of a guarded session, let go with the codec.
    private var echo: EchoGuard?
    /// What the session's report is fed from its first turn on (`SessionReport`); nil until then.
    private var report: SessionReport?
    /// The session's trace, when tracing is on (`SessionTrace`).
    private var trace: SessionTrace?
    /// The call's recording, while the session asks for one on a server that records.
    private var recorder: SessionRecorder?
    /// The input's noise reduction (`noise_reduction`), after the echo guard and before the
    /// engine: made with the first audio of a session that asks for it, let go with the codec.
    private var denoiser: Denoiser?
    /// Issue 24's measure of a premature reply: the user went on within a second.
    static let prematureEndMs = 1_000
    private var openedAt: UInt64 = 0
    private var metrics: SessionMetrics { .shared }

    // MARK: What is in flight

    /// The calls, recognitions, spoken replies and timings of turns in progress: a box of their
    /// own, made with the first and given back once none is left (`settle`), so that an idle
    /// session does not carry them (about 250 bytes; issue 26 wants an idle session in 1 KiB).
    /// A class, not `OutOfLine`: a call's callback may reach another of these fields while one is
    /// being read, and each field of a class is its own access.
    private final class InFlight {
        var calls: [String: any ModelCall] = [:]
        var speculativeCall: String?
        var speechStoppedAt: UInt64?
        var transcriptions: [String: any TranscriptionSession] = [:]
        var streamingTranscription: (any TranscriptionSession)?
        var speechOutputs: [String: SpeechOutput] = [:]
        var pausedReply: String?
        var replyTurnStoppedAt: UInt64?
        var timeline: TurnTimeline?
        var turnEndedAtMs: Int?
        var scriptedReply: String?
        var callsOut: [(callID: String, at: UInt64)] = []
        var turnJudgement: (itemID: String, call: any ModelCall)?
        var repliedResponse: String?

        var isResting: Bool {
            calls.isEmpty
                && speculativeCall == nil
                && speechStoppedAt == nil
                && transcriptions.isEmpty
                && streamingTranscription == nil
                && speechOutputs.isEmpty
                && pausedReply == nil
                && replyTurnStoppedAt == nil
                && timeline == nil
                && turnEndedAtMs == nil
                && scriptedReply == nil
                && callsOut.isEmpty
                && turnJudgement == nil
                && repliedResponse == nil
        }
    }

    private var inFlight: InFlight?

    private var held: InFlight {
        if let inFlight { return inFlight }
        let made = InFlight()
        inFlight = made
        return made
    }

    private func settle() {
        if let inFlight, inFlight.isResting { self.inFlight = nil }
    }

    private var calls: [String: any ModelCall] {
        get { inFlight?.calls ?? [:] }
        _modify { yield &held.calls }
    }

    /// The model call of a reply begun before its turn ended (`SpeculativeReply`), while it is
    /// one: its failure is the engine's to weigh, never an apology or an error the client hears.
    private var speculativeCall: String? {
        get { inFlight?.speculativeCall ?? nil }
        _modify { yield &held.speculativeCall }
    }

    private var speechStoppedAt: UInt64? {
        get { inFlight?.speechStoppedAt ?? nil }
        _modify { yield &held.speechStoppedAt }
    }

    /// Turns being recognised, by item: the one streaming, and any finished awaiting their text.
    private var transcriptions: [String: any TranscriptionSession] {
        get { inFlight?.transcriptions ?? [:] }
        _modify { yield &held.transcriptions }
    }

    private var streamingTranscription: (any TranscriptionSession)? {
        get { inFlight?.streamingTranscription ?? nil }
        _modify { yield &held.streamingTranscription }
    }

    /// Replies being spoken, by response.
    private var speechOutputs: [String: SpeechOutput] {
        get { inFlight?.speechOutputs ?? [:] }
        _modify { yield &held.speechOutputs }
    }

    /// The reply the user's speech has paused (its speech may not have begun yet).
    private var pausedReply: String? {
        get { inFlight?.pausedReply ?? nil }
        _modify { yield &held.pausedReply }
    }

    /// When the user stopped speaking before the reply now being spoken, for voice-to-voice time.
    private var replyTurnStoppedAt: UInt64? {
        get { inFlight?.replyTurnStoppedAt ?? nil }
        _modify { yield &held.replyTurnStoppedAt }
    }

    /// The last turn's stages, from its last word until its reply's first frame (or first token,
    /// for a text reply), then observed and dropped.
    private var timeline: TurnTimeline? {
        get { inFlight?.timeline ?? nil }
        _modify { yield &held.timeline }
    }

    /// Where (in the input's audio milliseconds) the last turn server VAD ended, its speech's end,
    /// until the user's next speech: speech again within `prematureEndMs` was a pause mid-turn.
    private var turnEndedAtMs: Int? {
        get { inFlight?.turnEndedAtMs ?? nil }
        _modify { yield &held.turnEndedAtMs }
    }

    private var scriptedReply: String? {
        get { inFlight?.scriptedReply ?? nil }
        _modify { yield &held.scriptedReply }
    }

    /// When each of the model's calls was handed to the client, until its output comes back (a
    /// few at most: a response's parallel calls).
    private var callsOut: [(callID: String, at: UInt64)] {
        get { inFlight?.callsOut ?? [] }
        _modify { yield &held.callsOut }
    }

    /// The end-of-turn model's question in flight: one at a time, the turn that went quiet.
    private var turnJudgement: (itemID: String, call: any ModelCall)? {
        get { inFlight?.turnJudgement ?? nil }
        _modify { yield &held.turnJudgement }
    }

    /// The response whose model has said something (an apology then follows what was said): one
    /// string compared per delta, not a set hashed.
    private var repliedResponse: String? {
        get { inFlight?.repliedResponse ?? nil }
        _modify { yield &held.repliedResponse }
    }

    package init(endpoint: RealtimeEndpoint, admitted: Admitted, options: SessionEngine.Options, wire: any SessionWire) {
        self.endpoint = endpoint
        self.wire = wire
        lease = admitted.lease
        // The tightest of the server's limits, the tenant's and the client secret's.
        let tenant = admitted.caller.limits
        maxSessionSeconds = [endpoint.limits.maxSessionSeconds, tenant.maxSessionSeconds, admitted.caller.secret.map { Double($0.sessionSeconds) }]
            .compactMap { $0 }.min() ?? .infinity
        maxSessionTokens = [endpoint.limits.maxSessionTokens, tenant.maxSessionTokens].compactMap { $0 }.min() ?? .max
        engine = SessionEngine(seed: MonotonicClock.nanoseconds(), options: options)
        budget = SessionBudget(limits: endpoint.limits, now: MonotonicClock.nanoseconds())
    }

    private var budget: SessionBudget
    /// The session's place in its tenant's count, given back when the handler goes.
    private let lease: TenantLease?
    /// How long this session may last, and how many model tokens it may spend: infinite and
    /// `Int.max` for no limit (not optionals, whose flag byte would pad each to 16 bytes).
    private let maxSessionSeconds: Double
    private let maxSessionTokens: Int
    private var tokensSpent = 0

    private var sessionCap: ScheduledTask?

    /// Opens the session on `socket`; `announce` false for one restored from the store, whose
    /// client already had its `session.created`.
    package func open(_ socket: any SessionSocket, announce: Bool = true) {
        self.socket = socket
        openedAt = MonotonicClock.nanoseconds()
        metrics.sessionsOpen.add(1)
        if maxSessionSeconds.isFinite {
            let cap = maxSessionSeconds
            // Held strongly: a weak capture would give every session a side table (32 bytes) for
            // nothing. The cycle (the session, its cap, the cap's closure) ends when the cap fires
            // or `close` cancels it.
            sessionCap = socket.loop.schedule(after: cap) { self.sessionExpired() }
        }
        sessionLog.info("session opened", metadata: ["session": "\(engine.sessionID)", "endpoint": "\(wire?.endpointName ?? "")", "model": "\(engine.model)"])
        if announce, engine.configuration.type == .transcription, !engine.transcribes {
            // Nothing could transcribe it: said, then closed with 1008 (policy), before it begins.
            let error = EventError(type: .invalidRequest, code: "transcription_unavailable",
                                   message: "this server has no speech recogniser (--transcriber none), so it cannot open a transcription session")
            wire?.send(engine.event(.error(error)), on: socket)
            return socket.close(.policyViolation, reason: "no transcriber")
        }
        if announce { perform(engine.start()) }
    }

    /// The conversation of a session restored from the store.
    func restore(_ entries: [ConversationHistory.Entry]) { engine.restore(entries) }

    /// A restored session whose old process went while answering answers again.
    func answerIfUnanswered() {
        if engine.endsUnanswered { createResponse() }
    }

    /// A `response.create` as a client would send it, with no overrides.
    private func createResponse() {
        handle(.client(ClientEvent(.responseCreate(ResponseOverrides()))))
    }

    /// One client event or audio frame arrived; false (and the session closed) past the rate.
    package func admitEvent() -> Bool {
        guard budget.event(at: MonotonicClock.nanoseconds(), limits: endpoint.limits) else {
            closeForLimit(.events, "more than \(endpoint.limits.eventsPerSecond) events a second")
            return false
        }
        return true
    }

    func handle(_ input: SessionInput) { perform(engine.handle(input)) }

    /// The next reply is `text`, word for word, instead of the model's: a call's greeting.
    package func say(_ text: String) {
        scriptedReply = text
        createResponse()
    }

    /// A user turn that did not come as audio (a keypress), added to the conversation and answered.
    package func userSaid(_ text: String) {
        handle(.client(ClientEvent(.conversationItemCreate(NewConversationItem(role: .user, text: text)))))
        createResponse()
    }


    /// An event of this session's (its id from the engine's sequence), for the wire to write.
    func event(_ kind: ServerEvent.Kind) -> ServerEvent { engine.event(kind) }

    /// The session's length is over (the server's limit or its client secret's): said, then
    /// closed with 1008 (policy).
    private func sessionExpired() {
        guard let socket else { return }
        metrics.limitCloses.add(1, labels: "reason=\"duration\"")
        let error = EventError(type: .invalidRequest, code: "session_expired", message: "the session reached its limit of \(Int(maxSessionSeconds)) s")
        wire?.send(engine.event(.error(error)), on: socket)
        socket.close(.policyViolation, reason: "session length limit")
    }

    /// A limit was passed: an `error` event naming it, then close 1008; the server goes on.
    private func closeForLimit(_ limit: SessionBudget.Exceeded, _ message: String) {
        guard let socket, socket.isOpen else { return }
        (report ?? makeReport()).endReason = "limit: \(limit.label)"
        metrics.limitCloses.add(1, labels: "reason=\"\(limit.label)\"")
        sessionLog.warning("session limit", metadata: ["session": "\(engine.sessionID)", "limit": "\(limit.label)"])
        wire?.send(engine.event(.error(EventError(type: .invalidRequest, code: limit.code, message: message))), on: socket)
        socket.close(.policyViolation, reason: limit.code)
    }

    package func close(code: WebSocketCloseCode) {
        sessionCap?.cancel()
        metrics.sessionsOpen.add(-1)
        if let loop = socket?.loop { writeReport(code: code, on: loop) }
        trace?.end(code: Int(code.rawValue), at: MonotonicClock.nanoseconds())
        trace = nil
        sessionLog.info("session closed", metadata: ["session": "\(engine.sessionID)", "code": "\(code)",
                                                     "seconds": "\(MonotonicClock.seconds(since: openedAt))"])
        for call in calls.values { call.cancel() }
        calls = [:]
        for output in speechOutputs.values { _ = output.stop() }
        speechOutputs = [:]
        for transcription in transcriptions.values { transcription.cancel() }
        transcriptions = [:]
        streamingTranscription = nil
        turnJudgement?.call.cancel()
        turnJudgement = nil
        listening?.idleCheck?.cancel()
        listening = nil
        echo = nil
        denoiser = nil
        recorder?.finish(at: MonotonicClock.nanoseconds())
        recorder = nil
        engine.audioWentIdle()
        settle()
        self.socket = nil
    }

    // MARK: The report

    private func makeReport() -> SessionReport {
        let made = SessionReport()
        report = made
        return made
    }

    /// The session resumed on a new connection (counted in its report, an event in its trace).
    func noteResumed() {
        (report ?? makeReport()).record(.sessionResumed(sessionID: "", token: "", lastSeq: 0, replayed: 0), at: 0)
        trace?.event("resume")
    }

    /// The server is draining (an event in the session's trace).
    func noteDraining() { trace?.event("drain") }

    /// Starts the session's trace when tracing is on: a child of the client's `traceparent`, if
    /// its upgrade carried one.
    func startTrace(traceparent: String?, endpointName: String) {
        guard let tracer = endpoint.tracer else { return }
        let made = SessionTrace(tracer: tracer, traceparent: traceparent,
                                attributes: [("parley.endpoint", endpointName), ("gen_ai.request.model", endpoint.modelName)])
        // A trace the sampler did not keep is let go at once: every span under it would be
        // dropped alike, so the session keeps nothing (and sends no traceparent upstream).
        if made.session.isRecording { trace = made }
    }

    private func writeReport(code: WebSocketCloseCode, on loop: EventLoop) {
        let report = report ?? SessionReport()
        let seconds = MonotonicClock.seconds(since: openedAt)
        let ending = SessionReport.Ending(closeCode: Int(code.rawValue), reason: report.endReason ?? code.reportReason, seconds: seconds,
                                          audioInSeconds: Double(engine.audioMs) / 1000)
        let json = report.json(sessionID: engine.sessionID, tenant: lease?.tenant, model: engine.model, endpoint: wire?.endpointName ?? "",
                               startedAt: WallClock.seconds() - Int(seconds.rounded()), ending: ending)
        endpoint.reports.write(sessionID: engine.sessionID, report: json, on: loop)
        self.report = nil
    }

    /// The client is gone but may come back within the grace window: the session goes on (a
    /// reply in flight finishes), writing only to its replay log.
    func park(onClose: @escaping (WebSocketCloseCode) -> Void) {
        guard let socket else { return }
        let parked = ParkedSocket(loop: socket.loop)
        parked.onClose = onClose
        self.socket = parked
    }

    /// The client is back, on `socket`.
    func attach(_ socket: any SessionSocket) {
        self.socket = socket
        updateAccount()
    }

    var resumeSettings: ResumeSettings { endpoint.resume }

    /// The session's home loop, nil once closed.
    var loop: EventLoop? { socket?.loop }

    func refuse(_ error: ProtocolError, eventID: String? = nil) {
        var error = error
        error.eventID = eventID
        perform(engine.handle(.invalidClientEvent(error)))
    }

    // MARK: Audio

    /// Why audio arriving this way does not fit the session's input format, if it does not.
    package func refusal(of arrival: SessionConfiguration.AudioArrival) -> ProtocolError? {
        engine.configuration.refusal(of: arrival, allowsOpus: engine.allowsOpus)
    }

    package var inputAudioFormat: RealtimeAudioFormat { engine.configuration.inputAudioFormat }

    package func feedAudio(_ convert: (AudioInput) throws -> [Int16]) {
        let listening: Listening
        if let current = self.listening {
            listening = current
        } else {
            listening = Listening()
            self.listening = listening
            scheduleCodecCheck()
        }
        let arrived = MonotonicClock.nanoseconds()
        listening.lastArrival = arrived
        let audio = listening.input
        do {
            let samples = try convert(audio)
            guard budget.audio(audio.lastInputNanoseconds, at: arrived, limits: endpoint.limits) else {
                return closeForLimit(.audio, "audio arrives faster than \(endpoint.limits.audioRealTimeFactor)× real time")
            }
            let due = listening.clock.frameArrived(duration: audio.lastInputNanoseconds, at: arrived)
            // Recorded where the stream's clock puts it: a burst sent at once starts when it came.
            if let recorder, recorder.rate == inputRate { recorder.caller(samples, startsAt: due) }
            // The echo guard first (its reference is the reply as played, before any denoising),
            // then the denoiser, then the engine's VAD and recogniser.
            perform(engine.handle(.audio(denoised(guarded(samples, arrived: arrived)))))
            let done = MonotonicClock.nanoseconds()
            metrics.audioFrames.add(1, labels: "result=\"processed\"")
            metrics.audioLag.observe(nanoseconds: done > due ? done - due : 0)
        } catch let error as OpusError {
            metrics.audioFrames.add(1, labels: "result=\"rejected\"")
            perform(engine.handle(.invalidClientEvent(ProtocolError(.invalidValue, "an Opus packet could not be decoded: \(error)"))))
        } catch {
            metrics.audioFrames.add(1, labels: "result=\"rejected\"")
            perform(engine.handle(.invalidClientEvent(ProtocolError(.invalidValue, "audio could not be processed: \(error)"))))
        }
    }

    // MARK: Echo guard

    var echoGuardOn: Bool { echoGuardAlways || (engine.configuration.echoGuard ?? echoGuardByDefault) }

    /// The rate the engine hears this session's input at: G.711's 8 kHz, or 16 kHz.
    private var inputRate: Int { engine.configuration.inputAudioFormat.g711Law == nil ? 16_000 : G711.sampleRate }

    private func guarded(_ samples: [Int16], arrived: UInt64) -> [Int16] {
        guard let echo, let audio = listening?.input else { return samples }
        guard echoGuardOn, echo.sampleRate == inputRate else {
            // Turned off (or the input's rate changed): what it held goes on, and its memory goes.
            self.echo = nil
            return echo.sampleRate == inputRate ? echo.flush() + samples : samples
        }
        let out = echo.process(samples, arrived: arrived, duration: audio.lastInputNanoseconds)
        let (cancelled, held) = echo.takeCounts()
        if cancelled > 0 { metrics.echoFrames.add(cancelled, labels: "result=\"cancelled\"") }
        if held > 0 { metrics.echoFrames.add(held, labels: "result=\"held\"") }
        return out
    }

    // MARK: Recording

    /// Starts or ends the recording as the session's `recording` setting now says (the engine
    /// refused it already where the server does not record). It begins now: nothing the caller
    /// said before is in it.
    private func recordingAsked() {
        let asked = engine.configuration.recording == true
        guard asked != (recorder != nil) else { return }
        if asked, let recordings = endpoint.recordings, let loop = socket?.loop {
            recorder = SessionRecorder(recordings: recordings, sessionID: engine.sessionID, rate: inputRate, now: MonotonicClock.nanoseconds(), loop: loop)
        } else {
            recorder?.finish(at: MonotonicClock.nanoseconds())
            recorder = nil
        }
    }

    // MARK: Noise reduction

    /// The input denoised as the session's `noise_reduction` asks (the kind and the engine's rate
    /// it was made for); what a denoiser let go still held goes on undenoised, so that the
    /// engine's audio clock loses no samples.
    private func denoised(_ samples: [Int16]) -> [Int16] {
        let kind: Denoiser.Kind? = switch engine.configuration.noiseReduction {
        case nil: nil
        case .nearField?: .nearField
        case .farField?: .farField
        }
        var held: [Int16] = []
        if let current = denoiser, current.kind != kind || current.sampleRate != inputRate {
            if current.sampleRate == inputRate { held = current.flush() }
            denoiser = nil
        }
        guard let kind else { return held.isEmpty ? samples : held + samples }
        if denoiser == nil {
            // A rate it cannot take (none the engine hears at) leaves the input as it is.
            denoiser = try? Denoiser(kind: kind, sampleRate: inputRate)
            updateAccount()
        }
        guard let denoiser else { return held + samples }
        return held + denoiser.process(samples)
    }

    /// A piece of the reply goes out: the guard's reference and the recording's right channel,
    /// from when the client plays it.
    private func replyPlayed(_ samples: [Int16], at playsAt: UInt64) {
        if let recorder, recorder.rate == inputRate { recorder.agent(samples, playsAt: playsAt) }
        guard echoGuardOn else { return }
        if echo == nil || echo?.sampleRate != inputRate {
            echo = EchoGuard(sampleRate: inputRate, now: MonotonicClock.nanoseconds(), cancels: endpoint.echoCanceller)
            updateAccount()
        }
        echo?.reply(samples, playsAt: playsAt)
    }

    /// Lets the codec go once audio has stopped for a while; a later packet makes a new one.
    private func scheduleCodecCheck() {
        listening?.idleCheck = socket?.loop.schedule(after: Self.codecIdleSeconds) { [weak self] in
            guard let self, let listening else { return }
            if Double(MonotonicClock.nanoseconds() &- listening.lastArrival) / 1e9 >= Self.codecIdleSeconds {
                self.listening = nil
                echo = nil
                denoiser = nil
                perform(engine.handle(.audioStopped))
            } else {
                scheduleCodecCheck()
            }
        }
    }

    // MARK: Actions

    private func perform(_ actions: [SessionAction]) {
        guard let socket else { return }
        performing += 1
        defer {
            performing -= 1
            if performing == 0 { settle() }
        }
        for action in actions {
            switch action {
            case .send(let event):
                switch event.kind {
                case .sessionCreated, .sessionUpdated: recordingAsked()
                default: break
                }
                wire?.send(event, on: socket)
                metrics.record(event)
                timeTurnTaking(event)
                if report != nil || SessionReport.begins(event.kind) { (report ?? makeReport()).record(event.kind, at: MonotonicClock.nanoseconds()) }
                trace?.record(event.kind, at: MonotonicClock.nanoseconds())
                if case .responseDone(let response) = event.kind, let usage = response.usage {
                    tokensSpent += usage.totalTokens
                    lease?.spend(usage.totalTokens, on: socket.loop)
                }
            case .startModel(let id, _, _) where scriptedReply != nil:
                calls[id] = BuiltinModel.scripted(scriptedReply ?? "", on: socket.loop) { [weak self] event in self?.modelEvent(id, event) }
                scriptedReply = nil
            case .startModel(let id, _, _) where lease?.tokensWait() != nil:
                // The tenant's sessions spent its tokens for the minute: the reply fails, told on
                // the next pass (after the rest of these actions, as a model's answer would be).
                let error = ModelError(code: TenantLedger.Refusal.tokens.rawValue,
                                       message: "the tenant spent its model tokens for this minute; retry in \(lease?.tokensWait() ?? 1) s")
                _ = socket.loop.schedule(after: 0) { [weak self] in self?.modelEvent(id, .failed(error)) }
            case .startModel(let id, let messages, let options):
                if timeline?.has(.modelRequest) == false { timeline?.responseID = id }
                timeline?.mark(.modelRequest, at: MonotonicClock.nanoseconds())
                callModel(id, messages, options, on: socket.loop)
            case .speculate(let id, let messages, let options):
                speculativeCall = id
                callModel(id, messages, options, on: socket.loop)
            case .speculationEnded(let id, let outcome, let tokens, let answered):
                if speculativeCall == id { speculativeCall = nil }
                metrics.speculativeReplies.add(1, labels: outcome.label)
                if tokens > 0 { metrics.speculativeTokensWasted.add(tokens) }
                guard outcome == .used else { break }
                // The request went out before the turn ended, and its first words, if any, came
                // too: for this turn those stages took no time after the transcript.
                let now = MonotonicClock.nanoseconds()
                if timeline?.has(.modelRequest) == false { timeline?.responseID = id }
                timeline?.mark(.modelRequest, at: now)
                if answered { modelAnswered(at: now) }
            case .cancelModel(let id):
                calls.removeValue(forKey: id)?.cancel()
            case .transcription(let step):
                transcribe(step, on: socket.loop)
            case .speech(let step):
                speak(step, on: socket)
            case .turnModel(let step):
                judgeTurn(step, on: socket.loop)
            case .turnEnded(let cause):
                metrics.turnEnds.add(1, labels: cause.label)
            case .historyTruncated(let items):
                metrics.historyTruncated.add(items)
            }
        }
        updateAccount()
        // The response that passed the ceiling is delivered whole; the session then ends.
        if tokensSpent > maxSessionTokens {
            closeForLimit(.tokens, "the session spent \(tokensSpent) tokens, over its limit of \(maxSessionTokens)")
        }
    }


    private func timeTurnTaking(_ event: ServerEvent) {
        switch event.kind {
        case .functionCallArgumentsDone(let at, _, _):
            if callsOut.count >= 16 { callsOut.removeFirst() }
            callsOut.append((at.callID, MonotonicClock.nanoseconds()))
        case .conversationItemCreated(let item, _):
            guard case .output(let callID, _) = item.function, let index = callsOut.firstIndex(where: { $0.callID == callID }) else { break }
            metrics.toolTime.observe(nanoseconds: MonotonicClock.nanoseconds() &- callsOut[index].at)
            callsOut.remove(at: index)
        case .speechStopped(let audioEndMs, let itemID):
            let now = MonotonicClock.nanoseconds()
            speechStoppedAt = now
            turnEndedAtMs = audioEndMs
            // The last word was heard as many milliseconds ago as the audio since it lasts (the
            // client streams in real time).
            var turn = TurnTimeline()
            let lastWord = now &- UInt64(max(0, engine.audioMs - audioEndMs)) * 1_000_000
            turn.mark(.lastWord, at: lastWord)
            trace?.turnEnded(lastWordAt: lastWord)
            turn.mark(.turnEnd, at: now)
            turn.itemID = itemID
            timeline = turn
        case .speechStarted(let audioStartMs, _):
            // audio_start_ms is the speech's onset less the prefix padding (at 0 at the least), so
            // the onset is at most that padding later; a turn began within the second after the
            // last one ended was the same turn, cut at a pause.
            if let ended = turnEndedAtMs {
                let padding = engine.configuration.turnDetection?.prefixPaddingMs ?? 0
                if audioStartMs + padding - ended <= Self.prematureEndMs { metrics.prematureTurnEnds.add(1) }
            }
            turnEndedAtMs = nil
        case .responseCreated:
            if let stopped = speechStoppedAt { metrics.speechToResponse.observe(nanoseconds: MonotonicClock.nanoseconds() &- stopped) }
            replyTurnStoppedAt = speechStoppedAt
            speechStoppedAt = nil
        default: break
        }
    }

    // MARK: Speech

    private func speak(_ step: SpeechStep, on socket: any SessionSocket) {
        switch step {
        case .text(let at, let voice, let format, let piece):
            if speechOutputs[at.responseID] == nil {
                guard let synthesizer = endpoint.speech.synthesizer, let pool = endpoint.speech.pool,
                      let output = try? SpeechOutput(location: at, voice: voice, format: format, synthesizer: synthesizer, pool: pool, loop: socket.loop,
                                                     referenceRate: echoGuardOn || recorder != nil ? inputRate : nil,
                                                     send: { [weak self] piece in self?.sendAudio(piece, at) },
                                                     report: { [weak self] event in self?.speechEvent(at.responseID, event) })
                else { return }
                if wire?.resendsAfterPause == true { output.retainedMs = SpeechOutput.resendWindowMs }
                output.leadMs = endpoint.speech.replyLeadMs
                if echoGuardOn || recorder != nil { output.onPlayed = { [weak self] samples, playsAt in self?.replyPlayed(samples, at: playsAt) } }
                let stoppedAt = replyTurnStoppedAt
                replyTurnStoppedAt = nil
                output.onFirstSentence = { [weak self] in self?.timeline?.mark(.firstSentence, at: MonotonicClock.nanoseconds()) }
                output.onFirstSynthesized = { [weak self] in self?.timeline?.mark(.firstAudio, at: MonotonicClock.nanoseconds()) }
                output.onFirstAudio = { [weak self] in
                    if let stoppedAt { SpeechMetrics.shared.voiceToVoice.observe(nanoseconds: MonotonicClock.nanoseconds() &- stoppedAt) }
                    self?.timeline?.mark(.firstFrame, at: MonotonicClock.nanoseconds())
                    self?.observeTimeline()
                }
                speechOutputs[at.responseID] = output
                if pausedReply == at.responseID { output.pause(rewindToMs: wire?.speechPaused(responseID: at.responseID, on: socket)) }
            }
            speechOutputs[at.responseID]?.add(piece)
        case .end(let id):
            if let output = speechOutputs[id] { output.end() } else { speechEvent(id, .finished) }
        case .pause(let id):
            metrics.repliesPaused.add(1)
            pausedReply = id
            if let output = speechOutputs[id] {
                let rewound = wire?.speechPaused(responseID: id, on: socket)
                // A listener whose queue was cleared never hears what was sent ahead.
                if rewound != nil { recorder?.cutAgent(at: MonotonicClock.nanoseconds()) }
                output.pause(rewindToMs: rewound)
            }
        case .resume(let id, let why):
            metrics.repliesResumed.add(1, labels: "reason=\"\(why == .backchannel ? "backchannel" : "short")\"")
            if why == .backchannel {
                metrics.backchannels.add(1)
                report?.backchannel()
            }
            if pausedReply == id { pausedReply = nil }
            speechOutputs[id]?.resume()
        case .stop(let id):
            if pausedReply == id { pausedReply = nil }
            guard let output = speechOutputs.removeValue(forKey: id) else { return }
            // What was sent ahead of its playing time is cut from the listener's ears, and so
            // from the recording.
            recorder?.cutAgent(at: MonotonicClock.nanoseconds())
            let (played, heard) = output.stop(heardMs: wire?.heardMs(of: id))
            wire?.speechStopped(responseID: id, on: socket)
            sessionLog.debug("reply interrupted", metadata: ["session": "\(engine.sessionID)", "response": "\(id)", "heard_ms": "\(played)"])
            speechEvent(id, .interrupted(itemID: output.location.itemID, playedMs: played, heard: heard))
        }
    }

    private func sendAudio(_ piece: SpeechOutput.Piece, _ at: ContentLocation) {
        guard let socket else { return }
        wire?.sendAudio(piece, at: at, on: socket)
    }

    private func speechEvent(_ id: String, _ event: SpeechOutputEvent) {
        var event = event
        if case .failed(let error) = event { event = .failed(ModelError(code: error.code, message: Credentials.scrub(error.message), retryAfter: error.retryAfter)) }
        if case .finished = event { speechOutputs[id] = nil }
        perform(engine.handle(.speechOutput(responseID: id, event)))
    }

    private func observeTimeline() {
        guard let turn = timeline else { return }
        timeline = nil
        for (label, seconds) in turn.stageSeconds() { metrics.turnStages[label]?.observe(seconds: seconds) }
        report?.record(turn.eventKind, at: MonotonicClock.nanoseconds())
        trace?.stages(turn)
        if engine.configuration.includesTimeline, let socket { wire?.send(engine.makeEvent(turn.eventKind), on: socket) }
    }

    // MARK: End of turn


    private func judgeTurn(_ step: TurnModelStep, on loop: EventLoop) {
        switch step {
        case .judge(let itemID, let audio, let sampleRate):
            turnJudgement?.call.cancel()
            guard let model = endpoint.speech.endOfTurn else {
                turnJudgement = nil
                return perform(engine.handle(.turnVerdict(itemID: itemID, .failure(ModelError(code: "no_turn_model", message: "no end-of-turn model")))))
            }
            let asked = MonotonicClock.nanoseconds()
            let call = model.judge(audio[...], sampleRate: sampleRate, on: loop) { [weak self] result in
                guard let self, self.turnJudgement?.itemID == itemID else { return }
                self.turnJudgement = nil
                switch result {
                case .success(let verdict):
                    self.metrics.turnModelTime.observe(nanoseconds: MonotonicClock.nanoseconds() &- asked)
                    sessionLog.debug("turn judged", metadata: ["session": "\(self.engine.sessionID)", "item": "\(itemID)", "complete": "\(verdict.complete)",
                                                               "probability": "\(verdict.probability)", "audio_ms": "\(audio.count * 1000 / sampleRate)"])
                case .failure(let error): self.metrics.turnModelFailures.add(1, labels: error.speechHelper == .timeout ? "reason=\"timeout\"" : "reason=\"unavailable\"")
                }
                self.perform(self.engine.handle(.turnVerdict(itemID: itemID, result)))
            }
            turnJudgement = (itemID, call)
        case .cancel(let itemID):
            guard turnJudgement?.itemID == itemID else { return }
            turnJudgement?.call.cancel()
            turnJudgement = nil
        }
    }

    // MARK: Transcription

    private func transcribe(_ step: TranscriptionStep, on loop: EventLoop) {
        switch step {
        case .begin(let itemID, let audio, let sampleRate):
            guard let transcriber = endpoint.speech.transcriber else { return }
            let session = transcriber.begin(on: loop, sampleRate: sampleRate) { [weak self] event in self?.transcriptionEvent(itemID, event) }
            transcriptions[itemID] = session
            streamingTranscription = session
            session.append(audio)
        case .audio(let samples):
            streamingTranscription?.append(samples)
        case .finish(let itemID):
            transcriptions[itemID]?.finish()
            if streamingTranscription === transcriptions[itemID] { streamingTranscription = nil }
        case .cancel(let itemID):
            let session = transcriptions.removeValue(forKey: itemID)
            if streamingTranscription === session { streamingTranscription = nil }
            session?.cancel()
        }
    }

    private func transcriptionEvent(_ itemID: String, _ event: TranscriptionEvent) {
        var event = event
        if case .failed(let error) = event { event = .failed(ModelError(code: error.code, message: Credentials.scrub(error.message), retryAfter: error.retryAfter)) }
        if case .final = event, let stopped = speechStoppedAt {
            SpeechMetrics.shared.transcription.observe(nanoseconds: MonotonicClock.nanoseconds() &- stopped)
        }
        // What the user said is theirs: logged only at debug, for tracing a conversation.
        if case .final(let text) = event {
            sessionLog.debug("transcript", metadata: ["session": "\(engine.sessionID)", "item": "\(itemID)", "text": "\(text)"])
        }
        if case .failed(let error) = event {
            sessionLog.warning("transcription failed", metadata: ["session": "\(engine.sessionID)", "item": "\(itemID)", "error": "\(error.message)"])
        }
        switch event {
        case .final, .failed:
            timeline?.mark(.transcript, at: MonotonicClock.nanoseconds())
            if streamingTranscription === transcriptions[itemID] { streamingTranscription = nil }
            transcriptions[itemID] = nil
        case .partial: break
        }
        perform(engine.handle(.transcription(itemID: itemID, event)))
    }


    private func callModel(_ id: String, _ messages: [ChatMessage], _ options: ModelOptions, on loop: EventLoop) {
        var request = ModelRequest(messages: messages, maxOutputTokens: options.maxOutputTokens, tools: options.tools, toolChoice: options.toolChoice)
        request.traceparent = trace?.modelCall(id, model: endpoint.modelName, at: MonotonicClock.nanoseconds())
        calls[id] = endpoint.model.stream(request, on: loop) { [weak self] event in self?.modelEvent(id, event) }
    }

    /// The turn's model said its first words (or they were already there when its speculative
    /// reply was used).
    private func modelAnswered(at now: UInt64) {
        guard timeline?.has(.modelRequest) == true, timeline?.has(.firstToken) == false else { return }
        timeline?.mark(.firstToken, at: now)
        // A text reply's timeline ends here; a spoken one goes on to its first frame.
        if !engine.configuration.outputModalities.contains(.audio) || endpoint.speech.synthesizer == nil { observeTimeline() }
    }

    private func modelEvent(_ id: String, _ event: ModelEvent) {
        // A speculative call's output is held by the engine until its turn ends, or dropped: not
        // yet the turn's words, so it marks no stage, and its failure is no one's to hear about.
        let speculative = id == speculativeCall
        switch event {
        case .delta(let text):
            if !speculative {
                if repliedResponse != id { repliedResponse = id }
                modelAnswered(at: MonotonicClock.nanoseconds())
            }
            perform(engine.handle(.modelDelta(responseID: id, text: text)))
        case .toolCallStarted(let index, let callID, let name):
            perform(engine.handle(.modelToolCallStarted(responseID: id, index: index, callID: callID, name: name)))
        case .toolCallArgumentsDelta(let index, let delta):
            perform(engine.handle(.modelToolCallArguments(responseID: id, index: index, delta: delta)))
        case .finished(let usage, let reason):
            calls[id] = nil
            if repliedResponse == id { repliedResponse = nil }
            perform(engine.handle(.modelFinished(responseID: id, usage: usage, reason: reason)))
        case .retrying(let upstream, let after):
            trace?.modelRetried(id, upstream: upstream, after: after, at: MonotonicClock.nanoseconds())
        case .failed(let error):
            calls[id] = nil
            trace?.modelFailed(id, code: error.code, at: MonotonicClock.nanoseconds())
            // An upstream may quote the key it was sent in its error; the client never sees it.
            let message = Credentials.scrub(error.message)
            guard !speculative else {
                sessionLog.debug("speculative model call failed", metadata: ["session": "\(engine.sessionID)", "code": "\(error.code)"])
                return perform(engine.handle(.modelFailed(responseID: id, code: error.code, message: message)))
            }
            let replied = repliedResponse == id
            if replied { repliedResponse = nil }
            sessionLog.warning("model call failed", metadata: ["session": "\(engine.sessionID)", "response": "\(id)",
                                                               "code": "\(error.code)", "error": "\(error.message)"])
            guard error.retryable, let apology = endpoint.model.apology, let socket else {
                return perform(engine.handle(.modelFailed(responseID: id, code: error.code, message: message)))
            }
            // A passing fault: the client is told what failed, and the caller hears the apology
            // (after whatever the reply had said) rather than silence.
            UpstreamMetrics.shared.apologies.add(1)
            wire?.send(engine.event(.error(EventError(type: .server, code: error.code, message: message))), on: socket)
            perform(engine.handle(.modelDelta(responseID: id, text: replied ? " " + apology : apology)))
            perform(engine.handle(.modelFinished(responseID: id, usage: nil)))
        }
    }

    private func updateAccount() {
        socket?.account(handlerBytes: engine.accountedBytes + (listening?.input.stateBytes ?? 0) + (echo?.stateBytes ?? 0) + (denoiser?.stateBytes ?? 0)
                        + (recorder?.heldBytes ?? 0))
    }
}
