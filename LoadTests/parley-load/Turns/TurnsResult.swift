import JSON

/// What `turns` measured in one process over the measured period: the turns due in it, what became
/// of them, and how long the replies took, seen from the client. Results from several processes
/// add together.
struct TurnsResult {
    /// Turns due in the measured period and sent.
    var turns = 0
    /// Turns due but not sent because the session's previous reply had not finished: the server
    /// is falling behind, and sending anyway would only earn an error.
    var skippedBusy = 0
    /// Turns due on a session that was closed or had not sent session.created.
    var skippedClosed = 0
    /// Responses by `response.status` (from `response.done`).
    var statuses: [String: Int] = [:]
    /// Responses that did not complete, by "status: reason or error code".
    var notCompleted: [String: Int] = [:]
    /// response.create answered by an `error` event instead of a response.
    var refused = 0
    /// Turns with no response.done by the end of the drain.
    var unanswered = 0
    /// Turns whose session was lost before the reply finished.
    var lostInFlight = 0
    /// `error` events by `error.code`, whenever they came (warm-up included).
    var errors: [String: Int] = [:]
    /// response.done with no turn of ours in flight.
    var strays = 0
    /// From sending response.create to the first response.output_text.delta.
    var firstDelta = LatencyRecorder()
    /// From sending response.create to response.done.
    var done = LatencyRecorder()
    /// The most a measured turn was sent after it was due: above a few milliseconds the client, not
    /// the server, was behind.
    var maxSendLag: UInt64 = 0
    var measuredSeconds = 0.0
    /// CPU this process used in the measured period.
    var cpuMeasured = CPUTime.zero

    var responses: Int { statuses.values.reduce(0, +) }
    var completed: Int { statuses["completed"] ?? 0 }
    var errorCount: Int { errors.values.reduce(0, +) }
    /// Summed over processes, which share one measured period.
    var turnsPerSecond: Double { measuredSeconds > 0 ? Double(turns) / measuredSeconds : 0 }

    init() {}

    var json: JSON {
        .object([
            ("turns", .int(turns)),
            ("skipped_busy", .int(skippedBusy)),
            ("skipped_closed", .int(skippedClosed)),
            ("statuses", .counts(statuses)),
            ("not_completed", .counts(notCompleted)),
            ("refused", .int(refused)),
            ("unanswered", .int(unanswered)),
            ("lost_in_flight", .int(lostInFlight)),
            ("errors", .counts(errors)),
            ("strays", .int(strays)),
            ("max_send_lag_ns", .number(Double(maxSendLag))),
            ("measured_seconds", .number(measuredSeconds)),
            ("cpu_measured", cpuMeasured.json),
            ("first_delta", firstDelta.json),
            ("done", done.json),
        ])
    }

    init(json: JSON) {
        turns = json["turns"]?.int ?? 0
        skippedBusy = json["skipped_busy"]?.int ?? 0
        skippedClosed = json["skipped_closed"]?.int ?? 0
        statuses = json["statuses"]?.countTable ?? [:]
        notCompleted = json["not_completed"]?.countTable ?? [:]
        refused = json["refused"]?.int ?? 0
        unanswered = json["unanswered"]?.int ?? 0
        lostInFlight = json["lost_in_flight"]?.int ?? 0
        errors = json["errors"]?.countTable ?? [:]
        strays = json["strays"]?.int ?? 0
        maxSendLag = UInt64(json["max_send_lag_ns"]?.double ?? 0)
        measuredSeconds = json["measured_seconds"]?.double ?? 0
        cpuMeasured = CPUTime(json: json["cpu_measured"])
        firstDelta = LatencyRecorder(json: json["first_delta"])
        done = LatencyRecorder(json: json["done"])
    }

    mutating func add(_ other: TurnsResult) {
        turns += other.turns
        skippedBusy += other.skippedBusy
        skippedClosed += other.skippedClosed
        statuses.merge(other.statuses, uniquingKeysWith: +)
        notCompleted.merge(other.notCompleted, uniquingKeysWith: +)
        refused += other.refused
        unanswered += other.unanswered
        lostInFlight += other.lostInFlight
        errors.merge(other.errors, uniquingKeysWith: +)
        strays += other.strays
        maxSendLag = max(maxSendLag, other.maxSendLag)
        measuredSeconds = max(measuredSeconds, other.measuredSeconds)
        cpuMeasured = cpuMeasured + other.cpuMeasured
        firstDelta.merge(other.firstDelta)
        done.merge(other.done)
    }
}
