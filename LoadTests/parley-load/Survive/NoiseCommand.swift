import ArgumentParser
import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load noise`: sessions that stream only bad input for a long time, and what they cost the
/// server (scripts/benchmarks/bench-noise.sh).
struct NoiseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "noise",
        abstract: "Three Realtime sessions streaming silence, noise and \"mm hmm\" one after another; what each adds to the server, and whether its memory grows.",
        discussion: """
            Three Realtime sessions (GA, pcm16 at 24 kHz, semantic_vad, spoken replies) each stream one \
            kind of audio in 20 ms appends at real-time pace: `quiet` (digital silence), `noise` (seeded \
            white then pink noise at -30 dBFS, a minute looped) and `mmhmm` (the .raw clips of --clips, \
            pcm16 24 kHz, in a seeded order with 1 to 3 s of silence between). They start one after \
            another so that each kind's cost is the step it adds over the one before: idle (no session) \
            | quiet | quiet + noise | quiet + noise + mmhmm, to the end; the first three stages --idle and \
            --stage seconds long, the last the rest of --minutes (counted from the quiet session's start). \
            Every --sample seconds it reads the server's and its speech helper's resident memory and CPU \
            from /proc and a few series of /metrics. A stage's CPU is taken after its first --warmup \
            seconds. At the end each session is asked a typed question out of band (it must still \
            answer); prints a table per kind, writes samples.jsonl, events-KIND.jsonl and summary.json to \
            --out, and exits 1 when memory grew without bound (the server's RSS at the end more than \
            --margin-mib above its level --settle seconds after the last session opened; the helper's: \
            --helper-margin-mib) or a session closed or did not answer.
            """)

    @Option var port: Int
    @Option var serverPid: Int32
    @Option(help: "A folder of .raw clips: pcm16 mono 24 kHz.") var clips: String
    @Option var out: String
    @Option(help: "From the quiet session's start to the end.") var minutes = 10.0
    @Option(help: "Seconds with no session first.") var idle = 30
    @Option(help: "Seconds of quiet alone, then of quiet and noise.") var stage = 120
    @Option var sample = 30
    @Option var warmup = 30
    @Option(help: "Seconds after the last session opens to the growth check's start.") var settle = 180
    @Option var marginMib = 8.0
    @Option var helperMarginMib = 16.0
    @Option var seed = 37

    var minutesSeconds: Int { Int(minutes * 60) }

    func validate() throws {
        guard sample > 0, idle >= 0, warmup >= 0, settle >= 0 else { throw ValidationError("--sample > 0; --idle, --warmup, --settle >= 0") }
        guard minutesSeconds >= 2 * stage + settle + sample else { throw ValidationError("--minutes must leave the last stage longer than --settle plus a sample") }
        guard stage >= warmup + sample else { throw ValidationError("--stage must be at least --warmup plus a sample: its CPU is read after the warm-up") }
    }

    static let series: Set<String> = ["parley_accounted_bytes", "parley_resident_bytes_per_connection", "parley_sessions_open",
                                      "parley_session_turns_total", "parley_session_responses_total", "parley_turn_ends_total",
                                      "parley_replies_paused_total", "parley_replies_resumed_total", "parley_backchannels_ignored_total",
                                      "parley_interruptions_total", "parley_turns_reopened_total", "parley_speech_helper_restarts_total",
                                      "parley_speech_overloaded_total", "parley_turn_premature_ends_total"]
    static let stageNames = ["idle", "quiet", "quiet+noise", "quiet+noise+mmhmm"]

    struct Sample {
        let t: Int
        let stage: String
        let rss: Double
        let cpu: Double
        let helperRSS: Double
        let helperCPU: Double
        let metrics: [(String, Double)]

        func metric(_ name: String) -> Double { metrics.first { $0.0 == name }?.1 ?? 0 }

        var json: JSON {
            .object([("t", .int(t)), ("stage", .string(stage)), ("rss", .number(rss)), ("cpu", .number(cpu)), ("helper_rss", .number(helperRSS)),
                     ("helper_cpu", .number(helperCPU)), ("metrics", .object(metrics.map { ($0.0, .number($0.1)) }))])
        }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let target = try LoadTarget("ws://127.0.0.1:\(port)/")
        let starts = [0, idle, idle + stage, idle + 2 * stage]
        let end = idle + minutesSeconds
        var grid = Set(stride(from: 0, through: end, by: sample)).union(starts).union([end, starts[3] + settle])
        for s in starts.dropFirst() { grid.insert(s + warmup) }
        guard let samplesFile = fopen("\(out)/samples.jsonl", "w") else { throw LoadFailure("cannot write \(out)/samples.jsonl") }
        defer { fclose(samplesFile) }

        var sessions: [NoiseSession] = []
        var samples: [Sample] = []
        let t0 = MonotonicClock.nanoseconds()
        for t in grid.sorted() {
            let due = t0 + UInt64(t) * 1_000_000_000
            drive(sessions, until: due)
            let stageName = t < end ? Self.stageNames[starts.lastIndex { $0 <= t }!] : "end"
            let s = try takeSample(t: t, stage: stageName, target: target)
            samples.append(s)
            fputs(s.json.description + "\n", samplesFile)
            fflush(samplesFile)
            if t % sample == 0 || t == end { print(Self.line(s)); Console.flush() }
            if let i = starts.dropFirst().firstIndex(of: t) {
                let kind = NoiseAudio.Kind.allCases[i - 1]
                sessions.append(try NoiseSession(kind, audio: try NoiseAudio(kind, seed: UInt64(seed), clipsFolder: clips), port: port, out: out))
            }
        }
        for session in sessions { session.stop() }
        let bound = MonotonicClock.nanoseconds() + 60_000_000_000
        while !sessions.allSatisfy(\.isDone) && MonotonicClock.nanoseconds() < bound { drive(sessions, until: MonotonicClock.nanoseconds() + 10_000_000) }
        for session in sessions { session.close() }
        let failures = summary(samples: samples, sessions: sessions, starts: starts, end: end)
        if !failures.isEmpty { throw ExitCode.failure }
    }

    /// The sessions' frames and events until `deadline`.
    private func drive(_ sessions: [NoiseSession], until deadline: UInt64) {
        while true {
            var next = deadline
            for session in sessions { next = min(next, session.step()) }
            let now = MonotonicClock.nanoseconds()
            guard now < deadline else { return }
            if next > now { usleep(UInt32(min(5_000, (next - now) / 1000 + 1))) }
        }
    }

    // MARK: The server, from /proc and /metrics

    /// (resident MiB, CPU seconds) of one process, or nil once it is gone.
    static func proc(_ pid: Int32) -> (Double, Double)? {
        let figures = ProcessFigures(pid: pid)
        guard let rss = figures.residentBytes, let cpu = figures.cpuSeconds else { return nil }
        return (rss / 1_048_576, cpu)
    }

    /// Every process under `pid`.
    static func descendants(_ pid: Int32) -> [Int32] {
        let children = ProcessFigures(pid: pid).children
        return children + children.flatMap { descendants($0) }
    }

    /// The speech helper (helpers/parley_speech.py) and what it started: summed (MiB, CPU s); found
    /// again at every sample, since the server restarts a helper that dies.
    static func helper(_ server: Int32) -> (Double, Double) {
        for pid in descendants(server) {
            guard let command = try? TextFile.read("/proc/\(pid)/cmdline"), command.contains("parley_speech") else { continue }
            let got = ([pid] + descendants(pid)).compactMap(proc)
            return (got.reduce(0) { $0 + $1.0 }, got.reduce(0) { $0 + $1.1 })
        }
        return (0, 0)
    }

    private func takeSample(t: Int, stage: String, target: LoadTarget) throws -> Sample {
        guard let server = Self.proc(serverPid) else { throw LoadFailure("the server is gone") }
        let (helperRSS, helperCPU) = Self.helper(serverPid)
        let metrics: ServerMetrics
        do { metrics = try ServerMetrics.fetch(from: target) } catch { throw LoadFailure.unreachable(error, target) }
        let kept = metrics.samples.filter { key, _ in Self.series.contains(String(key.prefix { $0 != "{" })) }.sorted { $0.key < $1.key }
        return Sample(t: t, stage: stage, rss: server.0, cpu: server.1, helperRSS: helperRSS, helperCPU: helperCPU, metrics: kept.map { ($0.key, $0.value) })
    }

    // MARK: The summary

    static func pad(_ text: String, _ width: Int, left: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(0, width - text.count))
        return left ? text + fill : fill + text
    }

    static func line(_ s: Sample) -> String {
        let responses = s.metrics.filter { $0.0.hasPrefix("parley_session_responses_total") }.reduce(0) { $0 + $1.1 }
        return "t=\(pad(String(s.t), 5)) s  \(pad(s.stage, 18, left: true)) server \(pad(Format.fixed(s.rss, 1), 6)) MiB \(pad(Format.fixed(s.cpu, 2), 7)) s  "
            + "helper \(pad(Format.fixed(s.helperRSS, 1), 6)) MiB \(pad(Format.fixed(s.helperCPU, 2), 7)) s  accounted \(pad(String(Int(s.metric("parley_accounted_bytes"))), 8)) B  "
            + "turns \(pad(String(Int(s.metric("parley_session_turns_total"))), 3))  responses \(pad(String(Int(responses)), 3))"
    }

    /// Least-squares slope of a figure against time, in MiB an hour.
    static func fit(_ samples: [Sample], _ value: (Sample) -> Double) -> Double {
        guard samples.count >= 2 else { return 0 }
        let n = Double(samples.count)
        let mt = samples.reduce(0) { $0 + Double($1.t) } / n
        let mv = samples.reduce(0) { $0 + value($1) } / n
        let den = samples.reduce(0) { $0 + (Double($1.t) - mt) * (Double($1.t) - mt) }
        return den > 0 ? samples.reduce(0) { $0 + (Double($1.t) - mt) * (value($1) - mv) } / den * 3600 : 0
    }

    private func summary(samples: [Sample], sessions: [NoiseSession], starts: [Int], end: Int) -> [String] {
        func at(_ t: Int) -> Sample { samples.first { $0.t == t }! }
        let bounds = Array(zip(starts, Array(starts.dropFirst()) + [end]))
        struct Stage { let name: String; let from: Int; let to: Int; let serverCores, helperCores, serverRSS, helperRSS, accountedMiB, serverGrowth, helperGrowth: Double; let metrics: [(String, Double)] }
        var stages: [Stage] = []
        for ((a, b), name) in zip(bounds, Self.stageNames) {
            let first = at(name == "idle" ? a : a + warmup), last = at(b), start = at(a)
            let span = Double(last.t - first.t)
            let added = last.metrics.filter { !$0.0.hasPrefix("parley_accounted") && !$0.0.hasPrefix("parley_resident") && !$0.0.hasPrefix("parley_sessions_open") }
                .map { ($0.0, $0.1 - start.metric($0.0)) }
            stages.append(Stage(name: name, from: first.t, to: b, serverCores: (last.cpu - first.cpu) / span, helperCores: (last.helperCPU - first.helperCPU) / span,
                                serverRSS: last.rss, helperRSS: last.helperRSS, accountedMiB: last.metric("parley_accounted_bytes") / 1_048_576,
                                serverGrowth: last.rss - first.rss, helperGrowth: last.helperRSS - first.helperRSS, metrics: added))
        }
        print("\nstages (CPU from \(warmup) s after each session opened to the next; RSS at each stage's end):")
        print("\(Self.pad("stage", 18, left: true)) \(Self.pad("server cores", 12)) \(Self.pad("helper cores", 12)) \(Self.pad("server RSS", 10)) \(Self.pad("helper RSS", 10)) \(Self.pad("growth in stage (server/helper MiB)", 36))")
        for s in stages {
            print("\(Self.pad(s.name, 18, left: true)) \(Self.pad(Format.fixed(s.serverCores, 4), 12)) \(Self.pad(Format.fixed(s.helperCores, 4), 12)) \(Self.pad(Format.fixed(s.serverRSS, 1), 10)) \(Self.pad(Format.fixed(s.helperRSS, 1), 10)) \(Self.pad(Format.fixed(s.serverGrowth, 1), 17)) / \(Format.fixed(s.helperGrowth, 1))")
        }
        print("\nper kind (the step its session added over the stage before; quiet against no session):")
        print("kind   server cores helper cores server MiB accounted helper MiB speech_started turns replies reply audio s open at end answers")
        var kinds: [(String, JSON)] = []
        var failures: [String] = []
        for (i, kind) in NoiseAudio.Kind.allCases.enumerated() {
            let before = stages[i], this = stages[i + 1]
            let session = sessions.first { $0.kind == kind }
            let c = session?.counts ?? [:]
            let open = session != nil && session?.closed == nil
            let closed = session == nil ? "never opened" : session?.closed
            let answered = session?.answered
            let row: [(String, JSON)] = [
                ("server_cores", .number(this.serverCores - before.serverCores)), ("helper_cores", .number(this.helperCores - before.helperCores)),
                ("server_mib", .number(this.serverRSS - before.serverRSS)), ("helper_mib", .number(this.helperRSS - before.helperRSS)),
                ("accounted_mib", .number(this.accountedMiB - before.accountedMiB)),
                ("speech_started", .int(c["input_audio_buffer.speech_started"] ?? 0)), ("turns", .int(c["input_audio_buffer.committed"] ?? 0)),
                ("replies", .int(session?.replies.count ?? 0)), ("reply_audio_s", .number((session?.audioMs ?? 0) / 1000)),
                ("open", .bool(open)), ("answered", answered.map(JSON.string) ?? .null), ("closed", closed.map(JSON.string) ?? .null),
                ("user_words", .array((session?.userWords ?? []).map(JSON.string))),
                ("reply_statuses", .array((session?.replies ?? []).map { .string($0.status) })),
                ("replies_text", .array((session?.replies ?? []).map { .array([.string($0.status), .string($0.text)]) })),
                ("errors", .array((session?.errors ?? []).map(JSON.string))), ("events", .counts(c)),
            ]
            kinds.append((kind.rawValue, .object(row)))
            let v = JSON.object(row)
            print("\(Self.pad(kind.rawValue, 6, left: true)) \(Self.pad(Format.fixed(v["server_cores"]!.double!, 4), 12)) \(Self.pad(Format.fixed(v["helper_cores"]!.double!, 4), 12)) \(Self.pad(Format.fixed(v["server_mib"]!.double!, 1), 10)) \(Self.pad(Format.fixed(v["accounted_mib"]!.double!, 2), 9)) \(Self.pad(Format.fixed(v["helper_mib"]!.double!, 1), 10)) \(Self.pad(String(v["speech_started"]!.int!), 14)) \(Self.pad(String(v["turns"]!.int!), 5)) \(Self.pad(String(v["replies"]!.int!), 7)) \(Self.pad(Format.fixed(v["reply_audio_s"]!.double!, 1), 13)) \(Self.pad(open ? "yes" : "NO", 11)) \(Self.pad(answered ?? "None", 7))")
            if let session, !session.userWords.isEmpty || !session.replies.isEmpty || !session.errors.isEmpty || !open {
                var words: [String: Int] = [:]
                for w in session.userWords { words[w, default: 0] += 1 }
                var statuses: [String: Int] = [:]
                for r in session.replies { statuses[r.status, default: 0] += 1 }
                print("\n\(kind.rawValue): user turns heard as \(JSON.counts(words))")
                print("\(kind.rawValue): replies \(JSON.counts(statuses)); first ones: \(JSON.array(session.replies.prefix(3).map { .array([.string($0.status), .string($0.text)]) }))")
                print("\(kind.rawValue): events \(JSON.counts(c.filter { !$0.key.hasSuffix(".delta") }))")
                if !session.errors.isEmpty { print("\(kind.rawValue): errors \(JSON.array(session.errors.map(JSON.string)))") }
                if !open { print("\(kind.rawValue): the session ended early: \(closed ?? "")") }
            }
            if !open { failures.append("the \(kind.rawValue) session ended early: \(closed ?? "")") }
            else if answered != "yes" { failures.append("the \(kind.rawValue) session did not answer the typed question: \(answered ?? "None")") }
        }
        for stage in stages.dropFirst() {
            print("\nmetrics added during \(stage.name): " + stage.metrics.filter { $0.1 != 0 }.map { "\($0.0) \(Int($0.1.rounded()))" }.joined(separator: ", "))
        }
        let settled = at(starts[3] + settle), last = samples.last!
        let tail = samples.filter { $0.t >= settled.t }
        let slope = Self.fit(tail) { $0.rss }
        let growth = last.rss - settled.rss, helperGrowth = last.helperRSS - settled.helperRSS
        print("\nserver RSS \(Format.fixed(settled.rss, 1)) MiB \(settle) s after the last session opened, \(Format.fixed(last.rss, 1)) at the end "
              + "(\(growth >= 0 ? "+" : "")\(Format.fixed(growth, 1)) MiB over \(last.t - settled.t) s, fit \(Format.fixed(slope, 2)) MiB/h; margin \(Format.fixed(marginMib, 1)) MiB)")
        print("helper RSS \(Format.fixed(settled.helperRSS, 1)) MiB then, \(Format.fixed(last.helperRSS, 1)) at the end (\(helperGrowth >= 0 ? "+" : "")\(Format.fixed(helperGrowth, 1)) MiB, "
              + "fit \(Format.fixed(Self.fit(tail) { $0.helperRSS }, 2)) MiB/h; margin \(Format.fixed(helperMarginMib, 1)) MiB)")
        if growth > marginMib { failures.insert("the server's RSS grew \(Format.fixed(growth, 1)) MiB after warm-up (margin \(Format.fixed(marginMib, 1)))", at: 0) }
        if helperGrowth > helperMarginMib {
            failures.insert("the helper's RSS grew \(Format.fixed(helperGrowth, 1)) MiB after warm-up (margin \(Format.fixed(helperMarginMib, 1)))", at: growth > marginMib ? 1 : 0)
        }
        let stagesJSON: [JSON] = stages.map { s in
            .object([("stage", .string(s.name)), ("from", .int(s.from)), ("to", .int(s.to)), ("server_cores", .number(s.serverCores)), ("helper_cores", .number(s.helperCores)),
                     ("server_rss", .number(s.serverRSS)), ("helper_rss", .number(s.helperRSS)), ("accounted_mib", .number(s.accountedMiB)),
                     ("server_growth", .number(s.serverGrowth)), ("helper_growth", .number(s.helperGrowth)), ("metrics", .object(s.metrics.map { ($0.0, .number($0.1)) }))])
        }
        let summary: JSON = .object([("stages", .array(stagesJSON)), ("kinds", .object(kinds)), ("server_growth_mib", .number(growth)),
                                     ("helper_growth_mib", .number(helperGrowth)), ("server_fit_mib_per_hour", .number(slope)), ("failures", .array(failures.map(JSON.string)))])
        do { try TextFile.write(summary.pretty, to: "\(out)/summary.json") } catch { failures.append("\(error)") }
        for failure in failures { print("FAILED: \(failure)") }
        return failures
    }
}
