import Logging
import Loop
import TLS

/// The upstream client's log: failures at warning, naming the upstream by host and port only (a
/// path or query may carry a key).
let upstreamLog = Logger(label: "parley.upstream")
#if canImport(Glibc)
import Glibc
#endif

/// One client connection to an upstream server, on one loop: connect, send a request, read the
/// response as it streams, then wait in the pool for the next request or close.
///
/// Registered edge-triggered for reading and writing from the start: the first writable edge
/// reports the non-blocking connect's outcome, and with edges a writable socket costs no wake-ups.
/// For https, a TLS handshake follows the connect; the connect time-out covers both.
final class UpstreamConnection: LoopRegistrant {
    enum State {
        case connecting, tlsHandshaking, sending, awaitingHead, readingBody, idle, closed
    }

    let fd: Int32
    private let registration: Registration
    let key: String
    /// The host to verify (and send as SNI) for https; nil for http.
    private let tlsServerName: String?
    private var tls: TLSStream?
    /// A TLS read stopped until the socket is writable; the writable edge must read again.
    private var readWaitsForWritable = false
    unowned(unsafe) let loop: EventLoop
    unowned(unsafe) let client: HTTPClient

    private(set) var state = State.connecting
    private var call: HTTPClientCall?
    private var parser = HTTPResponseParser()
    private var outbound = ByteBuffer()
    private var timeouts = HTTPClientRequest.Timeouts()
    private var deadline: ScheduledTask?
    private var lastActivity: UInt64 = 0
    /// The request, kept while it may be retried: it went out on a pooled connection and no byte
    /// of an answer has come back. An upstream may close an idle keep-alive connection at the very
    /// moment we reuse it; that is no reason to fail the caller.
    private var retryable: HTTPClientRequest?

    private init(fd: Int32, registration: Registration, key: String, tlsServerName: String?, client: HTTPClient) {
        self.fd = fd
        self.registration = registration
        self.key = key
        self.tlsServerName = tlsServerName
        loop = client.loop
        self.client = client
    }

    /// Starts a non-blocking connect to `address` and registers the socket with the client's loop.
    static func open(_ address: SocketAddress, key: String, tlsServerName: String?, client: HTTPClient) throws(HTTPClientError) -> UpstreamConnection {
        let fd: Int32
        do {
            fd = try Sys.streamSocket(family: address.family)
        } catch {
            throw .connectFailed(error.description)
        }
        Sys.setNoDelay(fd)
        do {
            _ = try Sys.connect(fd, to: address)
            return try client.loop.register(fd, [.readable, .writable, .edge]) { registration in
                UpstreamConnection(fd: fd, registration: registration, key: key, tlsServerName: tlsServerName, client: client)
            }
        } catch {
            Sys.close(fd)
            throw .connectFailed(error.description)
        }
    }

    /// Takes on a request: a fresh connection sends it once connected, a pooled one at once.
    func start(_ call: HTTPClientCall, _ request: HTTPClientRequest) {
        self.call = call
        call.connection = self
        retryable = state == .idle ? request : nil
        timeouts = request.timeouts
        parser = HTTPResponseParser(bodiless: request.method == "HEAD")
        request.serialized().withUnsafeBytes { outbound.append($0) }
        if state == .connecting {
            arm(timeouts.connect) { $0.fail(.connectTimeout) }
        } else {
            state = .sending
            flush()
        }
    }

    // MARK: Events

    override func writable() {
        if state == .connecting {
            let error = Sys.socketError(fd)
            guard error == 0 else { return fail(.connectFailed(SystemError.reason(error))) }
            guard startTLS() else { return }
        }
        if state == .tlsHandshaking && !continueHandshake() { return }
        if state == .sending { flush() }
        if readWaitsForWritable {
            readWaitsForWritable = false
            readable(hungUp: false)
        }
    }

    /// `hungUp`: the upstream's FIN came with this edge; read on to the end of file.
    override func readable(hungUp: Bool) {
        if state == .tlsHandshaking {
            guard continueHandshake() else { return }
            flush()
        }
        guard state != .closed else { return }
        var source = TLSOrSocketSource(fd: fd, tls: tls)
        let outcome = loop.readUntilDrained(from: &source, hungUp: hungUp) { bytes in
            guard state == .awaitingHead || state == .readingBody else {  // idle: nothing may come
                close()
                return .stop
            }
            lastActivity = MonotonicClock.nanoseconds()
            retryable = nil
            return consume(UnsafeRawBufferPointer(bytes)) && state != .closed ? .readOn : .stop
        }
        // Registered for both edges, so a read waiting for writability needs no arming.
        if source.needsWritable { readWaitsForWritable = true }
        switch outcome {
        case .drained, .stopped, .budgetSpent: return
        case .endOfFile, .failed: lost()
        }
    }

