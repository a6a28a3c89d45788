import JSON
import Loop
import Server
#if canImport(Glibc)
import Glibc
#endif

/// The echo test in one process: C connections in a closed loop, each sending one masked text
/// message, waiting for its echo, and sending the next. Round trips are timed from just before the
/// send to the moment the whole echo has been read, on the monotonic clock.
///
/// With a rate (`--rate`, messages per second per connection) the loop is paced instead: each
/// connection sends its next message one interval after the last, not at once, with the
/// connections' first sends spread over one interval: the many-small-streams load (2,000
/// connections × 50 frames/s). `--batch B` sends B messages in one write every B intervals, the
/// case where a server that writes once per frame and one that corks differ.
final class EchoRun: ConnectionEvents {
    struct Settings {
        let target: LoadTarget
        let connections: Int
        /// Index of this run's first connection across processes, for source addresses.
        let firstIndex: Int
        let size: Int
        let warmup: Double
        let duration: Double
        let connectTimeout: Double
        /// Messages per second per connection; 0: closed loop, as fast as the echoes come.
        var rate = 0.0
        /// Messages per write (each echoed on its own).
        var batch = 1
        /// The server's process, whose CPU over the measured window is read from /proc.
        var serverPid: Int32?
    }

    enum Phase: String {
        case connecting, warmup, measuring, done
    }

    static let sources = 16
    static let connectRate = 5000.0
    /// How often progress is reported.
    private static let reportInterval: UInt64 = 500_000_000

    private let settings: Settings
    private let pool: ConnectionPool
    private let payload: [UInt8]
    private(set) var phase = Phase.connecting
    /// Messages sent from here on count; nothing is sent after `runEnd`.
    private var measureStart = UInt64.max
    private var runEnd = UInt64.max
    private var latency = LatencyRecorder()
    private var measured = 0
    private var answered = 0
    private var badEchoes = 0
    /// Nanoseconds between one connection's messages when paced; 0 in a closed loop.
    private let interval: UInt64
    /// Paced connections waiting for their next send, roughly in the order they are due.
    private var due: [(connection: ClientConnection, at: UInt64)] = []
    private var dueHead = 0

    init(_ settings: Settings) throws(ClientSocket.Failure) {
        self.settings = settings
        pool = try ConnectionPool(.init(
            target: settings.target, count: settings.connections, firstIndex: settings.firstIndex,
            sources: Self.sources, rate: Self.connectRate, connectTimeout: settings.connectTimeout))
        // Printable ASCII: the message is text, and the server checks text is UTF-8.
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        payload = (0..<settings.size).map { alphabet[$0 % alphabet.count] }
        interval = settings.rate > 0 ? UInt64(1e9 / settings.rate) : 0
        pool.events = self
    }

    /// Runs to the end and returns what it measured. `hangUpFD` (a worker's stdin) stops the run
    /// early on end-of-file; `report` hears about progress twice a second.
    func run(hangUpFD: Int32?, report: (JSON) -> Void) -> EchoResult {
        if let hangUpFD { pool.watchForHangUp(hangUpFD) }
        var nextReport = MonotonicClock.nanoseconds() + Self.reportInterval
        func reportIfDue(_ now: UInt64) {
            guard now >= nextReport else { return }
            nextReport = now + Self.reportInterval
            report(progressJSON)
        }

        while !pool.settled && !pool.hungUp {
            pool.step(timeoutMilliseconds: 100)
            reportIfDue(MonotonicClock.nanoseconds())
        }

        var cpuAtStart = CPUTime.zero
        var serverCPUAtStart: Double?
        var machineAtStart: MachineCPU?
        var stoppedAt = MonotonicClock.nanoseconds()
        if pool.open > 0 && !pool.hungUp {
            let start = MonotonicClock.nanoseconds()
            phase = .warmup
            measureStart = start + MonotonicClock.nanoseconds(settings.warmup)
            runEnd = measureStart + MonotonicClock.nanoseconds(settings.duration)
            if settings.warmup == 0 { startMeasuring(&cpuAtStart, &serverCPUAtStart, &machineAtStart) }
            let open = pool.openConnections
            for (i, connection) in open.enumerated() {
                if interval == 0 { send(on: connection, at: start) }
                else { due.append((connection, start + interval * UInt64(settings.batch) * UInt64(i) / UInt64(open.count))) }
            }
            while !pool.hungUp && pool.open > 0 {
                pool.step(timeoutMilliseconds: interval == 0 ? 5 : 1)
                let now = MonotonicClock.nanoseconds()
                if interval > 0 { sendDue(now) }
                if phase == .warmup && now >= measureStart { startMeasuring(&cpuAtStart, &serverCPUAtStart, &machineAtStart) }
                if now >= runEnd { break }
                reportIfDue(now)
            }
            stoppedAt = min(MonotonicClock.nanoseconds(), runEnd)
        }

        var result = EchoResult()
        if phase == .measuring {
            result.measuredSeconds = Double(stoppedAt - measureStart) / 1e9
            result.cpuMeasured = CPUTime.ofSelf() - cpuAtStart
            if let start = serverCPUAtStart, let end = settings.serverPid.flatMap({ ProcessFigures(pid: $0).cpuSeconds }) { result.serverCPUSeconds = end - start }
            if let start = machineAtStart { result.stealFraction = MachineCPU.now()?.stealFraction(since: start) }
        }
        phase = .done
        result.connections = settings.connections
        result.opened = pool.connected
        result.failed = pool.failed
        result.dropped = pool.dropped
        result.badEchoes = badEchoes
        result.messages = measured
        result.messagesPerSecond = result.measuredSeconds > 0 ? Double(measured) / result.measuredSeconds : 0
        result.latency = latency
        pool.closeAll()
        return result
    }

