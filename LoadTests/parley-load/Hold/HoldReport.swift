import JSON

/// What a hold worker tells its parent, every half second and once more at the end; the parent
/// adds the workers' reports together.
struct HoldReport {
    var final = false
    var started = 0
    var connected = 0
    var open = 0
    /// Every connection has opened or failed.
    var settled = false
    /// Seconds from the worker's first connect to its last open.
    var connectSeconds = 0.0
    var failed: [String: Int] = [:]
    var dropped: [String: Int] = [:]
    var pongs = 0
    var handshake = LatencyRecorder()
    var cpu = CPUTime.zero

    init() {}

    init(_ pool: ConnectionPool, final: Bool) {
        self.final = final
        started = pool.started
        connected = pool.connected
        open = pool.open
        settled = pool.settled
        connectSeconds = pool.lastOpenedSeconds
        failed = pool.failed
        dropped = pool.dropped
        pongs = pool.pongsSent
        handshake = pool.handshakeLatency
        cpu = .ofSelf()
    }

    var failedCount: Int { failed.values.reduce(0, +) }
    var droppedCount: Int { dropped.values.reduce(0, +) }

    var json: JSON {
        var members: [(String, JSON)] = [
            ("kind", .string(final ? "final" : "progress")),
            ("started", .int(started)),
            ("connected", .int(connected)),
            ("open", .int(open)),
            ("settled", .bool(settled)),
            ("connect_seconds", .number(connectSeconds)),
            ("failed", .counts(failed)),
            ("dropped", .counts(dropped)),
            ("pongs", .int(pongs)),
            ("cpu", cpu.json),
        ]
        // The histogram is the bulk of a report and only read once connecting is over.
        if settled || final { members.append(("handshake", handshake.json)) }
        return .object(members)
    }

    init(json: JSON) {
        final = json["kind"]?.string == "final"
        started = json["started"]?.int ?? 0
        connected = json["connected"]?.int ?? 0
        open = json["open"]?.int ?? 0
        settled = json["settled"]?.bool ?? false
        connectSeconds = json["connect_seconds"]?.double ?? 0
        failed = json["failed"]?.countTable ?? [:]
        dropped = json["dropped"]?.countTable ?? [:]
        pongs = json["pongs"]?.int ?? 0
        handshake = LatencyRecorder(json: json["handshake"])
        cpu = CPUTime(json: json["cpu"])
    }

    /// Sums of counts, merged histograms; `settled` only if both were.
    mutating func add(_ other: HoldReport) {
        started += other.started
        connected += other.connected
        open += other.open
        settled = settled && other.settled
        connectSeconds = max(connectSeconds, other.connectSeconds)
        failed.merge(other.failed, uniquingKeysWith: +)
        dropped.merge(other.dropped, uniquingKeysWith: +)
        pongs += other.pongs
        handshake.merge(other.handshake)
        cpu = cpu + other.cpu
    }
}
