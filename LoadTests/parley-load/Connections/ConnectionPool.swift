import Server
import CLinux
import Loop
import TLS
#if canImport(Glibc)
import Glibc
#endif

/// What the owner of a pool hears about its connections.
protocol ConnectionEvents: AnyObject {
    /// The 101 arrived: the connection is a WebSocket now.
    func opened(_ connection: ClientConnection, in pool: ConnectionPool)
    /// A whole data message arrived. `payload` is valid only during the call.
    func received(_ opcode: UInt8, _ payload: UnsafeRawBufferPointer, on connection: ClientConnection, in pool: ConnectionPool)
    /// The connection is gone, for `reason` (counted already in `failed` or `dropped`).
    func lost(_ connection: ClientConnection, reason: String, in pool: ConnectionPool)
}

extension ConnectionEvents {
    func opened(_ connection: ClientConnection, in pool: ConnectionPool) {}
    func received(_ opcode: UInt8, _ payload: UnsafeRawBufferPointer, on connection: ClientConnection, in pool: ConnectionPool) {}
    func lost(_ connection: ClientConnection, reason: String, in pool: ConnectionPool) {}
}

/// One process's share of the connections, on one epoll instance, driven by `step`. It opens them
/// at a bounded rate with a bounded number in flight, completes the upgrade, answers pings with
/// pongs and a close with a close, and counts every outcome by reason.
final class ConnectionPool {
    struct Plan {
        let target: LoadTarget
        /// Connections this pool opens.
        let count: Int
        /// Index of this pool's first connection across all processes, so that source addresses
        /// rotate the same way however the load is split.
        let firstIndex: Int
        let sources: Int
        /// Connections started per second.
        let rate: Double
        /// Seconds, from the pool's creation, by which every connection must be open.
        let connectTimeout: Double
    }

    /// Connects and handshakes in flight at once. The server's listen backlog is 4096 per loop;
    /// staying well under it means a burst is queued by us, not dropped as SYNs and retried a
    /// second later, which would read as a slow server.
    static let maxInFlight = 512
    /// Reads per readiness report before other connections get a turn.
    private static let readBudget = 16
    /// A server message larger than this is a protocol error here: nothing in these tests sends one.
    static let maxMessageBytes = 16 << 20
    private static let hangUpToken = UInt64.max

    let plan: Plan
    weak var events: (any ConnectionEvents)?
    /// The key a slot's connections offer as a subprotocol instead of the bearer header, if any
    /// (set before the first `step`; asked again at every reconnect).
    var offeredKey: ((Int) -> String?)?
    private let poller: Poller
    private var connections: [ClientConnection?]
    private var random = FastRandom()
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    let startedAt = MonotonicClock.nanoseconds()
    private let connectDeadline: UInt64

    private(set) var started = 0
    private(set) var inFlight = 0
    private(set) var connected = 0
    private(set) var open = 0
    /// Connections that never opened, by reason.
    private(set) var failed: [String: Int] = [:]
    /// Connections that opened and were then lost, by reason.
    private(set) var dropped: [String: Int] = [:]
    /// From connect(2) to the 101.
    private(set) var handshakeLatency = LatencyRecorder()
    /// Seconds from the pool's creation to the last connection opened.
    private(set) var lastOpenedSeconds = 0.0
    /// Pings answered: shows the held sessions were kept alive by the server's pings, not by luck.
    private(set) var pongsSent = 0
    /// The parent closed our stdin: it wants us gone.
    private(set) var hungUp = false
    /// What the parent wrote on our stdin and no one has taken yet (`turns` sends "start" lines).
    private var fromParent: [UInt8] = []

    init(_ plan: Plan) throws(ClientSocket.Failure) {
        self.plan = plan
        poller = try Poller()
        connections = Array(repeating: nil, count: plan.count)
        connectDeadline = startedAt + MonotonicClock.nanoseconds(plan.connectTimeout)
    }

    deinit {
        for case let connection? in connections { ClientSocket.close(connection.fd) }
        scratch.deallocate()
    }

