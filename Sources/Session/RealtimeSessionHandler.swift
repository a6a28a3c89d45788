import Access
import JSON
import Models
import Server
import Loop
import Store

/// A Realtime API session on `/v1/realtime` or `/ws`: client frames into the session's engine
/// (JSON events, pcm16 or G.711 appends, Opus packets as binary frames on `/ws`), and the engine's
/// events out as the Realtime API's JSON in the client's dialect.
///
/// A session whose client asked for resume (docs/protocol.md, "Resume") numbers its JSON events,
/// keeps those not yet acknowledged, writes completed items to the store, and outlives its
/// connection by the grace window: parked in `ResumeRegistry`, it goes on (a reply in flight
/// finishes into the log) until a reconnect with its token attaches a new socket.
final class RealtimeSessionHandler: WebSocketHandler, SessionWire {
    private let dialect: Dialect
    private var driver: SessionDriver!
    let endpointName: String
    /// The endpoint's, read through the driver: an idle session stores no copy.
    private var settings: ResumeSettings { driver.resumeSettings }
    /// Set for sessions that asked for resume; the rest pay nothing for it.
    private var resumption: Resumption?
    /// The connection the session now belongs to: frames and closes from any other (a reconnect
    /// that was refused, the old socket's late close) are ignored.
    private var client: ObjectIdentifier?

    /// A class, so that the sessions that never ask for resume carry one pointer for it, not the
    /// hundred bytes of its fields.
    final class Resumption {
        var log: ResumeLog
        var tokenHash: String
        let tenant: String
        var graceTimer: ScheduledTask?
        var parkedAt: UInt64?

        init(log: ResumeLog, tokenHash: String, tenant: String) {
            self.log = log
            self.tokenHash = tokenHash
            self.tenant = tenant
        }
    }

    /// A new session, or (with `restoring`) one brought back from the store after its process went.
    init(endpoint: RealtimeEndpoint, request: HTTPRequest, admitted: Admitted, allowsOpus: Bool, resumable: Bool = false,
         restoring stored: StoredConversation? = nil) {
        endpointName = allowsOpus ? "/ws" : "/v1/realtime"
        // Browsers cannot send the OpenAI-Beta header; they offer the subprotocol instead.
        let betaByProtocol = request.tokens("sec-websocket-protocol").contains("openai-beta.realtime-v1")
        dialect = betaByProtocol ? .beta : Dialect(openAIBetaHeader: request.header("openai-beta"))
        var options = SessionEngine.Options(model: (request.queryValue("model") ?? request.queryValue("deployment")).map(String.init) ?? endpoint.modelName, allowsOpus: allowsOpus,
                                            transcribes: endpoint.speech.transcriber != nil,
                                            synthesizes: endpoint.speech.synthesizer != nil && endpoint.speech.pool != nil)
        options.configuration = SessionConfiguration()
        options.transcriptionModel = endpoint.speech.transcriber?.name
        // /ws is for browsers and the CLI, which send Opus packets: that is its default input.
        if allowsOpus { options.configuration.inputAudioFormat = .opus }
        // ... and whose page plays Opus back: with a synthesiser, /ws replies are spoken.
        if allowsOpus && options.synthesizes {
            options.configuration.outputModalities = .audio
            options.configuration.outputAudioFormat = .opus
        }
        // A session opened with a client secret starts with the settings the secret pins, and
        // keeps them; it may last as long as the secret says.
        if let secret = admitted.caller.secret {
            let session = EventFields(secret.session, path: "session")
            if let update = try? SessionUpdate.parse(session) {
                try? options.configuration.apply(update, allowsOpus: allowsOpus)
                options.pinned = SessionEngine.Pinned(update)
            }
            if let model = try? session.string("model") { options.model = model; options.pinned.insert(.model) }
        }
        // A restored session takes back the settings it had, under its own id.
        if let stored {
            if let json = try? JSON(parsing: stored.session.settings), let update = try? SessionUpdate.parse(EventFields(json, path: "session")) {
                try? options.configuration.apply(update, allowsOpus: allowsOpus)
            }
            options.sessionID = stored.session.sessionID
        }
        driver = SessionDriver(endpoint: endpoint, admitted: admitted, options: options, wire: self)
        if let stored {
            driver.restore(stored.items.compactMap { ChatMessage.restoring($0.item) })
        }
        if resumable || stored != nil {
            let lastSeq = stored.map { max($0.session.lastSeq, $0.items.last?.seq ?? 0) } ?? 0
            resumption = Resumption(log: ResumeLog(lastSeq: lastSeq, maxBytes: settings.maxLogBytes), tokenHash: "",
                                    tenant: admitted.caller.tenant ?? "")
        }
    }

