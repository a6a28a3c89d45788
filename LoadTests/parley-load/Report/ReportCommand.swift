import ArgumentParser
import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load report DIR`: one HTML page with charts (inline SVG) and one Markdown summary from
/// the JSON reports a run left in DIR (and its subdirectories one level down, such as tls/).
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Write DIR/report.html (charts) and DIR/summary.md from the JSON reports in DIR.")

    @Argument(help: "A report directory, such as LoadTests/reports/latest.")
    var directory: String

    @Option(help: "A Markdown file whose <!-- report:NAME --> ... <!-- /report:NAME --> blocks get this report's tables (ladder, voice, echo, tls, codec; compare for a compare directory).")
    var docs: String?

    @Option(help: "Prefix of the block names this report fills in --docs, e.g. full- for <!-- report:full-ladder -->.")
    var blockPrefix = ""

    @Option(help: "Only these tables go into --docs (comma-separated names), e.g. when another run's are to stay.")
    var only: String?

    func run() throws {
        let runs = Self.jsonFiles(in: directory).compactMap { path -> (String, JSON)? in
            guard let text = try? TextFile.read(path), var json = try? JSON(parsing: text) else { return nil }
            // Codec reports before they said their command are known by their shape.
            if json["command"] == nil, json["libopus"] != nil, case .object(let members) = json { json = .object([("command", .string("codec"))] + members) }
            guard json["command"]?.string != nil else { return nil }
            return (String(path.dropFirst(directory.count + 1).dropLast(5)), json)
        }
        guard !runs.isEmpty else { throw LoadFailure("no parley-load JSON reports in \(directory)") }
        let report = LoadReport(title: directory, runs: runs)
        try TextFile.write(report.html, to: "\(directory)/report.html")
        try TextFile.write(report.markdown, to: "\(directory)/summary.md")
        print("wrote \(directory)/report.html and \(directory)/summary.md from \(runs.count) reports")
        if let docs {
            let wanted = only.map { Set($0.split(separator: ",").map(String.init)) }
            let tables = report.tables.filter { wanted?.contains($0.name) ?? true }
                .map { LoadReport.Table(name: blockPrefix + $0.name, title: $0.title, markdown: $0.markdown) }
            let (text, replaced) = DocsTables.update(try TextFile.read(docs), with: tables, source: Self.resolved(directory))
            try TextFile.write(text, to: docs)
            print(replaced.isEmpty ? "\(docs): no report blocks for these tables" : "\(docs): updated \(replaced.joined(separator: ", "))")
        }
    }

    /// The directory's own name when it is the `latest` link, so that the docs name a report that
    /// stays put.
    static func resolved(_ directory: String) -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink(directory, &buffer, buffer.count - 1)
        guard n > 0 else { return directory }
        let target = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if target.hasPrefix("/") { return target }
        let parent = directory.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return parent.isEmpty ? target : parent + "/" + target
    }

    /// *.json in `directory` and in its subdirectories, sorted.
    static func jsonFiles(in directory: String) -> [String] {
        var out: [String] = []
        for name in Directory.names(in: directory) where !name.hasPrefix(".") {
            let path = "\(directory)/\(name)"
            if name.hasSuffix(".json") { out.append(path) } else if isDirectory(path) {
                out += Directory.names(in: path).filter { $0.hasSuffix(".json") }.map { "\(path)/\($0)" }
            }
        }
        return out.sorted()
    }

    private static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }
}

/// The charts and tables of one report directory.
struct LoadReport {
    let title: String
    let runs: [(name: String, json: JSON)]

    func of(_ command: String) -> [(name: String, json: JSON)] { runs.filter { $0.json["command"]?.string == command } }

    /// The voice ladder's runs (not those of a subdirectory such as speech/), by speakers.
    var voiceRuns: [(name: String, json: JSON)] {
        of("voice").filter { !$0.name.contains("/") }.sorted { ($0.json["speaking"]?.int ?? 0) < ($1.json["speaking"]?.int ?? 0) }
    }

    // MARK: Figures

    /// (sessions, resident growth per session, PSS per session) for every hold run.
    var holdPoints: [(name: String, secure: Bool, sessions: Double, resident: Double?, proportional: Double?)] {
        of("hold").compactMap { run in
            let server = run.json["server_connected"]
            guard let open = server?["echo_open"]?.double, open > 0 else { return nil }
            let secure = run.json["url"]?.string?.hasPrefix("wss://") == true
            return (run.name, secure, open, server?["resident_growth_bytes_per_connection"]?.double, server?["proportional_bytes_per_connection"]?.double)
        }.sorted { $0.sessions < $1.sessions }
    }

    var html: String {
        var body = "<h1>parley-load report</h1><p><code>\(SVGChart.escape(title))</code>: \(runs.count) runs. Figures from this machine; the load client shares its cores with the server.</p>"
        body += memorySection + voiceSection + echoSection + cpuSection
        body += "<h2>Every run</h2>" + markdownTableHTML
        return "<!doctype html><html><head><meta charset=\"utf-8\"><title>parley-load report</title><style>body{font-family:sans-serif;max-width:980px;margin:2em auto;color:#222}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child,th:first-child{text-align:left}h2{margin-top:2em}</style></head><body>\(body)</body></html>\n"
    }

    private var memorySection: String {
        let points = holdPoints
        guard !points.isEmpty else { return "" }
        var series: [SVGChart.Series] = []
        for secure in [false, true] {
            let scheme = secure ? "wss" : "ws"
            let mine = points.filter { $0.secure == secure }
            let resident = mine.compactMap { p in p.resident.map { (x: p.sessions, y: $0) } }
            if !resident.isEmpty { series.append(.init(name: "\(scheme): RSS growth", points: resident)) }
            let proportional = mine.compactMap { p in p.proportional.map { (x: p.sessions, y: $0) } }
            if !proportional.isEmpty { series.append(.init(name: "\(scheme): whole (PSS)", points: proportional)) }
        }
        var out = "<h2>Resident memory per session against sessions held</h2>"
        out += SVGChart.lines(series, xLabel: "sessions held (log scale)", yLabel: "bytes per session", logX: true,
                              xFormat: { Format.grouped(Int($0.rounded())) }, yFormat: { Format.grouped(Int($0.rounded())) })
        out += "<p>Runs: " + points.map { "\(SVGChart.escape($0.name)) (\(Format.grouped(Int($0.sessions))))" }.joined(separator: ", ") + ".</p>"
        return out
    }

    /// The server's lag behind real time (p50, p99) against speakers, with the budget.
    private var voiceSection: String {
        let voices = voiceRuns
        guard !voices.isEmpty else { return "" }
        func points(_ key: String) -> [(x: Double, y: Double)] {
            voices.compactMap { run in
                guard let speaking = run.json["speaking"]?.int, let s = run.json["server_lag_seconds_bound"]?[key]?.double, s.isFinite else { return nil }
                return (x: Double(speaking), y: s * 1000)
            }
        }
        let budget = voices.map { (x: Double($0.json["speaking"]?.int ?? 0), y: VoiceSummary.lagBudget * 1000) }
        var out = "<h2>Voice: the server's lag behind real time against speakers</h2>"
        out += "<p>Upper bounds of the histogram buckets the percentiles fall in; the budget is p99 ≤ 5 ms.</p>"
        out += SVGChart.lines([.init(name: "p50", points: points("p50")), .init(name: "p99", points: points("p99")), .init(name: "budget (5 ms)", points: budget)],
                              xLabel: "speaking sessions", yLabel: "lag, ms (log scale)", logY: true,
                              xFormat: { Format.grouped(Int($0.rounded())) }, yFormat: { Format.fixed($0, $0 < 1 ? 2 : 0) })
        var cores: [SVGChart.Series] = []
        for (key, name) in [("server_cores_while_measuring", "server"), ("client_cores_while_measuring", "load client")] {
            let series = voices.compactMap { run in run.json[key]?.double.map { (x: Double(run.json["speaking"]?.int ?? 0), y: $0) } }
            if !series.isEmpty { cores.append(.init(name: name, points: series)) }
        }
        if !cores.isEmpty {
            out += "<h2>Voice: CPU against speakers</h2>"
            out += SVGChart.lines(cores, xLabel: "speaking sessions", yLabel: "cores of \(Cores.online)", yMax: Double(Cores.online),
                                  xFormat: { Format.grouped(Int($0.rounded())) }, yFormat: { Format.fixed($0, 1) })
        }
        return out
    }

    private var echoSection: String {
        let echoes = of("echo")
        guard !echoes.isEmpty else { return "" }
        let percentiles: [Double] = [1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9]
        let series = echoes.map { run -> SVGChart.Series in
            let recorder = LatencyRecorder(json: run.json["result"]?["latency"])
            return .init(name: run.name, points: percentiles.map { (x: Double(recorder.percentile($0)) / 1e6, y: $0) })
        }
        var out = "<h2>Echo latency distributions</h2>"
        out += SVGChart.lines(series, xLabel: "round trip, ms (log scale)", yLabel: "percentile", logX: true, yMax: 100,
                              xFormat: { Format.fixed($0, $0 < 1 ? 2 : 1) }, yFormat: { Format.fixed($0, 0) })
        out += "<h2>Echo throughput</h2>"
        out += SVGChart.bars(echoes.map { (label: $0.name, value: $0.json["result"]?["messages_per_second"]?.double ?? 0) }, unit: "msg/s",
                             format: { Format.grouped(Int($0.rounded())) })
        return out
    }

    private var cpuSection: String {
        var items: [(label: String, value: Double)] = []
        for run in runs {
            if let cores = run.json["client_cores_while_measuring"]?.double { items.append((run.name, cores)) }
        }
        guard !items.isEmpty else { return "" }
        return "<h2>Load client CPU while measuring</h2><p>Cores of the machine's \(Cores.online) the client took: what the server did not have.</p>"
            + SVGChart.bars(items, unit: "cores", format: { Format.fixed($0, 2) })
    }

    // MARK: Tables

    /// One row per run: its headline figures.
    var rows: [[String]] {
        runs.map { run in
            let j = run.json
            switch j["command"]?.string ?? "" {
            case "hold":
                let server = j["server_connected"]
                return [run.name, "hold", "\(Format.grouped(j["open_after_hold"]?.int ?? 0)) of \(Format.grouped(j["requested"]?.int ?? 0)) held",
                        server?["resident_growth_bytes_per_connection"]?.double.map { "\(Format.grouped(Int($0))) B/session resident" } ?? "",
                        server?["proportional_bytes_per_connection"]?.double.map { "\(Format.grouped(Int($0))) B/session PSS" } ?? ""]
            case "echo":
                let latency = j["latency_ns"]
                return [run.name, "echo", "\(Format.grouped(Int(j["result"]?["messages_per_second"]?.double ?? 0))) msg/s",
                        "p99 \(LatencyRecorder.format(nanoseconds: UInt64(latency?["p99"]?.double ?? 0)))",
                        "client \(Format.fixed(j["client_cores_while_measuring"]?.double ?? 0, 2)) cores"]
            case "voice":
                let lag = j["server_lag_seconds_bound"]
                return [run.name, "voice", "\(j["speaking"]?.int ?? 0) speaking of \(Format.grouped(j["sessions"]?.int ?? 0))",
                        "lag p99 ≤ \(lag?["p99"]?.double.map { Format.fixed($0 * 1000, 1) + " ms" } ?? "?")",
                        j["passed"]?.bool == true ? "passed" : "failed"]
            case "turns":
                let p99 = j["first_delta_ns"]?["p99"]?.double.map { "first delta p99 \(LatencyRecorder.format(nanoseconds: UInt64($0)))" } ?? ""
                let idle = j["bytes_per_session"]?["idle"] ?? j["server_connected"].map { s in
                    JSON.object([("resident", s["server_resident_bytes_per_connection"] ?? .null), ("accounted", s["server_accounted_bytes_per_connection"] ?? .null)])
                }
                let memory = idle.flatMap { m -> String? in
                    guard let resident = m["resident"]?.double, let accounted = m["accounted"]?.double else { return nil }
                    return "\(Format.grouped(Int(resident))) B/session resident, \(Format.grouped(Int(accounted))) B accounted (idle)"
                } ?? ""
                return [run.name, "turns", "\(Format.grouped(j["requested"]?.int ?? 0)) sessions, tools: \(j["tools"]?.int ?? 0), \(j["passed"]?.bool == true ? "passed" : "failed")",
                        p99, memory]
            case "talkers":
                let steps = j["steps"]?.array ?? []
                let perCore = j["talkers_per_core"]?["per_core"]?.double.map { "\(Format.fixed($0, 1)) talkers per server core" } ?? ""
                return [run.name, "talkers", steps.map { "\($0["talkers"]?.int ?? 0)" }.joined(separator: ", ") + " talkers, " + (j["turn_detection"]?.string ?? ""),
                        steps.last?["latency_ms"]?["last_word_to_first_audio_ms"]?["p99"]?.double.map { "last word → reply audio p99 \(Format.fixed($0, 0)) ms" } ?? "", perCore]
            case let command:
                return [run.name, command, j["passed"]?.bool.map { $0 ? "passed" : "failed" } ?? "", "", ""]
            }
        }
    }

    var markdown: String {
        var out = "# parley-load report: \(title)\n\nCharts: report.html in the same directory.\n"
        for table in tables { out += "\n## \(table.title)\n\n" + table.markdown }
        out += "\n## Every run\n\n| run | scenario | result | | |\n| --- | --- | --- | --- | --- |\n"
        for row in rows { out += "| " + row.joined(separator: " | ") + " |\n" }
        return out
    }

    private var markdownTableHTML: String {
        var out = "<table><tr><th>run</th><th>scenario</th><th>result</th><th></th><th></th></tr>"
        for row in rows { out += "<tr>" + row.map { "<td>\(SVGChart.escape($0))</td>" }.joined() + "</tr>" }
        return out + "</table>"
    }
}
