import Access
import JSON
import Loop
import Server
import SessionEngine

/// A GPT-Live session on `WS /v1/live/sessions`: the client's Live commands through
/// `LiveConversation` into the session's engine, and the engine's events back out as Live's.
/// Everything below the protocol is a Realtime session's: the same driver (turn-taking,
/// recognition, synthesis, limits, reports, traces, metrics), so a Live session costs what a
/// Realtime one does.
final class LiveSessionHandler: WebSocketHandler, SessionWire {
    private(set) var driver: SessionDriver!
    private var live: LiveConversation!
    private var openedAt: UInt64 = 0
    private var acknowledgementTimer: ScheduledTask?
    private var fixtureTimer: ScheduledTask?
    private var lifeTimer: ScheduledTask?
    /// The Responses backend, made with the first task or command for it (`delegation: responses`).
    private var backend: (session: LiveBackend, delegation: LiveResponsesDelegation)?
    private let caller: Caller
    private let endpoint: RealtimeEndpoint
    var endpointName: String { "/v1/live/sessions" }

    /// A Live message may hold a fixture: 30 s of pcm16 at 24 kHz is 1.92 MB of base64. Up to 4 MiB
    /// (a minute of it), one too long is answered with an `error` and the session goes on; past
    /// that, the connection closes with 1009 as any oversized message does.
    static let maxMessageBytes = 4 << 20

    /// A Live session lasts at most two hours (OpenAI's limit), or the server's limit if shorter.
    static let maxSeconds = 7_200.0

    init(endpoint: RealtimeEndpoint, request: HTTPRequest, admitted: Admitted) {
        self.endpoint = endpoint
        caller = admitted.caller
        let options = SessionEngine.Options(realtime: request, endpoint: endpoint, caller: admitted.caller, allowsOpus: false, restoring: nil)
        driver = SessionDriver(endpoint: endpoint, admitted: admitted, options: options, wire: self)
        driver.echoGuardByDefault = endpoint.echoGuardByDefault
        driver.startTrace(traceparent: request.header("traceparent"), endpointName: endpointName)
        // The driver's limit is the tightest of the server's, the tenant's and the client secret's.
        let life = min(Self.maxSeconds, driver.maxSessionSeconds)
        live = LiveConversation(sessionID: driver.engine.sessionID, seed: MonotonicClock.nanoseconds(), expiresAt: WallClock.seconds() + Int(life))
    }

    private var nowMs: Int {
        guard let loop = driver.loop else { return 0 }
        return Int((loop.nanoseconds() &- openedAt) / 1_000_000)
    }

    func webSocketDidOpen(_ socket: WebSocket) {
        openedAt = socket.loop.nanoseconds()
        // Opened without announcing: Live has no `session.created`; `session.start` begins it.
        driver.open(socket, announce: false)
        lifeTimer = socket.loop.schedule(after: Self.maxSeconds) { [weak self] in self?.expire() }
    }

    func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        guard driver.admitEvent() else { return }
        guard kind == .text else {
            return perform(live.refuse(ProtocolError(.invalidValue, "a Live session takes JSON text messages; audio comes base64 in session.input_audio.append")))
        }
        do {
            let command = try LiveCommand.parse(message)
            perform(live.command(command, nowMs: nowMs))
        } catch {
            perform(live.refuse(error))
        }
    }

    func webSocketDidClose(_ socket: WebSocket, code: WebSocketCloseCode) {
        for timer in [acknowledgementTimer, fixtureTimer, lifeTimer] { timer?.cancel() }
        backend?.session.close()
        backend = nil
        driver.close(SessionEnding(code))
    }

    /// The session's two hours are over: its last event, then a normal close.
    private func expire() {
        guard let socket = driver.socket else { return }
        socket.send(text: live.closed("expired", nowMs: nowMs).description)
        socket.close(.ended, reason: "session expired")
    }

    private func perform(_ steps: [LiveConversation.Step]) {
        guard let socket = driver.socket else { return }
        for step in steps {
            switch step {
            case .send(let event):
                socket.send(text: event.description)
            case .engine(let event):
                driver.handle(.client(event))
            case .audio(let bytes):
                if let refusal = driver.refusal(of: .append(bytes: bytes.count)) {
                    perform(live.refuse(refusal))
                    continue
                }
                let format = driver.inputAudioFormat
                driver.feedAudio { try $0.appended(bytes, as: format) }
            case .arm(let timer, let afterMs):
                let task = socket.loop.schedule(after: Double(afterMs) / 1000) { [weak self] in
                    guard let self else { return }
                    self.perform(self.live.timer(timer, nowMs: self.nowMs))
                }
                switch timer {
                case .acknowledgement:
                    acknowledgementTimer?.cancel()
                    acknowledgementTimer = task
                case .fixtureEnds:
                    fixtureTimer?.cancel()
                    fixtureTimer = task
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

    func send(_ event: ServerEvent, on socket: any SessionSocket) {
        // The driver's own end of a session (its length limit) is Live's `session.closed`.
        if case .error(let error) = event.kind, error.code == "session_expired" {
            return socket.send(text: live.closed("expired", nowMs: nowMs).description)
        }
        perform(live.engine(event, nowMs: nowMs))
    }

    func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on socket: any SessionSocket) {
        guard case .pcm(let bytes) = piece, let event = live.replyAudio(bytes, responseID: at.responseID, nowMs: nowMs) else { return }
        socket.send(text: event.description)
    }
}
