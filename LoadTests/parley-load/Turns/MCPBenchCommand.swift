import ArgumentParser
import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load mcp-bench`: what MCP tools add to a Realtime session (issue 40), against
/// scripts/benchmarks/mcp_bench_server.py (scripts/benchmarks/bench-mcp.sh).
struct MCPBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mcp-bench",
        abstract: "The time MCP discovery adds to a session's start, and what a tool call adds beyond the MCP server's own time.",
        discussion: """
            1. Discovery. At each concurrency in --levels, --sessions sessions, that many at a time, of \
            three kinds: `plain` (connect → session.created, no MCP); `cold` (then a session.update naming \
            the MCP server with an `X-Bench` header of its own, so that no loop has its tools cached: \
            initialize, notifications/initialized and tools/list at the server → mcp_list_tools.completed); \
            `warm` (one header for all, after sessions named it one at a time until every loop had listed \
            it: --loops; the loop's cache answers). Timed from before the TCP connect, and `update → \
            completed` from the session.update's send. The server's own time for a cold session is the \
            sum of its three requests' `read_us` in its log (--server-log, mcp_bench_server.py's).
            2. Calls. At each concurrency in --call-levels, that many sessions at once, each listing the \
            server (warm, primed as above), then making calls one after another (--calls-alone for a lone \
            session, else --calls): a user message `stamp N` (N unique) and a response.create with \
            `tool_choice: {"type": "mcp", "server_label": "bench", "name": "stamp"}`. Timed: \
            response.mcp_call.in_progress → .completed, and response.create → response.done in two parts: \
            the model's (→ response.mcp_call_arguments.done) and the rest; each given less the server's \
            own time for that call (its log's `read_us` for the tools/call with that N, and for a \
            session's first call its initialize and notifications/initialized too). The way back alone: \
            from the server's last write of its answer (its log's `answered_at`, CLOCK_MONOTONIC as this \
            client's) to the event here.
            Beside each block: the CPU of this client, Parley, the MCP server and other processes, and \
            steal. Prints the tables and writes DIR/mcp-bench.json; exits 1 if any list or call failed \
            or the run ran out of time (--time-limit).
            """)

    @Option var url: String
    @Option var mcpUrl: String
    @Option var serverLog: String
    @Option var parleyPid: Int32
    @Option var mcpPid: Int32
    @Flag(help: "Read Parley's own parley_mcp_*_seconds from its /metrics (on --url's host and port).") var metrics = false
    @Option var out: String
    @Option var sessions = 500
    @Option var levels = "1,10,50"
    @Option(help: "Parley's loops (each has its own cache).") var loops = 2
    @Option(help: "The most sessions listing before a warm block.") var prime = 64
    @Option var callLevels = "1,10,50"
    @Option var callsAlone = 500
    @Option var calls = 20
    @Option var wait = 15.0
    @Option var timeLimit = 600.0

    static let label = "bench"

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        DescriptorLimit.raiseToHard()
        let bench = try MCPBench(self)
        try bench.run()
    }
}

/// One `mcp-bench` run.
final class MCPBench {
    let options: MCPBenchCommand
    let target: LoadTarget
    let deadline: UInt64
    let runID = String(getpid(), radix: 16) + String(WallClock.seconds() % 100_000, radix: 16)
    var failures: [String] = []
    var counter = 1000

    init(_ options: MCPBenchCommand) throws {
        self.options = options
        target = try LoadTarget(options.url)
        deadline = MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(options.timeLimit)
    }

    static func ms(_ nanoseconds: UInt64, since start: UInt64) -> Double { (Double(nanoseconds) - Double(start)) / 1e6 }

    func session() -> MCPBenchSession? {
        guard MonotonicClock.nanoseconds() < deadline else { return nil }
        return try? MCPBenchSession(url: target, wait: options.wait, deadline: deadline)
    }

    func mcpEntry(_ tag: String) -> JSON {
        .object([("type", .string("mcp")), ("server_label", .string(MCPBenchCommand.label)), ("server_url", .string(options.mcpUrl)),
                 ("require_approval", .string("never")), ("headers", .object([("X-Bench", .string(tag))]))])
    }

    /// session.update naming the server → mcp_list_tools.completed; then `then(sent, completed)`.
    func discover(_ s: MCPBenchSession, _ tag: String, then: @escaping (UInt64, UInt64) -> Void) {
        let sent = s.send(.object([("type", .string("session.update")), ("session", .object([
            ("type", .string("realtime")), ("output_modalities", .array([.string("text")])), ("tools", .array([mcpEntry(tag)]))]))]))
        s.expect(["mcp_list_tools.completed"], fail: ["error", "mcp_list_tools.failed"]) { _, at in then(sent, at) }
    }

    // MARK: 1. Discovery

    /// A session's start, of one kind; appends its record when it succeeds.
    func oneStart(_ kind: String, _ tag: String, into records: @escaping ([(String, JSON)]) -> Void) -> MCPBenchSession? {
        guard let s = session() else { return nil }
        s.expect(["session.created"]) { [self] _, created in
            var record: [(String, JSON)] = [("kind", .string(kind)), ("tag", .string(tag)), ("created_ms", .number(Self.ms(created, since: s.began)))]
            guard kind != "plain" else { records(record); return s.finish() }
            discover(s, tag) { sent, completed in
                record += [("update_ms", .number(Self.ms(completed, since: sent))), ("listed_ms", .number(Self.ms(completed, since: s.began))),
                           ("completed_at", .number(Double(completed) / 1e9))]
                records(record)
                s.finish()
            }
        }
        return s
    }

    func serverLog() -> [JSON] {
        guard let text = try? TextFile.read(options.serverLog) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSON(parsing: $0) }
    }

    func prime(_ tag: String) {
        for _ in 0..<options.prime {
            if serverLog().filter({ $0["tag"]?.string == tag && $0["method"]?.string == "tools/list" }).count >= options.loops { return }
            failures += MCPBenchSession.run(count: 1, concurrency: 1) { _ in oneStart("warm", tag) { _ in } }
        }
        failures.append("\(options.prime) sessions did not reach all \(options.loops) loops' caches")
    }

    func discovery(_ level: Int) -> (rows: [String: (records: [[(String, JSON)]], block: [(String, JSON)])], server: [(String, JSON)]) {
        var rows: [String: (records: [[(String, JSON)]], block: [(String, JSON)])] = [:]
        for kind in ["plain", "cold", "warm"] {
            if kind == "warm" { prime("warm-\(runID)-\(level)") }
            let block = Block(self)
            var records: [[(String, JSON)]] = []
            failures += MCPBenchSession.run(count: options.sessions, concurrency: level) { i in
                oneStart(kind, kind == "cold" ? "cold-\(runID)-\(level)-\(i)" : "warm-\(runID)-\(level)") { records.append($0) }
            }
            rows[kind] = (records, block.end())
        }
        var byTag: [String: [JSON]] = [:]
        for line in serverLog() { byTag[line["tag"]?.string ?? "-", default: []].append(line) }
        var own: [Double] = [], lists: [Double] = []
        var cold = rows["cold"]!.records
        for i in cold.indices {
            let record = JSON.object(cold[i])
            let seen = byTag[record["tag"]?.string ?? ""] ?? []
            let three = seen.filter { ["initialize", "notifications/initialized", "tools/list"].contains($0["method"]?.string ?? "") }
            let serverMs = three.reduce(0) { $0 + ($1["read_us"]?.double ?? 0) } / 1000
            cold[i] += [("server_ms", .number(serverMs)), ("app_ms", .number(three.reduce(0) { $0 + ($1["app_us"]?.double ?? 0) } / 1000))]
            own.append(serverMs)
            let listed = seen.filter { $0["method"]?.string == "tools/list" }
            lists += listed.map { ($0["read_us"]?.double ?? 0) / 1000 }
            if let last = listed.last, let completed = record["completed_at"]?.double, let answered = last["answered_at"]?.double {
                cold[i].append(("back_ms", .number(1000 * (completed - answered))))
            }
        }
        rows["cold"]!.records = cold
        let warmAsked = (byTag["warm-\(runID)-\(level)"] ?? []).filter { $0["method"]?.string == "tools/list" }.count - options.loops
        return (rows, [("cold_three_ms", .array(own.map(JSON.number))), ("tools_list_ms", .array(lists.map(JSON.number))), ("warm_tools_lists", .int(warmAsked))])
    }

    // MARK: 2. Calls

    func caller(_ count: Int, _ tag: String, into made: @escaping ([(String, JSON)]) -> Void) -> MCPBenchSession? {
        guard let s = session() else { return nil }
        func call(_ k: Int) {
            guard k < count else { return s.finish() }
            counter += 1
            let n = counter
            s.send(.object([("type", .string("conversation.item.create")), ("item", .object([("type", .string("message")), ("role", .string("user")),
                                                                                              ("content", .array([.object([("type", .string("input_text")), ("text", .string("stamp \(n)"))])]))]))]))
            let created = s.send(.object([("type", .string("response.create")), ("response", .object([
                ("output_modalities", .array([.string("text")])),
                ("tool_choice", .object([("type", .string("mcp")), ("server_label", .string(MCPBenchCommand.label)), ("name", .string("stamp"))]))]))]))
            s.expect(["response.mcp_call_arguments.done"], fail: ["error", "response.done"]) { _, written in
                s.expect(["response.mcp_call.in_progress"], fail: ["error", "response.done"]) { _, progress in
                    s.expect(["response.mcp_call.completed"], fail: ["error", "response.mcp_call.failed", "response.done"]) { _, completed in
                        s.expect(["response.output_item.done"]) { item, _ in
                            s.expect(["response.done"]) { done, finished in
                                let output = item["item"]?["output"]?.string ?? ""
                                let status = done["response"]?["status"]?.string ?? "?"
                                guard output.contains("\"n\": \(n)") || output.contains("\"n\":\(n)"), status == "completed" else {
                                    return s.fail("RuntimeError: call \(n): output \(output), status \(status)")
                                }
                                made([("n", .int(n)), ("first", .bool(k == 0)), ("call_ms", .number(Self.ms(completed, since: progress))),
                                      ("response_ms", .number(Self.ms(finished, since: created))), ("model_ms", .number(Self.ms(written, since: created))),
                                      ("after_model_ms", .number(Self.ms(finished, since: written))), ("completed_at", .number(Double(completed) / 1e9))])
                                call(k + 1)
                            }
                        }
                    }
                }
            }
        }
        s.expect(["session.created"]) { [self] _, _ in discover(s, tag) { _, _ in call(0) } }
        return s
    }

    func calls(_ level: Int) -> (records: [[(String, JSON)]], block: [(String, JSON)]) {
        let tag = "calls-\(runID)"
        prime(tag)
        let block = Block(self)
        var made: [[(String, JSON)]] = []
        let perSession = level == 1 ? options.callsAlone : options.calls
        failures += MCPBenchSession.run(count: level, concurrency: level) { _ in caller(perSession, tag) { made.append($0) } }
        let stats = block.end()
        let lines = serverLog()
        var byN: [Int: JSON] = [:]
        for line in lines where line["method"]?.string == "tools/call" { if let n = line["n"]?.int { byN[n] = line } }
        var opening: [String: (Double, Double)] = [:]
        for line in lines where line["tag"]?.string == tag && ["initialize", "notifications/initialized"].contains(line["method"]?.string ?? "") {
            let key = line["session"]?.string ?? "-"
            let was = opening[key] ?? (0, 0)
            opening[key] = (was.0 + (line["read_us"]?.double ?? 0) / 1000, was.1 + (line["app_us"]?.double ?? 0) / 1000)
        }
        var records: [[(String, JSON)]] = []
        for call in made {
            let c = JSON.object(call)
            guard let n = c["n"]?.int, let line = byN[n] else { failures.append("call \(c["n"]?.int ?? 0) is not in the server's log"); continue }
            let before = c["first"]?.bool == true ? opening[line["session"]?.string ?? "-"] ?? (0, 0) : (0, 0)
            records.append(call + [("server_ms", .number((line["read_us"]?.double ?? 0) / 1000 + before.0)),
                                   ("app_ms", .number((line["app_us"]?.double ?? 0) / 1000 + before.1)),
                                   ("back_ms", .number(1000 * ((c["completed_at"]?.double ?? 0) - (line["answered_at"]?.double ?? 0)))),
                                   ("tool_ms", .number((line["tool_us"]?.double ?? 0) / 1000))])
        }
        return (records, stats)
    }

    // MARK: Measuring

    /// CPU of this client, Parley and the MCP server, and the machine's steal, over a block.
    struct Block {
        let bench: MCPBench
        let start: Sample

        struct Sample {
            let t = MonotonicClock.nanoseconds()
            let client = CPUTime.ofSelf().total
            let parley: Double, mcp: Double
            let machine: MachineCPU?
            let metrics: ServerMetrics?
        }

        init(_ bench: MCPBench) {
            self.bench = bench
            start = Self.sample(bench)
        }

        static func sample(_ bench: MCPBench) -> Sample {
            Sample(parley: ProcessFigures(pid: bench.options.parleyPid).cpuSeconds ?? 0, mcp: ProcessFigures(pid: bench.options.mcpPid).cpuSeconds ?? 0,
                   machine: MachineCPU.now(), metrics: bench.options.metrics ? try? ServerMetrics.fetch(from: bench.target) : nil)
        }

        func end() -> [(String, JSON)] {
            let e = Self.sample(bench), s = start
            let client = e.client - s.client, parley = e.parley - s.parley, mcp = e.mcp - s.mcp
            var out: [(String, JSON)] = [("seconds", .number(Double(e.t - s.t) / 1e9)), ("client_cpu", .number(client)), ("parley_cpu", .number(parley)),
                                         ("mcp_cpu", .number(mcp))]
            if let a = s.machine, let b = e.machine {
                out.append(("steal_pct", .number(100 * b.stealFraction(since: a))))
                // Whatever else ran on the machine meanwhile (a build, another test): it competes for the cores.
                out.append(("others_cpu", .number(max(0, b.busySeconds(since: a) - client - parley - mcp))))
            }
            for name in ["parley_mcp_call_seconds", "parley_mcp_list_seconds"] {
                guard let a = s.metrics, let b = e.metrics else { continue }
                let count = (b.value(name + "_count") ?? 0) - (a.value(name + "_count") ?? 0)
                if count > 0 {
                    out.append((name + "_mean_ms", .number(1000 * ((b.value(name + "_sum") ?? 0) - (a.value(name + "_sum") ?? 0)) / count)))
                    out.append((name + "_count", .number(count)))
                }
            }
            return out
        }
    }

    /// The p-th percentile by nearest rank; nil for no values.
    static func pct(_ values: [Double], _ p: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let ordered = values.sorted()
        let rank = max(1, Int((Double(ordered.count) * p / 100).rounded(.up)))
        return ordered[rank - 1]
    }

    static func ms(_ value: Double?) -> String { value.map { Format.fixed($0, 2) } ?? "-" }
    static func pair(_ v: [Double]) -> String { "\(ms(pct(v, 50))) / \(ms(pct(v, 99)))" }

    static func blockText(_ block: [(String, JSON)]) -> String {
        let b = JSON.object(block)
        func f(_ key: String, _ digits: Int) -> String { Format.fixed(b[key]?.double ?? 0, digits) }
        return "client CPU \(f("client_cpu", 2)) s, Parley \(f("parley_cpu", 2)) s, MCP server \(f("mcp_cpu", 2)) s over \(f("seconds", 1)) s; other processes \(f("others_cpu", 2)) s; steal \(f("steal_pct", 1)) %"
    }

    // MARK: The run and its report

    func run() throws {
        let levels = options.levels.split(separator: ",").compactMap { Int($0) }
        let callLevels = options.callLevels.split(separator: ",").compactMap { Int($0) }
        var found: [(Int, (rows: [String: (records: [[(String, JSON)]], block: [(String, JSON)])], server: [(String, JSON)]))] = []
        for level in levels {
            found.append((level, discovery(level)))
            Console.error("discovery at \(level): done (\(failures.count) failures so far)\n")
        }
        var called: [(Int, (records: [[(String, JSON)]], block: [(String, JSON)]))] = []
        for level in callLevels {
            called.append((level, calls(level)))
            Console.error("calls at \(level): done (\(failures.count) failures so far)\n")
        }
        func records(_ r: [[(String, JSON)]]) -> JSON { .array(r.map(JSON.object)) }
        let report: JSON = .object([
            ("discovery", .object(found.map { level, d in
                (String(level), .object(["plain", "cold", "warm"].map { ($0, .object([("records", records(d.rows[$0]!.records)), ("block", .object(d.rows[$0]!.block))])) }
                                        + [("server", .object(d.server))]))
            })),
            ("calls", .object(called.map { level, c in (String(level), .object([("records", records(c.records)), ("block", .object(c.block))])) })),
            ("failures", .array(failures.map(JSON.string))),
        ])
        try TextFile.write(report.description, to: "\(options.out)/mcp-bench.json")
        discoveryTable(found)
        callsTable(called)
        if !failures.isEmpty {
            print("\n\(failures.count) failures; the first: " + Array(Set(failures)).sorted().prefix(5).joined(separator: "; "))
            throw ExitCode.failure
        }
    }

    private func discoveryTable(_ found: [(Int, (rows: [String: (records: [[(String, JSON)]], block: [(String, JSON)])], server: [(String, JSON)]))]) {
        func values(_ records: [[(String, JSON)]], _ key: String) -> [Double] { records.compactMap { JSON.object($0)[key]?.double } }
        print("\n### Discovery: a session's start, ms (p50 / p99)\n")
        print("| sessions at once | no MCP: connect → session.created | cold: connect → mcp_list_tools.completed | of which update → completed | "
              + "cold, ratio to no MCP (p50) | the server's own time (initialize + initialized + tools/list) | cold less the server's time | "
              + "of which the list's way back (the server's answer → completed at the client) | "
              + "warm: connect → completed | of which update → completed | warm, ratio to no MCP (p50) |")
        print("| ---: | --- | --- | --- | ---: | --- | --- | --- | --- | --- | ---: |")
        for (level, d) in found {
            let plain = values(d.rows["plain"]!.records, "created_ms"), cold = d.rows["cold"]!.records, warm = d.rows["warm"]!.records
            let cl = values(cold, "listed_ms"), cu = values(cold, "update_ms"), own = values(cold, "server_ms")
            let less = cold.compactMap { r -> Double? in let o = JSON.object(r); return o["listed_ms"]?.double.flatMap { l in o["server_ms"]?.double.map { l - $0 } } }
            let back = values(cold, "back_ms"), wl = values(warm, "listed_ms"), wu = values(warm, "update_ms")
            func ratio(_ v: [Double]) -> String {
                guard let a = Self.pct(v, 50), let b = Self.pct(plain, 50), b > 0 else { return "-" }
                return Format.fixed(a / b, 1) + "×"
            }
            print("| \(level) | \(Self.pair(plain)) | \(Self.pair(cl)) | \(Self.pair(cu)) | \(ratio(cl)) | \(Self.pair(own)) | \(Self.pair(less)) | \(Self.pair(back)) | \(Self.pair(wl)) | \(Self.pair(wu)) | \(ratio(wl)) |")
        }
        print()
        for (level, d) in found {
            let s = JSON.object(d.server)
            let lists = (s["tools_list_ms"]?.array ?? []).compactMap(\.double)
            print("- \(level) at once: sessions measured plain \(d.rows["plain"]!.records.count), cold \(d.rows["cold"]!.records.count), "
                  + "warm \(d.rows["warm"]!.records.count); the server's tools/list alone p50 \(Self.ms(Self.pct(lists, 50))), "
                  + "p99 \(Self.ms(Self.pct(lists, 99))) ms; tools/list asked by warm sessions: \(s["warm_tools_lists"]?.int ?? 0)")
            for kind in ["plain", "cold", "warm"] {
                let (records, block) = d.rows[kind]!
                let b = JSON.object(block)
                var mean = ""
                if kind == "cold", let list = b["parley_mcp_list_seconds_mean_ms"]?.double, !records.isEmpty {
                    let n = Double(records.count)
                    mean = "; means: update → completed \(Format.fixed(values(records, "update_ms").reduce(0, +) / n, 2)) ms, Parley's HTTP exchanges (parley_mcp_list_seconds) "
                        + "\(Format.fixed(list, 2)) ms over \(Int(b["parley_mcp_list_seconds_count"]?.double ?? 0)), the server's own \(Format.fixed(values(records, "server_ms").reduce(0, +) / n, 2)) ms "
                        + "(its app alone \(Format.fixed(values(records, "app_ms").reduce(0, +) / n, 2)) ms)"
                }
                print("  - \(kind): \(Self.blockText(block))\(mean)")
            }
        }
    }

    private func callsTable(_ called: [(Int, (records: [[(String, JSON)]], block: [(String, JSON)]))]) {
        print("\n### Calls: what Parley adds beyond the server's own time, ms (p50 / p99)\n")
        print("| sessions at once | calls | in_progress → completed | the server's own time | in_progress → completed less the server's | "
              + "of which the answer's way back (the server's answer → completed at the client) | "
              + "response.create → response.done | of which the model (→ mcp_call_arguments.done) | the rest (→ response.done) less the server's | "
              + "the tool function itself |")
        print("| --- | ---: | --- | --- | --- | --- | --- | --- | --- | --- |")
        for (level, c) in called {
            for (first, name) in [(false, "later calls"), (true, "a session's first call")] {
                let rows = c.records.map(JSON.object).filter { $0["first"]?.bool == first }
                guard !rows.isEmpty else { continue }
                func pair(_ key: String, less: Bool = false) -> String {
                    Self.pair(rows.map { ($0[key]?.double ?? 0) - (less ? $0["server_ms"]?.double ?? 0 : 0) })
                }
                print("| \(level), \(name) | \(rows.count) | \(pair("call_ms")) | \(pair("server_ms")) | \(pair("call_ms", less: true)) | \(pair("back_ms")) | "
                      + "\(pair("response_ms")) | \(pair("model_ms")) | \(pair("after_model_ms", less: true)) | \(pair("tool_ms")) |")
            }
        }
        print()
        for (level, c) in called {
            let b = JSON.object(c.block), rows = c.records.map(JSON.object)
            var mean = ""
            if let call = b["parley_mcp_call_seconds_mean_ms"]?.double, !rows.isEmpty {
                let n = Double(rows.count)
                func avg(_ key: String) -> String { Format.fixed(rows.reduce(0) { $0 + ($1[key]?.double ?? 0) } / n, 2) }
                mean = "; means: in_progress → completed \(avg("call_ms")) ms, Parley's HTTP exchange (parley_mcp_call_seconds) "
                    + "\(Format.fixed(call, 2)) ms over \(Int(b["parley_mcp_call_seconds_count"]?.double ?? 0)), the server's own \(avg("server_ms")) ms "
                    + "(its app alone \(avg("app_ms")) ms)"
            }
            let seconds = b["seconds"]?.double ?? 0
            print("- \(level) at once: \(rows.count) calls, \(seconds > 0 ? String(Int((Double(rows.count) / seconds).rounded())) : "0") a second; \(Self.blockText(c.block))\(mean)")
        }
    }
}
