import Access
import Server
import SessionEngine

/// A GPT-Live session's primary WebSocket (`WS /v1/live/sessions`): its text messages to the
/// `LiveSession`, which writes its events back on it.
final class LiveSessionHandler: WebSocketHandler {
    let session: LiveSession

    /// A Live message may hold a fixture: 30 s of pcm16 at 24 kHz is 1.92 MB of base64. Up to 4 MiB
    /// (a minute of it), one too long is answered with an `error` and the session goes on; past
    /// that, the connection closes with 1009 as any oversized message does.
    static let maxMessageBytes = 4 << 20

    init(endpoint: RealtimeEndpoint, request: HTTPRequest, admitted: Admitted) {
        let options = SessionEngine.Options(realtime: request, endpoint: endpoint, caller: admitted.caller, allowsOpus: false, restoring: nil)
        session = LiveSession(endpoint: endpoint, admitted: admitted, options: options, endpointName: "/v1/live/sessions",
                              traceparent: request.header("traceparent"))
    }

    func webSocketDidOpen(_ socket: WebSocket) { session.open(socket) }

    func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        guard kind == .text else {
            return session.refuse(ProtocolError(.invalidValue, "a Live session takes JSON text messages; audio comes base64 in session.input_audio.append"))
        }
        session.receive(message)
    }

    func webSocketDidClose(_ socket: WebSocket, code: WebSocketCloseCode) { session.close(SessionEnding(code)) }
}