    private func startMeasuring(_ cpuAtStart: inout CPUTime, _ serverCPUAtStart: inout Double?, _ machineAtStart: inout MachineCPU?) {
        phase = .measuring
        cpuAtStart = .ofSelf()
        serverCPUAtStart = settings.serverPid.flatMap { ProcessFigures(pid: $0).cpuSeconds }
        machineAtStart = MachineCPU.now()
    }

    var progressJSON: JSON {
        .object([
            ("kind", .string("progress")),
            ("phase", .string(phase.rawValue)),
            ("connected", .int(pool.connected)),
            ("open", .int(pool.open)),
            ("errors", .int(pool.failedCount + pool.droppedCount + badEchoes)),
            ("answered", .int(answered)),
            ("measured", .int(measured)),
            // So far in the measured window (every half second: a walk over the histogram's counts).
            ("p99_ns", .number(Double(latency.percentile(99)))),
        ])
    }

    // MARK: The closed loop

    private func isPayload(_ message: UnsafeRawBufferPointer) -> Bool {
        guard message.count == payload.count else { return false }
        guard !payload.isEmpty else { return true }
        return payload.withUnsafeBytes { memcmp($0.baseAddress!, message.baseAddress!, message.count) == 0 }
    }

    private func send(on connection: ClientConnection, at now: UInt64) {
        connection.sentAt = now
        connection.awaiting = settings.batch
        guard settings.batch > 1 else {
            return payload.withUnsafeBytes { pool.sendFrame(ClientFrame.text, $0, on: connection) }
        }
        // The batch's frames in one buffer and one write, so that they reach the server together.
        let frameBytes = WebSocketClientFrame.maxHeaderBytes + payload.count
        withUnsafeTemporaryAllocation(byteCount: frameBytes * settings.batch, alignment: 8) { buffer in
            var n = 0
            payload.withUnsafeBytes { payload in
                for _ in 0..<settings.batch {
                    n += WebSocketClientFrame.encode(opcode: ClientFrame.text, payload: payload, mask: UInt32.random(in: 0...UInt32.max),
                                                     into: UnsafeMutableRawBufferPointer(rebasing: buffer[n...]))
                }
            }
            pool.send(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), on: connection)
        }
    }

    /// Paced: sends for every connection whose next message is due.
    private func sendDue(_ now: UInt64) {
        while dueHead < due.count, due[dueHead].at <= now {
            let connection = due[dueHead].connection
            dueHead += 1
            if connection.isOpen && now < runEnd { send(on: connection, at: now) }
        }
        if dueHead > 4096 && dueHead * 2 > due.count {
            due.removeFirst(dueHead)
            dueHead = 0
        }
    }

    /// The next message of a connection whose echoes are all in: now in a closed loop, one
    /// interval (or batch of intervals) after the last send when paced.
    private func next(on connection: ClientConnection, sentAt: UInt64, now: UInt64) {
        guard now < runEnd else { return }
        if interval == 0 { return send(on: connection, at: now) }
        due.append((connection, sentAt + interval * UInt64(settings.batch)))
    }

    func received(_ opcode: UInt8, _ message: UnsafeRawBufferPointer, on connection: ClientConnection, in pool: ConnectionPool) {
        let now = MonotonicClock.nanoseconds()
        let sentAt = connection.sentAt
        // Unasked: the message in flight is still in flight.
        guard sentAt != 0 else { badEchoes += 1; return }
        connection.awaiting -= 1
        let batchDone = connection.awaiting <= 0
        if batchDone { connection.sentAt = 0 }
        guard opcode == ClientFrame.text, isPayload(message) else {
            badEchoes += 1
            if batchDone { next(on: connection, sentAt: sentAt, now: now) }
            return
        }
        answered += 1
        if sentAt >= measureStart && now <= runEnd {
            latency.record(now - sentAt)
            measured += 1
        }
        if batchDone { next(on: connection, sentAt: sentAt, now: now) }
    }
}
