import JSON

/// One spoken turn of one talker in `talkers`, as the client timed it (milliseconds on its
/// monotonic clock) and as the server's `parley.turn.timeline` told it.
struct TalkerTurn: Sendable {
    let talker: Int
    let index: Int
    let voice: TurnTakingVoice
    let text: String
    /// (a) The last word's last sample sent → `input_audio_buffer.speech_stopped` received.
    var lastWordToStoppedMs: Double?
    /// (b) `speech_stopped` → the first `response.output_audio.delta` received.
    var stoppedToAudioMs: Double?
    /// (c) The last word → the first reply audio delta.
    var lastWordToAudioMs: Double?
    /// A `speech_stopped` before the last word was sent (a pause taken for the end).
    var endedEarly = false
    /// (d) A barge-in was spoken over this turn's reply.
    var bargeIn = false
    /// Whether the reply spoken over was cut (`response.done` cancelled); nil when not measured.
    var bargeCut: Bool?
    /// (d) The interruption's first sample sent → the last audio delta of the cut reply received
    /// (below zero when the server had sent its last before the word), → `output_audio_buffer.cleared`,
    /// → `response.done` cancelled.
    var bargeToLastAudioMs: Double?
    var bargeToClearedMs: Double?
    var bargeToCancelledMs: Double?
    /// Every `parley.turn.timeline` received in the turn (the interruption's own turn among them).
    var timelines: [[String: Double]] = []
    /// Why the turn could not be measured as designed.
    var problem: String?
    /// The turn's events as received, "+ms type" from its first sample sent (runs of audio deltas
    /// as one line with their count, the reply's transcript deltas left out): what a strange
    /// figure is read against.
    var trace: [String] = []

    /// `events` as `trace` lines, times from `start` (monotonic nanoseconds).
    static func trace(_ events: [RealtimeSpeaker.Received], from start: UInt64) -> [String] {
        var out: [String] = []
        var deltas = 0
        let events = events.filter { !$0.type.hasSuffix("transcript.delta") }
        for (n, event) in events.enumerated() {
            let at = "+" + Format.fixed((Double(event.at) - Double(start)) / 1e6, 0) + " "
            guard event.type.hasSuffix("audio.delta") else {
                out.append(at + event.type + (event.event?["response"]?["status"]?.string.map { " " + $0 } ?? ""))
                continue
            }
            if deltas == 0 { out.append(at + event.type) }
            deltas += 1
            if n == events.count - 1 || events[n + 1].type != event.type {
                out[out.count - 1] += " ×\(deltas)"
                deltas = 0
            }
        }
        return out
    }

    /// `stages_ms` of a `parley.turn.timeline` event; nil for any other event.
    static func stages(of event: JSON) -> [String: Double]? {
        guard event["type"]?.string == "parley.turn.timeline", case .object(let members)? = event["stages_ms"] else { return nil }
        var out: [String: Double] = [:]
        for (name, value) in members {
            if let ms = value.double { out[name] = ms }
        }
        return out
    }

    var json: JSON {
        func number(_ value: Double?) -> JSON { value.map(JSON.number) ?? .null }
        var members: [(String, JSON)] = [("talker", .int(talker)), ("turn", .int(index)), ("voice", .string(voice.rawValue)), ("text", .string(text)),
                                         ("last_word_to_speech_stopped_ms", number(lastWordToStoppedMs)),
                                         ("speech_stopped_to_first_audio_ms", number(stoppedToAudioMs)),
                                         ("last_word_to_first_audio_ms", number(lastWordToAudioMs)),
                                         ("ended_before_last_word", .bool(endedEarly))]
        if bargeIn {
            members += [("barge_in_cut", bargeCut.map(JSON.bool) ?? .null),
                        ("barge_in_to_last_audio_ms", number(bargeToLastAudioMs)),
                        ("barge_in_to_cleared_ms", number(bargeToClearedMs)),
                        ("barge_in_to_cancelled_ms", number(bargeToCancelledMs))]
        }
        members.append(("stages_ms", .array(timelines.map { stages in
            .object(TurnStageNames.all.compactMap { name in stages[name].map { (name, JSON.number($0)) } })
        })))
        if let problem { members.append(("problem", .string(problem))) }
        members.append(("trace", .array(trace.map(JSON.string))))
        return .object(members)
    }
}

/// The stages of Parley's turn timeline, in order (Sources/Session/TurnTimeline.swift).
enum TurnStageNames {
    static let all = ["end_of_turn", "transcription", "model_request", "first_token", "first_sentence", "synthesis", "first_frame", "total"]
    static let histogram = "parley_turn_stage_seconds"
}

