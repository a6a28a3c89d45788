import Loop

/// A handler's grip on one upgraded connection. Use it only on the loop that called the handler;
/// once the connection has closed, sending does nothing.
public struct WebSocket {
    let connection: Connection

    /// Sends one data message, unfragmented.
    public func send(_ bytes: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        connection.wire.webSocket?.send(bytes, opcode: kind.opcode)
    }

    public func send(text: String) {
        var text = text
        text.withUTF8 { connection.wire.webSocket?.send(UnsafeRawBufferPointer($0), opcode: .text) }
    }

    public func send(binary: [UInt8]) {
        binary.withUnsafeBytes { connection.wire.webSocket?.send($0, opcode: .binary) }
    }

    /// Starts the closing handshake.
    public func close(_ code: WebSocketCloseCode = .normal, reason: String = "") {
        connection.wire.webSocket?.close(code, reason: reason)
    }

    public var isOpen: Bool { connection.isOpenWebSocket }

    /// Tells the connection's memory account what the handler holds for it (history, codec
    /// state), so that /metrics counts a session's memory, not only its socket's.
    public func account(handlerBytes: Int) { connection.wire.webSocket?.setHandlerBytes(handlerBytes) }
    /// The loop this connection lives on: schedule work with it, reach upstreams through it.
    public var loop: EventLoop { connection.loop }
}
