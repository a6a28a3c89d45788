import CLinux
import Loop
import TLS
#if canImport(Glibc)
import Glibc
#endif

/// One client socket on one loop, for its whole life: the transport. It owns the descriptor, TLS,
/// the input held between reads, the write queue, the one deadline and the memory account, and
/// hands everything about meaning to the protocol speaking on it (`wire`): HTTP/1.1 first, and
/// WebSocket once a request upgrades. What it is given to send waits in the loop's `OutputCork`
/// until the loop is done with the event that sent it, and goes out in one write. Holds heap only while bytes are pending
/// (see `account()`).
final class Connection: LoopRegistrant {
    enum State {
        case open
        /// Our side is done and shut down for writing (or will be once the queue drains); input is
        /// read and discarded until the peer's EOF, so that it cannot turn our last bytes into a reset.
        case lingering
        case closed
    }

    // The small fields first: Swift lays a class's fields out in the order written, from the end
    // of its superclass's (here after `LoopRegistrant`'s one Bool), so these three bytes fill what
    // would be padding before `fd`, and the flags are bits of one byte. An idle connection is 104
    // bytes of object (malloc's 112-byte bin) this way, 168 before (docs/benchmarks.md, "Issue
    // 26's targets").
    private(set) var state = State.open
    /// Where a client that stopped reading is in being told so (see `enqueue`).
    private var overflow = Overflow.none
    private var flags: Flags = []

    let fd: Int32
    let registration: Registration
    unowned(unsafe) let serving: ServingLoop
    var loop: EventLoop { serving.loop }

    /// What speaks on this socket; `adopt` swaps it. Set in `init` as soon as `self` can be given
    /// to the protocol, and never nil after.
    private(set) var wire: WireProtocol!
    /// The TLS session on a port that serves TLS; nil on a plain one.
    private var tls: TLSStream?
    /// Input not yet used: an unfinished frame header or control frame (at most 131 bytes), or
    /// pipelined HTTP bytes held while a streamed response is going out (at most one read).
    private var pending = ByteBuffer()
    /// Bytes the socket would not take yet.
    private var outbound = ByteBuffer()
    /// Bytes currently reported to the loop's memory account.
    private var accounted: Int32 = 0
    /// The ledger's counter `accounted` is under (`MemoryLedger`): 0, plain HTTP, until an upgrade.
    private var accountedKind: Int32 = 0
    /// What malloc gave this object and its protocol's; fixed for each protocol's life.
    private var objectBytes: Int32 = 0
    /// This connection's place in the loop's list of corked connections (`OutputCork`), or -1
    /// when it has nothing corked.
    var corkIndex: Int32 = -1

    /// What the handler reports holding for this connection (a session's history and codecs).
    var handlerBytes: Int32 = 0

    private enum Overflow: UInt8 {
        case none
        /// The queue passed the cap: the close frame that says why is being written.
        case telling
        /// That frame is queued; anything more past the cap drops the connection.
        case told
    }

    private struct Flags: OptionSet {
        let rawValue: UInt8
        static let readWaitsForWritable = Flags(rawValue: 1 << 0)
        static let writeWaitsForReadable = Flags(rawValue: 1 << 1)
        static let handshaking = Flags(rawValue: 1 << 2)
        static let writeArmed = Flags(rawValue: 1 << 3)
        static let readPaused = Flags(rawValue: 1 << 4)
        static let finishing = Flags(rawValue: 1 << 5)
        static let isProcessing = Flags(rawValue: 1 << 6)
        static let reprocessPending = Flags(rawValue: 1 << 7)
    }

    private func flag(_ flag: Flags) -> Bool { flags.contains(flag) }
    private func set(_ flag: Flags, _ on: Bool) { if on { flags.insert(flag) } else { flags.remove(flag) } }

