import CLinux
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What the server shares with one loop across threads: its wake-up descriptor, its counters and
/// the shutdown request. Everything else of a loop stays on the loop's own thread.
final class LoopHandle: Sendable {
    let index: Int
    let wakeFD: Int32
    let listenFD: Int32
    let metrics: LoopMetrics
    /// Results of work offloaded to worker pools, on their way back.
    let inbox: LoopInbox
    private let shutdownRequested = Atomic<Bool>(false)

    init(index: Int, listenFD: Int32, endpoints: Int) throws(SystemError) {
        self.index = index
        self.listenFD = listenFD
        wakeFD = try Sys.eventfd()
        inbox = LoopInbox(wakeFD: wakeFD)
        metrics = LoopMetrics(endpoints: endpoints)
    }

    func requestShutdown() {
        shutdownRequested.store(true, ordering: .releasing)
        Sys.signal(eventfd: wakeFD)
    }

    var isShutdownRequested: Bool { shutdownRequested.load(ordering: .acquiring) }
}

/// State every loop reads and none owns.
final class ServerContext: Sendable {
    let configuration: ServerConfiguration
    let router: Router
    /// The certificate clients are served, when the port serves TLS.
    let tls: TLSCredentials?
    /// What https upstreams are verified against.
    let upstreamTLS: TLSContext
    /// Open connections across all loops, HTTP and WebSocket.
    let openConnections = Atomic<Int>(0)
    /// Upgraded WebSocket sessions across all loops; `maxConnections` bounds these.
    let openSessions = Atomic<Int>(0)
    /// Connections allowed past `maxConnections` for plain HTTP, so a full server can still be
    /// health-checked and scraped.
    static let httpReserve = 64

    init(configuration: ServerConfiguration, router: Router, tls: TLSCredentials?, upstreamTLS: TLSContext) {
        self.configuration = configuration
        self.router = router
        self.tls = tls
        self.upstreamTLS = upstreamTLS
    }
}

/// One event loop: a thread's epoll instance, its listening socket, its connections (a slab
/// indexed by slot), one shared read buffer, a timer wheel for connection deadlines and a heap for
/// other timed work. Nothing here takes a lock.
///
/// Each epoll registration carries a token: the connection's slot and generation, so that an event
/// for a connection that closed, and whose slot was reused, within one batch is recognised and dropped.
///
/// Handlers reach their loop (`WebSocket.loop`, `HTTPResponseStream.loop`) to schedule work; the
/// public surface is only that. Everything on a loop runs on its thread.
public final class EventLoop {
    private static let listenerToken = UInt64.max
    private static let wakeToken = UInt64.max - 1
    /// Room in front of the read buffer for a connection's pending partial frame.
    static let readHeadroom = 256
    static let readBufferBytes = 64 * 1024

    let handle: LoopHandle
    let context: ServerContext
    let epoll: Epoll
    var metrics: LoopMetrics { handle.metrics }
    /// The one read buffer of this loop; idle connections own none.
    let readBuffer: UnsafeMutableRawBufferPointer
    /// Where a frame's header and payload are put together to be encrypted as one TLS record.
    let tlsWriteScratch: UnsafeMutableRawBufferPointer
    var timers: TimerWheel

    private var tasks = TaskScheduler()
    /// Completions of offloaded work, by ticket, until its result arrives or it is cancelled.
    private var offloads: [UInt64: (any Sendable) -> Void] = [:]
    private var lastOffloadID: UInt64 = 0
    private var upstreams: [UpstreamConnection?] = []
    private var upstreamGenerations: [UInt32] = []
    private var freeUpstreamSlots: [Int32] = []
    /// Marks an epoll token as an upstream connection's rather than a client's.
    private static let upstreamBit: UInt64 = 1 << 63
    /// This loop's HTTP client, for requests to upstream servers (LLM APIs).
    public private(set) lazy var httpClient = HTTPClient(loop: self)
    private var connections: [Connection?] = []
    private var generations: [UInt32] = []
    private var freeSlots: [Int32] = []
    /// Connections to read again without a new edge: budget spent, or reading resumed.
    private var ready: [Connection] = []
    private var readyBatch: [Connection] = []
    /// Slots whose deadline passed this tick; kept to reuse its storage.
    private var expired: [Int32] = []

    private var listening = true
    /// Kept open so that at the descriptor limit we can still accept-and-close (see `refuseOverLimit`).
    private var spareFD: Int32 = -1
    private var acceptResumeTick: UInt32?
    private(set) var shuttingDown = false
    private var shutdownDeadline: UInt32 = 0
    private var openCount = 0
    private var tlsHandshakesInProgress = 0
    private let maxTLSHandshakes: Int
    private let startNanoseconds = MonotonicClock.nanoseconds()

