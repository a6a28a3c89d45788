import Loop

/// A response written over time, with chunked transfer encoding: `start`, then `write` as often
/// as there is something to send (each write is one chunk, sent at the end of the loop's pass with
/// whatever else the connection sent in it), then `end`.
///
/// Use it on its loop only (`loop.schedule` paces it). `onClose` runs if the client goes away
/// first, so the producer can stop; after that every call does nothing.
public final class HTTPResponseStream {
    /// Keeps the connection (and so its HTTP protocol) alive while the producer holds the stream.
    private let connection: Connection
    private let exchange: HTTP1Protocol
    private let keepAlive: Bool
    private let includeBody: Bool
    private var started = false
    public private(set) var isOpen = true
    /// Called once if the connection ends before `end()`.
    public var onClose: (() -> Void)?

    init(exchange: HTTP1Protocol, keepAlive: Bool, includeBody: Bool) {
        connection = exchange.connection
        self.exchange = exchange
        self.keepAlive = keepAlive
        self.includeBody = includeBody
    }

    public var loop: EventLoop { connection.loop }

    /// Sends the status and headers. Without `start`, the first `write` sends 200.
    public func start(_ status: HTTPStatus = .ok, headers: [(String, String)] = []) {
        guard isOpen, !started else { return }
        started = true
        var head = "HTTP/1.1 \(status.code) \(status.reason)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Transfer-Encoding: chunked\r\n"
        head += keepAlive ? "\r\n" : "Connection: close\r\n\r\n"
        exchange.write(Array(head.utf8))
    }

    public func write(_ text: String) { write(Array(text.utf8)) }

    public func write(_ bytes: [UInt8]) {
        guard isOpen, !bytes.isEmpty else { return }
        if !started { start() }
        guard includeBody else { return }
        exchange.write(Array((String(bytes.count, radix: 16) + "\r\n").utf8) + bytes + [13, 10])
    }

    /// Finishes the response; the connection goes on to its next request (or closes).
    public func end() {
        guard isOpen else { return }
        if !started { start() }
        if includeBody { exchange.write(Array("0\r\n\r\n".utf8)) }
        isOpen = false
        onClose = nil
        exchange.streamEnded(keepAlive: keepAlive)
    }

    /// Answers with one whole response (its Content-Length, no chunks) instead of a stream: for a
    /// route that needs its loop to decide the answer (a WebRTC call is made on the loop whose UDP
    /// port the answer names) but has the whole answer at once.
    public func respond(_ response: HTTPResponse) {
        guard isOpen, !started else { return }
        started = true
        exchange.write(response.serialized(keepAlive: keepAlive, includeBody: includeBody))
        isOpen = false
        onClose = nil
        exchange.streamEnded(keepAlive: keepAlive)
    }

    /// Drops the connection without finishing the response (for fault injection and give-ups).
    public func abort() {
        guard isOpen else { return }
        connection.close()
    }

    /// The connection is gone.
    func connectionClosed() {
        guard isOpen else { return }
        isOpen = false
        let callback = onClose
        onClose = nil
        callback?()
    }
}
