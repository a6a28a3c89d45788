import CLinux
import Logging
import Loop
import TLS
#if canImport(Glibc)
import Glibc
#endif

/// One client socket on one loop, for its whole life: the HTTP request, the upgrade, the
/// WebSocket frames, the close. Holds heap only while bytes are pending (see `account()`).
final class Connection: LoopRegistrant {
    enum Mode {
        /// Reading HTTP requests (and serving plain ones, with keep-alive).
        case http
        case webSocket
        /// Our side is done and shut down for writing; reading and discarding until the peer's EOF,
        /// so that unread input cannot turn our last bytes into a reset.
        case lingering
        case closed
    }

    let fd: Int32
    let registration: Registration
    unowned(unsafe) let serving: ServingLoop
    var loop: EventLoop { serving.loop }

    private(set) var mode = Mode.http
    private var http: HTTPRequestParser
    private var reader: WebSocketFrameReader
    private var handler: (any WebSocketHandler)?
    private(set) var subprotocol: String?
    /// Index into the per-endpoint metrics: 0 until upgraded.
    private var endpoint = 0
    /// The TLS session on a port that serves TLS; nil on a plain one.
    private var tls: TLSStream?
    /// A TLS read must wait for the socket to be writable (it has a key update to answer), or a
    /// TLS write for it to be readable. Rare; without these flags such a connection would stall.
    private var readWaitsForWritable = false
    private var writeWaitsForReadable = false
    /// Counted in the loop's handshakes in progress (which the handshake cap bounds).
    private var handshaking: Bool

    /// Input not yet used: an unfinished frame header or control frame (at most 131 bytes), or
    /// pipelined HTTP bytes held while a streamed response is going out (at most one read).
    private var pending = ByteBuffer()
    /// A fragmented WebSocket message, or an HTTP request body, being put together.
    private var assembly = ByteBuffer()
    /// A request whose body is still arriving. Boxed: most connections never have one.
    private var bodyPending: BodyPending?
    /// The streamed response in progress; reading waits until it ends.
    private var stream: HTTPResponseStream?
    /// Set while `process` runs, so a response that ends inside it does not re-enter it.
    private var isProcessing = false
    /// Pending input must be processed before the next read (a stream ended).
    private var reprocessPending = false
    /// Bytes the socket would not take yet.
    private var outbound = ByteBuffer()

    private var writeArmed = false
    private var readPaused = false
    /// Close (or linger) once the outbound queue drains.
    private var finishing = false
    /// The close handshake, pings and idleness once upgraded (RFC 6455 section 7): the rules live
    /// in this value machine; this class only carries out its actions.
    private var webSocket: WebSocketCloseMachine
    /// Bytes currently reported to the loop's memory account.
    private var accounted = 0
    /// What malloc gave this object; fixed for its life, so measured once.
    private var objectBytes = 0
    /// What the WebSocket handler reports holding for this connection.
    private var handlerBytes = 0

    init(fd: Int32, registration: Registration, serving: ServingLoop, tls: TLSStream? = nil) {
        self.fd = fd
        self.tls = tls
        handshaking = tls != nil
        self.registration = registration
        self.serving = serving
        let config = serving.context.configuration
        http = HTTPRequestParser(maxRequestLineBytes: config.maxRequestLineBytes, maxHeadBytes: config.maxHeadBytes,
                                 maxBodyBytes: config.maxBodyBytes)
        reader = WebSocketFrameReader(maxMessageBytes: config.maxMessageBytes)
        webSocket = WebSocketCloseMachine(now: serving.loop.now)
    }

    /// Registered and counted: the first deadline is set and the memory account opened.
    func opened() {
        objectBytes = malloc_usable_size(Unmanaged.passUnretained(self).toOpaque())
        account()
        loop.setDeadline(registration, afterTicks: tls == nil ? serving.handshakeTicks : serving.tlsHandshakeTicks)
    }

    var isOpenWebSocket: Bool { mode == .webSocket && webSocket.isOpen }

    // MARK: Reading

    /// Reads until the socket is drained, the read budget is spent, or reading must pause.
    /// `hungUp`: the peer's FIN came with this edge, so read on to the end of file even after a
    /// short read: no further edge will announce it.
    override func readable(hungUp: Bool) {
        read(hungUp: hungUp)
        // A connection that is not reading (a response is streaming) still hears the peer leave.
        if hungUp && stream != nil { close() }
    }