    /// A TLS read must wait for the socket to be writable (it has a key update to answer), or a
    /// TLS write for it to be readable. Rare; without these flags such a connection would stall.
    private var readWaitsForWritable: Bool { get { flag(.readWaitsForWritable) } set { set(.readWaitsForWritable, newValue) } }
    private var writeWaitsForReadable: Bool { get { flag(.writeWaitsForReadable) } set { set(.writeWaitsForReadable, newValue) } }
    /// Counted in the loop's handshakes in progress (which the handshake cap bounds).
    private var handshaking: Bool { get { flag(.handshaking) } set { set(.handshaking, newValue) } }
    private var writeArmed: Bool { get { flag(.writeArmed) } set { set(.writeArmed, newValue) } }
    private var readPaused: Bool { get { flag(.readPaused) } set { set(.readPaused, newValue) } }
    /// Close (or linger) once the outbound queue drains.
    private var finishing: Bool { get { flag(.finishing) } set { set(.finishing, newValue) } }
    /// Set while the protocol is processing input, so that input resumed inside it is not re-entered.
    private var isProcessing: Bool { get { flag(.isProcessing) } set { set(.isProcessing, newValue) } }
    /// Held input must be processed before the next read (the protocol takes input again).
    private var reprocessPending: Bool { get { flag(.reprocessPending) } set { set(.reprocessPending, newValue) } }

    /// `stream`: the connection came on a stream port (`ServingLoop.streamPorts`), with its index
    /// there, the peer's address and the port's first deadline; HTTP speaks first otherwise.
    init(fd: Int32, registration: Registration, serving: ServingLoop, tls: TLSStream? = nil,
         stream: (port: Int, peer: SocketAddress, idleTicks: UInt32)? = nil) {
        self.fd = fd
        self.tls = tls
        if tls != nil { flags.insert(.handshaking) }
        self.registration = registration
        self.serving = serving
        super.init()
        if let stream {
            let handle = StreamConnection(self, peer: stream.peer, isTLS: tls != nil)
            wire = .stream(StreamWire(handle: handle, port: stream.port, idleTicks: stream.idleTicks))
        } else {
            wire = .http(HTTP1Protocol(connection: self, configuration: serving.context.configuration))
        }
    }

    /// Registered and counted: the first deadline is set and the memory account opened.
    func opened() {
        objectBytes = Int32(HeapSize.of(self) + wire.objectBytes)
        accountedKind = Int32(ledgerSlot)
        account()
        loop.setDeadline(registration, afterTicks: tls == nil ? firstTicks : serving.tlsHandshakeTicks)
    }

    /// The deadline once the connection can speak (accepted, or its TLS handshake done): the
    /// request head's, or a stream port's own.
    private var firstTicks: UInt32 {
        if case .stream(let stream) = wire { stream.idleTicks } else { serving.handshakeTicks }
    }

    var isOpen: Bool { state == .open }
    var isOpenWebSocket: Bool { wire.webSocket?.isOpen ?? false }

    /// Another protocol speaks on this socket from now on (an upgrade); input still unread in this
    /// pass goes to it.
    func adopt(_ next: WireProtocol) {
        objectBytes += Int32(next.objectBytes - wire.objectBytes)
        wire = next
        let slot = Int32(ledgerSlot)
        if slot != accountedKind {
            // An upgrade: what was counted under plain HTTP moves to the endpoint's carrier.
            serving.metrics.ledger.counter(slot: Int(accountedKind)).add(-Int(accounted))
            serving.metrics.ledger.counter(slot: Int(slot)).add(Int(accounted))
            accountedKind = slot
        }
        account()
    }

    /// The ledger's counter for what the protocol speaking now holds (`MemoryLedger.slot`).
    private var ledgerSlot: Int { serving.metrics.ledger.slot(endpoint: wire.webSocket?.endpoint ?? 0, stream: wire.streamPort != nil) }

    // MARK: Reading

