import JSON

/// One server's figures in a `compare` run, read from the scenario reports, and the ratio table.
struct CompareResult {
    let peer: Peer
    var hold: JSON?
    var echo100: JSON?
    var echo1000: JSON?
    /// The voice steps run, in rising order of speakers; all but perhaps the last passed.
    var voices: [JSON] = []
    /// Resident bytes listening, before any connection.
    var startupResident: Double?
    /// The paced streams runs: connections, and the run's report.
    var streams: [(connections: Int, run: JSON?)] = []

    func streams(_ connections: Int) -> JSON? { streams.first { $0.connections == connections }?.run }
    func serverMicroseconds(_ run: JSON?) -> Double? { run?["server_microseconds_per_message"]?.double }
    func serverCores(_ run: JSON?) -> Double? { run?["server_cores_while_measuring"]?.double }

    init(peer: Peer) { self.peer = peer }

    /// Sessions still open after the hold.
    var held: Int? { hold?["open_after_hold"]?.int }
    /// (RSS − RSS before the run) / sessions held, from /proc.
    var residentPerSession: Double? { hold?["server_connected"]?["resident_growth_bytes_per_connection"]?.double }
    /// The whole process's PSS / sessions held.
    var proportionalPerSession: Double? { hold?["server_connected"]?["proportional_bytes_per_connection"]?.double }
    func rate(_ echo: JSON?) -> Double? { echo?["result"]?["messages_per_second"]?.double }
    func p99(_ echo: JSON?) -> Double? { echo?["latency_ns"]?["p99"]?.double }
    func clientCores(_ echo: JSON?) -> Double? { echo?["client_cores_while_measuring"]?.double }

    /// The voice step with the most speakers that stayed within the budget.
    var voice: JSON? { voices.last { $0["passed"]?.bool == true } }
    /// Speakers kept in real time (0 when even the first step failed), nil when voice did not run.
    var speakers: Int? { voices.isEmpty ? nil : voice?["speaking"]?.int ?? 0 }

    /// "400 of 10,000, p99 ≤ 4 ms (500: p99 ≤ 25 ms)": the best step that passed, and the first
    /// that did not.
    var voiceCell: String {
        guard peer.servesVoice else { return "no /ws voice path" }
        guard !voices.isEmpty else { return "not run (no --speech)" }
        func lag(_ run: JSON) -> String {
            run["server_lag_seconds_bound"]?["p99"]?.double.map { $0.isFinite ? "p99 ≤ \(LatencyRecorder.format(nanoseconds: UInt64($0 * 1e9)))" : "p99 over 10 s" } ?? "no lag measured"
        }
        var cell = "none"
        if let voice {
            cell = "\(Format.grouped(voice["speaking"]?.int ?? 0)) of \(Format.grouped(voice["sessions"]?.int ?? 0)), \(lag(voice))"
            if let cores = voice["server_cores_while_measuring"]?.double { cell += ", \(Format.fixed(cores, 2)) cores" }
        }
        if let failed = voices.last, failed["passed"]?.bool != true {
            cell += " (\(Format.grouped(failed["speaking"]?.int ?? 0)): \(lag(failed)))"
        } else {
            cell += " (the most tried)"
        }
        return cell
    }

    var json: JSON {
        func number(_ value: Double?) -> JSON { value.map(JSON.number) ?? .null }
        return .object([
            ("server", .string(peer.rawValue)),
            ("sessions_held", held.map { .int($0) } ?? .null),
            ("resident_bytes_per_session", number(residentPerSession)),
            ("proportional_bytes_per_session", number(proportionalPerSession)),
            ("echo_100_msgs_per_second", number(rate(echo100))),
            ("echo_100_p99_ns", number(p99(echo100))),
            ("echo_1000_msgs_per_second", number(rate(echo1000))),
            ("echo_1000_p99_ns", number(p99(echo1000))),
            ("voice_speakers_in_real_time", speakers.map { .int($0) } ?? .null),
            ("voice", .array(voices)),
            ("startup_resident_bytes", number(startupResident)),
            ("streams", .array(streams.map { .object([("connections", .int($0.connections)), ("run", $0.run ?? .null)]) })),
        ])
    }