    func webSocketDidOpen(_ socket: WebSocket) {
        client = ObjectIdentifier(self)
        driver.open(socket)
        guard resumption != nil else { return }
        if let store = settings.store, !store.isAvailable(on: socket.loop) {
            // Said once, as an error the client can show; the session goes on without resume.
            send(driver.event(.error(EventError(type: .server, code: "resume_unavailable",
                                                message: "the \(store.kind) store cannot be reached: this session cannot be resumed"))), on: socket)
            resumption = nil
            return
        }
        // The first token goes out with the session's row on its way to the store: a client that
        // drops within a store's round trip of opening has nothing to resume yet anyway.
        let token = ResumeToken.make()
        resumption!.tokenHash = token.hash
        settings.store?.sessionStarted(StoredSession(sessionID: driver.engine.sessionID, tenant: resumption!.tenant, tokenHash: token.hash,
                                                     settings: "{}", lastSeq: resumption!.log.lastSeq), on: socket.loop)
        sendControl(.resumeToken(token: token.value, graceSeconds: Int(settings.graceSeconds), lastSeq: resumption!.log.lastSeq), on: socket)
    }

    func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        receive(message, kind: kind, from: ObjectIdentifier(self))
    }

    func webSocketDidClose(_ socket: WebSocket, code: WebSocketCloseCode) { socketClosed(code, from: ObjectIdentifier(self)) }

    /// A frame from the session's client (its first connection or a resumed one).
    func receive(_ message: UnsafeRawBufferPointer, kind: WebSocketMessageKind, from sender: ObjectIdentifier) {
        guard sender == client, driver.admitEvent() else { return }
        let engine = driver.engine
        switch kind {
        case .text:
            let text = String(decoding: message, as: UTF8.self)
            do {
                switch try ClientMessage.parse(text) {
                case .audioAppend(let eventID, let bytes):
                    if let refusal = engine.configuration.refusal(of: .append(bytes: bytes.count), allowsOpus: engine.allowsOpus) {
                        return driver.refuse(refusal, eventID: eventID)
                    }
                    let format = engine.configuration.inputAudioFormat
                    driver.feedAudio { try $0.appended(bytes, as: format) }
                case .event(let event):
                    driver.handle(.client(event))
                }
            } catch {
                // `session.ack` is Parley's, not the Realtime API's: looked for only when the
                // event is not one of the API's, so the common path pays nothing for it.
                if resumption != nil, let seq = Self.acknowledged(text) { return resumption!.log.acknowledge(seq) }
                driver.handle(.invalidClientEvent(error))
            }
        case .binary:
            if let refusal = engine.configuration.refusal(of: .binaryFrame, allowsOpus: engine.allowsOpus) {
                return driver.refuse(refusal)
            }
            driver.feedAudio { try $0.opus(message) }
        }
    }

    /// The sequence number of a `{"type":"session.ack","seq":N}`.
    private static func acknowledged(_ text: String) -> Int? {
        guard let json = try? JSON(parsing: text), json["type"]?.string == "session.ack" else { return nil }
        return json["seq"]?.int
    }

    /// Closes that end a session even when it could be resumed: the client said goodbye (1000),
    /// or the server closed it for a reason a reconnect would meet again.
    private static func ends(_ code: WebSocketCloseCode) -> Bool {
        [.normal, .protocolError, .unsupportedData, .invalidPayload, .policyViolation, .messageTooBig].contains(code)
    }

    func socketClosed(_ code: WebSocketCloseCode, from sender: ObjectIdentifier) {
        guard sender == client else { return }
        client = nil
        guard let resumption, !Self.ends(code), let loop = driver.loop else { return end(code) }
        driver.park { [weak self] code in self?.end(code) }
        let hash = resumption.tokenHash
        resumption.parkedAt = MonotonicClock.nanoseconds()
        resumption.graceTimer = loop.schedule(after: settings.graceSeconds) { [weak self] in
            guard let self, ResumeRegistry.shared.remove(tokenHash: hash) else { return }
            SessionMetrics.shared.expired.add(1)
            end(.abnormal)
        }
        SessionMetrics.shared.sessionsDetached.add(1)
        register(resumption, home: loop)
    }

    /// Where a reconnect with the current token finds this session.
    private func register(_ resumption: Resumption, home: EventLoop) {
        ResumeRegistry.shared.park(.init(session: Handoff(self), home: home.handle, tenant: resumption.tenant), tokenHash: resumption.tokenHash)
    }

    /// The session is parked no longer (its client is back, or it ends): its grace timer goes.
    /// Returns how long it was parked, nil if it was not.
    @discardableResult
    private func unpark(_ resumption: Resumption) -> UInt64? {
        guard let parkedAt = resumption.parkedAt else { return nil }
        resumption.graceTimer?.cancel()
        resumption.graceTimer = nil
        resumption.parkedAt = nil
        SessionMetrics.shared.sessionsDetached.add(-1)
        return MonotonicClock.nanoseconds() &- parkedAt
    }

    /// The session is over: its work stops, and the store forgets it.
    private func end(_ code: WebSocketCloseCode) {
        if let resumption {
            if unpark(resumption) != nil { _ = ResumeRegistry.shared.remove(tokenHash: resumption.tokenHash) }
            if let loop = driver.loop { settings.store?.sessionEnded(sessionID: driver.engine.sessionID, on: loop) }
        }
        resumption = nil
        client = nil
        driver.close(code: code)
    }

    /// A reconnect with this session's token, on its home loop: the events after `lastSeq` are
    /// replayed and the session goes on with `socket`; or, for a `lastSeq` outside what is kept,
    /// the reconnect is refused and the session stays parked for a right one.
    func attach(_ socket: any SessionSocket, lastSeq: Int, from sender: ObjectIdentifier, restored: Bool = false) {
        guard let resumption else { return }
        switch resumption.log.replay(after: lastSeq) {
        case .failure(.outOfRange(let last, let oldest)):
            SessionMetrics.shared.resumes.add(1, labels: "result=\"out_of_range\"")
            socket.send(text: driver.event(.error(EventError(type: .invalidRequest, code: "resume_out_of_range",
                                                              message: "last_seq \(lastSeq) is outside the events this session keeps (\(oldest) to \(last))"))).json(dialect: dialect))
            socket.close(.policyViolation, reason: "resume_out_of_range")
            if !restored { register(resumption, home: socket.loop) }
            return
        case .success:
            break
        }
        if let parked = unpark(resumption) { SessionMetrics.shared.resumeSeconds.observe(nanoseconds: parked) }
        SessionMetrics.shared.resumes.add(1, labels: restored ? "result=\"store\"" : "result=\"memory\"")
        // The client's frames count from now; what the session sends until the new token is
        // stored goes to the log, and is in the replay that follows `session.resumed`.
        client = sender
        rotateToken(on: socket.loop) { [weak self] token in
            guard let self, client == sender, let replay = try? self.resumption?.log.replay(after: lastSeq).get() else { return }
            driver.attach(socket)
            sendControl(.sessionResumed(sessionID: driver.engine.sessionID, token: token.value, lastSeq: lastSeq, replayed: replay.count), on: socket)
            for text in replay { socket.send(text: text) }
            sessionLog.info("session resumed", metadata: ["session": "\(driver.engine.sessionID)", "replayed": "\(replay.count)", "from": restored ? "store" : "memory"])
        }
    }

    /// A session restored from the store, on `socket`: its stored events after `lastSeq` are the
    /// replay; a turn the old process was answering when it went is answered again here.
    func openRestored(_ socket: WebSocket, stored: StoredConversation, lastSeq: Int, from sender: ObjectIdentifier) {
        // Parked until `attach` has stored the next token: nothing reaches the client before
        // `session.resumed`.
        driver.open(ParkedSocket(loop: socket.loop), announce: false)
        let kept = stored.items.filter { !$0.event.isEmpty }.map { ResumeLog.Entry(seq: $0.seq, text: $0.event) }
        let highest = max(resumption?.log.lastSeq ?? 0, lastSeq)
        resumption?.log = ResumeLog(restoring: kept, lastSeq: highest, maxBytes: settings.maxLogBytes)
        attach(socket, lastSeq: lastSeq, from: sender, restored: true)
        driver.answerIfUnanswered()
    }

    /// A reconnect that arrived on another loop: its socket is reached through that loop's inbox.
    func attach(relayedFrom remote: LoopHandle, socket: Handoff<WebSocket>, lastSeq: Int, from sender: ObjectIdentifier) {
        guard let loop = driver.loop else { return }
        attach(RelayedSocket(home: loop, remote: remote, socket: socket), lastSeq: lastSeq, from: sender)
    }

    /// Each resume uses the token up; the next one is handed to `body` once the store has it, so
    /// that whichever node the client reaches next can find it.
    private func rotateToken(on loop: EventLoop, then body: @escaping (ResumeToken) -> Void) {
        let token = ResumeToken.make()
        guard let resumption else { return body(token) }
        resumption.tokenHash = token.hash
        guard settings.store != nil else { return body(token) }
        storeToken(token, on: loop, attempt: 1, then: body)
    }

    /// A store that could not take the token (Redis busy while a node takes over a thousand
    /// sessions) is asked again, every 50 ms for up to 2 s: a token handed out unstored would be
    /// refused by whichever node the client reached next (the survive benchmark lost 860 of 3,000
    /// sessions so before this).
    private func storeToken(_ token: ResumeToken, on loop: EventLoop, attempt: Int, then body: @escaping (ResumeToken) -> Void) {
        guard let store = settings.store, let resumption, resumption.tokenHash == token.hash else { return body(token) }
        store.tokenRotated(sessionID: driver.engine.sessionID, tokenHash: token.hash, lastSeq: resumption.log.lastSeq, on: loop) { [weak self] stored in
            guard let self else { return }
            if stored || attempt >= Self.tokenStoreAttempts { return body(token) }
            loop.schedule(after: 0.05) { [weak self] in self?.storeToken(token, on: loop, attempt: attempt + 1, then: body) }
        }
    }

    private static let tokenStoreAttempts = 40

    /// Drain: the session's client is told its token afresh and closed with 1012, to reconnect
    /// elsewhere; a session that did not ask for resume just gets the 1012.
    func drain() {
        draining = false
        guard let socket = driver.socket, let current = client else { return }
        guard resumption != nil else { return socket.close(.serviceRestart, reason: "server restarting") }
        rotateToken(on: socket.loop) { [weak self] token in
            guard let self, client == current, let resumption else { return }
            sendControl(.resumeToken(token: token.value, graceSeconds: Int(settings.graceSeconds), lastSeq: resumption.log.lastSeq), on: socket)
            socket.close(.serviceRestart, reason: "server restarting; resume elsewhere")
        }
    }

    /// Set by a drain that found a reply in flight: the session closes when it is done.
    private var draining = false

    func webSocketDrain(_ socket: WebSocket) -> Bool {
        if driver.engine.activeResponseID == nil { drain() } else { draining = true }
        return true
    }

    // MARK: SessionWire

    func send(_ event: ServerEvent, on socket: any SessionSocket) {
        guard event.isSent(in: dialect) else { return persist(event, text: "", on: socket.loop) }
        var text = event.json(dialect: dialect)
        if resumption != nil {
            text = resumption!.log.stamp(text)
            // Written before it is sent: an item the client is told is done is already kept.
            persist(event, text: text, on: socket.loop)
        }
        socket.send(text: text)
        if draining, case .responseDone = event.kind { drain() }
    }

    /// Parley's own events, which are not numbered (they are never replayed).
    private func sendControl(_ kind: ServerEvent.Kind, on socket: any SessionSocket) {
        socket.send(text: driver.event(kind).json(dialect: dialect))
    }

    private func persist(_ event: ServerEvent, text: String, on loop: EventLoop) {
        guard let store = settings.store, let seq = resumption?.log.lastSeq else { return }
        // Computed where used: the id is an 18-byte string, made on the heap, and most events
        // (the deltas) are not kept.
        var session: String { driver.engine.sessionID }
        switch event.kind {
        case .conversationItemDone(let item, _):
            store.itemCompleted(sessionID: session, seq: seq, itemID: item.id, item: item.json(dialect: .ga).description, event: text, on: loop)
        case .inputAudioTranscriptionCompleted(let itemID, _, let transcript, _):
            let item = ConversationItem(id: itemID, role: .user, status: .completed, content: [.inputAudio(transcript: transcript)])
            store.itemCompleted(sessionID: session, seq: seq, itemID: itemID, item: item.json(dialect: .ga).description, event: text, on: loop)
        case .responseDone(let response):
            // Not an item of the conversation: kept so that a client that missed it gets the
            // response whole after a resume elsewhere.
            store.itemCompleted(sessionID: session, seq: seq, itemID: response.id, item: "", event: text, on: loop)
        case .sessionUpdated(let info):
            store.settingsChanged(sessionID: session, settings: info.json(dialect: .ga).description, on: loop)
        default:
            break
        }
    }

    func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on socket: any SessionSocket) {
        switch piece {
        case .opus(let packet): socket.send(binary: packet)
        case .pcm(let base64): send(driver.event(.outputAudioDelta(at, delta: base64)), on: socket)
        }
    }
}