    let handshakeTicks: UInt32
    let idleTicks: UInt32
    let pingTicks: UInt32
    let closeTicks: UInt32
    let tlsHandshakeTicks: UInt32

    init(handle: LoopHandle, context: ServerContext) throws(SystemError) {
        self.handle = handle
        self.context = context
        epoll = try Epoll()
        readBuffer = .allocate(byteCount: Self.readHeadroom + Self.readBufferBytes, alignment: 16)
        // 16 KiB is TLS's largest record; 14 bytes the largest frame header.
        tlsWriteScratch = .allocate(byteCount: context.tls == nil ? 0 : 16384 + 14, alignment: 16)
        timers = TimerWheel(startTick: 0)
        let c = context.configuration
        handshakeTicks = timers.ticks(seconds: c.handshakeTimeout)
        idleTicks = timers.ticks(seconds: c.idleTimeout)
        pingTicks = timers.ticks(seconds: c.pingTimeout)
        closeTicks = timers.ticks(seconds: c.closeTimeout)
        tlsHandshakeTicks = timers.ticks(seconds: c.tlsHandshakeTimeout)
        maxTLSHandshakes = max(1, c.maxTLSHandshakes / max(1, c.loops))
        try epoll.add(handle.listenFD, .readable, token: Self.listenerToken)
        try epoll.add(handle.wakeFD, [.readable, .edge], token: Self.wakeToken)
        spareFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
    }

    deinit {
        readBuffer.deallocate()
        tlsWriteScratch.deallocate()
        if spareFD >= 0 { Sys.close(spareFD) }
    }

    /// Runs until a requested shutdown has finished.
    func run() {
        while true {
            var handled = epoll.wait(timeoutMilliseconds: waitTimeout())
            let started = MonotonicClock.nanoseconds()
            for i in 0..<handled { dispatch(epoll.readiness(at: i)) }
            handled += readAgain()
            handled += advanceTimers()
            handled += runDueTasks()
            if handled > 0 { metrics.observeLag(nanoseconds: MonotonicClock.nanoseconds() - started) }
            if shuttingDown && (openCount == 0 || Int32(bitPattern: timers.now &- shutdownDeadline) >= 0) { break }
        }
        for case let connection? in connections { connection.close() }
        for case let upstream? in upstreams { upstream.close() }
        if listening { Sys.close(handle.listenFD) }
    }

    func token(of connection: Connection) -> UInt64 {
        UInt64(connection.generation) << 32 | UInt64(UInt32(bitPattern: connection.slot))
    }

    private func dispatch(_ readiness: Readiness) {
        switch readiness.token {
        case Self.listenerToken:
            acceptConnections()
        case Self.wakeToken:
            Sys.drain(eventfd: handle.wakeFD)
            deliverOffloads()
            if handle.isShutdownRequested && !shuttingDown { beginShutdown() }
        case let token where token & Self.upstreamBit != 0:
            let slot = Int(UInt32(truncatingIfNeeded: token))
            guard slot < upstreams.count, let upstream = upstreams[slot],
                  upstream.generation == UInt32(truncatingIfNeeded: (token & ~Self.upstreamBit) >> 32) else { return }
            if readiness.writable { upstream.writable() }
            if readiness.readable { upstream.readable(hungUp: readiness.hungUp) }
        default:
            let slot = Int(UInt32(truncatingIfNeeded: readiness.token))
            guard slot < connections.count, let connection = connections[slot],
                  connection.generation == UInt32(truncatingIfNeeded: readiness.token >> 32) else { return }
            if readiness.writable { connection.writable() }
            if readiness.readable { connection.readable(hungUp: readiness.hungUp) }
            // A connection that is not reading (a response is streaming) still hears the peer leave.
            if readiness.hungUp { connection.peerHungUp() }
        }
    }

    // MARK: Accepting

    private func acceptConnections() {
        // Level-triggered listener: take a batch, and epoll reports the rest next time round.
        for _ in 0..<64 {
            let fd: Int32
            do {
                guard let accepted = try Sys.accept(handle.listenFD) else { return }
                fd = accepted
            } catch {
                if error.errno == EMFILE || error.errno == ENFILE { refuseOverLimit() }
                return
            }
            admit(fd)
        }
    }

    /// Out of descriptors: a pending connection would make the listener report forever. Give up the
    /// spare descriptor to accept it and close it at once; without a spare, stop listening briefly.
    private func refuseOverLimit() {
        guard spareFD >= 0 else { return pauseAccepting() }
        Sys.close(spareFD)
        spareFD = -1
        if let fd = try? Sys.accept(handle.listenFD) {
            Sys.close(fd)
            metrics.refused[RefusalReason.descriptorLimit.rawValue].add(1)
        }
        spareFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
        if spareFD < 0 { pauseAccepting() }
    }

