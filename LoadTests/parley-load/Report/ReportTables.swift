import JSON

/// The Markdown tables of a report directory, one per scenario, each named so that
/// docs/benchmarks.md can take it in (`parley-load report DIR --docs FILE`).
extension LoadReport {
    struct Table {
        /// The name a `<!-- report:NAME -->` block in the docs refers to.
        let name: String
        let title: String
        let markdown: String
    }

    /// A compare directory's runs mix servers, so its one table is the comparison.
    var tables: [Table] {
        if let compareTable { return [compareTable] }
        return [ladderTable, voiceTable, echoTable, tlsTable, codecTable, speechTable, talkersTable, talkersStagesTable].compactMap { $0 }
    }

    private static func markdown(_ header: [String], _ rows: [[String]], rightFrom: Int = 1) -> String {
        var out = "| " + header.joined(separator: " | ") + " |\n|"
        for i in header.indices { out += i < rightFrom ? " --- |" : " ---: |" }
        out += "\n"
        for row in rows { out += "| " + row.joined(separator: " | ") + " |\n" }
        return out
    }

    private static func bytes(_ value: Double?) -> String { value.map { Format.grouped(Int($0.rounded())) + " B" } ?? "n/a" }
    private static func cores(_ value: Double?) -> String { value.map { Format.fixed($0, 2) } ?? "n/a" }
    private static func seconds(_ cpu: JSON?) -> Double? {
        guard let user = cpu?["user_seconds"]?.double, let system = cpu?["system_seconds"]?.double else { return nil }
        return user + system
    }

    /// Idle sessions held over plain ws, by session count.
    private var ladderTable: Table? {
        let holds = of("hold").filter { $0.json["url"]?.string?.hasPrefix("ws://") == true && !$0.name.contains("/") }
            .sorted { ($0.json["requested"]?.int ?? 0) < ($1.json["requested"]?.int ?? 0) }
        guard !holds.isEmpty else { return nil }
        let rows = holds.map { run -> [String] in
            let j = run.json, server = j["server_connected"]
            return [Format.grouped(j["requested"]?.int ?? 0),
                    "\(server?["workers"]?.int ?? 1)",
                    Format.grouped(j["open_after_hold"]?.int ?? 0),
                    j["held_seconds"]?.double.map { Format.fixed($0, 0) + " s" } ?? "n/a",
                    j["connect_rate"]?.int.map { Format.grouped($0) + " /s" } ?? "n/a",
                    Self.bytes(server?["resident_growth_bytes_per_connection"]?.double),
                    Self.bytes(server?["proportional_bytes_per_connection"]?.double),
                    Self.bytes(server?["resident_bytes_per_connection_whole"]?.double),
                    Self.seconds(j["client_cpu_total"]).map { Format.fixed($0, 1) + " s" } ?? "n/a",
                    j["passed"]?.bool == true ? "pass" : "**fail**"]
        }
        return Table(name: "ladder", title: "Idle sessions held",
                     markdown: Self.markdown(["sessions", "server processes", "held", "held for", "connect rate", "RSS growth / session",
                                              "whole server PSS / session", "whole RSS / session", "client CPU", "result"], rows))
    }

