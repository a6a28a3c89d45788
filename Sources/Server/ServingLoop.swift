import Logging
import Loop

/// The server's log: refusals at info (an upgrade turned away) or warning (connections refused at a
/// limit, at most one line a second per loop with the count), never a header's value.
let serverLog = Logger(label: "parley.server")
import TLS
#if canImport(Glibc)
import Glibc
#endif

/// The server's part of one event loop: admitting connections from the listener, their shared
/// settings and counters, and the graceful drain. The loop itself knows nothing of any of this;
/// connections are simply its registrants.
final class ServingLoop {
    let loop: EventLoop
    let context: ServerContext
    let metrics: LoopMetrics
    /// Where a frame's header and payload are put together to be encrypted as one TLS record.
    let tlsWriteScratch: UnsafeMutableRawBufferPointer
    /// What this loop's connections send during a pass, written at its end: one write per connection.
    let cork = OutputCork()

    let handshakeTicks: UInt32
    let closeTicks: UInt32
    let tlsHandshakeTicks: UInt32
    /// Idle, ping and close time-outs of upgraded connections.
    let webSocketTiming: WebSocketCloseMachine.Timing

    private var openCount = 0
    /// When to give the memory of a wave of closed connections back (`HeapReturn`).
    private var heap = HeapReturn()
    private var tlsHandshakesInProgress = 0
    private let maxTLSHandshakes: Int
    private var acceptor: Acceptor?
    /// The ports of other modules' protocols (`ServerConfiguration.streamPorts`), each with its
    /// acceptor and its connections open on this loop.
    private var streamPorts: [(port: StreamPort, acceptor: Acceptor, open: Int)] = []
    /// Each connection's client address, by slot, while per-address limits are on (empty otherwise).
    private var hosts: [Int32: HostKey] = [:]
    private(set) var shuttingDown = false
    /// A check for the end of the drain is scheduled (one at a time).
    private var waitingToStop = false
    private var stopped = false
    /// Upgraded sessions on this loop: a drain ends when none is left.
    private var sessionsHere = 0
    /// Connections refused since the last warning about it, and when that was (in loop ticks).
    private var refusedSinceLog = 0
    private var lastRefusalLog: UInt32?

    init(loop: EventLoop, context: ServerContext, metrics: LoopMetrics, listenFD: Int32) throws(SystemError) {
        self.loop = loop
        self.context = context
        self.metrics = metrics
        metrics.ledger.install(on: loop)
        // 16 KiB is TLS's largest record; 14 bytes the largest frame header.
        tlsWriteScratch = .allocate(byteCount: context.tls == nil ? 0 : 16384 + 14, alignment: 16)
        let c = context.configuration
        handshakeTicks = loop.ticks(seconds: c.handshakeTimeout)
        closeTicks = loop.ticks(seconds: c.closeTimeout)
        webSocketTiming = .init(idleTicks: loop.ticks(seconds: c.idleTimeout), pingTicks: loop.ticks(seconds: c.pingTimeout),
                                closeTicks: closeTicks)
        tlsHandshakeTicks = loop.ticks(seconds: c.tlsHandshakeTimeout)
        maxTLSHandshakes = max(1, c.maxTLSHandshakes / max(1, c.loops))
        acceptor = try Acceptor.listen(on: listenFD, for: self)
        for port in c.streamPorts?(loop) ?? [] { listen(port) }
        loop.onStopRequested = { [unowned self] in beginShutdown() }
        loop.afterEachEvent { [cork] in cork.flushAll() }
    }

    deinit {
        tlsWriteScratch.deallocate()
    }

    // MARK: Admission

