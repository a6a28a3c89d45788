/// What a WebSocket endpoint's handler sees. Called on the connection's event loop only.
public protocol WebSocketHandler: AnyObject {
    func webSocketDidOpen(_ socket: WebSocket)
    /// `message` is valid only during the call; copy what must outlive it.
    func webSocket(_ socket: WebSocket, didReceive message: UnsafeRawBufferPointer, kind: WebSocketMessageKind)
    func webSocketDidClose(_ socket: WebSocket, code: WebSocketCloseCode)
    /// The server is draining (SIGTERM): true if the handler will close the socket itself before
    /// the drain's deadline (a session finishing its reply first), false to have it closed now
    /// with 1001. Past the deadline whatever is left is closed with 1001 regardless.
    func webSocketDrain(_ socket: WebSocket) -> Bool
}

extension WebSocketHandler {
    public func webSocketDrain(_ socket: WebSocket) -> Bool { false }
    public func webSocketDidOpen(_ socket: WebSocket) {}
    public func webSocketDidClose(_ socket: WebSocket, code: WebSocketCloseCode) {}
}
