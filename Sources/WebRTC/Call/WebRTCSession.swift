import Access
import JSON
import Loop
import Server
import Session
import SessionEngine

/// A Realtime session whose client is a WebRTC call (`POST /v1/realtime/calls`): the same engine,
/// driver and events as `/v1/realtime`, carried by the WebRTC module. Its socket sends text events
/// on the call's `oai-events` data channel (and to its sidebands) and Opus packets on its media
/// track; what the caller says arrives here packet by packet from the call's jitter buffer, and
/// WebRTC's `output_audio_buffer` events follow its replies' audio.
package final class WebRTCSession: DirectedCall, SessionWire {
    private(set) var driver: SessionDriver!
    private let dialect: Dialect
    private var audio = OutputAudioBuffer()
    /// The call and its sidebands, from the data channel's opening to the call's end.
    private var socket: WebRTCSessionSocket?

    fileprivate init(endpoint: RealtimeEndpoint, request: HTTPRequest, admitted: Admitted, session: JSON?) {
        dialect = Dialect(openAIBetaHeader: request.header("openai-beta"))
        var options = SessionEngine.Options(realtime: request, endpoint: endpoint, caller: admitted.caller, allowsOpus: true, restoring: nil)
        options.carryAudioOnACall(session: session)
        driver = SessionDriver(endpoint: endpoint, admitted: admitted, options: options, wire: self)
        driver.echoGuardByDefault = endpoint.echoGuardByDefault
        driver.startTrace(traceparent: request.header("traceparent"), endpointName: endpointName)
    }

    package var sessionID: String { driver.engine.sessionID }

    /// The data channel is open: `session.created` goes out, and the session runs.
    package func open(_ call: any SessionSocket) {
        let socket = WebRTCSessionSocket(call)
        self.socket = socket
        driver.open(socket)
    }

    /// A sideband WebSocket (on `remote`'s loop) gets the session's events from now on.
    package func attach(sideband: Handoff<WebSocket>, on remote: LoopHandle, id: ObjectIdentifier) {
        guard let socket else { return remote.execute { sideband.value.close(.policyViolation, reason: "the call has not opened its data channel yet") } }
        socket.sidebands.attach(sideband, on: remote, id: id, home: socket.loop)
    }

    package func detach(sideband id: ObjectIdentifier) { socket?.sidebands.detach(id) }

    /// A sideband's event, as one on the data channel.
    package func receive(sidebandText text: String) {
        var text = text
        text.withUTF8 { receive(text: UnsafeRawBufferPointer($0)) }
    }

    /// A WebRTC call is answered by its offer's answer: only a hangup applies to it.
    package func control(_ action: CallControl) {
        if case .hangUp = action { hangUp() }
    }

    /// A text message on the data channel: one client event, under the session's event limits.
    package func receive(text: UnsafeRawBufferPointer) {
        guard socket != nil, driver.admitEvent() else { return }
        driver.receive(clientText: text)
    }

    /// One 20 ms Opus packet of the caller's, in playout order. The jitter buffer paces them, one
    /// a frame, so they do not count against the client's event limits (until 2026-11-27 they did,
    /// as a WebSocket's binary frames, while a lost packet's concealment did not).
    package func receive(opus packet: UnsafeRawBufferPointer) {
        guard socket != nil else { return }
        driver.feedAudio { try $0.opus(packet) }
    }

    /// A packet that did not come in time: recovered from `next`'s in-band FEC when it is here,
    /// else concealed, so that the session's audio clock and its detectors see no gap.
    package func lost(next: UnsafeRawBufferPointer?) {
        guard socket != nil else { return }
        driver.feedAudio { try $0.opusLost(next: next) }
    }

    /// What ends the call's transport (the WebRTC module's), for a hangup that came from outside it.
    package var onHangUp: (() -> Void)?

    /// `POST /v1/realtime/calls/{id}/hangup`: the call ends as if its client hung up.
    package func hangUp() { onHangUp?() }

    /// The call is over (hung up, its peer gone, its transport failed): the session ends.
    package func ended(_ ending: SessionEnding) {
        guard let socket else { return }
        socket.sidebands.closeAll()
        // The call holds its session and the socket holds the call: let both go.
        self.socket = nil
        onHangUp = nil
        driver.close(ending)
    }

    // MARK: SessionWire

    package var endpointName: String { "/v1/realtime/calls" }
    package var carriesLossyMedia: Bool { true }

    package func send(_ event: ServerEvent, on socket: any SessionSocket) {
        // Parley's turn-taking events are its own page's; a call's client is OpenAI's.
        guard event.isSent(in: dialect), !event.isParleyTurnTaking else { return }
        socket.send(text: event.json(dialect: dialect))
        switch event.kind {
        case .responseDone(let response):
            // A cancelled reply's audio was cut, not played out: cleared, not stopped.
            let ended = response.status == .cancelled ? audio.stopped(response.id) : audio.done(response.id)
            if let ended { send(driver.event(ended), on: socket) }
        case .outputAudioBufferCleared(let responseID):
            // The engine said it (the client's clear): not said twice.
            audio.cleared(responseID)
        default:
            break
        }
    }

    package func speechStopped(responseID: String, on socket: any SessionSocket) {
        if let cleared = audio.stopped(responseID) { send(driver.event(cleared), on: socket) }
    }

    package func sendAudio(_ piece: SpeechOutput.Piece, at: ContentLocation, on socket: any SessionSocket) {
        switch piece {
        case .opus(let packet):
            if let started = audio.audio(of: at.responseID) { send(driver.event(started), on: socket) }
            socket.send(binary: packet)
        case .pcm(let bytes):
            send(driver.event(.outputAudioDelta(at, audio: bytes)), on: socket)
        }
    }
}

extension RealtimeEndpoint {
    /// Admits a call's session as an upgrade on `/v1/realtime` is admitted (its key, token or
    /// client secret, its tenant's limits), with the settings `session` (the
    /// multipart offer's `session` part) on top. `done` gets the session, or the refusal to answer
    /// the offer with, on `loop`.
    package func admitCall(_ request: HTTPRequest, session: JSON?, on loop: EventLoop, _ done: @escaping (Result<WebRTCSession, HTTPRefusal>) -> Void) {
        admitCall(request, on: loop, make: { WebRTCSession(endpoint: self, request: request, admitted: $0, session: session) }, done)
    }

    /// Admits a call whose session `make` makes (a Realtime or a GPT-Live one) once the caller is
    /// admitted, and holds its tenant's place across processes when the count is shared.
    package func admitCall<Call: WebRTCCallSession>(_ request: HTTPRequest, on loop: EventLoop, make: (Admitted) -> Call,
                                                    _ done: @escaping (Result<Call, HTTPRefusal>) -> Void) {
        switch access.admit(request, offered: []) {
        case .failure(let refusal):
            done(.failure(refusal))
        case .success(let admitted):
            let call = make(admitted)
            guard admitted.needsConfirmation else { return done(.success(call)) }
            admitted.confirm(session: call.sessionID, resuming: nil, on: loop) { refusal in
                if let refusal { return done(.failure(refusal)) }
                done(.success(call))
            }
        }
    }
}
