/// What a WebSocket endpoint's handler sees. Called on the connection's event loop only.
public protocol WebSocketHandler: AnyObject {
    func webSocketDidOpen(_ socket: WebSocket)
    /// `message` is valid only during the call; copy what must outlive it.
    func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind)
    func webSocketDidClose(_ socket: WebSocket, code: WebSocketCloseCode)
}

extension WebSocketHandler {
    public func webSocketDidOpen(_ socket: WebSocket) {}
    public func webSocketDidClose(_ socket: WebSocket, code: WebSocketCloseCode) {}
}