    private func pauseAccepting() {
        guard listening, acceptResumeTick == nil else { return }
        epoll.remove(handle.listenFD)
        acceptResumeTick = timers.now &+ 1
        metrics.refused[RefusalReason.descriptorLimit.rawValue].add(1)
    }

    private func resumeAccepting() {
        acceptResumeTick = nil
        if spareFD < 0 { spareFD = open("/dev/null", O_RDONLY | O_CLOEXEC) }
        if listening { try? epoll.add(handle.listenFD, .readable, token: Self.listenerToken) }
    }

    private func admit(_ fd: Int32) {
        let limit = context.configuration.maxConnections + ServerContext.httpReserve
        if context.openConnections.add(1, ordering: .relaxed).newValue > limit {
            context.openConnections.subtract(1, ordering: .relaxed)
            metrics.refused[RefusalReason.connectionLimit.rawValue].add(1)
            // A 503 in the clear means nothing to a TLS client; it just sees the connection close.
            if context.tls == nil {
                let busy = HTTPResponse.error(.serviceUnavailable, headers: [("Retry-After", "1")]).serialized(keepAlive: false)
                _ = busy.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            return Sys.close(fd)
        }
        var tls: TLSStream?
        if let credentials = context.tls {
            guard tlsHandshakesInProgress < maxTLSHandshakes, let session = try? TLSStream(context: credentials.context, fd: fd) else {
                context.openConnections.subtract(1, ordering: .relaxed)
                metrics.refused[RefusalReason.tlsHandshakeLimit.rawValue].add(1)
                return Sys.close(fd)
            }
            tls = session
        }
        try? Sys.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        let slot = allocateSlot()
        let connection = Connection(fd: fd, slot: slot, generation: generations[Int(slot)], loop: self, tls: tls)
        do {
            try epoll.add(fd, [.readable, .edge], token: token(of: connection))
        } catch {
            connections[Int(slot)] = nil
            freeSlots.append(slot)
            context.openConnections.subtract(1, ordering: .relaxed)
            return Sys.close(fd)
        }
        connections[Int(slot)] = connection
        openCount += 1
        metrics.accepted.add(1)
        metrics.open[0].add(1)
        if tls != nil {
            tlsHandshakesInProgress += 1
            metrics.tlsHandshakesInProgress.add(1)
        }
        timers.schedule(slot, after: tls == nil ? handshakeTicks : tlsHandshakeTicks)
    }

    /// A connection's TLS handshake is over, one way or another.
    func tlsHandshakeEnded(_ result: TLSHandshakeResult) {
        tlsHandshakesInProgress -= 1
        metrics.tlsHandshakesInProgress.add(-1)
        metrics.tlsHandshakes[result.rawValue].add(1)
    }

    private func allocateSlot() -> Int32 {
        if let slot = freeSlots.popLast() { return slot }
        let slot = Int32(connections.count)
        connections.append(nil)
        generations.append(0)
        timers.grow(toSlots: connections.count)
        return slot
    }

    /// Called by a closing connection: gives back its slot, descriptor and counters. Returns the
    /// connection's accounted bytes after release (zero).
    func release(_ connection: Connection, accounted: Int, closeCode: WebSocketCloseCode?, endpoint: Int) -> Int {
        let slot = Int(connection.slot)
        timers.cancel(connection.slot)
        connections[slot] = nil
        generations[slot] &+= 1
        freeSlots.append(connection.slot)
        Sys.close(connection.fd)
        openCount -= 1
        context.openConnections.subtract(1, ordering: .relaxed)
        if endpoint > 0 { context.openSessions.subtract(1, ordering: .relaxed) }
        metrics.open[endpoint].add(-1)
        metrics.closed[CloseLabel.index(closeCode)].add(1)
        metrics.accountedBytes.add(-accounted)
        return 0
    }

    // MARK: Upstream connections

    /// Starts a non-blocking connect to `address` (the bytes of a sockaddr) and registers it.
    func openUpstream(address: [UInt8], key: String, tlsServerName: String?, client: HTTPClient) throws(HTTPClientError) -> UpstreamConnection {
        let family = Int32(address[0]) | Int32(address[1]) << 8  // sa_family_t leads every sockaddr
        let fd = socket(family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .connectFailed(String(cString: strerror(errno))) }
        try? Sys.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        let rc = address.withUnsafeBytes { connect(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count)) }
        guard rc == 0 || errno == EINPROGRESS else {
            let why = String(cString: strerror(errno))
            Sys.close(fd)
            throw .connectFailed(why)
        }
        let slot: Int32
        if let free = freeUpstreamSlots.popLast() {
            slot = free
        } else {
            slot = Int32(upstreams.count)
            upstreams.append(nil)
            upstreamGenerations.append(0)
        }
        let generation = upstreamGenerations[Int(slot)]
        let upstream = UpstreamConnection(fd: fd, slot: slot, generation: generation, key: key, tlsServerName: tlsServerName,
                                          loop: self, client: client)
        let token = Self.upstreamBit | UInt64(generation) << 32 | UInt64(UInt32(bitPattern: slot))
        do {
            try epoll.add(fd, [.readable, .writable, .edge], token: token)
        } catch {
            Sys.close(fd)
            freeUpstreamSlots.append(slot)
            throw .connectFailed(error.description)
        }
        upstreams[Int(slot)] = upstream
        return upstream
    }