    private func read(hungUp: Bool) {
        if let tls, !tls.isEstablished {
            guard continueHandshake(tls) else { return }
        }
        if writeWaitsForReadable {
            writeWaitsForReadable = false
            writable()
        }
        if reprocessPending {
            reprocessPending = false
            processPending()
        }
        var budget = 16
        while budget > 0 {
            guard mode != .closed, !readPaused, stream == nil else { return }
            budget -= 1
            let buffer = loop.readBuffer
            let prefix = pending.count
            if prefix > 0 { buffer.baseAddress!.copyMemory(from: pending.readable.baseAddress!, byteCount: prefix) }
            let space = UnsafeMutableRawBufferPointer(rebasing: buffer[prefix...])
            let result: Sys.IOResult
            do { result = try receive(into: space) } catch { return close() }
            switch result {
            case .wouldBlock: return
            case .endOfFile: return close()
            case .transferred(let n):
                pending.release()
                serving.metrics.bytesIn.add(n)
                webSocket.trafficReceived(now: loop.now)
                let bytes = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<(prefix + n)])
                let consumed = process(bytes)
                if consumed < bytes.count && mode != .closed {
                    pending.append(UnsafeRawBufferPointer(rebasing: bytes[consumed...]))
                }
                account()
                // Edge-triggered: a short read means the socket is drained, and new data brings a new
                // edge. Not so for TLS, which reads a record at a time: it reads on to `wantRead`.
                if n < space.count && !hungUp && tls == nil { return }
            }
        }
        loop.readAgain(registration)
    }

    /// One read from the socket, through TLS when the port serves it.
    private func receive(into space: UnsafeMutableRawBufferPointer) throws(SystemError) -> Sys.IOResult {
        guard let tls else { return try Sys.read(fd, into: space) }
        let result = tls.read(into: space, needsWritable: &readWaitsForWritable)
        if readWaitsForWritable { armWrite(true) }
        return result
    }

    /// Moves the TLS handshake on; true once it is complete and the connection can read HTTP.
    private func continueHandshake(_ tls: TLSStream) -> Bool {
        let outcome = tls.handshake()
        switch outcome {
        case .transferred:
            handshakeEnded(.established)
            armWrite(false)
            // The request head now gets the whole of its own deadline.
            loop.setDeadline(registration, afterTicks: serving.handshakeTicks)
        case .wantRead:
            armWrite(false)
        case .wantWrite:
            armWrite(true)
        case .closed:
            handshakeEnded(.closed)
            close()
        case .failed:
            handshakeEnded(.failed)
            close()
        }
        account()
        return outcome == .transferred(0)
    }

    private func handshakeEnded(_ result: TLSHandshakeResult) {
        guard handshaking else { return }
        handshaking = false
        serving.tlsHandshakeEnded(result)
    }

    /// Runs the held input through the protocol without reading (a streamed response has ended).
    private func processPending() {
        let count = pending.count
        guard count > 0, mode != .closed else { return }
        let buffer = loop.readBuffer
        buffer.baseAddress!.copyMemory(from: pending.readable.baseAddress!, byteCount: count)
        pending.release()
        let bytes = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
        let consumed = process(bytes)
        if consumed < count && mode != .closed { pending.append(UnsafeRawBufferPointer(rebasing: bytes[consumed...])) }
        account()
    }

    /// Feeds freshly read bytes to the current protocol; returns how many it used.
    private func process(_ bytes: UnsafeMutableRawBufferPointer) -> Int {
        isProcessing = true
        defer { isProcessing = false }
        var offset = 0
        while offset < bytes.count {
            let rest = UnsafeMutableRawBufferPointer(rebasing: bytes[offset...])
            switch mode {
            case .http where stream != nil:
                return offset  // the rest waits for the streamed response to end
            case .http where bodyPending != nil:
                offset += readBody(UnsafeRawBufferPointer(rest))
            case .http:
                offset += processHTTP(UnsafeRawBufferPointer(rest))
            case .webSocket:
                return offset + processFrames(rest)
            case .lingering, .closed:
                return bytes.count
            }
        }
        return offset
    }

    // MARK: HTTP

    private func processHTTP(_ bytes: UnsafeRawBufferPointer) -> Int {
        switch http.parse(bytes) {
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
        assembly.append(UnsafeRawBufferPointer(rebasing: bytes[..<take]))
        pendingBody.remaining -= take
        if pendingBody.remaining == 0 {
            var request = pendingBody.request
            request.body = Array(assembly.readable)
            assembly.release()
            bodyPending = nil
            handle(request)
        }
        return take
    }

    private func handle(_ request: HTTPRequest) {
        guard let route = serving.context.router.route(request.path) else {
            return respond(.error(.notFound), keepAlive: request.keepAlive)
        }
        switch route {
        case .http(let methods):
            let isHead = request.method == "HEAD"
            guard let responder = methods[isHead ? "GET" : request.method] else {
                let allowed = methods.keys.sorted() + (methods["GET"] != nil ? ["HEAD"] : [])
                return respond(.error(.methodNotAllowed, headers: [("Allow", allowed.joined(separator: ", "))]), keepAlive: request.keepAlive)
            }
            switch responder {
            case .complete(let serve):
                respond(serve(request), keepAlive: request.keepAlive, includeBody: !isHead)
            case .streaming(let serve):
                let stream = HTTPResponseStream(connection: self, keepAlive: request.keepAlive && !serving.shuttingDown, includeBody: !isHead)
                self.stream = stream
                loop.clearDeadline(registration)  // a stream may rightly take longer than any request deadline
                serve(request, stream)
            }
        case .webSocket(let endpoint):
            if let allowed = serving.context.configuration.allowedOrigins, let origin = request.header("origin"),
               !allowed.contains(where: { $0.lowercased() == origin.lowercased() }) {
                serverLog.info("upgrade refused", metadata: ["path": "\(request.path)", "status": "403", "reason": "origin"])
                return respond(.jsonError(.forbidden, code: "origin_not_allowed", message: "this server does not accept sessions from pages at \(origin)"),
                               keepAlive: false)
            }
            if serving.shuttingDown {
                // Draining: this node takes no new sessions; the balancer sends the client elsewhere.
                serverLog.info("upgrade refused", metadata: ["path": "\(request.path)", "status": "503", "reason": "draining"])
                return respond(.jsonError(.serviceUnavailable, code: "draining", message: "this server is restarting; connect again",
                                          headers: [("Retry-After", "1")]), keepAlive: false)
            }
            switch WebSocketHandshake.evaluate(request, admit: endpoint.admit) {
            case .refuse(let response):
                serverLog.info("upgrade refused", metadata: ["path": "\(request.path)", "status": "\(response.status.code)"])
                respond(response, keepAlive: false)
            case .accept where !serving.reserveSession():
                serverLog.info("upgrade refused", metadata: ["path": "\(request.path)", "status": "503", "reason": "session_limit"])
                respond(.error(.serviceUnavailable, headers: [("Retry-After", "1")]), keepAlive: false)
            case .accept(let response, let admission):
                respondRaw(response.serialized(keepAlive: true), keepAlive: true)
                upgrade(endpoint, admission)
            }
        }
    }

    private func respond(_ response: HTTPResponse, keepAlive: Bool, includeBody: Bool = true) {
        let bytes = response.serialized(keepAlive: keepAlive && !serving.shuttingDown, includeBody: includeBody)
        respondRaw(bytes, keepAlive: keepAlive)
    }

    private func respondRaw(_ bytes: [UInt8], keepAlive: Bool) {
        bytes.withUnsafeBytes { write($0, UnsafeRawBufferPointer(start: nil, count: 0)) }
        if !keepAlive || serving.shuttingDown {
            mode = mode == .http ? .lingering : mode
            finishAfterFlush()
        } else if mode == .http {
            loop.setDeadline(registration, afterTicks: serving.handshakeTicks)
        }
    }

    func writeStreamBytes(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0, UnsafeRawBufferPointer(start: nil, count: 0)) }
    }

    /// The streamed response has been ended by its producer.
    func streamEnded(keepAlive: Bool) {
        stream = nil
        guard mode == .http else { return }
        guard keepAlive else {
            mode = .lingering
            return finishAfterFlush()
        }
        loop.setDeadline(registration, afterTicks: serving.handshakeTicks)
        // Input that waited behind the response is processed by the loop, not from inside a
        // handler's call stack; when `process` itself is running, its loop simply carries on.
        guard !isProcessing else { return }
        reprocessPending = true
        loop.readAgain(registration)
    }

    private func upgrade(_ endpoint: Router.WebSocketEndpoint, _ admission: WebSocketAdmission) {
        mode = .webSocket
        http = HTTPRequestParser(maxRequestLineBytes: 0, maxHeadBytes: 0)
        subprotocol = admission.subprotocol
        serving.metrics.open[self.endpoint].add(-1)
        self.endpoint = endpoint.metricsIndex
        serving.metrics.open[self.endpoint].add(1)
        webSocket.trafficReceived(now: loop.now)
        loop.setDeadline(registration, afterTicks: WebSocketCloseMachine.initialTimer(serving.webSocketTiming))
        handler = admission.handler
        admission.handler.webSocketDidOpen(WebSocket(connection: self))
    }

    // MARK: WebSocket

    private func processFrames(_ bytes: UnsafeMutableRawBufferPointer) -> Int {
        var offset = 0
        while mode == .webSocket {
            let (consumed, event) = reader.read(UnsafeMutableRawBufferPointer(rebasing: bytes[offset...]))
            offset += consumed
            switch event {
            case .needMore:
                return offset
            case .data(let kind, let chunk, let first, let last):
                deliver(kind, UnsafeRawBufferPointer(chunk), first: first, last: last)
            case .ping(let payload):
                if webSocket.pingReceived() == .sendPong { writeFrame(.pong, UnsafeRawBufferPointer(payload)) }
            case .pong:
                break  // any traffic already counts as a sign of life
            case .close(let code, _):
                perform(webSocket.closeReceived(code))
                return bytes.count
            case .failure(let code, let reason):
                // "Fail the WebSocket Connection" (RFC 6455 section 7.1.7): say why, then stop.
                perform(webSocket.protocolFailed(code, reason: reason))
                return bytes.count
            }
            if offset == bytes.count && !reader.isInsideFrame { return offset }
        }
        return bytes.count
    }

    private func deliver(_ kind: WebSocketMessageKind, _ chunk: UnsafeRawBufferPointer, first: Bool, last: Bool) {
        // After our close frame, the RFC lets us drop whatever data still arrives.
        guard webSocket.dataReceived() else { return }
        if first && last {
            serving.metrics.messagesIn.add(1)
            handler?.webSocket(WebSocket(connection: self), didReceive: chunk, kind: kind)
            return
        }
        assembly.append(chunk)
        guard last else { return }
        serving.metrics.messagesIn.add(1)
        handler?.webSocket(WebSocket(connection: self), didReceive: UnsafeRawBufferPointer(assembly.readable), kind: kind)
        assembly.release()
    }

    func sendMessage(_ payload: UnsafeRawBufferPointer, opcode: WebSocketOpcode) {
        guard mode == .webSocket, webSocket.isOpen else { return }
        serving.metrics.messagesOut.add(1)
        writeFrame(opcode, payload)
    }

    private func writeFrame(_ opcode: WebSocketOpcode, _ payload: UnsafeRawBufferPointer) {
        withUnsafeTemporaryAllocation(byteCount: WebSocketFrameWriter.maxHeaderBytes, alignment: 1) { header in
            let n = WebSocketFrameWriter.header(opcode, payloadLength: payload.count, into: header)
            write(UnsafeRawBufferPointer(rebasing: header[..<n]), payload)
        }
    }

    /// Server-initiated close: send ours, wait (bounded) for theirs.
    func closeWebSocket(_ code: WebSocketCloseCode, reason: String) {
        guard mode == .webSocket else { return }
        perform(webSocket.closeRequested(code, reason: reason, timing: serving.webSocketTiming))
    }

    /// Carries out what the close machine decided.
    private func perform(_ action: WebSocketCloseMachine.Action) {
        switch action {
        case .none, .sendPong:
            break  // a pong is written where the ping's payload is at hand
        case .sendPing(let timeout):
            writeFrame(.ping, UnsafeRawBufferPointer(start: nil, count: 0))
            loop.setDeadline(registration, afterTicks: timeout)
        case .schedule(let ticks):
            loop.setDeadline(registration, afterTicks: ticks)
        case .sendClose(let code, let reason, let then):
            let payload = code.map { WebSocketFrameWriter.closePayload($0, reason: reason) } ?? []
            payload.withUnsafeBytes { writeFrame(.close, $0) }
            switch then {
            case .awaitPeer(let ticks): loop.setDeadline(registration, afterTicks: ticks)
            case .finish: finishAfterFlush()
            }
        case .finish:
            finishAfterFlush()
        case .drop:
            close()
        }
    }

    // MARK: Writing

    /// Writes `a` then `b`, straight to the socket when nothing is queued; what the socket will not
    /// take is queued, up to the configured cap.
    private func write(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) {
        guard mode != .closed else { return }
        guard outbound.isEmpty else { return enqueue(a, b) }
        if let tls { return writeTLS(tls, a, b) }
        let total = a.count + b.count
        var iov = (iovec(iov_base: UnsafeMutableRawPointer(mutating: a.baseAddress), iov_len: a.count),
                   iovec(iov_base: UnsafeMutableRawPointer(mutating: b.baseAddress), iov_len: b.count))
        let result: Sys.IOResult
        do {
            result = try withUnsafePointer(to: &iov) { pointer throws(SystemError) in
                try pointer.withMemoryRebound(to: iovec.self, capacity: 2) { vector throws(SystemError) in
                    try Sys.writev(fd, vector, count: b.isEmpty ? 1 : 2)
                }
            }
        } catch {
            return close()
        }
        switch result {
        case .transferred(let n):
            serving.metrics.bytesOut.add(n)
            if n == total { return }
            if n < a.count {
                enqueue(UnsafeRawBufferPointer(rebasing: a[n...]), b)
            } else {
                enqueue(UnsafeRawBufferPointer(start: nil, count: 0), UnsafeRawBufferPointer(rebasing: b[(n - a.count)...]))
            }
        case .wouldBlock, .endOfFile:
            enqueue(a, b)
        }
    }

    /// `write` over TLS: a frame's header and payload go out as one record when they fit in one.
    private func writeTLS(_ tls: TLSStream, _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) {
        let total = a.count + b.count
        let scratch = serving.tlsWriteScratch
        if !a.isEmpty && !b.isEmpty && total <= scratch.count {
            UnsafeMutableRawBufferPointer(rebasing: scratch[..<a.count]).copyMemory(from: a)
            UnsafeMutableRawBufferPointer(rebasing: scratch[a.count..<total]).copyMemory(from: b)
            guard let n = sendTLS(tls, UnsafeRawBufferPointer(rebasing: scratch[..<total])) else { return close() }
            if n < total { enqueue(UnsafeRawBufferPointer(rebasing: scratch[n..<total]), UnsafeRawBufferPointer(start: nil, count: 0)) }
            return
        }
        guard let n = sendTLS(tls, a) else { return close() }
        guard n == a.count else { return enqueue(UnsafeRawBufferPointer(rebasing: a[n...]), b) }
        guard let m = sendTLS(tls, b) else { return close() }
        if m < b.count { enqueue(UnsafeRawBufferPointer(start: nil, count: 0), UnsafeRawBufferPointer(rebasing: b[m...])) }
    }

    /// Bytes TLS took (possibly none: the socket is full); nil when the session failed.
    private func sendTLS(_ tls: TLSStream, _ bytes: UnsafeRawBufferPointer) -> Int? {
        guard !bytes.isEmpty else { return 0 }
        switch tls.write(bytes) {
        case .transferred(let n):
            serving.metrics.bytesOut.add(n)
            return n
        case .wantWrite:
            return 0
        case .wantRead:
            writeWaitsForReadable = true
            return 0
        case .closed, .failed:
            return nil
        }
    }

    private func enqueue(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) {
        let cap = serving.context.configuration.maxOutboundBytes
        // One message may always be queued whole; past that, a client that does not read is dropped.
        if !outbound.isEmpty && outbound.count + a.count + b.count > cap {
            return mode == .webSocket ? perform(webSocket.outboundOverflowed()) : close()
        }
        outbound.append(a)
        outbound.append(b)
        if outbound.count > cap / 2 { readPaused = true }
        armWrite(true)
        account()
    }

    /// The socket can take bytes again.
    override func writable() {
        if let tls {
            if !tls.isEstablished {
                if continueHandshake(tls) { loop.readAgain(registration) }
                return
            }
            if readWaitsForWritable {
                readWaitsForWritable = false
                loop.readAgain(registration)
            }
        }
        while !outbound.isEmpty {
            if let tls {
                guard let n = sendTLS(tls, UnsafeRawBufferPointer(outbound.readable)) else { return close() }
                guard n > 0 else { return }
                outbound.consume(n)
                continue
            }
            let result: Sys.IOResult
            do { result = try Sys.write(fd, UnsafeRawBufferPointer(outbound.readable)) } catch { return close() }
            guard case .transferred(let n) = result else { return }
            serving.metrics.bytesOut.add(n)
            outbound.consume(n)
        }
        armWrite(false)
        account()
        if readPaused {
            readPaused = false
            loop.readAgain(registration)
        }
        if finishing { linger() }
    }

    private func armWrite(_ on: Bool) {
        guard writeArmed != on, mode != .closed else { return }
        writeArmed = on
        loop.modify(registration, fd: fd, on ? [.readable, .writable, .edge] : [.readable, .edge])
    }

    private func finishAfterFlush() {
        finishing = true
        if outbound.isEmpty { linger() }
    }

    /// Half-close, then wait (bounded) for the peer's EOF before letting go of the socket.
    private func linger() {
        guard mode != .closed else { return }
        finishing = false
        mode = .lingering
        readPaused = false
        assembly.release()
        tls?.shutdown()
        Sys.shutdownWrite(fd)
        loop.setDeadline(registration, afterTicks: serving.closeTicks)
        account()
    }

    // MARK: Time

    /// The connection's one deadline has passed; what it meant depends on the mode.
    override func deadlinePassed() {
        switch mode {
        case .http, .lingering:
            // The TLS handshake or the request head never completed, or the peer never finished closing.
            handshakeEnded(.timedOut)
            close()
        case .webSocket:
            perform(webSocket.timerFired(now: loop.now, timing: serving.webSocketTiming))
        case .closed:
            break
        }
    }

    /// Graceful shutdown: WebSocket sessions get 1001 (unless their handler drains them itself, and
    /// `force` is false), idle HTTP connections are let go.
    func shutdown(force: Bool = false) {
        switch mode {
        case .webSocket:
            if !force, let handler, handler.webSocketDrain(WebSocket(connection: self)) { return }
            perform(webSocket.shutdownRequested(timing: serving.webSocketTiming))
        case .http: outbound.isEmpty ? close() : finishAfterFlush()
        case .lingering, .closed: break
        }
    }

    // MARK: Teardown and memory

    override func loopStopped() { close() }

    /// Releases everything now. Safe to call more than once.
    func close() {
        guard mode != .closed else { return }
        let wasWebSocket = handler != nil
        mode = .closed
        pending.release()
        assembly.release()
        outbound.release()
        bodyPending = nil
        handshakeEnded(.closed)
        tls = nil
        if let stream {
            self.stream = nil
            stream.connectionClosed()
        }
        webSocket.connectionEnded()
        accounted = serving.release(self, accounted: accounted, closeCode: wasWebSocket ? webSocket.reportedCode : nil, endpoint: endpoint)
        if let handler {
            self.handler = nil
            handler.webSocketDidClose(WebSocket(connection: self), code: webSocket.reportedCode)
        }
    }

    func setHandlerBytes(_ bytes: Int) {
        handlerBytes = bytes
        account()
    }

    /// Reports this connection's heap to the loop: the object itself and every buffer it holds.
    private func account() {
        guard mode != .closed else { return }
        let now = objectBytes + handlerBytes + (tls?.heapBytes ?? 0) + pending.allocatedBytes + assembly.allocatedBytes + outbound.allocatedBytes + http.bufferedBytes
        if now != accounted {
            serving.metrics.accountedBytes.add(now - accounted)
            accounted = now
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
