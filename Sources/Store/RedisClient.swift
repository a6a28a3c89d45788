import Loop

/// One Redis connection on one event loop: commands go out at once and are pipelined (any number
/// in flight, replies in order, each completion on the loop); a dropped or refused connection is
/// made again with backoff. While it is down commands fail at once, so nothing piles up behind an
/// outage; while it is up, at most `maxInFlight` wait for replies (a stalled Redis), beyond that
/// they fail at once too.
public final class RedisClient {
    public enum State: Sendable, Equatable {
        /// The first connect is under way: commands are accepted (hiredis buffers them until the
        /// connection is made, and fails them if it cannot be), so a loop's first session need not
        /// wait for the connection.
        case starting
        case up
        /// Lost, or never made: commands fail at once; reconnect attempts go on in the background.
        case down
    }

    /// What the owner hears about the connection (the store's gauge and its one warning per outage).
    public enum Event: Sendable, Equatable {
        case up
        case down(RedisError)
        /// A connect attempt after the connection was lost or refused.
        case reconnecting
    }

    /// Backoff between attempts: 0.5 s, doubled each failure, at most 2 s (at 5 s a 3.5 s Redis
    /// restart was a 7.5 s outage to the nodes, which sessions' completed items wait out); back to
    /// 0.5 s once up.
    static let firstBackoff = 0.5
    static let maxBackoff = 2.0
    /// A node taking over a drained node's thousand sessions sends some 20 commands for each at
    /// once (the survive benchmark met 10,000); a command in flight holds about 100 bytes here.
    public static let defaultMaxInFlight = 100_000

    public let host: String
    public let port: Int
    unowned(unsafe) let loop: EventLoop
    public private(set) var state = State.starting
    public var isUp: Bool { state == .up }
    public let maxInFlight: Int
    private let connectTimeout: Double
    private let observer: ((Event) -> Void)?
    private var connection: HiredisConnection?
    private var inFlight = 0
    private var backoff = RedisClient.firstBackoff
    private var retry: ScheduledTask?
    private var connectDeadline: ScheduledTask?
    private var closed = false
    private let resolver: Resolver

    /// Starts connecting at once. `host` is an address or a name; a name is resolved by `resolver`,
    /// off the loop, before every connect (hiredis would resolve it with a blocking getaddrinfo on
    /// the loop, and a Kubernetes Service's address can change between connects). `observer` runs
    /// on the loop.
    public init(host: String, port: Int, loop: EventLoop, connectTimeout: Double = 2, maxInFlight: Int = RedisClient.defaultMaxInFlight,
                resolver: Resolver = .system, observer: ((Event) -> Void)? = nil) {
        self.host = host
        self.port = port
        self.loop = loop
        self.resolver = resolver
        self.connectTimeout = connectTimeout
        self.maxInFlight = maxInFlight
        self.observer = observer
        connect()
    }

    deinit {
        retry?.cancel()
        connectDeadline?.cancel()
        connection?.close()
    }

    /// Ends the connection for good: commands in flight fail, no reconnect.
    public func close() {
        closed = true
        retry?.cancel()
        connectDeadline?.cancel()
        connection?.close(.closed)
        connection = nil
        state = .down
    }

    // MARK: Commands

    /// Sends one command; `done` runs on the loop with its reply, or at once (before this returns)
    /// when it cannot be sent.
    public func send(_ arguments: [String], _ done: @escaping (Result<RedisReply, RedisError>) -> Void) {
        send(bytes: arguments.map { Array($0.utf8) }, done)
    }

    public func send(bytes arguments: [[UInt8]], _ done: @escaping (Result<RedisReply, RedisError>) -> Void) {
        enqueue(arguments, done)
        connection?.flush()
    }

    private func enqueue(_ arguments: [[UInt8]], _ done: @escaping (Result<RedisReply, RedisError>) -> Void) {
        if let refused = refusal(commands: 1) { return done(.failure(refused)) }
        guard let connection else { return done(.failure(.down)) }
        inFlight += 1
        let sent = connection.send(arguments) { [weak self] result in
            self?.inFlight -= 1
            done(result)
        }
        if !sent {
            inFlight -= 1
            done(.failure(.down))
        }
    }