    /// Reads until the socket is drained, the read budget is spent, or reading must pause.
    /// `hungUp`: the peer's FIN came with this edge, so read on to the end of file even after a
    /// short read: no further edge will announce it.
    override func readable(hungUp: Bool) {
        read(hungUp: hungUp)
        // A connection that is not reading (a response is streaming) still hears the peer leave.
        if hungUp && state != .closed && !wire.isReading { close() }
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
        guard state != .closed, !readPaused, wire.isReading else { return }
        var source = TLSOrSocketSource(fd: fd, tls: tls)
        var prefix = 0
        let outcome = loop.readUntilDrained(from: &source, budget: 16, hungUp: hungUp, held: { buffer in
            // What a protocol left unprocessed goes in front of the new bytes, as one run.
            prefix = pending.count
            if prefix > 0 { buffer.baseAddress!.copyMemory(from: pending.readable.baseAddress!, byteCount: prefix) }
            return prefix
        }) { bytes in
            pending.release()
            serving.metrics.bytesIn.add(bytes.count - prefix)
            wire.trafficReceived()
            let consumed = process(bytes)
            if consumed < bytes.count && state != .closed {
                pending.append(UnsafeRawBufferPointer(rebasing: bytes[consumed...]))
            }
            account()
            return state != .closed && !readPaused && wire.isReading ? .readOn : .stop
        }
        if source.needsWritable {
            readWaitsForWritable = true
            armWrite(true)
        }
        switch outcome {
        case .drained, .stopped: return
        case .endOfFile, .failed: close()
        case .budgetSpent: loop.readAgain(registration)
        }
    }

