/// A handler's grip on one upgraded connection. Use it only on the loop that called the handler;
/// once the connection has closed, sending does nothing.
public struct WebSocket {
    let connection: Connection

    /// Sends one data message, unfragmented.
    public func send(_ bytes: UnsafeRawBufferPointer, kind: WebSocketMessageKind) {
        connection.sendMessage(bytes, opcode: kind.opcode)
    }

    public func send(text: String) {
        var text = text
        text.withUTF8 { connection.sendMessage(UnsafeRawBufferPointer($0), opcode: .text) }
    }

    public func send(binary: [UInt8]) {
        binary.withUnsafeBytes { connection.sendMessage($0, opcode: .binary) }
    }

    /// Starts the closing handshake.
    public func close(_ code: WebSocketCloseCode = .normal, reason: String = "") {
        connection.closeWebSocket(code, reason: reason)
    }

    public var isOpen: Bool { connection.isOpenWebSocket }
    /// The loop this connection lives on: schedule work with it, reach upstreams through it.
    public var loop: EventLoop { connection.loop }
    /// The subprotocol agreed in the handshake, if any.
    public var subprotocol: String? { connection.subprotocol }
}
