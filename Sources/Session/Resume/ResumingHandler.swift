import Access
import Loop
import Server
import SessionEngine

/// A connection that came back with a resume token. On open it claims the parked session (here
/// or on another loop of this process) or, failing that, loads it from the store; then it is only
/// the session's socket: frames go to the session, on its home loop, and so does the close.
///
/// Whatever the reason a token does not work (unknown, used, expired, another tenant's), the
/// client hears the same `resume_token_invalid`, so a guess learns nothing.
final class ResumingHandler: WebSocketHandler {
    private let endpoint: RealtimeEndpoint
    private let request: HTTPRequest
    private var admitted: Admitted?
    private let allowsOpus: Bool
    private let token: String
    private let lastSeq: Int
    private var target: Target?
    /// The client went while its session was being read from the store: nothing is restored onto
    /// a socket that is gone, and its token is not used up (a session restored so would rotate
    /// the token the client still holds, then wait attached to nobody).
    private var closed = false

    private enum Target {
        case here(RealtimeSessionHandler)
        case relayed(Handoff<RealtimeSessionHandler>, home: LoopHandle)
    }

    init(endpoint: RealtimeEndpoint, request: HTTPRequest, admitted: Admitted, allowsOpus: Bool, token: String, lastSeq: Int) {
        self.endpoint = endpoint
        self.request = request
        self.admitted = admitted
        self.allowsOpus = allowsOpus
        self.token = token
        self.lastSeq = lastSeq
    }

    private let me = SessionClient.next()
    private var tenant: String { admitted?.caller.tenant ?? "" }

    func webSocketDidOpen(_ socket: WebSocket) {
        let hash = ResumeToken.hash(token)
        if let parked = ResumeRegistry.shared.claim(tokenHash: hash, tenant: tenant) {
            // The parked session holds its place in the tenant's count; this one gives its back.
            admitted = nil
            let lastSeq = lastSeq, me = me
            if parked.home === socket.loop.handle {
                target = .here(parked.session.value)
                parked.session.value.attach(socket, lastSeq: lastSeq, from: me)
            } else {
                target = .relayed(parked.session, home: parked.home)
                let session = parked.session, remote = socket.loop.handle, socket = Handoff(socket)
                parked.home.execute { session.value.attach(relayedFrom: remote, socket: socket, lastSeq: lastSeq, from: me) }
            }
            return
        }
        guard let store = endpoint.resume.store, let admitted else { return refuse(socket, because: "not parked here, and no store") }
        guard store.isAvailable(on: socket.loop) else { return tryLater(socket, "the \(store.kind) store cannot be reached") }
        store.load(tokenHash: hash, on: socket.loop) { [weak self] result in
            guard let self, !closed else { return }
            if case .failure(let error) = result { return tryLater(socket, "the \(store.kind) store could not be read (\(error))") }
            guard case .success(let stored?) = result else { return refuse(socket, because: "not in the \(store.kind) store") }
            guard stored.session.tenant == tenant else { return refuse(socket, because: "another tenant's") }
            guard stored.session.expiresAt == 0 || stored.session.expiresAt >= WallClock.seconds() else { return refuse(socket, because: "expired") }
            let session = RealtimeSessionHandler(endpoint: endpoint, request: request, admitted: admitted, allowsOpus: allowsOpus, restoring: stored)
            target = .here(session)
            session.openRestored(socket, stored: stored, lastSeq: lastSeq, from: me)
        }
    }

    /// `because` goes to the log only (at info, with the token's hash, never the token): the client
    /// hears the same refusal whatever the reason.
    private func refuse(_ socket: WebSocket, because reason: String) {
        sessionLog.info("resume refused", metadata: ["reason": "\(reason)", "token_sha256": "\(ResumeToken.hash(token).prefix(12))"])
        decline(socket, result: .refused, .policyViolation, .resumeTokenInvalid)
    }

    /// The store could not answer (down, or too busy: a node taking over a thousand sessions at
    /// once): nothing was used up, so the client is told to come back with the same token (1013).
    private func tryLater(_ socket: WebSocket, _ why: String) {
        decline(socket, result: .retry, .tryAgainLater,
                EventError(type: .server, code: "resume_unavailable", message: "\(why); reconnect with the same token"))
    }

    /// The reconnect gets `error`, then the close `code`; counted under `result`.
    private func decline(_ socket: WebSocket, result: ResumeResult, _ code: WebSocketCloseCode, _ error: EventError) {
        SessionMetrics.shared.resumes.add(1, result)
        socket.send(text: ServerEvent(eventID: "event_resume", .error(error)).json(dialect: .ga))
        socket.close(code, reason: error.code)
    }

    func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        switch target {
        case .here(let session): session.receive(message, kind: kind, from: me)
        case .relayed(let session, let home):
            let bytes = Array(message), me = me
            home.execute { bytes.withUnsafeBytes { session.value.receive($0, kind: kind, from: me) } }
        case nil: break
        }
    }

    func webSocketDidClose(_ socket: WebSocket, code: WebSocketCloseCode) {
        closed = true
        switch target {
        case .here(let session): session.socketClosed(code, from: me)
        case .relayed(let session, let home):
            let me = me
            home.execute { session.value.socketClosed(code, from: me) }
        case nil: break
        }
        target = nil
    }

    func webSocketDrain(_ socket: WebSocket) -> Bool {
        switch target {
        case .here(let session): return session.webSocketDrain(socket)
        case .relayed, nil: return false
        }
    }
}

extension EventError {
    /// Every token that does not work gets this same answer (docs/protocol.md, "Resume"): unknown,
    /// used, expired, another tenant's, or resumed by another node first.
    static let resumeTokenInvalid = EventError(type: .invalidRequest, code: "resume_token_invalid",
                                               message: "the resume token is not valid: unknown, already used, or past its grace window")
}
