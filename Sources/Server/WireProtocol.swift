import Loop

/// What speaks on a connection: the value its transport hands input, deadlines and the drain to.
/// An upgrade swaps the value whole (as uWebSockets' WebSocket context adopts a socket from its
/// HTTP context); nothing else in the transport asks which protocol it carries.
///
/// An enum of final classes rather than an existential: one word in the transport (the payloads are
/// references, so the case goes in their spare bits), a switch to dispatch, and each protocol's state
/// exists only while that protocol speaks: the HTTP parser is freed at the upgrade. Another
/// protocol on a connection (HTTP/2, WebRTC signalling) is one more class and one more case here;
/// one another module speaks from the first byte (SIP over TCP) is a `StreamProtocol`.
enum WireProtocol {
    case http(HTTP1Protocol)
    case webSocket(WebSocketProtocol)
    case stream(StreamWire)

    /// Feeds input read from the socket; returns how many bytes were used. Zero: the protocol takes
    /// no input now (a streamed response is going out), and the rest waits in the transport.
    func process(_ bytes: UnsafeMutableRawBufferPointer) -> Int {
        switch self {
        case .http(let http): http.process(UnsafeRawBufferPointer(bytes))
        case .webSocket(let webSocket): webSocket.process(bytes)
        case .stream(let stream): stream.speaker?.process(UnsafeRawBufferPointer(bytes)) ?? bytes.count
        }
    }

    /// False while the protocol takes no input (a streamed response is going out).
    var isReading: Bool {
        switch self {
        case .http(let http): http.isReading
        case .webSocket, .stream: true
        }
    }

    /// Bytes arrived: a sign of life.
    func trafficReceived() {
        if case .webSocket(let webSocket) = self { webSocket.trafficReceived() }
    }

    /// The connection's one deadline passed while open.
    func deadlinePassed() {
        switch self {
        case .http(let http): http.deadlinePassed()
        case .webSocket(let webSocket): webSocket.deadlinePassed()
        case .stream(let stream): stream.speaker?.deadlinePassed()
        }
    }

    /// The server drains; `force` once its deadline has passed.
    func drain(force: Bool) {
        switch self {
        case .http(let http): http.drain()
        case .webSocket(let webSocket): webSocket.drain(force: force)
        // A stream protocol's peers are not sessions: the drain waits for none, and at its
        // deadline what is left closes.
        case .stream(let stream): if force { stream.handle.close() }
        }
    }

    /// The peer does not read what is sent and the outbound cap is reached.
    func outboundOverflowed() {
        switch self {
        case .http(let http): http.connection.close()
        case .webSocket(let webSocket): webSocket.outboundOverflowed()
        case .stream(let stream): stream.handle.closeNow()
        }
    }

    /// The transport lingers: input is discarded from now on, so half-built input is let go.
    func stopReading() {
        switch self {
        case .http(let http): http.stopReading()
        case .webSocket(let webSocket): webSocket.stopReading()
        case .stream: break
        }
    }

    /// Heap the protocol holds beyond its object: parser and assembly buffers, a handler's report.
    var heapBytes: Int {
        switch self {
        case .http(let http): http.heapBytes
        case .webSocket(let webSocket): webSocket.heapBytes
        case .stream(let stream): stream.speaker?.heapBytes ?? 0
        }
    }

    /// What malloc gave the protocol's object; fixed for its life, so measured once, at adoption.
    var objectBytes: Int {
        switch self {
        case .http(let http): HeapSize.of(http)
        case .webSocket(let webSocket): HeapSize.of(webSocket)
        case .stream(let stream): HeapSize.of(stream) + HeapSize.of(stream.handle) + (stream.speaker.map { HeapSize.of($0 as AnyObject) } ?? 0)
        }
    }

    /// The connection is ending: releases what the protocol holds and says what to count the close
    /// as (a WebSocket close code, and the endpoint whose open gauge goes down).
    func ended() -> (closeCode: WebSocketCloseCode?, endpoint: Int) {
        switch self {
        case .http(let http):
            http.ended()
            return (nil, 0)
        case .webSocket(let webSocket):
            return (webSocket.ended(), webSocket.endpoint)
        case .stream:
            return (nil, 0)
        }
    }

    /// The connection has been given back to the server: the handler may now be told.
    func closed() {
        switch self {
        case .http: break
        case .webSocket(let webSocket): webSocket.closed()
        case .stream(let stream): stream.speaker?.closed()
        }
    }

    /// The stream port the connection came on, for a `StreamProtocol`'s connection.
    var streamPort: Int? {
        if case .stream(let stream) = self { stream.port } else { nil }
    }

    /// The WebSocket protocol, once the connection has upgraded.
    var webSocket: WebSocketProtocol? {
        if case .webSocket(let webSocket) = self { webSocket } else { nil }
    }
}
