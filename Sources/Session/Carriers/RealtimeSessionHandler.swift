import Access
import JSON
import Models
import Server
import Loop
import Store
import SessionEngine

/// A Realtime API session on `/v1/realtime` or `/ws`: client frames into the session's engine
/// (JSON events, pcm16 or G.711 appends, Opus packets as binary frames on `/ws`), and the engine's
/// events out as the Realtime API's JSON in the client's dialect.
///
/// A session whose client asked for resume (docs/protocol.md, "Resume") numbers its JSON events,
/// keeps those not yet acknowledged, writes completed items to the store, and outlives its
/// connection by the grace window: parked in `ResumeRegistry`, it goes on (a reply in flight
/// finishes into the log) until a reconnect with its token attaches a new socket. That life cycle
/// is `SessionResumption`'s; this type sets the session up and carries its frames and events.
final class RealtimeSessionHandler: WebSocketHandler, SessionWire {
    private(set) var driver: SessionDriver!
    private let dialect: Dialect
    /// `/ws` (Opus) rather than `/v1/realtime`: a byte, where the name was a 16-byte string.
    private let opusEndpoint: Bool
    var endpointName: String { opusEndpoint ? "/ws" : "/v1/realtime" }
    /// Set for sessions that asked for resume; the rest pay one nil pointer for it.
    private var resumption: SessionResumption?
    /// The connection the session now belongs to: frames and closes from any other (a reconnect
    /// that was refused, the old socket's late close) are ignored.
    var client: SessionClient?
    /// The session's first connection, as its client (`webSocketDidOpen`).
    let firstClient = SessionClient.next()

    /// A new session, or (with `restoring`) one brought back from the store after its process went.
    init(endpoint: RealtimeEndpoint, request: HTTPRequest, admitted: Admitted, allowsOpus: Bool, resumable: Bool = false,
         restoring stored: StoredConversation? = nil) {
        opusEndpoint = allowsOpus
        // Browsers cannot send the OpenAI-Beta header; they offer the subprotocol instead.
        let betaByProtocol = request.tokens("sec-websocket-protocol").contains("openai-beta.realtime-v1")
        dialect = betaByProtocol ? .beta : Dialect(openAIBetaHeader: request.header("openai-beta"))
        let options = SessionEngine.Options(realtime: request, endpoint: endpoint, caller: admitted.caller, allowsOpus: allowsOpus, restoring: stored)
        driver = SessionDriver(endpoint: endpoint, admitted: admitted, options: options, wire: self)
        driver.echoGuardByDefault = endpoint.echoGuardByDefault
        driver.startTrace(traceparent: request.header("traceparent"), endpointName: endpointName)
        if let stored {
            driver.restore(stored.items.compactMap { ChatMessage.restoring($0.item) })
        }
        if resumable || stored != nil {
            let lastSeq = stored.map { max($0.session.lastSeq, $0.items.last?.seq ?? 0) } ?? 0
            resumption = SessionResumption(of: self, lastSeq: lastSeq, tenant: admitted.caller.tenant ?? "")
        }
    }

    func webSocketDidOpen(_ socket: WebSocket) {
        client = firstClient
        driver.open(socket)
        if let resumption, !resumption.opened(on: socket) { self.resumption = nil }
    }