    func admit(_ fd: Int32) {
        let limit = context.configuration.maxConnections + ServerContext.httpReserve
        if context.openConnections.add(1, ordering: .relaxed).newValue > limit {
            context.openConnections.subtract(1, ordering: .relaxed)
            refused(.connectionLimit)
            // A 503 in the clear means nothing to a TLS client; it just sees the connection close.
            if context.tls == nil { Self.busy.withUnsafeBytes { Sys.sendOnce(fd, $0) } }
            return Sys.close(fd)
        }
        var host: HostKey?
        if context.addressLimits.isActive, let peer = try? Sys.peerAddress(fd) {
            switch context.addressLimits.admit(peer.hostKey, now: MonotonicClock.nanoseconds()) {
            case .admitted:
                host = peer.hostKey
            case let verdict:
                context.openConnections.subtract(1, ordering: .relaxed)
                refused(verdict == .tooFast ? .addressRate : .addressConnections)
                if context.tls == nil { Self.tooMany.withUnsafeBytes { Sys.sendOnce(fd, $0) } }
                return Sys.close(fd)
            }
        }
        // A TLS port's connection without its session (past the handshake cap) is refused.
        let tls = context.tls.map { tlsSession($0.context, fd: fd) }
        guard tls.map({ $0 != nil }) ?? true, let connection = register(fd, tls: tls.flatMap { $0 }) else {
            context.openConnections.subtract(1, ordering: .relaxed)
            if let host { context.addressLimits.release(host, now: MonotonicClock.nanoseconds()) }
            return Sys.close(fd)
        }
        if let host { hosts[connection.registration.slot] = host }
        openCount += 1
        heap.opened(open: openCount)
        metrics.accepted.add(1)
        metrics.open[0].add(1)
        connection.opened()
    }

    /// A TLS session for `fd`, within the handshake cap that TLS on every port shares; nil, the
    /// refusal counted, past it.
    private func tlsSession(_ context: TLSContext, fd: Int32) -> TLSStream? {
        guard tlsHandshakesInProgress < maxTLSHandshakes, let session = try? TLSStream(context: context, fd: fd) else {
            refused(.tlsHandshakeLimit)
            return nil
        }
        return session
    }

    /// `fd` as one of the loop's connections (no Nagle delay), its handshake counted; nil if the
    /// loop could not register it.
    private func register(_ fd: Int32, tls: TLSStream?, stream: (port: Int, peer: SocketAddress, idleTicks: UInt32)? = nil) -> Connection? {
        Sys.setNoDelay(fd)
        guard let connection = try? loop.register(fd, [.readable, .edge], { Connection(fd: fd, registration: $0, serving: self, tls: tls, stream: stream) }) else {
            return nil
        }
        if tls != nil {
            tlsHandshakesInProgress += 1
            metrics.tlsHandshakesInProgress.add(1)
        }
        return connection
    }

    /// Listens on `port` too; a port that cannot be bound is logged, and the loop serves the rest.
    private func listen(_ port: StreamPort) {
        do throws(SystemError) {
            let fd = try Sys.streamSocket(family: port.address.family)
            do throws(SystemError) {
                try Sys.listen(fd, on: port.address)
                streamPorts.append((port, try Acceptor.listen(on: fd, for: self, port: streamPorts.count), 0))
                port.dialer?(StreamDialer(serving: self, port: streamPorts.count - 1))
            } catch {
                Sys.close(fd)
                throw error
            }
        } catch {
            serverLog.error("a stream port was not opened on a loop", metadata: ["address": "\(port.address)", "error": "\(error)"])
        }
    }

    /// A connection on a stream port: within the port's count, its TLS session made (within the
    /// handshake cap, which TLS on any port shares), and its protocol asked to speak, which may
    /// refuse it. Not counted among the HTTP port's connections, nor in its per-address limits.
    func admit(_ fd: Int32, streamPort index: Int) {
        let port = streamPorts[index].port
        guard streamPorts[index].open < port.maxConnections else {
            refused(.connectionLimit)
            return Sys.close(fd)
        }
        // A peer gone between the accept and now: nothing to refuse.
        guard let peer = try? Sys.peerAddress(fd) else { return Sys.close(fd) }
        let tls = port.tls.map { tlsSession($0, fd: fd) }
        guard tls.map({ $0 != nil }) ?? true,
              let connection = register(fd, tls: tls.flatMap { $0 }, stream: (index, peer, loop.ticks(seconds: port.idleSeconds))) else {
            return Sys.close(fd)
        }
        streamPorts[index].open += 1
        guard case .stream(let wire) = connection.wire, let speaker = port.speak(wire.handle) else { return connection.close() }
        wire.speaker = speaker
        connection.opened()
    }