/// One step of a `talkers` run (one count of talkers): its turns, and the CPU and steal beside them.
struct TalkersStep {
    let talkers: Int
    let turns: [TalkerTurn]
    let wallSeconds: Double
    let clientCPU: CPUTime
    /// The machine's CPU time taken by the hypervisor over the step (/proc/stat), nil if unknown.
    let stealFraction: Double?
    /// The server's CPU seconds over the step, nil if unknown.
    let serverCPUSeconds: Double?
    /// The server's `parley_turn_stage_seconds` observed during the step, by stage.
    let serverStages: [String: ServerHistogram]
    /// Talkers that could not run (no session, a send that failed).
    var problems: [String] = []

    static let percents: [(String, Double)] = [("p50", 50), ("p90", 90), ("p99", 99), ("max", 100)]

    /// The client's latencies, (a) to (d): label, JSON key, values.
    var latencies: [(label: String, key: String, values: [Double])] {
        let barged = turns.filter(\.bargeIn)
        return [("(a) last word sent → speech_stopped", "last_word_to_speech_stopped_ms", turns.compactMap(\.lastWordToStoppedMs)),
                ("(b) speech_stopped → first reply audio", "speech_stopped_to_first_audio_ms", turns.compactMap(\.stoppedToAudioMs)),
                ("(c) last word sent → first reply audio", "last_word_to_first_audio_ms", turns.compactMap(\.lastWordToAudioMs)),
                ("(d) barge-in sent → last audio of the cut reply", "barge_in_to_last_audio_ms", barged.compactMap(\.bargeToLastAudioMs)),
                ("(d) barge-in sent → output_audio_buffer.cleared", "barge_in_to_cleared_ms", barged.compactMap(\.bargeToClearedMs)),
                ("(d) barge-in sent → response.done cancelled", "barge_in_to_cancelled_ms", barged.compactMap(\.bargeToCancelledMs))]
    }

    /// Each stage's milliseconds over every timeline received.
    func stageValues(_ stage: String) -> [Double] { turns.flatMap { $0.timelines.compactMap { $0[stage] } } }

    var serverCores: Double? { serverCPUSeconds.map { $0 / max(wallSeconds, 0.001) } }
    var clientCores: Double { clientCPU.total / max(wallSeconds, 0.001) }

    var bargeCuts: TurnTakingResults.Tally {
        var tally = TurnTakingResults.Tally()
        for turn in turns where turn.bargeIn {
            if let cut = turn.bargeCut { tally.add(cut) }
        }
        return tally
    }

    private static func cell(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(1, width - text.count)) }

    var text: String {
        var lines = ["\(talkers) talker(s): \(turns.count) turn(s) in \(Format.fixed(wallSeconds, 0)) s",
                     "  " + Self.cell("client, ms", 52) + ["p50", "p90", "p99", "max"].map { Self.cell($0, 9) }.joined() + "count"]
        for (label, _, values) in latencies {
            lines.append("  " + Self.cell(label, 52) + Self.percents.map { Self.cell(NearestRank.percentile($0.1, of: values).map { Format.fixed($0, 0) } ?? "n/a", 9) }.joined() + "\(values.count)")
        }
        let early = turns.filter(\.endedEarly).count, silent = turns.filter { $0.lastWordToStoppedMs != nil && $0.stoppedToAudioMs == nil }.count
        lines.append("  turns ended before the last word: \(early) of \(turns.count); turns ended without reply audio: \(silent); barge-ins that cut the reply: \(bargeCuts.text)")
        lines.append("  " + Self.cell("stage, ms", 18) + Self.cell("timeline p50", 14) + Self.cell("p99", 8) + Self.cell("turns", 8) + Self.cell("server p50", 14) + Self.cell("p99", 10) + "observed")
        for stage in TurnStageNames.all {
            let values = stageValues(stage), server = serverStages[stage]
            lines.append("  " + Self.cell(stage, 18) + Self.cell(NearestRank.percentile(50, of: values).map { Format.fixed($0, 0) } ?? "n/a", 14)
                         + Self.cell(NearestRank.percentile(99, of: values).map { Format.fixed($0, 0) } ?? "n/a", 8) + Self.cell("\(values.count)", 8)
                         + Self.cell(server?.formatPercentile(50) ?? "n/a", 14) + Self.cell(server?.formatPercentile(99) ?? "n/a", 10) + "\(server?.observations ?? 0)")
        }
        lines.append("  client CPU: \(Format.fixed(clientCPU.total, 1)) s, \(Format.fixed(clientCores, 2)) cores (getrusage); server CPU: "
                     + (serverCores.map { "\(Format.fixed($0, 2)) cores" } ?? "n/a") + "; steal: " + (stealFraction.map { Format.fixed($0 * 100, 1) + " %" } ?? "n/a") + " (/proc/stat)")
        let problems = self.problems + turns.compactMap(\.problem)
        if !problems.isEmpty {
            lines.append("  \(problems.count) problem(s): " + problems.prefix(5).joined(separator: "; ") + (problems.count > 5 ? "; …" : ""))
        }
        return lines.joined(separator: "\n")
    }

    var json: JSON {
        func number(_ value: Double?) -> JSON { value.map(JSON.number) ?? .null }
        return .object([
            ("talkers", .int(talkers)),
            ("turns", .int(turns.count)),
            ("wall_seconds", .number(wallSeconds)),
            ("client_cpu", clientCPU.json),
            ("client_cores", .number(clientCores)),
            ("steal_fraction", number(stealFraction)),
            ("server_cpu_seconds", number(serverCPUSeconds)),
            ("server_cores", number(serverCores)),
            ("latency_ms", .object(latencies.map { ($0.key, NearestRank.json($0.values, Self.percents)) })),
            ("turns_ended_before_last_word", .int(turns.filter(\.endedEarly).count)),
            ("barge_in_cut", bargeCuts.json),
            ("stages_ms", .object(TurnStageNames.all.map { ($0, NearestRank.json(stageValues($0), Self.percents)) })),
            ("server_stages", .object(TurnStageNames.all.compactMap { name in serverStages[name].map { (name, $0.json) } })),
            ("problems", .array((problems + turns.compactMap(\.problem)).map(JSON.string))),
            ("turn_records", .array(turns.map(\.json))),
        ])
    }
}

