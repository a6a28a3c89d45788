import Access
import Codec
import JSON
import Logging
import Models
import Server
import Loop
import SpeechContracts
import SessionEngine

/// The session layer's log: one line when a session opens and closes, a warning when its model or
/// speech fails, each with `session=sess_…` so that every line about a session can be found.
/// Shared, not per session: a per-session Logger would cost an idle session a few hundred bytes.
/// `package`, so that the calls on /twilio (Telephony) log on the same one.
package let sessionLog = Logger(label: "parley.session")

/// One session on one connection: the `SessionEngine` and the work its actions start (model
/// calls on this connection's loop, recognition, spoken replies), its limits, and the connection's
/// memory account. The handler in front of it turns frames into engine inputs; its `SessionWire`
/// writes what comes out.
///
/// An idle session holds only the engine's small state: the Opus decoder and resamplers exist
/// while audio flows and are let go after `codecIdleSeconds` without any.
package final class SessionDriver {
    static let codecIdleSeconds = 2.0

    let endpoint: RealtimeEndpoint
    package internal(set) var engine: SessionEngine
    /// The session's settings, as the driver reads them: through the engine's stored `settings`,
    /// never its computed `configuration`. A computed property of a struct held in a class is
    /// read from a copy of the whole struct (Swift keeps the class's access instantaneous): the
    /// engine copied, every reference in it retained and released, up to eight times a frame of
    /// audio (`denoised`, `guarded`, `replyPlayed`; docs/benchmarks.md, "SIP calls").
    var configuration: SessionConfiguration {
        _read {
            let settings = engine.settings
            yield settings.value
        }
    }
    // Fields are laid out as written: these three bytes sit in the engine's last word.
    /// Whether the guard is on for a session whose client has not said (`echo_guard`): the
    /// server's `--echo-guard` on /v1/realtime and /ws.
    package var echoGuardByDefault = false
    /// On whatever the client says: a phone call, whose handset the server cannot count on.
    package var echoGuardAlways = false
    /// Depth of `perform`: the in-flight box is given back only when the outermost one ends,
    /// never under a field being written (a byte: with the flags, in the engine's tail padding).
    private var performing: UInt8 = 0
    weak var wire: (any SessionWire)?
    private(set) var socket: (any SessionSocket)?
    /// What exists while the client's audio flows (its decoder, the stream's clock), made with the
    /// first frame and let go `codecIdleSeconds` after the last.
    var listening: Listening?

    final class Listening {
        let input = AudioInput()
        var lastArrival: UInt64 = 0
        var clock = AudioStreamClock()
        var idleCheck: ScheduledTask?
        /// The input's line, watched for noise (`LineNoiseFloor`): its turns, and a phone call's denoiser.
        var lineNoise: LineNoiseFloor

        init(sampleRate: Int) {
            lineNoise = LineNoiseFloor(sampleRate: sampleRate)
        }
    }
    /// Discounts the reply's echo from the input, for a client without echo cancellation; made
    /// with the first reply audio of a guarded session, let go with the codec.
    var echo: EchoGuard?
    /// What the session's report is fed from its first turn on (`SessionReport`); nil until then.
    var report: SessionReport?
    /// The session's trace, when tracing is on (`SessionTrace`).
    var trace: SessionTrace?
    /// The call's recording, while the session asks for one on a server that records.
    var recorder: SessionRecorder?
    /// The MCP clients, calls and filler timer, made with the first (`SessionTools`).
    var toolWork: SessionTools?
    /// The input's noise reduction (`noise_reduction`), after the echo guard and before the
    /// engine: made with the first audio of a session that asks for it, let go with the codec.
    var denoiser: Denoiser?
    private var openedAt: UInt64 = 0
    var metrics: SessionMetrics { .shared }

    // MARK: What is in flight

    /// The calls, recognitions, spoken replies and turn timings in progress: a box of their own,
    /// made with the first and given back once none is left (`settle`), so that an idle session
    /// does not carry them (about 250 bytes; issue 26 wants an idle session in 1 KiB). Only the
    /// work the driver carries out is here: what the engine holds (a paused reply, a speculative
    /// call, the turn streaming to the recogniser) is asked of the engine, never copied.
    /// A class, not `OutOfLine`: a call's callback may reach another of these fields while one is
    /// being read, and each field of a class is its own access.
    final class InFlight {
        var calls: [String: any ModelCall] = [:]
        /// Turns being recognised, by item: the one streaming, and any finished awaiting their text.
        var transcriptions: [String: any TranscriptionSession] = [:]
        /// Replies being spoken, by response.
        var speechOutputs: [String: SpeechOutput] = [:]
        /// The speculative reply's first sound, made ahead (one speculation at a time).
        var preparedSpeech: PreparedSpeech?
        /// The end-of-turn model's question in flight: one at a time, the turn that went quiet.
        var turnJudgement: TurnJudgement?
        var clock = TurnClock()

        /// At rest when every field is: derived from the fields themselves (each a `RestingState`),
        /// so a new field cannot be forgotten. Mirror costs a few allocations, so `settle` asks
        /// only once the engine is at rest too, between turns.
        var isResting: Bool {
            Mirror(reflecting: self).children.allSatisfy { child in
                guard let state = child.value as? any RestingState else {
                    preconditionFailure("SessionDriver.InFlight.\(child.label ?? "?") is not a RestingState: settle could not tell it is at rest")
                }
                return state.isResting
            }
        }
    }

    struct TurnJudgement {
        let itemID: String
        let call: any ModelCall
    }

    var inFlight: InFlight?

    /// The in-flight box, made if need be.
    var held: InFlight {
        if let inFlight { return inFlight }
        let made = InFlight()
        inFlight = made
        return made
    }

    func settle() {
        if let inFlight, engine.isAtRest, inFlight.isResting { self.inFlight = nil }
    }

    var calls: [String: any ModelCall] {
        get { inFlight?.calls ?? [:] }
        _modify { yield &held.calls }
    }

    var transcriptions: [String: any TranscriptionSession] {
        get { inFlight?.transcriptions ?? [:] }
        _modify { yield &held.transcriptions }
    }

    var speechOutputs: [String: SpeechOutput] {
        get { inFlight?.speechOutputs ?? [:] }
        _modify { yield &held.speechOutputs }
    }

    var preparedSpeech: PreparedSpeech? {
        get { inFlight?.preparedSpeech ?? nil }
        _modify { yield &held.preparedSpeech }
    }

    var turnJudgement: TurnJudgement? {
        get { inFlight?.turnJudgement ?? nil }
        _modify { yield &held.turnJudgement }
    }

    var clock: TurnClock {
        get { inFlight?.clock ?? .resting }
        _modify { yield &held.clock }
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
        budget = SessionBudget(limits: endpoint.limits, now: 0)  // begun at `open`, on the loop's clock
    }

    /// A phone call's session (`/twilio`, SIP): admitted by the carrier's or trunk's own checks,
    /// the echo guard always on (a phone's echo cancellation, if any, is the handset's, which the
    /// server cannot count on: a speakerphone plays the reply straight into the call's
    /// microphone), and traced as a WebSocket session is.
    /// `admitted`: the tenant's place, for a call placed on its request (an incoming call has none).
    package convenience init(phoneCall endpoint: RealtimeEndpoint, admitted: Admitted = .phoneCall, options: SessionEngine.Options, wire: any SessionWire) {
        self.init(endpoint: endpoint, admitted: admitted, options: options, wire: wire)
        echoGuardAlways = true
        startTrace(traceparent: nil, endpointName: wire.endpointName)
    }

    var budget: SessionBudget
    /// The session's place in its tenant's count, given back when the handler goes.
    private let lease: TenantLease?
    /// How long this session may last, and how many model tokens it may spend: infinite and
    /// `Int.max` for no limit (not optionals, whose flag byte would pad each to 16 bytes).
    let maxSessionSeconds: Double
    private let maxSessionTokens: Int
    private var tokensSpent = 0

    private var sessionCap: ScheduledTask?

    /// Opens the session on `socket`; `announce` false for one restored from the store, whose
    /// client already had its `session.created`.
    package func open(_ socket: any SessionSocket, announce: Bool = true) {
        self.socket = socket
        openedAt = loopTime
        budget = SessionBudget(limits: endpoint.limits, now: openedAt)
        metrics.sessionsOpen.add(1)
        if maxSessionSeconds.isFinite {
            let cap = maxSessionSeconds
            // Held strongly: a weak capture would give every session a side table (32 bytes) for
            // nothing. The cycle (the session, its cap, the cap's closure) ends when the cap fires
            // or `close` cancels it.
            sessionCap = socket.loop.schedule(after: cap) { self.sessionExpired() }
        }
        sessionLog.info("session opened", metadata: ["session": "\(engine.sessionID)", "endpoint": "\(wire?.endpointName ?? "")", "model": "\(engine.model)"])
        if announce, configuration.type == .transcription, !engine.transcribes {
            // Nothing could transcribe it: said, then closed with 1008 (policy), before it begins.
            let error = EventError(type: .invalidRequest, code: "transcription_unavailable",
                                   message: "this server has no speech recogniser (--transcriber none), so it cannot open a transcription session")
            wire?.send(engine.event(.error(error)), on: socket)
            return socket.close(.policy, reason: "no transcriber")
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
    func createResponse() {
        handle(.client(ClientEvent(.responseCreate(ResponseOverrides()))))
    }

    /// One client event or audio frame arrived; false (and the session closed) past the rate.
    package func admitEvent() -> Bool {
        guard budget.event(at: loopTime, limits: endpoint.limits) else {
            closeForLimit(.events, "more than \(endpoint.limits.eventsPerSecond) events a second")
            return false
        }
        return true
    }

    func handle(_ input: SessionInput) { perform(engine.handle(input)) }

    /// The next reply is `text`, word for word, instead of the model's: a call's greeting.
    package func say(_ text: String) {
        var overrides = ResponseOverrides()
        overrides.scripted = .init(text: text, isFiller: false)
        handle(.client(ClientEvent(.responseCreate(overrides))))
    }

    /// Whether a reply is being made (its response in flight).
    package var isReplying: Bool { engine.turns.response != nil }

    /// The session stops answering what it has heard (a placed call answered by a machine): its
    /// reply in flight cancelled, the turn it was hearing dropped, as `response.cancel` and
    /// `input_audio_buffer.clear` would.
    package func stopAnswering() {
        if isReplying { handle(.client(ClientEvent(.responseCancel(responseID: nil)))) }
        handle(.client(ClientEvent(.inputAudioClear)))
    }

    /// Who answered the call Parley placed, for the report and the trace.
    package func noteAnsweredBy(_ verdict: AnsweringMachineDetector.Verdict) { observe(.answeredBy(verdict)) }

    /// A function call the server ran itself (a call leg's `press_keys`) answered: its output
    /// added to the conversation and the agent's next reply begun, as a voice agent goes on after
    /// its tools (there is no client to ask it to).
    package func answerTool(callID: String, output: String) {
        handle(.client(ClientEvent(.conversationItemCreate(NewConversationItem(role: .tool, text: "", function: .output(callID: callID, output: output))))))
        if !isReplying { createResponse() }
    }

    /// A client's text message (a WebSocket's, a data channel's, a sideband's): its event handled,
    /// an append's audio fed. `takesAudio` false: the session's audio is its call's, and an append
    /// is refused. `other` sees what is not an event of the API's before it is refused as one
    /// (Parley's own `session.ack`), and says whether it took it.
    package func receive(clientText message: UnsafeRawBufferPointer, takesAudio: Bool = true,
                         other: (UnsafeRawBufferPointer) -> Bool = { _ in false }) {
        do {
            switch try ClientMessage.parse(message) {
            case .audioAppend(let eventID, let bytes):
                guard takesAudio else {
                    return refuse(ProtocolError(.invalidValue, "this session's audio is its call's; input_audio_buffer.append is not taken here", param: "type"), eventID: eventID)
                }
                if let refusal = refusal(of: .append(bytes: bytes.count)) { return refuse(refusal, eventID: eventID) }
                let format = inputAudioFormat
                feedAudio { try $0.appended(bytes, as: format) }
            case .event(let event):
                handle(.client(event))
            }
        } catch {
            if other(message) { return }
            handle(.invalidClientEvent(error))
        }
    }

    /// A sideband's event (`?call_id=`): the call carries the audio.
    package func receiveClientEvent(text: String) {
        var text = text
        text.withUTF8 { receive(clientText: UnsafeRawBufferPointer($0), takesAudio: false) }
    }

    /// A user turn that did not come as audio (a keypress), added to the conversation and answered.
    package func userSaid(_ text: String) {
        handle(.client(ClientEvent(.conversationItemCreate(NewConversationItem(role: .user, text: text)))))
        createResponse()
    }


    /// An event of this session's (its id from the engine's sequence), for the wire to write.
    package func event(_ kind: ServerEvent.Kind) -> ServerEvent { engine.event(kind) }

    /// The session's length is over (the server's limit or its client secret's): said, then
    /// closed with 1008 (policy).
    private func sessionExpired() {
        guard let socket else { return }
        metrics.limitCloses.add(1, .duration)
        let error = EventError(type: .invalidRequest, code: "session_expired", message: "the session reached its limit of \(Int(maxSessionSeconds)) s")
        wire?.send(engine.event(.error(error)), on: socket)
        socket.close(.policy, reason: "session length limit")
    }

    /// A limit was passed: an `error` event naming it, then close 1008; the server goes on.
    func closeForLimit(_ limit: SessionBudget.Exceeded, _ message: String) {
        guard let socket, socket.isOpen else { return }
        (report ?? makeReport()).endReason = "limit: \(limit.label)"
        metrics.limitCloses.add(1, LimitClose(limit))
        sessionLog.warning("session limit", metadata: ["session": "\(engine.sessionID)", "limit": "\(limit.label)"])
        wire?.send(engine.event(.error(EventError(type: .invalidRequest, code: limit.code, message: message))), on: socket)
        socket.close(.policy, reason: limit.code)
    }

    /// The session is over, ended as its carrier says (`ending`): its work stops, and its report
    /// and trace are written.
    package func close(_ ending: SessionEnding) {
        sessionCap?.cancel()
        metrics.sessionsOpen.add(-1)
        socket?.account(handlerBytes: 0)
        if let loop = socket?.loop { writeReport(ending, on: loop) }
        trace?.end(code: Int(ending.code), at: loopTime)
        trace = nil
        sessionLog.info("session closed", metadata: ["session": "\(engine.sessionID)", "code": "\(ending.code)",
                                                     "seconds": "\(secondsOpen)"])
        for call in calls.values { call.cancel() }
        calls = [:]
        for output in speechOutputs.values { _ = output.stop() }
        speechOutputs = [:]
        dropPreparedSpeech()
        for transcription in transcriptions.values { transcription.cancel() }
        transcriptions = [:]
        turnJudgement?.call.cancel()
        turnJudgement = nil
        toolWork?.close()
        toolWork = nil
        listening?.idleCheck?.cancel()
        listening = nil
        echo = nil
        denoiser = nil
        recorder?.finish(at: loopTime)
        recorder = nil
        engine.audioWentIdle()
        settle()
        self.socket = nil
    }

    // MARK: The report

    func makeReport() -> SessionReport {
        let made = SessionReport()
        report = made
        return made
    }

    /// The session resumed on a new connection (counted in its report, an event in its trace).
    func noteResumed() {
        observe(.sessionResumed)
    }

    /// The server is draining (an event in the session's trace).
    func noteDraining() { trace?.event("drain") }

    /// Starts the session's trace when tracing is on: a child of the client's `traceparent`, if
    /// its upgrade carried one.
    package func startTrace(traceparent: String?, endpointName: String) {
        guard let tracer = endpoint.tracer else { return }
        let made = SessionTrace(tracer: tracer, traceparent: traceparent,
                                attributes: [("parley.endpoint", endpointName), ("gen_ai.request.model", endpoint.modelName)])
        // A trace the sampler did not keep is let go at once: every span under it would be
        // dropped alike, so the session keeps nothing (and sends no traceparent upstream).
        guard made.session.isRecording else { return }
        made.identify(engine.sessionID)
        trace = made
    }

    private func writeReport(_ ending: SessionEnding, on loop: EventLoop) {
        let report = report ?? SessionReport()
        let seconds = secondsOpen
        let ended = SessionReport.Ending(closeCode: Int(ending.code), reason: report.endReason ?? ending.reportReason, seconds: seconds,
                                         audioInSeconds: Double(engine.audioMs) / 1000)
        let json = report.json(sessionID: engine.sessionID, tenant: lease?.tenant, model: engine.model, endpoint: wire?.endpointName ?? "",
                               startedAt: WallClock.seconds() - Int(seconds.rounded()), ending: ended)
        endpoint.reports.write(sessionID: engine.sessionID, report: json, on: loop)
        self.report = nil
    }

    /// The client is gone but may come back within the grace window: the session goes on (a
    /// reply in flight finishes), writing only to its replay log.
    func park(onClose: @escaping (SessionEnding) -> Void) {
        guard let socket else { return }
        let parked = ParkedSocket(loop: socket.loop)
        parked.onClose = onClose
        socket.account(handlerBytes: 0)
        self.socket = parked
        updateAccount()
    }

    /// The client is back, on `socket`.
    func attach(_ socket: any SessionSocket) {
        // What the session holds moves with it: the socket it leaves (parked, relayed) gives it up.
        self.socket?.account(handlerBytes: 0)
        self.socket = socket
        updateAccount()
    }

    var resumeSettings: ResumeSettings { endpoint.resume }

    /// The session's home loop, nil once closed.
    var loop: EventLoop? { socket?.loop }

    /// Now, on the session's loop's clock (`LoopClock`: the machine's, or a test's): every time
    /// the session decides or measures by. The machine's once the session has no loop.
    var loopTime: UInt64 { socket?.loop.nanoseconds() ?? MonotonicClock.nanoseconds() }

    /// How long the session has been open, on that clock.
    var secondsOpen: Double { Double(loopTime &- openedAt) / 1e9 }

    func refuse(_ error: ProtocolError, eventID: String? = nil) {
        var error = error
        error.eventID = eventID
        perform(engine.handle(.invalidClientEvent(error)))
    }

    // MARK: Actions

    func perform(_ actions: [SessionAction]) {
        guard let socket else { return }
        performing += 1
        defer {
            performing -= 1
            if performing == 0 { settle() }
        }
        for action in actions {
            switch action {
            case .send(let event):
                wire?.send(event, on: socket)
            case .fact(let fact):
                observe(fact)
            case .startModel(let id, _, _) where lease?.tokensWait() != nil:
                // The tenant's sessions spent its tokens for the minute: the reply fails, told on
                // the next pass (after the rest of these actions, as a model's answer would be).
                let error = ModelError(code: TenantLedger.Refusal.tokens.rawValue,
                                       message: "the tenant spent its model tokens for this minute; retry in \(lease?.tokensWait() ?? 1) s")
                _ = socket.loop.schedule(after: 0) { [weak self] in self?.modelEvent(id, .failed(error)) }
            case .startModel(let id, let messages, let options):
                clock.modelRequested(id, at: loopTime)
                callModel(id, messages, options, on: socket.loop)
            case .speculate(let id, let messages, let options):
                callModel(id, messages, options, on: socket.loop)
            case .speculationEnded(let id, let outcome, let tokens, let answered):
                metrics.speculativeReplies.add(1, outcome)
                if tokens > 0 { metrics.speculativeTokensWasted.add(tokens) }
                guard outcome == .used else {
                    if preparedSpeech?.responseID == id { dropPreparedSpeech() }
                    break
                }
                // The request went out before the turn ended, and its first words, if any, came
                // too: for this turn those stages took no time after the transcript.
                let now = loopTime
                clock.modelRequested(id, at: now)
                if answered { modelAnswered(at: now) }
            case .cancelModel(let id):
                calls.removeValue(forKey: id)?.cancel()
            case .transcription(let step):
                transcribe(step, on: socket.loop)
            case .speech(let step):
                speak(step, on: socket)
            case .turnModel(let step):
                judgeTurn(step, on: socket.loop)
            case .mcp(let step):
                mcp(step, on: socket.loop)
            case .toolWait(let step):
                toolWait(step, on: socket.loop)
            }
        }
        updateAccount()
        // The response that passed the ceiling is delivered whole; the session then ends.
        if tokensSpent > maxSessionTokens {
            closeForLimit(.tokens, "the session spent \(tokensSpent) tokens, over its limit of \(maxSessionTokens)")
        }
    }


    // MARK: Facts

    /// Hands a fact to every observer: the metrics, the turn's clock, the report (made with the
    /// session's first turn), the trace; and acts on the few the driver itself follows.
    func observe(_ fact: SessionFact) {
        let now = loopTime
        metrics.observe(fact)
        time(fact, at: now)
        if report != nil || SessionReport.begins(fact) { (report ?? makeReport()).observe(fact, at: now) }
        trace?.observe(fact, at: now)
        switch fact {
        case .settingsChanged:
            recordingAsked()
        case .replyResumed(let responseID, let why):
            // Why speech over a reply did not cut it: with the words it was heard as (debug), the
            // trail of a barge-in that was missed.
            sessionLog.debug("reply resumed", metadata: ["session": "\(engine.sessionID)", "response": "\(responseID)", "reason": "\(why)"])
        case .responseEnded(let response):
            if let usage = response.usage, let loop = socket?.loop {
                tokensSpent += usage.totalTokens
                lease?.spend(usage.totalTokens, on: loop)
            }
        default: break
        }
        wire?.observed(fact)
    }

    /// The turn-taking times measured from facts (`TurnClock`).
    func time(_ fact: SessionFact, at now: UInt64) {
        switch fact {
        case .toolCalled(_, let callID, _, _):
            clock.toolCalled(callID, at: now)
        case .toolReturned(let callID):
            if let took = clock.toolReturned(callID, at: now) { metrics.toolTime.observe(nanoseconds: took) }
        case .turnEnded(let itemID, let audioEndMs, _):
            let lastWord = clock.turnEnded(itemID: itemID, audioEndMs: audioEndMs, audioMs: engine.audioMs, at: now)
            trace?.turnEnded(lastWordAt: lastWord)
        case .turnBegan(_, let audioStartMs):
            // audio_start_ms is the speech's onset less the prefix padding (at 0 at the least), so
            // the onset is at most that padding later.
            let padding = configuration.turnDetection?.prefixPaddingMs ?? 0
            if inFlight != nil, clock.turnBegan(audioStartMs: audioStartMs, paddingMs: padding) { metrics.prematureTurnEnds.add(1) }
        case .responseBegan:
            if let took = clock.responseBegan(at: now) { metrics.speechToResponse.observe(nanoseconds: took) }
        case .fillerSaid:
            if inFlight != nil { clock.fillerSaid(at: now) }
        default: break
        }
    }

    func updateAccount() {
        socket?.account(handlerBytes: HeapSize.of(self) + engine.accountedBytes + (listening?.input.stateBytes ?? 0) + (echo?.stateBytes ?? 0) + (denoiser?.stateBytes ?? 0)
                        + (recorder?.heldBytes ?? 0))
    }
}