    /// Voice runs by speakers: the server's lag behind real time and both sides' CPU.
    private var voiceTable: Table? {
        let voices = voiceRuns
        guard !voices.isEmpty else { return nil }
        let rows = voices.map { run -> [String] in
            let j = run.json, lag = j["server_lag_seconds_bound"]
            func bound(_ key: String) -> String {
                guard let s = lag?[key]?.double else { return "n/a" }
                return s.isFinite ? "≤ " + LatencyRecorder.format(nanoseconds: UInt64(s * 1e9)) : "> 10 s"
            }
            let sent = j["frames_sent_in_all"]?.int ?? 0, processed = j["frames_processed_in_all"]?.int
            return ["\(Format.grouped(j["speaking"]?.int ?? 0)) of \(Format.grouped(j["sessions"]?.int ?? 0))",
                    "\(j["opus"]?.string ?? "fullband") \((j["opus_bitrate"]?.int ?? 32_000) / 1000)k",
                    Format.grouped(Int((Double(j["frames_sent"]?.int ?? 0) / max(1e-9, j["measured_seconds"]?.double ?? 1)).rounded())),
                    bound("p50"), "**" + bound("p99") + "**", bound("p99_9"),
                    processed.map { "\(Format.grouped($0)) of \(Format.grouped(sent))" } ?? "n/a",
                    Self.cores(j["server_cores_while_measuring"]?.double), Self.cores(j["client_cores_while_measuring"]?.double),
                    j["steal_fraction_while_measuring"]?.double.map { Format.fixed($0 * 100, 0) + " %" } ?? "n/a",
                    j["passed"]?.bool == true ? "pass" : "**fail**"]
        }
        return Table(name: "voice", title: "Voice: sessions speaking Opus in real time",
                     markdown: Self.markdown(["speaking", "Opus", "frames/s", "server lag p50", "p99", "p99.9", "frames processed",
                                              "server cores", "client cores", "steal", "result (p99 ≤ 5 ms)"], rows))
    }

    private var echoTable: Table? {
        let echoes = of("echo").filter { !$0.name.contains("/") }.sorted { ($0.json["result"]?["connections"]?.int ?? 0) < ($1.json["result"]?["connections"]?.int ?? 0) }
        guard !echoes.isEmpty else { return nil }
        return Table(name: "echo", title: "Echo", markdown: Self.markdown(["connections", "msg/s", "p50", "p99", "p99.9", "client cores"], echoes.map(Self.echoRow)))
    }

    private static func echoRow(_ run: (name: String, json: JSON)) -> [String] {
        let j = run.json, latency = LatencyRecorder(json: j["result"]?["latency"])
        return [Format.grouped(j["result"]?["connections"]?.int ?? 0),
                Format.grouped(Int((j["result"]?["messages_per_second"]?.double ?? 0).rounded())),
                LatencyRecorder.format(nanoseconds: latency.percentile(50)), LatencyRecorder.format(nanoseconds: latency.percentile(99)),
                LatencyRecorder.format(nanoseconds: latency.percentile(99.9)), cores(j["client_cores_while_measuring"]?.double)]
    }

    /// wss beside ws (the runs of scripts/benchmarks/bench-tls.sh, in tls/).
    private var tlsTable: Table? {
        let tls = runs.filter { $0.name.hasPrefix("tls/") }
        guard !tls.isEmpty else { return nil }
        var rows: [[String]] = []
        for run in tls {
            let j = run.json, name = String(run.name.dropFirst(4))
            switch j["command"]?.string {
            case "hold":
                let server = j["server_connected"]
                let connect = j["connect_seconds"]?.double, cpu = Self.seconds(j["client_cpu_at_connect"])
                rows.append([name, "\(Format.grouped(j["open_after_hold"]?.int ?? 0)) held", Self.bytes(server?["resident_growth_bytes_per_connection"]?.double) + " RSS growth / session",
                             connect.map { "connected in \(Format.fixed($0, 2)) s" } ?? "", cpu.map { "client \(Format.fixed($0, 1)) s CPU" } ?? ""])
            case "echo":
                let row = Self.echoRow(run)
                rows.append([name, "\(row[1]) msg/s", "p99 \(row[3])", "\(row[0]) connections", "client \(row[5]) cores"])
            default: break
            }
        }
        return Table(name: "tls", title: "TLS: wss beside ws", markdown: Self.markdown(["run", "figure", "", "", ""], rows, rightFrom: 5))
    }