/// A whole `talkers` run: its steps (one, or a ramp), and for a ramp the talkers one core of the
/// server carries while transcription stays within its bound.
struct TalkersSummary {
    let steps: [TalkersStep]
    let turnDetection: String
    let voices: [TurnTakingVoice]
    let turnsPerTalker: Int
    let bargeInEvery: Int
    /// The transcription stage's p99 a step must stay under to count, in ms.
    let transcriptionBoundMs: Double
    let cores: Int

    /// The largest step whose transcription p99 stays under the bound and whose server used less
    /// than every core, with its talkers per server core used; nil if none did (or no server CPU).
    var talkersPerCore: (step: TalkersStep, perCore: Double)? {
        let passing = steps.filter { step in
            guard let p99 = NearestRank.percentile(99, of: step.stageValues("transcription")), let cores = step.serverCores else { return false }
            return p99 < transcriptionBoundMs && cores < Double(self.cores) && cores > 0
        }
        guard let best = passing.max(by: { $0.talkers < $1.talkers }), let cores = best.serverCores else { return nil }
        return (best, Double(best.talkers) / cores)
    }

    /// The ramp in one table: per step, transcription and (b) p50 / p99, the server's CPU.
    var rampText: String {
        func pair(_ values: [Double]) -> String { "\(NearestRank.text(50, of: values)) / \(NearestRank.text(99, of: values))" }
        var lines = ["talkers   transcription p50 / p99   (b) speech_stopped → audio p50 / p99   server cores   client cores   steal"]
        for step in steps {
            let row = [("\(step.talkers)", 10), (pair(step.stageValues("transcription")), 26), (pair(step.latencies[1].values), 39),
                       (step.serverCores.map { Format.fixed($0, 2) } ?? "n/a", 15), (Format.fixed(step.clientCores, 2), 15)]
            lines.append(row.map { $0.0 + String(repeating: " ", count: max(1, $0.1 - $0.0.count)) }.joined() + (step.stealFraction.map { Format.fixed($0 * 100, 1) + " %" } ?? "n/a"))
        }
        return lines.joined(separator: "\n")
    }

    /// "talkers per core: …", the line scripts/benchmarks/bench-talkers.sh quotes.
    var talkersPerCoreLine: String {
        guard let (step, perCore) = talkersPerCore else {
            return "talkers per core: n/a (no step kept transcription p99 under \(Format.fixed(transcriptionBoundMs, 0)) ms below \(cores) cores)"
        }
        return "talkers per core: \(Format.fixed(perCore, 1)) (\(step.talkers) talkers at \(Format.fixed(step.serverCores ?? 0, 2)) server cores, transcription p99 under \(Format.fixed(transcriptionBoundMs, 0)) ms)"
    }

    var text: String {
        var out = steps.map(\.text).joined(separator: "\n\n")
        if steps.count > 1 { out += "\n\n" + rampText + "\n" + talkersPerCoreLine }
        return out
    }

    var json: JSON {
        let best = talkersPerCore
        return .object([
            ("command", .string("talkers")),
            ("turn_detection", .string(turnDetection)),
            ("voices", .array(voices.map { .string($0.rawValue) })),
            ("turns_per_talker", .int(turnsPerTalker)),
            ("barge_in_every", .int(bargeInEvery)),
            ("transcription_bound_ms", .number(transcriptionBoundMs)),
            ("cores", .int(cores)),
            ("talkers_per_core", best.map { .object([("talkers", .int($0.step.talkers)), ("server_cores", .number($0.step.serverCores ?? 0)), ("per_core", .number($0.perCore))]) } ?? .null),
            ("steps", .array(steps.map(\.json))),
        ])
    }
}