    /// A connection this loop opens on stream port `index` (`StreamDialer`): counted on the port,
    /// its TLS session (the client's) within the handshake cap, its protocol asked to speak, its
    /// TLS handshake begun at once (its ClientHello waits for the connect, as any write does).
    func dial(port index: Int, to address: SocketAddress, tls context: TLSContext?, serverName: String?,
              speak: (StreamConnection) -> (any StreamProtocol)?) -> StreamConnection? {
        let port = streamPorts[index].port
        guard streamPorts[index].open < port.maxConnections, let fd = try? Sys.streamSocket(family: address.family) else { return nil }
        guard (try? Sys.connect(fd, to: address)) != nil else {
            Sys.close(fd)
            return nil
        }
        var tls: TLSStream?
        if let context {
            guard tlsHandshakesInProgress < maxTLSHandshakes, let session = try? TLSStream(context: context, fd: fd, serverName: serverName) else {
                Sys.close(fd)
                return nil
            }
            tls = session
        }
        guard let connection = register(fd, tls: tls, stream: (index, address, loop.ticks(seconds: port.idleSeconds))) else {
            Sys.close(fd)
            return nil
        }
        streamPorts[index].open += 1
        guard case .stream(let wire) = connection.wire, let speaker = speak(wire.handle) else {
            connection.close()
            return nil
        }
        wire.speaker = speaker
        connection.opened()
        if tls != nil { connection.writable() }
        return wire.handle
    }

    /// Counts a refused connection and says so in the log, at most once a second: a flood of
    /// refusals must not become a flood of log lines.
    func refused(_ reason: RefusalReason) {
        metrics.refused[reason.rawValue].add(1)
        refusedSinceLog += 1
        if let last = lastRefusalLog, loop.now &- last < loop.ticks(seconds: 1) { return }
        serverLog.warning("refusing connections", metadata: ["reason": "\(reason.labelValue)", "refused": "\(refusedSinceLog)", "loop": "\(loop.handle.index)"])
        refusedSinceLog = 0
        lastRefusalLog = loop.now
    }

    private static let tooMany = HTTPResponse.jsonError(.tooManyRequests, code: "rate_limit_exceeded",
                                                        message: "too many connections from this address; retry in a second",
                                                        headers: [("Retry-After", "1")]).serialized(keepAlive: false)

    private static let busy = HTTPResponse.error(.serviceUnavailable, headers: [("Retry-After", "1")]).serialized(keepAlive: false)

    /// Takes a session slot for an upgrade; false when `maxConnections` sessions are open.
    func reserveSession() -> Bool {
        if context.openSessions.add(1, ordering: .relaxed).newValue <= context.configuration.maxConnections {
            sessionsHere += 1
            return true
        }
        context.openSessions.subtract(1, ordering: .relaxed)
        metrics.refused[RefusalReason.connectionLimit.rawValue].add(1)
        return false
    }

    /// A connection's TLS handshake is over, one way or another.
    func tlsHandshakeEnded(_ result: TLSHandshakeResult) {
        tlsHandshakesInProgress -= 1
        metrics.tlsHandshakesInProgress.add(-1)
        metrics.tlsHandshakes[result.rawValue].add(1)
    }

