import JSON
import Loop

/// What a turns worker tells its parent, every half second, at once when it is ready or drained,
/// and once more at the end; the parent adds the workers' reports together.
struct TurnsReport {
    var final = false
    var phase = TurnsRun.Phase.connecting
    var started = 0
    var connected = 0
    var open = 0
    /// Open sessions that have had session.created (with tools: and session.updated).
    var ready = 0
    /// Open sessions whose session.update (the tools) was answered by an error.
    var updateRefused = 0
    /// Seconds from the worker's first connect to its last open.
    var connectSeconds = 0.0
    var failed: [String: Int] = [:]
    var dropped: [String: Int] = [:]
    var pongs = 0
    var handshake = LatencyRecorder()
    /// session.update sent → session.updated (with tools only).
    var sessionUpdate = LatencyRecorder()
    /// Whole run, warm-up included: for the progress line.
    var turnsSent = 0
    var responsesDone = 0
    var inFlight = 0
    var cpu = CPUTime.zero
    /// When the worker wrote this, on the monotonic clock all processes share: the parent's
    /// turn rate divides by it, since a report may be half a second old when read.
    var reportedAt: UInt64 = 0
    /// The measured figures, sent once the replies have drained.
    var result = TurnsResult()

    init() {}

    init(_ run: TurnsRun, final: Bool) {
        let pool = run.pool
        self.final = final
        phase = run.phase
        started = pool.started
        connected = pool.connected
        open = pool.open
        ready = run.ready
        updateRefused = run.updateRefused
        sessionUpdate = run.updateLatency
        connectSeconds = pool.lastOpenedSeconds
        failed = pool.failed
        dropped = pool.dropped
        pongs = pool.pongsSent
        handshake = pool.handshakeLatency
        turnsSent = run.turnsSent
        responsesDone = run.responsesDone
        inFlight = run.inFlight
        cpu = .ofSelf()
        reportedAt = MonotonicClock.nanoseconds()
        result = run.result
    }

    var failedCount: Int { failed.values.reduce(0, +) }
    var droppedCount: Int { dropped.values.reduce(0, +) }

    var json: JSON {
        var members: [(String, JSON)] = [
            ("kind", .string(final ? "final" : "progress")),
            ("phase", .string(phase.rawValue)),
            ("started", .int(started)),
            ("connected", .int(connected)),
            ("open", .int(open)),
            ("ready", .int(ready)),
            ("update_refused", .int(updateRefused)),
            ("connect_seconds", .number(connectSeconds)),
            ("failed", .counts(failed)),
            ("dropped", .counts(dropped)),
            ("pongs", .int(pongs)),
            ("turns_sent", .int(turnsSent)),
            ("responses_done", .int(responsesDone)),
            ("in_flight", .int(inFlight)),
            ("cpu", cpu.json),
            ("at_ns", .number(Double(reportedAt))),
        ]
        // The histograms are the bulk of a report and only read once their phase is over.
        if phase >= .ready || final {
            members.append(("handshake", handshake.json))
            if sessionUpdate.count > 0 { members.append(("session_update", sessionUpdate.json)) }
        }
        if phase == .drained || final { members.append(("result", result.json)) }
        return .object(members)
    }

    init(json: JSON) {
        final = json["kind"]?.string == "final"
        phase = json["phase"]?.string.flatMap(TurnsRun.Phase.init(rawValue:)) ?? .connecting
        started = json["started"]?.int ?? 0
        connected = json["connected"]?.int ?? 0
        open = json["open"]?.int ?? 0
        ready = json["ready"]?.int ?? 0
        updateRefused = json["update_refused"]?.int ?? 0
        connectSeconds = json["connect_seconds"]?.double ?? 0
        failed = json["failed"]?.countTable ?? [:]
        dropped = json["dropped"]?.countTable ?? [:]
        pongs = json["pongs"]?.int ?? 0
        handshake = LatencyRecorder(json: json["handshake"])
        sessionUpdate = LatencyRecorder(json: json["session_update"])
        turnsSent = json["turns_sent"]?.int ?? 0
        responsesDone = json["responses_done"]?.int ?? 0
        inFlight = json["in_flight"]?.int ?? 0
        cpu = CPUTime(json: json["cpu"])
        reportedAt = UInt64(json["at_ns"]?.double ?? 0)
        if let result = json["result"] { self.result = TurnsResult(json: result) }
    }

    /// Sums of counts, merged histograms; the phase of the slowest.
    mutating func add(_ other: TurnsReport) {
        phase = min(phase, other.phase)
        started += other.started
        connected += other.connected
        open += other.open
        ready += other.ready
        updateRefused += other.updateRefused
        connectSeconds = max(connectSeconds, other.connectSeconds)
        failed.merge(other.failed, uniquingKeysWith: +)
        dropped.merge(other.dropped, uniquingKeysWith: +)
        pongs += other.pongs
        handshake.merge(other.handshake)
        sessionUpdate.merge(other.sessionUpdate)
        turnsSent += other.turnsSent
        responsesDone += other.responsesDone
        inFlight += other.inFlight
        cpu = cpu + other.cpu
        reportedAt = max(reportedAt, other.reportedAt)
        result.add(other.result)
    }
}
