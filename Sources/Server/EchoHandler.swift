/// `/echo`: sends every message back as it came. Stateless, so one instance serves every connection.
public final class EchoHandler: WebSocketHandler, Sendable {
    public static let shared = EchoHandler()

    public func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        socket.send(message, kind: kind)
    }
}