    func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        receive(message, kind: kind, from: firstClient)
    }

    func webSocketDidClose(_ socket: WebSocket, code: WebSocketCloseCode) { socketClosed(code, from: firstClient) }

    /// A frame from the session's client (its first connection or a resumed one).
    func receive(_ message: UnsafeRawBufferPointer, kind: WebSocketMessageKind, from sender: SessionClient) {
        guard sender == client, driver.admitEvent() else { return }
        // Never `let engine = driver.engine` here: a copy of the engine held across the append
        // shares its audio buffer, and every frame then copied the whole turn's samples (18 % of
        // the server's CPU at 1,000 speakers, docs/benchmarks.md, "Issue 26's targets").
        switch kind {
        case .text:
            driver.receive(clientText: message) { message in
                // `session.ack` is Parley's, not the Realtime API's: looked for only when the
                // event is not one of the API's, so the common path pays nothing for it.
                guard let resumption, let seq = Self.acknowledged(String(decoding: message, as: UTF8.self)) else { return false }
                resumption.acknowledge(seq)
                return true
            }
        case .binary:
            if let refusal = driver.refusal(of: .binaryFrame) {
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

    func socketClosed(_ code: WebSocketCloseCode, from sender: SessionClient) {
        guard sender == client else { return }
        client = nil
        guard let resumption, !Self.ends(code), let loop = driver.loop else { return end(SessionEnding(code)) }
        driver.park { [weak self] ending in self?.end(ending) }
        resumption.park(on: loop) { [weak self] in self?.end(.dropped) }
    }

    /// The session is over: its work stops, and the store forgets it.
    private func end(_ ending: SessionEnding) {
        resumption?.ended()
        resumption = nil
        client = nil
        driver.close(ending)
    }

    /// A reconnect with this session's token, on its home loop (`SessionResumption.attach`).
    func attach(_ socket: any SessionSocket, lastSeq: Int, from sender: SessionClient) {
        resumption?.attach(socket, lastSeq: lastSeq, from: sender)
    }

    /// A reconnect that arrived on another loop: its socket is reached through that loop's inbox.
    func attach(relayedFrom remote: LoopHandle, socket: Handoff<WebSocket>, lastSeq: Int, from sender: SessionClient) {
        guard let loop = driver.loop else { return }
        attach(RelayedSocket(home: loop, remote: remote, socket: socket), lastSeq: lastSeq, from: sender)
    }

    /// A session restored from the store, on `socket`: its stored events after `lastSeq` are the
    /// replay; a turn the old process was answering when it went is answered again here.
    func openRestored(_ socket: WebSocket, stored: StoredConversation, lastSeq: Int, from sender: SessionClient) {
        // Parked until `attach` has stored the next token: nothing reaches the client before
        // `session.resumed`.
        driver.open(ParkedSocket(loop: socket.loop), announce: false)
        resumption?.restore(stored, lastSeq: lastSeq)
        // The turn the old process left unanswered is answered once the session is this node's
        // (`SessionResumption.attach`): another node may be restoring it at the same moment.
        resumption?.attach(socket, lastSeq: lastSeq, from: sender, restored: true)
    }

    /// Drain: the session's client is told its token afresh and closed with 1012, to reconnect
    /// elsewhere; a session that did not ask for resume just gets the 1012.
    func drain() {
        draining = false
        guard let socket = driver.socket, let current = client else { return }
        guard let resumption else { return socket.close(.serverRestart, reason: "server restarting") }
        resumption.drain(socket, client: current)
    }

    /// Set by a drain that found a reply in flight: the session closes when it is done.
    private var draining = false

    func webSocketDrain(_ socket: WebSocket) -> Bool {
        driver.noteDraining()
        if driver.engine.activeResponseID == nil { drain() } else { draining = true }
        return true
    }

    // MARK: SessionWire

    func send(_ event: ServerEvent, on socket: any SessionSocket) {
        // Parley's turn-taking events go to its own page on /ws only.
        let sent = event.isSent(in: dialect) && (opusEndpoint || !event.isParleyTurnTaking)
        let text = sent ? event.json(dialect: dialect) : ""
        if let resumption {
            let stamped = resumption.stamp(event, text, on: socket.loop)
            if sent { resumption.deliver(.text(stamped), on: socket) }
        } else if sent {
            socket.send(text: text)
        }
        guard sent else { return }
        if draining, case .responseDone = event.kind { drain() }
    }

    /// Parley's own events, which are not numbered (they are never replayed).
    func sendControl(_ kind: ServerEvent.Kind, on socket: any SessionSocket) {
        socket.send(text: driver.event(kind).json(dialect: dialect))
    }

    func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on socket: any SessionSocket) {
        switch piece {
        case .opus(let packet):
            if let resumption { resumption.deliver(.binary(packet), on: socket) } else { (socket as? any FrameSocket)?.send(binary: packet) }
        case .pcm(let bytes): send(driver.event(.outputAudioDelta(at, audio: bytes)), on: socket)
        }
    }
}
