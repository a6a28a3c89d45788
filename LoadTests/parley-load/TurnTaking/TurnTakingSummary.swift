import JSON

/// What `turn-taking` measured on one server, scenario by scenario, and the table that sets the
/// servers side by side.
struct TurnTakingResults {
    /// k of n: premature ends in n turns, replies cut in n backchannels.
    struct Tally: Equatable {
        var hits = 0
        var runs = 0

        mutating func add(_ hit: Bool) {
            runs += 1
            if hit { hits += 1 }
        }

        var text: String { "\(hits) of \(runs)" }
        var json: JSON { .object([("count", .int(hits)), ("of", .int(runs))]) }
    }

    let label: String
    let url: String
    /// Scenario 1: the last word's last sample sent → speech_stopped received, per finished sentence.
    var endOfTurnMs: [Double] = []
    /// Scenario 1: sentences whose turn never ended, and those that ended before their last word.
    var neverEnded = Tally()
    var endedEarly = Tally()
    /// Scenario 2: premature ends (speech_stopped or committed before the second half), by pause in ms.
    var premature: [Int: Tally] = [:]
    var prematureByCategory: [String: Tally] = [:]
    /// The same, of the pauses mid-thought only (every category but a whole question's).
    var prematureMidThought: [Int: Tally] = [:]
    /// Scenario 2: the second half's last word → speech_stopped (the sentence finished after its pause).
    var pausedThenFinishedMs: [Double] = []
    /// Scenario 3: replies cut by a backchannel, and those whose audio went on after it.
    var backchannelCuts = Tally()
    var backchannelResumed = Tally()
    /// Scenario 4: replies cut by an interruption; the first word's first sample sent → the last
    /// reply audio received, and → response.done (cancelled).
    var interruptionCuts = Tally()
    var audioStopsMs: [Double] = []
    /// Scenario 4: the first word's first sample sent → a player of all the audio received runs out.
    var audioRunsOutMs: [Double] = []
    var cancelledMs: [Double] = []
    /// Cases that could not be run as designed (a reply over before the listener spoke, an error).
    var problems: [String] = []
    /// The server's own counters over the run (after minus before), where its /metrics had them.
    var counters: [(String, Double)] = []
    /// Every case as measured, for the JSON report.
    var cases: [JSON] = []
}

/// Nearest-rank percentiles (the smallest value with at least p % of the values at or below it):
/// runs here are tens of values, so an exact rank says more than an interpolated one.
enum NearestRank {
    static func percentile(_ percent: Double, of values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let rank = Int((percent / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count, max(1, rank)) - 1]
    }

    /// "248 ms", or "n/a" with nothing measured.
    static func text(_ percent: Double, of values: [Double]) -> String {
        percentile(percent, of: values).map { "\(Format.fixed($0, 0)) ms" } ?? "n/a"
    }

    static func json(_ values: [Double], _ percents: [(String, Double)]) -> JSON {
        .object(percents.map { name, p in (name, percentile(p, of: values).map(JSON.number) ?? .null) } + [("count", .int(values.count))])
    }
}

/// The side-by-side table and the JSON report of a `turn-taking` run.
struct TurnTakingSummary {
    let servers: [TurnTakingResults]
    /// The scenarios run (end, pause, backchannel, interruption): only theirs are shown.
    let scenarios: [String]
    let voices: [TurnTakingVoice]
    let repeats: Int
    let pausesMs: [Int]
    let pauseCategories: [String]
    let wallSeconds: Double
    let clientCPU: CPUTime

    static let labelWidth = 54
    static let columnWidth = 24

    private func row(_ label: String, _ values: (TurnTakingResults) -> String) -> String {
        var line = "  " + label + String(repeating: " ", count: max(1, Self.labelWidth - label.count))
        for server in servers {
            let value = values(server)
            line += value + String(repeating: " ", count: max(1, Self.columnWidth - value.count))
        }
        return line
    }

    var text: String {
        var lines = ["", row("", { $0.label })]
        if scenarios.contains("end") { lines += endOfTurnLines }
        if scenarios.contains("pause") { lines += pauseLines }
        if scenarios.contains("backchannel") { lines += backchannelLines }
        if scenarios.contains("interruption") { lines += interruptionLines }
        lines += counterLines
        lines.append("")
        lines.append("voices: \(voices.map(\.description).joined(separator: ", ")); each case \(repeats)×; one session at a time, the servers alternating case by case")
        lines.append("client CPU: \(Format.fixed(clientCPU.total, 2)) s (user \(Format.fixed(clientCPU.user, 2)), system \(Format.fixed(clientCPU.system, 2))) over \(Format.fixed(wallSeconds, 0)) s, \(Format.fixed(clientCPU.total / max(wallSeconds, 0.001) * 100, 1)) % of a core (getrusage)")
        for server in servers where !server.problems.isEmpty {
            lines.append("\(server.label): \(server.problems.count) case(s) not as designed: " + server.problems.prefix(5).joined(separator: "; ") + (server.problems.count > 5 ? "; …" : ""))
        }
        return lines.joined(separator: "\n")
    }

    private var endOfTurnLines: [String] {
        var lines = ["end of turn: last word sent → speech_stopped (finished sentences)"]
        for (name, p) in [("p50", 50.0), ("p90", 90), ("p99", 99), ("max", 100)] {
            lines.append(row(name, { NearestRank.text(p, of: $0.endOfTurnMs) }))
        }
        lines.append(row("turns never ended", { $0.neverEnded.text }))
        lines.append(row("ended before the last word", { $0.endedEarly.text }))
        return lines
    }