    /// Sends `commands` between MULTI and EXEC, in one pipeline: Redis runs them together, or
    /// none of them if the connection drops first. `done` gets EXEC's replies, one per command.
    public func transaction(_ commands: [[String]], _ done: @escaping (Result<[RedisReply], RedisError>) -> Void) {
        // Room for all of it or none: a transaction cut short would leave MULTI open.
        if let refused = refusal(commands: commands.count + 2) { return done(.failure(refused)) }
        var failed = false
        func fail(_ error: RedisError) {
            guard !failed else { return }
            failed = true
            done(.failure(error))
        }
        // MULTI's and each command's own answers (+OK, +QUEUED) say nothing EXEC's does not: a
        // command Redis refused to queue makes EXEC fail with EXECABORT.
        for command in [["MULTI"]] + commands {
            enqueue(command.map { Array($0.utf8) }) { result in
                if case .failure(let error) = result { fail(error) }
            }
        }
        defer { connection?.flush() }
        enqueue(["EXEC"].map { Array($0.utf8) }) { result in
            switch result {
            case .success(.array(let replies)): if !failed { done(.success(replies)) }
            case .success(let other): fail(.connectionLost("EXEC answered \(other)"))
            case .failure(let error): fail(error)
            }
        }
    }

    private func refusal(commands: Int) -> RedisError? {
        if closed { return .closed }
        if state == .down { return .down }
        if inFlight + commands > maxInFlight { return .busy }
        return nil
    }

    // MARK: Connecting

    private func connect() {
        retry = nil
        // The deadline covers the name's resolution too: a DNS server that never answers is a
        // connect that timed out, and the next attempt asks again.
        let attempt = MonotonicClock.nanoseconds()
        connectAttempt = attempt
        connectDeadline = loop.schedule(after: connectTimeout) { [weak self] in
            guard let self, connectAttempt == attempt else { return }
            if let connection { connection.close(.connectFailed("timed out")) } else { lost(.connectFailed("resolving \(host) timed out")) }
        }
        resolver.resolve(host: host, port: port, on: loop) { [weak self] result in
            guard let self, connectAttempt == attempt, !closed, connection == nil else { return }
            switch result {
            case .success(let addresses):
                guard let address = addresses.first else { return lost(.connectFailed("\(host) has no address")) }
                do throws(RedisError) {
                    let connection = try HiredisConnection(host: address.numericHost, port: port, loop: loop)
                    connection.onConnected = { [weak self] in self?.connected() }
                    connection.onClosed = { [weak self] error in self?.lost(error) }
                    self.connection = connection
                } catch {
                    lost(error)
                }
            case .failure(let error):
                lost(.connectFailed("cannot resolve \(host): \(error)"))
            }
        }
    }

    /// Names the connect in progress, so that a late resolution or deadline of an earlier one is ignored.
    private var connectAttempt: UInt64 = 0

    private func connected() {
        connectDeadline?.cancel()
        connectDeadline = nil
        awaitDataset()
    }

    /// Redis restarted from its append-only file accepts connections before it has loaded it, and
    /// answers every command `-LOADING` until then: the connection is up (and what a loop held
    /// through the outage is written) only once PING says PONG. Writes made in that moment were
    /// refused, and lost (make chaos: 9 items told done, after a Redis kill -9 and restart).
    private func awaitDataset() {
        guard let connection else { return }
        let sent = connection.send([Array("PING".utf8)]) { [weak self, weak connection] result in
            guard let self, let connection, self.connection === connection else { return }
            switch result {
            case .success(.status("PONG")):
                backoff = Self.firstBackoff
                state = .up
                observer?(.up)
            case .success:
                // Still loading (or refusing for another reason): asked again shortly; the
                // connection's own failure, if it comes, is `lost`'s.
                loop.schedule(after: 0.1) { [weak self] in self?.awaitDataset() }
            case .failure:
                break
            }
        }
        if sent { connection.flush() }
    }

    /// The connection failed or dropped: down, and another attempt after the backoff.
    private func lost(_ error: RedisError) {
        connectDeadline?.cancel()
        connectDeadline = nil
        connectAttempt = 0
        connection = nil
        // Closed here, or the loop stopped (its registrations are told to close): an end, not an outage.
        if error == .closed { closed = true }
        guard !closed else {
            state = .down
            return
        }
        state = .down
        observer?(.down(error))
        retry = loop.schedule(after: backoff) { [weak self] in
            guard let self, !closed else { return }
            observer?(.reconnecting)
            connect()
        }
        backoff = min(backoff * 2, Self.maxBackoff)
    }
}