    /// Called by a closing connection: gives back its registration, descriptor and counters.
    /// Returns the connection's accounted bytes after release (zero).
    func release(_ connection: Connection, accounted: Int, accountedUnder kind: Int, closeCode: WebSocketCloseCode?, endpoint: Int) -> Int {
        if let port = connection.wire.streamPort {
            loop.deregister(connection.registration)
            Sys.close(connection.fd)
            streamPorts[port].open -= 1
            metrics.ledger.counter(slot: kind).add(-accounted)
            return 0
        }
        if !hosts.isEmpty, let host = hosts.removeValue(forKey: connection.registration.slot) {
            context.addressLimits.release(host, now: MonotonicClock.nanoseconds())
        }
        loop.deregister(connection.registration)
        Sys.close(connection.fd)
        openCount -= 1
        if heap.closed(open: openCount) { scheduleHeapTrim() }
        context.openConnections.subtract(1, ordering: .relaxed)
        if endpoint > 0 { context.openSessions.subtract(1, ordering: .relaxed) }
        metrics.open[endpoint].add(-1)
        metrics.closed[CloseLabel(closeCode).index].add(1)
        metrics.ledger.counter(slot: kind).add(-accounted)
        if endpoint > 0 { sessionsHere -= 1 }
        if shuttingDown && sessionsHere == 0 { stopWhenDrained() }
        return 0
    }

    private func scheduleHeapTrim() {
        _ = loop.schedule(after: HeapReturn.delaySeconds) { [weak self] in
            guard let self else { return }
            let before = ProcessMemory.residentBytes()
            loop.compactSlab()
            Sys.trimHeap()
            heap.trimmed(open: openCount)
            serverLog.info("freed memory returned after connections closed",
                           metadata: ["open": "\(openCount)", "rss_mb_before": "\(before >> 20)", "rss_mb_after": "\(ProcessMemory.residentBytes() >> 20)"])
        }
    }

    // MARK: Shutdown

    /// Drains: `/readyz` goes 503 and upgrades are refused, but the listener stays open so that a
    /// balancer's checks get that answer rather than a refused connection. Every connection is
    /// asked to close (a session handler may first finish its reply, then closes with 1012 and
    /// its resume token); calls are let finish, new ones refused (`LoopDrain`: SIP's 503 with
    /// Retry-After). Once this loop holds no session and no call, or at `shutdownTimeout` with
    /// whatever is left closed with 1001 and every call ended (a SIP call's BYE), the loop stops.
    private func beginShutdown() {
        shuttingDown = true
        context.drain.begin()
        LoopDrain.on(loop).begin()
        loop.forEachRegistrant { ($0 as? Connection)?.shutdown() }
        if sessionsHere == 0 { stopWhenDrained() }
        loop.schedule(after: context.configuration.shutdownTimeout) { [weak self] in
            guard let self else { return }
            // Calls first, and the rest a moment later: a call's end reaches its sidebands through
            // their loops' queues (`the call ended: drained`), so a force close made at once got
            // there before it (make chaos: sidebands closed 1001 with their calls still up).
            LoopDrain.on(loop).bound()
            loop.schedule(after: 0.1) { [weak self] in
                self?.loop.forEachRegistrant { ($0 as? Connection)?.shutdown(force: true) }
            }
            // The close handshakes and the BYEs get a moment; then the loop stops whatever is left.
            loop.schedule(after: 1) { [weak self] in self?.stopNow() }
        }
    }

    /// This loop holds no session: it stops once no loop does and it holds no call. Until then
    /// its listener stays open and answers (a probe's 503): a loop that stopped early closed its
    /// listener with connections in its backlog, which SO_REUSEPORT had given it, and those met a
    /// reset (most likely what a drain test's reads met, once, in a clean clone's `make test`,
    /// 2026-11-28).
    private func stopWhenDrained() {
        guard !waitingToStop else { return }
        guard context.openSessions.load(ordering: .relaxed) > 0 || LoopDrain.on(loop).callsHeld > 0 else { return stopNow() }
        waitingToStop = true
        loop.schedule(after: 0.05) { [weak self] in
            self?.waitingToStop = false
            self?.stopWhenDrained()
        }
    }

    private func stopNow() {
        // Once: the drain's end and its bound may both come.
        guard !stopped else { return }
        stopped = true
        acceptor?.close()
        acceptor = nil
        for port in streamPorts { port.acceptor.close() }
        loop.stop()
    }
}