    /// The paced streams and start-up memory: each server's figures, then Parley's ratio to each
    /// (the peer's cost over Parley's: above 1× Parley costs less).
    static func streamsTable(_ results: [CompareResult]) -> String {
        let counts = results.flatMap { $0.streams.map(\.connections) }.reduce(into: [Int]()) { if !$0.contains($1) { $0.append($1) } }
        guard !counts.isEmpty else { return "" }
        func milliseconds(_ ns: Double?) -> String { ns.map { Format.fixed($0 / 1e6, 2) + " ms" } ?? "n/a" }
        func cell(_ r: CompareResult, _ n: Int) -> String {
            let run = r.streams(n)
            guard let run else { return "n/a" }
            let cpu = r.serverCores(run).map { Format.fixed($0 * 100, 0) + " %" } ?? "n/a"
            let us = r.serverMicroseconds(run).map { Format.fixed($0, 2) + " µs" } ?? "n/a"
            let steal = run["steal_fraction_while_measuring"]?.double.map { ", st " + Format.fixed($0 * 100, 1) + " %" } ?? ""
            let client = run["client_cores_while_measuring"]?.double.map { ", client " + Format.fixed($0 * 100, 0) + " %" } ?? ""
            return "\(cpu), \(us)/msg, p99 \(milliseconds(r.p99(run)))\(client)\(steal)\(run["passed"]?.bool == false ? " (errors)" : "")"
        }
        var out = "\nPaced streams (60-byte messages every 20 ms a connection, echoed; server CPU as a share of one core, per message, the round trip's p99, the load client's CPU and the machine's steal over the same window) and memory at start:\n\n"
        out += "| server | RSS at start | " + counts.map { "\(Format.grouped($0)) streams" }.joined(separator: " | ") + " |\n"
        out += "| --- | ---: | " + counts.map { _ in "---" }.joined(separator: " | ") + " |\n"
        for r in results {
            out += "| \(r.peer.title) | \(r.startupResident.map { Format.fixed($0 / 1_048_576, 1) + " MiB" } ?? "n/a") | " + counts.map { cell(r, $0) }.joined(separator: " | ") + " |\n"
        }
        guard let parley = results.first(where: { $0.peer == .parley }), results.count > 1 else { return out }
        func ratio(_ a: Double?, _ b: Double?) -> String {
            guard let a, let b, a > 0, b > 0 else { return "n/a" }
            return Format.fixed(a / b, 2) + "×"
        }
        out += "\nParley against each (the peer's figure over Parley's: above 1× Parley uses less):\n\n"
        out += "| against | RSS at start | " + counts.map { "CPU/msg @\(Format.grouped($0)) | p99 @\(Format.grouped($0))" }.joined(separator: " | ") + " |\n"
        out += "| --- | ---: | " + counts.map { _ in "---: | ---:" }.joined(separator: " | ") + " |\n"
        for peer in results where peer.peer != .parley {
            out += "| \(peer.peer.title) | \(ratio(peer.startupResident, parley.startupResident)) | "
            out += counts.map { n in
                "\(ratio(peer.serverMicroseconds(peer.streams(n)), parley.serverMicroseconds(parley.streams(n)))) | \(ratio(peer.p99(peer.streams(n)), parley.p99(parley.streams(n))))"
            }.joined(separator: " | ") + " |\n"
        }
        return out
    }

    /// The Markdown table: each server's figures, then Parley's ratio to it (higher is better for
    /// Parley on every ratio: sessions and msg/s divide Parley by the peer, memory and p99 the peer
    /// by Parley).
    static func table(_ results: [CompareResult], command: String) -> String {
        func integer(_ value: Double?) -> String { value.map { Format.grouped(Int($0.rounded())) } ?? "n/a" }
        func milliseconds(_ ns: Double?) -> String { ns.map { Format.fixed($0 / 1e6, 2) + " ms" } ?? "n/a" }
        func bytes(_ value: Double?) -> String { value.map { Format.grouped(Int($0.rounded())) + " B" } ?? "n/a" }
        var out = "Command: `\(command)`\n\n"
        out += "| server | idle sessions held | memory / session (RSS growth) | memory / session (whole process, PSS) | echo msg/s @100 | p99 @100 | echo msg/s @1,000 | p99 @1,000 | voice sessions in real time |\n"
        out += "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n"
        for r in results {
            out += "| \(r.peer.title) | \(r.held.map { Format.grouped($0) } ?? "n/a") | \(bytes(r.residentPerSession)) | \(bytes(r.proportionalPerSession)) | "
            out += "\(integer(r.rate(r.echo100))) | \(milliseconds(r.p99(r.echo100))) | \(integer(r.rate(r.echo1000))) | \(milliseconds(r.p99(r.echo1000))) | \(r.voiceCell) |\n"
        }
        guard let parley = results.first(where: { $0.peer == .parley }) else { return out }
        let peers = results.filter { $0.peer != .parley }
        guard !peers.isEmpty else { return out }
        func speakerRatio(_ a: Int?, _ b: Int?) -> String {
            guard let a, let b else { return "n/a" }
            return b == 0 ? (a > 0 ? "\(a) vs 0" : "n/a") : Format.fixed(Double(a) / Double(b), 1) + "×"
        }
        func ratio(_ a: Double?, _ b: Double?) -> String {
            guard let a, let b, a > 0, b > 0 else { return "n/a" }
            return Format.fixed(a / b, 1) + "×"
        }
        out += "\nParley against each peer (above 1× means Parley is ahead):\n\n"
        out += "| against | sessions held | memory / session (RSS) | memory / session (PSS) | msg/s @100 | p99 @100 | msg/s @1,000 | p99 @1,000 | voice speakers |\n"
        out += "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
        for peer in peers {
            out += "| \(peer.peer.title) | \(ratio(parley.held.map(Double.init), peer.held.map(Double.init))) | "
            out += "\(ratio(peer.residentPerSession, parley.residentPerSession)) | \(ratio(peer.proportionalPerSession, parley.proportionalPerSession)) | "
            out += "\(ratio(parley.rate(parley.echo100), peer.rate(peer.echo100))) | \(ratio(peer.p99(peer.echo100), parley.p99(parley.echo100))) | "
            out += "\(ratio(parley.rate(parley.echo1000), peer.rate(peer.echo1000))) | \(ratio(peer.p99(peer.echo1000), parley.p99(parley.echo1000))) | "
            out += "\(speakerRatio(parley.speakers, peer.speakers)) |\n"
        }
        out += streamsTable(results)
        let cores = results.compactMap { r in r.clientCores(r.echo100).map { "\(r.peer.rawValue) \(Format.fixed($0, 2))" } }
        out += "\nThe load client shared the two cores: its CPU while measuring echo @100, in cores: \(cores.joined(separator: ", ")).\n"
        let voiceCores = results.compactMap { r in r.voice?["client_cores_while_measuring"]?.double.map { "\(r.peer.rawValue) \(Format.fixed($0, 2))" } }
        if !voiceCores.isEmpty { out += "Its CPU at each server's best voice step: \(voiceCores.joined(separator: ", ")).\n" }
        return out
    }
}