    func releaseUpstream(_ upstream: UpstreamConnection) {
        let slot = Int(upstream.slot)
        upstreams[slot] = nil
        upstreamGenerations[slot] &+= 1
        freeUpstreamSlots.append(upstream.slot)
        Sys.close(upstream.fd)
    }

    // MARK: Readiness without an edge

    /// Takes a session slot for an upgrade; false when `maxConnections` sessions are open.
    func reserveSession() -> Bool {
        if context.openSessions.add(1, ordering: .relaxed).newValue <= context.configuration.maxConnections { return true }
        context.openSessions.subtract(1, ordering: .relaxed)
        metrics.refused[RefusalReason.connectionLimit.rawValue].add(1)
        return false
    }

    func markReady(_ connection: Connection) {
        guard !connection.inReadyList else { return }
        connection.inReadyList = true
        ready.append(connection)
    }

    private func readAgain() -> Int {
        guard !ready.isEmpty else { return 0 }
        // Two arrays swapped, not one copied: reads may mark connections ready again meanwhile, and
        // neither array's storage is ever shared, so neither reallocates.
        swap(&ready, &readyBatch)
        for connection in readyBatch {
            connection.inReadyList = false
            connection.readable()
        }
        let count = readyBatch.count
        readyBatch.removeAll(keepingCapacity: true)
        return count
    }

    // MARK: Offloaded work

    func nextOffloadID() -> UInt64 {
        lastOffloadID &+= 1
        return lastOffloadID
    }

    func registerOffload(_ id: UInt64, _ completion: @escaping (any Sendable) -> Void) {
        offloads[id] = completion
    }

    func forgetOffload(_ id: UInt64) {
        offloads[id] = nil
    }

    /// Runs the completions whose results have come back; a cancelled one's result is dropped.
    private func deliverOffloads() {
        for delivery in handle.inbox.take() {
            offloads.removeValue(forKey: delivery.ticket)?(delivery.result)
        }
    }

    // MARK: Time

    /// Runs `body` on this loop after `seconds`. Cancel the returned task to keep it from running.
    @discardableResult
    public func schedule(after seconds: Double, _ body: @escaping () -> Void) -> ScheduledTask {
        tasks.schedule(at: MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(seconds), body)
    }

    /// How long epoll may sleep: until the next wheel tick or the next task, whichever is first.
    private func waitTimeout() -> Int32 {
        guard ready.isEmpty else { return 0 }
        var milliseconds = Int32(timers.resolution)
        if let deadline = tasks.nextDeadline() {
            let now = MonotonicClock.nanoseconds()
            let until = deadline > now ? Int32(min(UInt64(milliseconds), (deadline - now + 999_999) / 1_000_000)) : 0
            milliseconds = min(milliseconds, until)
        }
        return milliseconds
    }

    private func runDueTasks() -> Int {
        guard !tasks.isEmpty else { return 0 }
        let bodies = tasks.due(at: MonotonicClock.nanoseconds())
        for body in bodies { body() }
        return bodies.count
    }

    private var currentTick: UInt32 {
        UInt32(truncatingIfNeeded: (MonotonicClock.nanoseconds() - startNanoseconds) / (timers.resolution * 1_000_000))
    }

    private func advanceTimers() -> Int {
        let tick = currentTick
        guard tick != timers.now else { return 0 }
        timers.advance(to: tick, expired: &expired)
        let fired = expired.count
        for slot in expired { connections[Int(slot)]?.timerFired() }
        expired.removeAll(keepingCapacity: true)
        if let resume = acceptResumeTick, Int32(bitPattern: tick &- resume) >= 0 { resumeAccepting() }
        return fired
    }

    // MARK: Shutdown

    private func beginShutdown() {
        shuttingDown = true
        shutdownDeadline = timers.now &+ timers.ticks(seconds: context.configuration.shutdownTimeout)
        if listening {
            listening = false
            epoll.remove(handle.listenFD)
            Sys.close(handle.listenFD)
        }
        for case let connection? in connections { connection.shutdown() }
    }
}