    /// Every connection has been started and has either opened or failed.
    var settled: Bool { started == plan.count && inFlight == 0 }

    var failedCount: Int { failed.values.reduce(0, +) }
    var droppedCount: Int { dropped.values.reduce(0, +) }

    /// Watches `fd` (the worker's stdin) for end-of-file, which sets `hungUp`, and for lines,
    /// which `lineFromParent` hands out.
    func watchForHangUp(_ fd: Int32) {
        // epoll refuses regular files (stdin from /dev/null); such a worker relies on its time bound.
        try? poller.add(fd, events: EPOLLIN.rawValue, token: Self.hangUpToken)
    }

    /// Starts whatever connections are due, waits up to `timeoutMilliseconds` for readiness and
    /// handles it, and expires what the connect deadline leaves unfinished.
    func step(timeoutMilliseconds: Int32) {
        let now = MonotonicClock.nanoseconds()
        if !settled && now >= connectDeadline { expire() }
        startDue(now)
        // While connections remain to start, wake often enough to keep the rate smooth.
        let wait = started < plan.count ? min(timeoutMilliseconds, 1) : timeoutMilliseconds
        poller.wait(timeoutMilliseconds: wait) { token, events in dispatch(token, events) }
    }

    /// The pool's epoll descriptor: readable when a step has something to do, for an owner that
    /// waits on several pools at once with poll(2).
    var pollDescriptor: Int32 { poller.fd }

    /// Every open connection, for owners that act on all of them (the echo test's first sends).
    var openConnections: [ClientConnection] { connections.compactMap { $0?.isOpen == true ? $0 : nil } }

    // MARK: Opening

    private func startDue(_ now: UInt64) {
        let due = min(plan.count, Int(Double(now - startedAt) / 1e9 * plan.rate) + 1)
        while started < due && inFlight < Self.maxInFlight && now < connectDeadline {
            startOne(now)
        }
    }

    private func startOne(_ now: UInt64) {
        let slot = started
        started += 1
        inFlight += 1
        let source = plan.target.sourceAddress(index: plan.firstIndex + slot, sources: plan.sources)
        switch ClientSocket.connect(to: plan.target.address, from: source) {
        case .failure(let failure):
            inFlight -= 1
            failed[failure.call == "connect" ? failure.name : "\(failure.call): \(failure.name)", default: 0] += 1
        case .success(let fd):
            let connection = ClientConnection(fd: fd, slot: slot, startedAt: now, handshake: UpgradeHandshake(random: &random))
            connection.offeredKey = offeredKey?(slot)
            do {
                try poller.add(fd, events: Poller.readable | Poller.writable, token: UInt64(slot))
            } catch {
                ClientSocket.close(fd)
                inFlight -= 1
                failed["epoll_ctl: \(error.name)", default: 0] += 1
                return
            }
            connections[slot] = connection
        }
    }

    /// Opens slot `slot` again, whose connection is gone, upgrading on `path` (a resume). Returns
    /// the reason when the connect fails at once; later failures come to `lost` as for any
    /// connection. Not bounded by the connect timeout: the owner times its own attempts.
    func reconnect(slot: Int, path: String) -> Result<ClientConnection, LoadFailure> {
        precondition(connections[slot] == nil, "slot \(slot) is still in use")
        let now = MonotonicClock.nanoseconds()
        let source = plan.target.sourceAddress(index: plan.firstIndex + slot, sources: plan.sources)
        switch ClientSocket.connect(to: plan.target.address, from: source) {
        case .failure(let failure):
            return .failure(LoadFailure(failure.call == "connect" ? failure.name : "\(failure.call): \(failure.name)"))
        case .success(let fd):
            let connection = ClientConnection(fd: fd, slot: slot, startedAt: now, handshake: UpgradeHandshake(random: &random))
            connection.path = path
            connection.offeredKey = offeredKey?(slot)
            do {
                try poller.add(fd, events: Poller.readable | Poller.writable, token: UInt64(slot))
            } catch {
                ClientSocket.close(fd)
                return .failure(LoadFailure("epoll_ctl: \(error.name)"))
            }
            inFlight += 1
            connections[slot] = connection
            return .success(connection)
        }
    }

