import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// One Realtime session of `mcp-bench` driven as a script: each step sends, then expects the next
/// event of some types (others are skipped; `fail` types end it), within a bound.
final class MCPBenchSession: ConnectionEvents {
    let pool: ConnectionPool
    let began = MonotonicClock.nanoseconds()
    private(set) var failure: String?
    private(set) var finished = false
    private var waiting: (types: Set<String>, fail: Set<String>, deadline: UInt64, then: (JSON, UInt64) -> Void)?
    private let wait: Double
    private let deadline: UInt64

    init(url: LoadTarget, wait: Double, deadline: UInt64) throws(ClientSocket.Failure) {
        pool = try ConnectionPool(.init(target: url, count: 1, firstIndex: 0, sources: 1, rate: 1000, connectTimeout: wait))
        self.wait = wait
        self.deadline = deadline
        pool.events = self
    }

    var done: Bool { finished || failure != nil }

    /// Sends a text event; returns when.
    @discardableResult
    func send(_ event: JSON) -> UInt64 {
        if let connection = pool.openConnections.first {
            Array(event.description.utf8).withUnsafeBytes { pool.sendFrame(ClientFrame.text, $0, on: connection) }
        }
        return MonotonicClock.nanoseconds()
    }

    func expect(_ types: Set<String>, fail: Set<String> = ["error"], then: @escaping (JSON, UInt64) -> Void) {
        waiting = (types, fail, min(deadline, MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(wait)), then)
    }

    func finish() { finished = true; waiting = nil }

    func fail(_ why: String) {
        if failure == nil { failure = why }
        waiting = nil
    }

    func received(_ opcode: UInt8, _ payload: UnsafeRawBufferPointer, on connection: ClientConnection, in pool: ConnectionPool) {
        let at = MonotonicClock.nanoseconds()
        guard opcode == ClientFrame.text, let waiting, let event = try? JSON(parsing: String(decoding: payload, as: UTF8.self)) else { return }
        let type = event["type"]?.string ?? ""
        if waiting.types.contains(type) {
            self.waiting = nil
            waiting.then(event, at)
        } else if waiting.fail.contains(type) {
            fail("RuntimeError: \(type): \(String(event.description.prefix(300)))")
        }
    }

    func lost(_ connection: ClientConnection, reason: String, in pool: ConnectionPool) {
        if !finished { fail("ConnectionClosed: \(reason)") }
    }

    /// Moves on what is ready, and times out an expectation past its bound.
    func step() {
        pool.step(timeoutMilliseconds: 0)
        if pool.failedCount > 0 { fail("connect: \(Format.reasons(pool.failed))") }
        if let waiting, MonotonicClock.nanoseconds() > waiting.deadline {
            fail(MonotonicClock.nanoseconds() > deadline ? "out of time" : "TimeoutError: no \(waiting.types.sorted().joined(separator: " or ")) within \(wait) s")
        }
    }

    func close() { pool.closeAll() }

    /// Runs `count` sessions made by `make(i)`, `concurrency` at a time, until each is done;
    /// returns the failures. `make` gives nil when the run is out of time.
    static func run(count: Int, concurrency: Int, make: (Int) -> MCPBenchSession?) -> [String] {
        var failures: [String] = []
        var active: [MCPBenchSession] = []
        var next = 0
        while true {
            while active.count < concurrency && next < count {
                guard let session = make(next) else { failures.append("out of time"); next = count; break }
                next += 1
                active.append(session)
                session.step()
            }
            if active.isEmpty { break }
            var entries = active.map { pollfd(fd: $0.pool.pollDescriptor, events: Int16(POLLIN), revents: 0) }
            _ = poll(&entries, nfds_t(entries.count), 5)
            for session in active { session.step() }
            for session in active where session.done {
                if let failure = session.failure { failures.append(failure) }
                session.close()
            }
            active.removeAll { $0.done }
        }
        return failures
    }
}