    private var codecTable: Table? {
        guard let codec = of("codec").first?.json ?? runs.first(where: { $0.name == "codec" })?.json else { return nil }
        func line(_ label: String, _ result: JSON?) -> [String]? {
            guard let swift = result?["swift_frames_per_cpu_second"]?.double, let ratio = result?["swift_over_c"]?.double else { return nil }
            return [label, Format.grouped(Int(swift)), Format.fixed(1e6 / swift, 1) + " µs", Format.fixed(ratio * 100, 1) + " %"]
        }
        var rows: [[String]] = []
        if let r = line("decode, fullband \((codec["bitrate"]?.int ?? 0) / 1000) kbit/s at 48 kHz", codec["decode"]) { rows.append(r) }
        if let r = line("decode, wideband \((codec["wideband_bitrate"]?.int ?? 0) / 1000) kbit/s at 16 kHz (the server's path)", codec["decode_wideband_16k"]) { rows.append(r) }
        for encode in codec["encode"]?.array ?? [] {
            if let r = line("encode, complexity \(encode["complexity"]?.int ?? 0), fullband", encode["result"]) { rows.append(r) }
        }
        if let r = line("encode, the server's replies: 24 kHz, complexity 5", codec["encode_reply_24k_c5"]) { rows.append(r) }
        guard !rows.isEmpty else { return nil }
        var md = Self.markdown(["\(codec["libopus"]?.string ?? "libopus"), 20 ms mono frames", "frames per CPU-second", "per frame", "Parley's wrapper / raw C"], rows)
        if let speakers = codec["realtime_speakers_per_core"]?.int {
            md += "\nSpeakers one core decodes in real time: \(Format.grouped(speakers))"
            if let full = codec["realtime_speakers_per_core_fullband"]?.int { md += " wideband, \(Format.grouped(full)) fullband" }
            md += ".\n"
        }
        return Table(name: "codec", title: "Opus codec", markdown: md)
    }

    /// The speech runs (scripts/benchmarks/bench-speech.sh, in speech/): recognition and voice to voice.
    private var speechTable: Table? {
        let speech = runs.filter { $0.name.hasPrefix("speech/") && $0.json["command"]?.string == "voice" }
        guard !speech.isEmpty else { return nil }
        func bounds(_ j: JSON?) -> String {
            guard let j, let p50 = j["p50"]?.double, let p99 = j["p99"]?.double else { return "n/a" }
            func f(_ s: Double) -> String { s.isFinite ? "≤ " + LatencyRecorder.format(nanoseconds: UInt64(s * 1e9)) : "> 10 s" }
            return "\(f(p50)) / \(f(p99)) (\(j["count"]?.int ?? 0))"
        }
        let rows = speech.map { run -> [String] in
            let j = run.json
            return [String(run.name.dropFirst(7)), "\(j["speaking"]?.int ?? 0) of \(j["sessions"]?.int ?? 0)",
                    bounds(j["transcription_seconds_bound"]), j["recognition_real_time_factor"]?.double.map { Format.fixed($0, 2) } ?? "n/a",
                    bounds(j["voice_to_voice_seconds_bound"]), "\(j["speech_overloaded"]?.int ?? 0)",
                    Self.cores(j["server_cores_while_measuring"]?.double)]
        }
        return Table(name: "speech", title: "Speech: recognition and voice to voice",
                     markdown: Self.markdown(["run", "speaking", "speech_stopped → transcript p50 / p99 (turns)", "recognition real-time factor",
                                              "voice to voice p50 / p99 (replies)", "turns refused (overloaded)", "server cores"], rows))
    }

    /// Every step of every `talkers` run (scripts/benchmarks/bench-talkers.sh), with its run's name.
    private var talkersSteps: [(name: String, step: JSON)] {
        of("talkers").flatMap { run in (run.json["steps"]?.array ?? []).map { (run.name, $0) } }
    }

    /// "p50 / p99 (count)" of a NearestRank JSON, in ms.
    private static func milliseconds(_ j: JSON?) -> String {
        guard let j, let p50 = j["p50"]?.double, let p99 = j["p99"]?.double else { return "n/a" }
        return "\(Format.fixed(p50, 0)) / \(Format.fixed(p99, 0)) (\(j["count"]?.int ?? 0))"
    }

    private static func steal(_ j: JSON) -> String { j["steal_fraction"]?.double.map { Format.fixed($0 * 100, 1) + " %" } ?? "n/a" }