    private static func falseCutOffs(_ byPause: [Int: TurnTakingResults.Tally]) -> String {
        let tally = byPause.filter { $0.key <= 1_000 }.values.reduce(into: TurnTakingResults.Tally()) { $0.hits += $1.hits; $0.runs += $1.runs }
        return tally.runs == 0 ? "n/a" : "\(tally.text) (\(Format.fixed(Double(tally.hits) * 100 / Double(tally.runs), 1)) %)"
    }

    private var pauseLines: [String] {
        var lines = ["premature replies: a pause mid-thought taken for the end (semantic_vad auto)"]
        for pause in pausesMs {
            lines.append(row("\(Format.fixed(Double(pause) / 1000, 1)) s pause", { $0.premature[pause]?.text ?? "n/a" }))
        }
        for category in pauseCategories {
            lines.append(row("  \(category)", { $0.prematureByCategory[category]?.text ?? "n/a" }))
        }
        // As eot-bench reports a detector: how often it cuts in (pauses up to 1 s), and how long
        // a finished turn waits (the sentences said whole, and the paused ones once finished).
        lines.append(row("false cut-offs, pauses ≤ 1 s", { Self.falseCutOffs($0.premature) }))
        lines.append(row("  mid-thought (all but a whole question)", { Self.falseCutOffs($0.prematureMidThought) }))
        lines.append(row("finished after a pause: end p50 / p90", { "\(NearestRank.text(50, of: $0.pausedThenFinishedMs)) / \(NearestRank.text(90, of: $0.pausedThenFinishedMs))" }))
        return lines
    }

    private var backchannelLines: [String] {
        ["backchannels one second into a spoken reply (target: 0 cut)",
         row("replies cut", { $0.backchannelCuts.text }),
         row("reply audio went on after it", { $0.backchannelResumed.text })]
    }

    private var interruptionLines: [String] {
        func pair(_ values: [Double]) -> String { "\(NearestRank.text(50, of: values)) / \(NearestRank.text(99, of: values))" }
        return ["interruptions one second into a spoken reply: first word sent → reply stops",
                row("replies cut", { $0.interruptionCuts.text }),
                row("last reply audio received p50 / p99", { pair($0.audioStopsMs) }),
                row("received audio runs out p50 / p99", { pair($0.audioRunsOutMs) }),
                row("response.done cancelled p50 / p99", { pair($0.cancelledMs) })]
    }

    private var counterLines: [String] {
        var names: [String] = []
        for server in servers {
            for (name, _) in server.counters where !names.contains(name) { names.append(name) }
        }
        guard !names.isEmpty else { return [] }
        var lines = ["the server's counters over the run (/metrics)"]
        for name in names {
            lines.append(row(name, { server in server.counters.first { $0.0 == name }.map { Format.grouped(Int($0.1.rounded())) } ?? "n/a" }))
        }
        return lines
    }

    var json: JSON {
        let percents = [("p50", 50.0), ("p90", 90), ("p99", 99), ("max", 100)]
        let serverJSON = servers.map { s -> JSON in
            .object([
                ("label", .string(s.label)),
                ("url", .string(s.url)),
                ("end_of_turn_ms", NearestRank.json(s.endOfTurnMs, percents)),
                ("turns_never_ended", s.neverEnded.json),
                ("turns_ended_before_last_word", s.endedEarly.json),
                ("premature_by_pause", .array(pausesMs.map { pause in
                    .object([("pause_ms", .int(pause)), ("premature", (s.premature[pause] ?? TurnTakingResults.Tally()).json),
                             ("premature_mid_thought", (s.prematureMidThought[pause] ?? TurnTakingResults.Tally()).json)])
                })),
                ("premature_by_category", .object(pauseCategories.map { ($0, (s.prematureByCategory[$0] ?? TurnTakingResults.Tally()).json) })),
                ("paused_then_finished_end_ms", NearestRank.json(s.pausedThenFinishedMs, percents)),
                ("backchannel_replies_cut", s.backchannelCuts.json),
                ("backchannel_reply_audio_went_on", s.backchannelResumed.json),
                ("interruption_replies_cut", s.interruptionCuts.json),
                ("interruption_last_audio_ms", NearestRank.json(s.audioStopsMs, [("p50", 50), ("p99", 99), ("max", 100)])),
                ("interruption_audio_runs_out_ms", NearestRank.json(s.audioRunsOutMs, [("p50", 50), ("p99", 99), ("max", 100)])),
                ("interruption_cancelled_ms", NearestRank.json(s.cancelledMs, [("p50", 50), ("p99", 99), ("max", 100)])),
                ("server_counters", .object(s.counters.map { ($0.0, JSON.number($0.1)) })),
                ("problems", .array(s.problems.map(JSON.string))),
                ("cases", .array(s.cases)),
            ])
        }
        return .object([
            ("command", .string("turn-taking")),
            ("scenarios", .array(scenarios.map(JSON.string))),
            ("voices", .array(voices.map { .string($0.rawValue) })),
            ("repeat", .int(repeats)),
            ("wall_seconds", .number(wallSeconds)),
            ("client_cpu", clientCPU.json),
            ("servers", .array(serverJSON)),
        ])
    }
}