    /// Gives up on a connection (an attempt that took too long): counted and reported as any loss.
    func abandon(_ connection: ClientConnection, _ reason: String) {
        lose(connection, reason)
    }

    /// The connect deadline passed: whatever is not open by now has failed.
    private func expire() {
        // Reconnections (a path of their own) are timed by their owner.
        for case let connection? in connections where connection.path == nil && [.connecting, .tlsHandshaking, .handshaking].contains(connection.phase) {
            let reason = switch connection.phase {
            case .connecting: "timeout connecting"
            case .tlsHandshaking: "timeout in TLS handshake"
            default: "timeout in handshake"
            }
            lose(connection, reason)
        }
        if started < plan.count {
            failed["not started before the connect timeout", default: 0] += plan.count - started
            started = plan.count
        }
    }

    private func connectFinished(_ connection: ClientConnection) {
        let error = ClientSocket.pendingError(connection.fd)
        guard error == 0 else { return lose(connection, ErrnoName.of(error)) }
        guard let context = plan.target.tls else { return sendUpgrade(connection) }
        do {
            connection.tls = try TLSStream(context: context, fd: connection.fd, serverName: plan.target.serverName)
        } catch {
            return lose(connection, "TLS: \(error)")
        }
        connection.phase = .tlsHandshaking
        continueTLSHandshake(connection)
    }

    private func continueTLSHandshake(_ connection: ClientConnection) {
        switch connection.tls!.handshake() {
        case .transferred:
            connection.tlsWantsWrite = false
            sendUpgrade(connection)
        case .wantRead:
            connection.tlsWantsWrite = false
            updateInterest(connection)
        case .wantWrite:
            connection.tlsWantsWrite = true
            updateInterest(connection)
        case .closed:
            lose(connection, "EOF in TLS handshake")
        case .failed(let error):
            lose(connection, "\(error)")
        }
    }

    private func sendUpgrade(_ connection: ClientConnection) {
        connection.phase = .handshaking
        connection.handshake.request(for: plan.target, path: connection.path, offeredKey: connection.offeredKey).withUnsafeBytes { send($0, on: connection) }
        updateInterest(connection)
    }

    private func opened(_ connection: ClientConnection) {
        let now = MonotonicClock.nanoseconds()
        connection.phase = .open
        inFlight -= 1
        connected += 1
        open += 1
        handshakeLatency.record(now - connection.startedAt)
        lastOpenedSeconds = Double(now - startedAt) / 1e9
        events?.opened(connection, in: self)
    }

    // MARK: Readiness

    private func dispatch(_ token: UInt64, _ ready: UInt32) {
        if token == Self.hangUpToken { return checkHangUp() }
        guard let connection = connections[Int(token)] else { return }
        let failedOrHungUp = ready & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0
        if connection.phase == .connecting {
            if ready & Poller.writable != 0 || failedOrHungUp { connectFinished(connection) }
            return
        }
        if connection.phase == .tlsHandshaking { return continueTLSHandshake(connection) }
        if ready & Poller.writable != 0 { flush(connection) }
        if ready & Poller.readable != 0 || failedOrHungUp { readable(connection) }
    }

