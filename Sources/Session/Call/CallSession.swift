import Access
import JSON
import Loop
import Server

/// A Realtime session whose client is a WebRTC call (`POST /v1/realtime/calls`): the same engine,
/// driver and events as `/v1/realtime`, carried by the WebRTC module. Its socket sends text events
/// on the call's `oai-events` data channel and Opus packets on its media track; what the caller
/// says arrives here packet by packet from the call's jitter buffer.
package final class CallSession: DirectedCall {
    private let handler: RealtimeSessionHandler
    /// The call and its sidebands, once the data channel opened.
    private var socket: CallSocket?

    fileprivate init(_ handler: RealtimeSessionHandler) { self.handler = handler }

    package var sessionID: String { handler.driver.engine.sessionID }

    /// The data channel is open: `session.created` goes out, and the session runs.
    package func open(_ call: any SessionSocket) {
        let socket = CallSocket(call)
        self.socket = socket
        handler.client = handler.firstClient
        handler.driver.open(socket)
    }

    /// A sideband WebSocket (on `remote`'s loop) gets the session's events from now on.
    package func attach(sideband: Handoff<WebSocket>, on remote: LoopHandle, id: ObjectIdentifier) {
        guard let socket else { return remote.execute { sideband.value.close(.policyViolation, reason: "the call has not opened its data channel yet") } }
        socket.sidebands[id] = RelayedSocket(home: socket.loop, remote: remote, socket: sideband)
    }

    package func detach(sideband id: ObjectIdentifier) { socket?.sidebands[id] = nil }

    package func receive(sidebandText text: String) {
        var text = text
        text.withUTF8 { receive(text: UnsafeRawBufferPointer($0)) }
    }

    /// A WebRTC call is answered by its offer's answer: only a hangup applies to it.
    package func control(_ action: CallControl) {
        if case .hangUp = action { hangUp() }
    }

    /// A text message on the data channel: one client event.
    package func receive(text: UnsafeRawBufferPointer) {
        handler.receive(text, kind: .text, from: handler.firstClient)
    }

    /// One 20 ms Opus packet of the caller's, in playout order.
    package func receive(opus packet: UnsafeRawBufferPointer) {
        handler.receive(packet, kind: .binary, from: handler.firstClient)
    }

    /// A packet that did not come in time: recovered from `next`'s in-band FEC when it is here,
    /// else concealed, so that the session's audio clock and its detectors see no gap.
    package func lost(next: UnsafeRawBufferPointer?) {
        guard handler.client != nil else { return }
        handler.driver.feedAudio { try $0.opusLost(next: next) }
    }

    /// What ends the call's transport (the WebRTC module's), for a hangup that came from outside it.
    package var onHangUp: (() -> Void)?

    /// `POST /v1/realtime/calls/{id}/hangup`: the call ends as if its client hung up.
    package func hangUp() { onHangUp?() }

    /// The call is over (hung up, its peer gone, its transport failed): the session ends.
    package func ended(_ code: WebSocketCloseCode) {
        socket?.closeSidebands()
        handler.socketClosed(code, from: handler.firstClient)
        // The call holds its session and the socket holds the call: let both go.
        socket = nil
        onHangUp = nil
    }
}

extension RealtimeEndpoint {
    /// Admits a call's session as an upgrade on `/v1/realtime` is admitted (its key, token or
    /// client secret, its tenant's limits), with the settings `session` (the
    /// multipart offer's `session` part) on top. `done` gets the session, or the refusal to answer
    /// the offer with, on `loop`.
    package func admitCall(_ request: HTTPRequest, session: JSON?, on loop: EventLoop, _ done: @escaping (Result<CallSession, HTTPRefusal>) -> Void) {
        switch access.admit(request, offered: []) {
        case .failure(let refusal):
            done(.failure(refusal))
        case .success(let admitted):
            let handler = RealtimeSessionHandler(endpoint: self, request: request, admitted: admitted, allowsOpus: true, call: session, isCall: true)
            let call = CallSession(handler)
            guard admitted.needsConfirmation else { return done(.success(call)) }
            admitted.confirm(session: call.sessionID, resuming: nil, on: loop) { refusal in
                if let refusal { return done(.failure(refusal)) }
                done(.success(call))
            }
        }
    }
}
