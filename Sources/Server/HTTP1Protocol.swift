import Loop

/// HTTP/1.1 on a connection: request heads and bodies in, responses (whole or streamed) out,
/// keep-alive between them. Which answer a request gets is `RequestRouting`'s decision; this value
/// carries it out, and on an upgrade hands the connection to a `WebSocketProtocol`.
final class HTTP1Protocol {
    /// The transport this protocol speaks on; it owns this value, so it outlives it.
    unowned(unsafe) let connection: Connection
    private var parser: HTTPRequestParser
    /// A request whose body is still arriving. Boxed: most connections never have one.
    private var bodyPending: BodyPending?
    /// The body so far.
    private var body = ByteBuffer()
    /// The streamed response in progress; input waits until it ends.
    private var stream: HTTPResponseStream?
    /// An upgrade waiting for its admission's confirmation; input waits too.
    private var confirming = false

    init(connection: Connection, configuration: ServerConfiguration) {
        self.connection = connection
        parser = HTTPRequestParser(maxRequestLineBytes: configuration.maxRequestLineBytes, maxHeadBytes: configuration.maxHeadBytes,
                                   maxBodyBytes: configuration.maxBodyBytes)
    }

    private var serving: ServingLoop { connection.serving }

    var isReading: Bool { stream == nil && !confirming }
    var heapBytes: Int { parser.bufferedBytes + body.allocatedBytes }

    /// One step: a piece of a head or a body. Returns the bytes used, or zero while a streamed
    /// response is going out (the input after it waits in the transport).
    func process(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard isReading else { return 0 }
        return bodyPending == nil ? readHead(bytes) : readBody(bytes)
    }

    private func readHead(_ bytes: UnsafeRawBufferPointer) -> Int {
        switch parser.parse(bytes) {
        case .needMore:
            return bytes.count
        case .failure(let status):
            respond(.error(status), keepAlive: false)
            return bytes.count
        case .request(let request, let consumed):
            if request.contentLength > 0 {
                bodyPending = BodyPending(request: request, remaining: request.contentLength)
            } else {
                handle(request)
            }
            return consumed
        }
    }

    private func readBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        let pendingBody = bodyPending!
        let take = min(pendingBody.remaining, bytes.count)
        body.append(UnsafeRawBufferPointer(rebasing: bytes[..<take]))
        pendingBody.remaining -= take
        if pendingBody.remaining == 0 {
            var request = pendingBody.request
            request.body = Array(body.readable)
            body.release()
            bodyPending = nil
            handle(request)
        }
        return take
    }

    /// Carries out what routing decided.
    private func handle(_ request: HTTPRequest) {
        let configuration = serving.context.configuration
        let decision = RequestRouting.decide(request, router: serving.context.router, allowedOrigins: configuration.allowedOrigins,
                                             draining: serving.shuttingDown, reserveSession: { serving.reserveSession() })
        switch decision {
        case .respond(let response, let keepAlive, let includeBody):
            respond(response, keepAlive: keepAlive, includeBody: includeBody)
        case .refuse(let response):
            respond(response, keepAlive: false)
        case .stream(let serve, let keepAlive, let includeBody):
            let stream = HTTPResponseStream(exchange: self, keepAlive: keepAlive, includeBody: includeBody)
            self.stream = stream
            connection.clearDeadline()  // a stream may rightly take longer than any request deadline
            serve(request, stream)
        case .upgrade(let response, let endpoint, let admission):
            upgrade(response, endpoint, admission)
        case .confirmThenUpgrade(let response, let endpoint, let admission):
            confirming = true
            let connection = connection
            admission.confirm?(connection.loop) { [weak self] refusal in
                // The connection may have closed while the answer was on its way.
                guard let self, connection.isOpen, confirming else { return }
                confirming = false
                if let refusal { return respond(RequestRouting.refused(request, refusal), keepAlive: false) }
                if let refused = RequestRouting.reserveOrRefuse(request, { serving.reserveSession() }) {
                    return respond(refused, keepAlive: false)
                }
                upgrade(response, endpoint, admission)
                connection.resumeInput()
            }
        }
    }

    private func upgrade(_ response: HTTPResponse, _ endpoint: Router.WebSocketEndpoint, _ admission: WebSocketAdmission) {
        write(response.serialized(keepAlive: true))
        let webSocket = WebSocketProtocol(connection: connection, endpoint: endpoint, admission: admission)
        connection.adopt(.webSocket(webSocket))
        webSocket.opened()
    }

    private func respond(_ response: HTTPResponse, keepAlive: Bool, includeBody: Bool = true) {
        write(response.serialized(keepAlive: keepAlive, includeBody: includeBody))
        if keepAlive {
            connection.setDeadline(afterTicks: serving.handshakeTicks)
        } else {
            connection.finish(discardingInput: true)
        }
    }

    func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { connection.write($0, UnsafeRawBufferPointer(start: nil, count: 0)) }
    }

    /// The streamed response has been ended by its producer.
    func streamEnded(keepAlive: Bool) {
        stream = nil
        guard connection.isOpen else { return }
        guard keepAlive else { return connection.finish(discardingInput: true) }
        connection.setDeadline(afterTicks: serving.handshakeTicks)
        connection.resumeInput()
    }

    /// The TLS handshake or the request head never completed in time.
    func deadlinePassed() {
        connection.timedOut()
    }

    /// Idle HTTP connections are let go when the server drains; a response going out finishes first.
    func drain() {
        connection.closeAfterFlush()
    }

    func stopReading() {
        body.release()
    }

    func ended() {
        body.release()
        bodyPending = nil
        confirming = false
        if let stream {
            self.stream = nil
            stream.connectionClosed()
        }
    }
}

/// A request head whose body is still arriving.
private final class BodyPending {
    let request: HTTPRequest
    var remaining: Int

    init(request: HTTPRequest, remaining: Int) {
        self.request = request
        self.remaining = remaining
    }
}