    private func checkHangUp() {
        var chunk = [UInt8](repeating: 0, count: 256)
        let n = chunk.withUnsafeMutableBytes { Glibc.read(0, $0.baseAddress, $0.count) }
        if n > 0 { fromParent += chunk[0..<n] }
        if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) { hungUp = true }
    }

    /// The next whole line the parent wrote, without its newline; nil until one has arrived.
    func lineFromParent() -> String? {
        guard let newline = fromParent.firstIndex(of: 0x0A) else { return nil }
        let line = String(decoding: fromParent[..<newline], as: UTF8.self)
        fromParent.removeFirst(newline + 1)
        return line
    }

    private func readable(_ connection: ClientConnection) {
        for _ in 0..<Self.readBudget {
            switch ClientTransport.read(connection.fd, connection.tls, into: scratch) {
            case .transferred(let n):
                consume(UnsafeRawBufferPointer(rebasing: scratch[0..<n]), on: connection)
                if connection.phase == .closed || n < scratch.count { return }
            case .wouldBlock:
                return
            case .endOfFile:
                return lose(connection, connection.phase == .handshaking ? "EOF in handshake" : "EOF")
            case .failed(let code):
                return lose(connection, ErrnoName.of(code))
            case .tlsFailed(let why):
                return lose(connection, why)
            }
        }
        // Budget spent: level-triggered epoll reports the rest on the next wait.
    }

    /// Feeds received bytes, after any kept from before, to the handshake or frame reader and keeps
    /// what does not yet make a whole head or frame.
    private func consume(_ bytes: UnsafeRawBufferPointer, on connection: ClientConnection) {
        if connection.inbound.isEmpty {
            let used = process(bytes, on: connection)
            if connection.phase != .closed && used < bytes.count {
                connection.inbound = Array(UnsafeRawBufferPointer(rebasing: bytes[used...]))
            }
            return
        }
        // Taken out while parsing, so that nothing reached from `process` touches it.
        var buffered = connection.inbound
        connection.inbound = []
        buffered.append(contentsOf: bytes)
        let used = buffered.withUnsafeBytes { process($0, on: connection) }
        if connection.phase != .closed && used < buffered.count {
            connection.inbound = Array(buffered[used...])
        }
    }

    /// Returns how many bytes were used.
    private func process(_ bytes: UnsafeRawBufferPointer, on connection: ClientConnection) -> Int {
        var offset = 0
        if connection.phase == .handshaking {
            switch connection.handshake.answer(bytes) {
            case .needMore: return 0
            case .refused(let reason):
                lose(connection, reason)
                return bytes.count
            case .upgraded(let headLength):
                offset = headLength
                opened(connection)
            }
        }
        while connection.phase == .open && offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            switch ServerFrame.parse(rest, maxPayload: Self.maxMessageBytes) {
            case .needMore:
                return offset
            case .invalid(let reason):
                protocolError(connection, reason)
            case .frame(let frame):
                offset += frame.totalLength
                handle(frame, UnsafeRawBufferPointer(rebasing: rest[frame.payloadOffset..<frame.totalLength]), on: connection)
            }
        }
        return connection.phase == .closed ? bytes.count : offset
    }

    private func handle(_ frame: ServerFrame, _ payload: UnsafeRawBufferPointer, on connection: ClientConnection) {
        switch frame.opcode {
        case ClientFrame.ping:
            pongsSent += 1
            sendFrame(ClientFrame.pong, payload, on: connection)
        case ClientFrame.pong:
            break
        case ClientFrame.close:
            // Answer with the same code (RFC 6455 section 5.5.1), then let go: the server closes
            // the TCP connection once it has our close.
            let code = payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil
            connection.closeCode = code
            if payload.count > 2 { connection.closeReason = String(decoding: payload[2...], as: UTF8.self) }
            sendFrame(ClientFrame.close, UnsafeRawBufferPointer(rebasing: payload.prefix(2)), on: connection)
            lose(connection, code.map { "server closed with \($0)" } ?? "server closed without a code")
        case ClientFrame.text, ClientFrame.binary:
            guard connection.fragmentOpcode == 0 else { return protocolError(connection, "new message inside a fragmented one") }
            if frame.final {
                events?.received(frame.opcode, payload, on: connection, in: self)
            } else {
                connection.fragmentOpcode = frame.opcode
                connection.fragments = Array(payload)
            }
        case 0x0:
            guard connection.fragmentOpcode != 0 else { return protocolError(connection, "continuation without a message") }
            connection.fragments.append(contentsOf: payload)
            guard connection.fragments.count <= Self.maxMessageBytes else { return protocolError(connection, "message too large") }
            guard frame.final else { return }
            let (opcode, message) = (connection.fragmentOpcode, connection.fragments)
            connection.fragmentOpcode = 0
            connection.fragments = []
            message.withUnsafeBytes { events?.received(opcode, $0, on: connection, in: self) }
        default:
            protocolError(connection, "unknown opcode \(frame.opcode)")
        }
    }

    private func protocolError(_ connection: ClientConnection, _ reason: String) {
        withUnsafeBytes(of: UInt16(1002).bigEndian) { sendFrame(ClientFrame.close, $0, on: connection) }
        lose(connection, "protocol error: \(reason)")
    }

    // MARK: Writing

    /// Sends one masked frame.
    func sendFrame(_ opcode: UInt8, _ payload: UnsafeRawBufferPointer, on connection: ClientConnection) {
        let mask = UInt32(truncatingIfNeeded: random.next())
        withUnsafeTemporaryAllocation(byteCount: WebSocketClientFrame.maxHeaderBytes + payload.count, alignment: 8) { frame in
            let n = WebSocketClientFrame.encode(opcode: opcode, payload: payload, mask: mask, into: frame)
            send(UnsafeRawBufferPointer(rebasing: frame[0..<n]), on: connection)
        }
    }

    /// Writes now what the socket takes and queues the rest until it is writable.
    func send(_ bytes: UnsafeRawBufferPointer, on connection: ClientConnection) {
        guard connection.phase != .closed else { return }
        guard connection.outbound.isEmpty else { return connection.outbound.append(contentsOf: bytes) }
        switch ClientTransport.write(connection.fd, connection.tls, bytes) {
        case .transferred(let n) where n == bytes.count:
            return
        case .transferred(let n):
            connection.outbound.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[n...]))
        case .wouldBlock, .endOfFile:
            connection.outbound.append(contentsOf: bytes)
        case .failed(let code):
            return lose(connection, ErrnoName.of(code))
        case .tlsFailed(let why):
            return lose(connection, why)
        }
        updateInterest(connection)
    }

    private func flush(_ connection: ClientConnection) {
        guard !connection.outbound.isEmpty else { return updateInterest(connection) }
        let queued = connection.outbound
        connection.outbound = []
        queued.withUnsafeBytes { send($0, on: connection) }
        if connection.phase != .closed { updateInterest(connection) }
    }

    private func updateInterest(_ connection: ClientConnection) {
        let wantsWritable = connection.phase == .connecting || !connection.outbound.isEmpty
            || (connection.phase == .tlsHandshaking && connection.tlsWantsWrite)
        guard wantsWritable != connection.wantsWritable, connection.phase != .closed else { return }
        connection.wantsWritable = wantsWritable
        poller.modify(connection.fd, events: Poller.readable | (wantsWritable ? Poller.writable : 0), token: UInt64(connection.slot))
    }

    // MARK: Closing

    /// Counts the connection as failed (never opened) or dropped (opened, then lost) and lets it go.
    private func lose(_ connection: ClientConnection, _ reason: String) {
        guard connection.phase != .closed else { return }
        if connection.phase == .open {
            open -= 1
            dropped[reason, default: 0] += 1
        } else {
            inFlight -= 1
            failed[reason, default: 0] += 1
        }
        connection.phase = .closed
        connection.tls = nil
        ClientSocket.close(connection.fd)
        connections[connection.slot] = nil
        events?.lost(connection, reason: reason, in: self)
    }

    /// The end of a run: a 1000 close frame to every open connection, and every socket closed.
    /// These are not counted as dropped.
    func closeAll() {
        for case let connection? in connections {
            if connection.phase == .open {
                withUnsafeBytes(of: UInt16(1000).bigEndian) { sendFrame(ClientFrame.close, $0, on: connection) }
                // A failed write has already counted and closed it.
                if connection.phase == .closed { continue }
                open -= 1
            } else {
                inFlight -= 1
            }
            connection.phase = .closed
            connection.tls = nil
            ClientSocket.close(connection.fd)
            connections[connection.slot] = nil
        }
    }
}
