import JSON

/// What one echo run measured; results from several processes add together.
struct EchoResult {
    var connections = 0
    var opened = 0
    /// Connections that never opened, by reason.
    var failed: [String: Int] = [:]
    /// Connections lost during the run, by reason.
    var dropped: [String: Int] = [:]
    /// Replies that were not the message sent, or arrived unasked.
    var badEchoes = 0
    /// Round trips sent and answered inside the measurement window.
    var messages = 0
    var measuredSeconds = 0.0
    var latency = LatencyRecorder()
    /// CPU this process used during the measurement window.
    var cpuMeasured = CPUTime.zero
    /// Summed over processes: each measures its own window, so rates add and counts do not divide.
    var messagesPerSecond = 0.0
    /// The server's CPU over the window (with `--server-pid`), and the machine's stolen share;
    /// every process reads the same server and machine, so merging keeps the largest.
    var serverCPUSeconds: Double?
    var stealFraction: Double?

    var errors: Int { failed.values.reduce(0, +) + dropped.values.reduce(0, +) + badEchoes }

    var json: JSON {
        .object([
            ("connections", .int(connections)),
            ("opened", .int(opened)),
            ("failed", .counts(failed)),
            ("dropped", .counts(dropped)),
            ("bad_echoes", .int(badEchoes)),
            ("messages", .int(messages)),
            ("measured_seconds", .number(measuredSeconds)),
            ("messages_per_second", .number(messagesPerSecond)),
            ("cpu_measured", cpuMeasured.json),
            ("latency", latency.json),
            ("server_cpu_seconds", serverCPUSeconds.map(JSON.number) ?? .null),
            ("steal_fraction", stealFraction.map(JSON.number) ?? .null),
        ])
    }

    init() {}

    init(json: JSON) {
        connections = json["connections"]?.int ?? 0
        opened = json["opened"]?.int ?? 0
        failed = json["failed"]?.countTable ?? [:]
        dropped = json["dropped"]?.countTable ?? [:]
        badEchoes = json["bad_echoes"]?.int ?? 0
        messages = json["messages"]?.int ?? 0
        measuredSeconds = json["measured_seconds"]?.double ?? 0
        messagesPerSecond = json["messages_per_second"]?.double ?? 0
        cpuMeasured = CPUTime(json: json["cpu_measured"])
        latency = LatencyRecorder(json: json["latency"])
        serverCPUSeconds = json["server_cpu_seconds"]?.double
        stealFraction = json["steal_fraction"]?.double
    }

    mutating func add(_ other: EchoResult) {
        connections += other.connections
        opened += other.opened
        failed.merge(other.failed, uniquingKeysWith: +)
        dropped.merge(other.dropped, uniquingKeysWith: +)
        badEchoes += other.badEchoes
        messages += other.messages
        measuredSeconds = max(measuredSeconds, other.measuredSeconds)
        messagesPerSecond += other.messagesPerSecond
        cpuMeasured = cpuMeasured + other.cpuMeasured
        latency.merge(other.latency)
        if let theirs = other.serverCPUSeconds { serverCPUSeconds = max(serverCPUSeconds ?? 0, theirs) }
        if let theirs = other.stealFraction { stealFraction = max(stealFraction ?? 0, theirs) }
    }
}
