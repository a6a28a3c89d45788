import Server

/// The `/ws` endpoint until the session engine lands: greets with `session.created` and answers
/// every text message with an `error` event that says the event is not handled yet, so clients see
/// the protocol's shape rather than silence. Binary (audio) frames are accepted and dropped.
public final class PlaceholderSessionHandler: WebSocketHandler, Sendable {
    public static let shared = PlaceholderSessionHandler()

    public func webSocketDidOpen(_ socket: WebSocket) {
        socket.send(text: #"{"type":"session.created","session":{"object":"realtime.session"}}"#)
    }

    public func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        guard kind == .text else { return }
        socket.send(text: #"{"type":"error","error":{"type":"invalid_request_error","code":"not_implemented","message":"this server does not handle session events yet"}}"#)
    }
}