    /// Talkers: the client's latencies, (a) to (d), step by step.
    private var talkersTable: Table? {
        let steps = talkersSteps
        guard !steps.isEmpty else { return nil }
        let rows = steps.map { name, j -> [String] in
            let latency = j["latency_ms"], cut = j["barge_in_cut"]
            return [name, "\(j["talkers"]?.int ?? 0)", "\(j["turns"]?.int ?? 0)",
                    Self.milliseconds(latency?["last_word_to_speech_stopped_ms"]), Self.milliseconds(latency?["speech_stopped_to_first_audio_ms"]),
                    Self.milliseconds(latency?["last_word_to_first_audio_ms"]), Self.milliseconds(latency?["barge_in_to_last_audio_ms"]),
                    Self.milliseconds(latency?["barge_in_to_cancelled_ms"]), "\(cut?["count"]?.int ?? 0) of \(cut?["of"]?.int ?? 0)",
                    Self.cores(j["server_cores"]?.double), Self.cores(j["client_cores"]?.double), Self.steal(j)]
        }
        return Table(name: "talkers", title: "Talkers: the embedded pipeline, ms p50 / p99 (count)",
                     markdown: Self.markdown(["run", "talkers", "turns", "(a) last word → speech_stopped", "(b) speech_stopped → reply audio",
                                              "(c) last word → reply audio", "(d) barge-in → last audio", "(d) barge-in → cancelled", "barge-ins cut",
                                              "server cores", "client cores", "steal"], rows))
    }

    /// Talkers: where each turn's time went, from the turns' timelines and the server's histogram.
    private var talkersStagesTable: Table? {
        let steps = talkersSteps
        guard !steps.isEmpty else { return nil }
        var rows: [[String]] = []
        for (name, j) in steps {
            for (n, stage) in TurnStageNames.all.enumerated() {
                let server = j["server_stages"]?[stage]
                func bound(_ key: String) -> String {
                    guard let s = server?[key]?.double else { return server == nil ? "n/a" : "> 5 s" }
                    return "≤ " + ServerHistogram.format(seconds: s)
                }
                rows.append(n == 0 ? [name, "\(j["talkers"]?.int ?? 0)"] : ["", ""])
                rows[rows.count - 1] += [stage, Self.milliseconds(j["stages_ms"]?[stage]),
                                         server.map { _ in "\(bound("p50_le_seconds")) / \(bound("p99_le_seconds")) (\(server?["count"]?.int ?? 0))" } ?? "n/a",
                                         n == 0 ? Self.cores(j["client_cores"]?.double) : "", n == 0 ? Self.steal(j) : ""]
            }
        }
        return Table(name: "talkers-stages", title: "Talkers: the turn's stages, ms p50 / p99 (turns)",
                     markdown: Self.markdown(["run", "talkers", "stage", "parley.turn.timeline", "parley_turn_stage_seconds (bucket bounds)",
                                              "client cores", "steal"], rows, rightFrom: 3))
    }

    /// The table `parley-load compare` wrote, when this is a compare directory.
    private var compareTable: Table? {
        guard let text = try? TextFile.read("\(title)/compare.md") else { return nil }
        return Table(name: "compare", title: "Side by side: Parley and the Python peers", markdown: text)
    }
}

/// Rewrites the `<!-- report:NAME -->` … `<!-- /report:NAME -->` blocks of a Markdown file with
/// the tables of the same names, so that the docs quote a report rather than copies typed by hand.
enum DocsTables {
    /// The file's new text and the names of the blocks replaced.
    static func update(_ text: String, with tables: [LoadReport.Table], source: String) -> (text: String, replaced: [String]) {
        var out = text
        var replaced: [String] = []
        for table in tables {
            let open = "<!-- report:\(table.name) -->", close = "<!-- /report:\(table.name) -->"
            guard let start = out.firstRange(of: open), let end = out[start.upperBound...].firstRange(of: close) else { continue }
            let body = "\n_From `\(source)` (`parley-load report`)._\n\n" + table.markdown + "\n"
            out.replaceSubrange(start.upperBound..<end.lowerBound, with: body)
            replaced.append(table.name)
        }
        return (out, replaced)
    }
}