    /// Moves the TLS handshake on; true once it is complete and the connection can read HTTP.
    private func continueHandshake(_ tls: TLSStream) -> Bool {
        let outcome = tls.handshake()
        switch outcome {
        case .transferred:
            handshakeEnded(.established)
            // What a connection we opened sent meanwhile goes now.
            armWrite(!outbound.isEmpty)
            // The request head now gets the whole of its own deadline.
            loop.setDeadline(registration, afterTicks: firstTicks)
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

    /// Runs the held input through the protocol without reading (it takes input again).
    private func processPending() {
        let count = pending.count
        guard count > 0, state != .closed else { return }
        let buffer = loop.readBuffer
        buffer.baseAddress!.copyMemory(from: pending.readable.baseAddress!, byteCount: count)
        pending.release()
        let bytes = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
        let consumed = process(bytes)
        if consumed < count && state != .closed { pending.append(UnsafeRawBufferPointer(rebasing: bytes[consumed...])) }
        account()
    }

    /// Feeds input to whichever protocol speaks, step by step, so that bytes after an upgrade
    /// request go to the protocol it adopted; returns how many were used.
    private func process(_ bytes: UnsafeMutableRawBufferPointer) -> Int {
        isProcessing = true
        defer { isProcessing = false }
        var offset = 0
        while offset < bytes.count {
            guard state == .open else { return bytes.count }  // lingering: discarded
            let used = wire.process(UnsafeMutableRawBufferPointer(rebasing: bytes[offset...]))
            if used == 0 { return offset }
            offset += used
        }
        return offset
    }

    /// The protocol takes input again (a streamed response ended): what waited is processed by the
    /// loop, not from inside a handler's call stack; when `process` itself is running, it carries on.
    func resumeInput() {
        guard !isProcessing else { return }
        reprocessPending = true
        loop.readAgain(registration)
    }

    // MARK: Writing

    /// Writes `a` then `b`: corked until the loop is done with this event (`OutputCork`) when nothing is
    /// queued, so that everything one event sends goes out in one write; behind the queue when
    /// something is, so that nothing is reordered.
    func write(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) {
        guard state != .closed else { return }
        guard outbound.isEmpty else { return enqueue(a, b) }
        if serving.cork.hold(self, a, b) { return }
        // Too large to cork, or the arena is full: what is corked goes first, then this.
        serving.cork.flush(self)
        guard outbound.isEmpty else { return enqueue(a, b) }
        writeNow(a, b)
    }

    /// Writes `a` then `b` to the socket now; what it will not take is queued, up to the configured
    /// cap, and EPOLLOUT armed until the queue drains. The cork's flush and large writes come here.
    func writeNow(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) {
        guard state != .closed else { return }
        // A connection we opened sends before its TLS handshake ends: it waits (see `continueHandshake`).
        if let tls { return tls.isEstablished ? writeTLS(tls, a, b) : enqueue(a, b) }
        let total = a.count + b.count
        var iov = (iovec(iov_base: UnsafeMutableRawPointer(mutating: a.baseAddress), iov_len: a.count),
                   iovec(iov_base: UnsafeMutableRawPointer(mutating: b.baseAddress), iov_len: b.count))
        let result: Sys.IOResult
        do {
            result = try withUnsafePointer(to: &iov) { pointer throws(SystemError) in
                try pointer.withMemoryRebound(to: iovec.self, capacity: 2) { vector throws(SystemError) in
                    try Sys.send(fd, vector, count: b.isEmpty ? 1 : 2)
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
        // One message may always be queued whole; past that, a client that does not read is told
        // why (a WebSocket close frame, which alone is let past the cap) and then dropped.
        if !outbound.isEmpty && outbound.count + a.count + b.count > cap {
            switch overflow {
            case .none where state == .open:
                overflow = .telling
                serving.metrics.dropped[DropReason.outboundCap.rawValue].add(1)
                wire.outboundOverflowed()
                if overflow == .telling { overflow = .told }
                return
            case .telling:
                overflow = .told
            default:
                return close()
            }
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
            do { result = try Sys.send(fd, UnsafeRawBufferPointer(outbound.readable)) } catch { return close() }
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
        guard writeArmed != on, state != .closed else { return }
        writeArmed = on
        loop.modify(registration, fd: fd, on ? [.readable, .writable, .edge] : [.readable, .edge])
    }

    // MARK: Ending

    /// Our side is done: linger once what is queued has gone out. `discardingInput`: input is
    /// dropped from now on (an HTTP response that closes), not left to the protocol.
    func finish(discardingInput: Bool) {
        serving.cork.flush(self)  // the last bytes go out before the half-close
        if discardingInput && state == .open { state = .lingering }
        finishing = true
        if outbound.isEmpty { linger() }
    }

    /// Closes now if nothing is queued, else once it has gone out.
    func closeAfterFlush() {
        serving.cork.flush(self)
        outbound.isEmpty ? close() : finish(discardingInput: false)
    }

    /// Half-close, then wait (bounded) for the peer's EOF before letting go of the socket.
    private func linger() {
        guard state != .closed else { return }
        finishing = false
        state = .lingering
        readPaused = false
        wire.stopReading()
        tls?.shutdown()
        Sys.shutdownWrite(fd)
        loop.setDeadline(registration, afterTicks: serving.closeTicks)
        account()
    }

    // MARK: Time

    func setDeadline(afterTicks ticks: UInt32) { loop.setDeadline(registration, afterTicks: ticks) }
    func clearDeadline() { loop.clearDeadline(registration) }

    /// The connection's one deadline has passed: the protocol's, while open; the peer never
    /// finished closing, while lingering.
    override func deadlinePassed() {
        switch state {
        case .open: wire.deadlinePassed()
        case .lingering: timedOut()
        case .closed: break
        }
    }

    /// A deadline the protocol cannot extend has passed (the TLS handshake, the request head).
    func timedOut() {
        handshakeEnded(.timedOut)
        close()
    }

    /// Graceful shutdown: the protocol decides (WebSocket sessions get 1001 unless their handler
    /// drains them itself and `force` is false; idle HTTP connections are let go).
    func shutdown(force: Bool = false) {
        guard state == .open else { return }
        wire.drain(force: force)
    }

    // MARK: Teardown and memory

    override func loopStopped() { close() }

    /// Releases everything now. Safe to call more than once.
    func close() {
        guard state != .closed else { return }
        // What was sent before the close is written first, as it was when every frame went out at
        // once; a failing write closes the connection from inside, and then there is nothing left.
        serving.cork.flush(self)
        guard state != .closed else { return }
        state = .closed
        pending.release()
        outbound.release()
        handshakeEnded(.closed)
        tls = nil
        let ending = wire.ended()
        accounted = Int32(clamping: serving.release(self, accounted: Int(accounted), accountedUnder: Int(accountedKind), closeCode: ending.closeCode, endpoint: ending.endpoint))
        wire.closed()
    }

    /// Reports this connection's heap to the loop: the objects and every buffer they hold.
    func account() {
        guard state != .closed else { return }
        let now = Int32(clamping: Int(objectBytes) + Int(handlerBytes) + (tls?.heapBytes ?? 0) + pending.allocatedBytes + outbound.allocatedBytes + wire.heapBytes)
        if now != accounted {
            serving.metrics.ledger.counter(slot: Int(accountedKind)).add(Int(now) - Int(accounted))
            accounted = now
        }
    }
}