    // MARK: TLS

    /// After the connect: begins the TLS handshake for https, or goes straight to sending.
    private func startTLS() -> Bool {
        guard let serverName = tlsServerName else {
            state = .sending
            return true
        }
        do {
            guard let context = client.tls else { throw TLSError("no CA certificates could be loaded to verify it") }
            tls = try TLSStream(context: context, fd: fd, serverName: serverName)
        } catch {
            fail(.tls("\(serverName): \(error)"))
            return false
        }
        state = .tlsHandshaking
        return true
    }

    /// True once the handshake is complete and the request can go out.
    private func continueHandshake() -> Bool {
        let serverName = tlsServerName ?? ""
        switch tls!.handshake() {
        case .transferred:
            state = .sending
            return true
        case .wantRead, .wantWrite:
            return false  // registered for both edges: whichever it waits for will come
        case .closed:
            fail(.tls("\(serverName): the server closed the connection during the TLS handshake"))
            return false
        case .failed(let error):
            fail(.tls("\(serverName): \(error)"))
            return false
        }
    }

    /// Runs the parser over fresh bytes; false once the response ended or the connection closed.
    private func consume(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while state != .closed {
            let (event, next) = parser.next(bytes, from: offset)
            offset = next
            switch event {
            case .needMore:
                return true
            case .head(let head):
                state = .readingBody
                arm(timeouts.idle) { $0.checkIdle() }
                call?.onHead?(HTTPClientResponseHead(status: head.status, headers: head.headers))
            case .body(let range):
                call?.onBody?(UnsafeRawBufferPointer(rebasing: bytes[range]))
            case .end(let reusable):
                complete(reusable: reusable && offset == bytes.count)
                return false
            case .failure(let why):
                fail(.malformedResponse(why))
                return false
            }
        }
        return false
    }

    // MARK: Transitions

    private func flush() {
        while !outbound.isEmpty {
            let queued = UnsafeRawBufferPointer(outbound.readable)
            if let tls {
                switch tls.write(queued) {
                case .transferred(let n): outbound.consume(n)
                case .wantRead, .wantWrite: return  // the next edge resumes
                case .closed, .failed: return lost()
                }
                continue
            }
            let result: Sys.IOResult
            do { result = try Sys.send(fd, queued) } catch { return lost() }
            guard case .transferred(let n) = result else { return }  // the next writable edge resumes
            outbound.consume(n)
        }
        state = .awaitingHead
        arm(timeouts.firstByte) { $0.fail(.firstByteTimeout) }
    }

    private func complete(reusable: Bool) {
        deadline?.cancel()
        let finished = call
        call = nil
        if reusable {
            state = .idle
            client.returnToPool(self)
        } else {
            close()
        }
        finished?.finish(.success(()))
    }

    /// The socket ended under us: a parser framed by the close may still complete.
    private func lost() {
        guard state == .readingBody, case .end = parser.connectionClosed() else {
            return state == .idle ? close() : fail(.connectionLost)
        }
        complete(reusable: false)
    }

    private func fail(_ error: HTTPClientError) {
        let failed = call
        let retry = error == .connectionLost ? retryable : nil
        call = nil
        close()
        if let failed, let retry, !failed.isFinished {
            upstreamLog.info("upstream closed a pooled connection; sending again on a fresh one", metadata: ["upstream": "\(origin)"])
            return client.retry(failed, retry)
        }
        if failed != nil { upstreamLog.warning("upstream request failed", metadata: ["upstream": "\(origin)", "error": "\(error)"]) }
        failed?.finish(.failure(error))
    }

    /// The caller cancelled: drop the connection so the upstream stops its work too.
    func abandon() {
        call = nil
        close()
    }

    func close() {
        guard state != .closed else { return }
        state = .closed
        deadline?.cancel()
        outbound.release()
        tls = nil
        client.removeFromPool(self)
        loop.deregister(registration)
        Sys.close(fd)
    }

    override func loopStopped() { close() }

    /// The upstream as scheme, host and port, for the log.
    private var origin: String { tlsServerName != nil ? "https://\(key.dropFirst())" : "http://\(key)" }

    // MARK: Time

    private func arm(_ seconds: Double, _ expired: @escaping (UpstreamConnection) -> Void) {
        deadline?.cancel()
        deadline = loop.schedule(after: seconds) { [weak self] in
            if let self { expired(self) }
        }
    }

    /// The idle deadline is checked lazily, so a streaming body does not reschedule on every read.
    private func checkIdle() {
        let quiet = Double(MonotonicClock.nanoseconds() &- lastActivity) / 1e9
        if quiet >= timeouts.idle { return fail(.idleTimeout) }
        arm(timeouts.idle - quiet) { $0.checkIdle() }
    }
}
