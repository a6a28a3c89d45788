import ArgumentParser
import JSON
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load compare`: the same scenarios against Parley and against the peers (uWebSockets'
/// echo server, Node's `ws`, FastAPI on uvicorn, and the `websockets` library), one after the
/// other in one run, each server a single process started here; then the table of ratios. Every server's memory is read the same way, from
/// /proc (`hold --server-pid`), so that the figures compare like with like.
struct CompareCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compare",
        abstract: "Run idle-hold, echo, paced streams and voice against Parley and its peers in one run and print the ratio table.",
        discussion: """
            The peers are installed into .venv-peers by scripts/benchmarks/peers.sh (run from the repository root). \
            Each server is one process; Parley runs with --loops 1, so every server has one thread of \
            event loop. With --speech, each server then runs the voice scenario at rising numbers of \
            speakers (--voice-steps) until one misses the 5 ms p99 budget: the last that passed is its \
            voice figure. Reports: one text and JSON file per run in --out, plus compare.md and compare.json.
            """)

    @Option(help: "Idle sessions each server is asked to hold (one process may have 20,000 descriptors here).")
    var sessions = 19_000

    @Option(help: "Seconds of each echo measurement.")
    var echoSeconds = 10.0

    @Option(help: "Servers to run, in order: parley, uws, node, fastapi, websockets (uws only with --uws).")
    var servers = "parley,uws,node,fastapi,websockets"

    @Option(help: "uWebSockets' echo server (built from a fetched snapshot, outside the repository), taking its port as its only argument; without it uws is skipped.")
    var uws: String?

    @Option(help: "Paced streams (60-byte messages every 20 ms, echoed): the numbers of connections, each measured for --echo-seconds.")
    var streams = "1000,2000,3000"

    @Option(help: "The parley executable to compare.")
    var parley = ".build/release/parley"

    @Option(help: "Directory for the reports (default LoadTests/reports/compare-<UTC time>).")
    var out: String?

    @Option(help: "First port to use; each server gets the next one.")
    var port = 9500

    @Option(help: "Speech (WAV) for the voice scenario (on /ws); without it the voice column is skipped.")
    var speech: String?

    @Option(help: "Voice scenario: sessions open, of which some stream Opus in real time.")
    var voiceSessions = 10_000

    @Option(help: "Voice scenario: the numbers of speakers to try, in rising order, until one fails.")
    var voiceSteps = "50,100,200,300,400,500"

    @Option(help: "Voice scenario: seconds measured at each step (after 3 s of warm-up).")
    var voiceSeconds = 10.0

    @Option(help: "A Markdown file whose <!-- report:compare --> block gets the table (docs/benchmarks.md).")
    var docs: String?

    private var steps: [Int] { voiceSteps.split(separator: ",").compactMap { Int($0) } }

    func validate() throws {
        guard (100...19_900).contains(sessions) else { throw ValidationError("--sessions must be 100...19900 (one server process)") }
        guard echoSeconds > 0, echoSeconds <= 120 else { throw ValidationError("--echo-seconds must be in (0, 120]") }
        guard !steps.isEmpty, steps.count == voiceSteps.split(separator: ",").count, steps.allSatisfy({ (1...voiceSessions).contains($0) }), steps == steps.sorted() else {
            throw ValidationError("--voice-steps must be rising numbers of speakers, each at most --voice-sessions")
        }
        guard voiceSeconds > 0, voiceSeconds <= 120 else { throw ValidationError("--voice-seconds must be in (0, 120]") }
        for name in servers.split(separator: ",") where Peer(rawValue: String(name)) == nil {
            throw ValidationError("unknown server \(name); use parley, uws, node, fastapi, websockets")
        }
    }

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        let directory = out ?? "LoadTests/reports/compare-\(UTCStamp.now())"
        guard Subprocess.run(["/bin/mkdir", "-p", directory]) == 0 else { throw LoadFailure("cannot make \(directory)") }
        let command = CommandLine.arguments.joined(separator: " ")
        print("$ \(command)")
        var results: [CompareResult] = []
        for (i, name) in servers.split(separator: ",").enumerated() {
            let peer = Peer(rawValue: String(name))!
            if peer == .uws && uws == nil {
                print("\n== uWebSockets skipped: no --uws (make compare UWS=path)")
                continue
            }
            results.append(try measure(peer, port: port + i, directory: directory))
        }
        let table = CompareResult.table(results, command: command)
        print("\n" + table)
        try TextFile.write(table, to: "\(directory)/compare.md")
        try TextFile.write(JSON.array(results.map(\.json)).pretty + "\n", to: "\(directory)/compare.json")
        print("reports in \(directory)")
        if let docs {
            let (text, replaced) = DocsTables.update(try TextFile.read(docs), with: [LoadReport.Table(name: "compare", title: "", markdown: table)], source: directory)
            try TextFile.write(text, to: docs)
            print(replaced.isEmpty ? "\(docs) has no <!-- report:compare --> block" : "\(docs): the comparison table updated")
        }
    }

    /// Starts `peer`, holds idle sessions, echoes at 100 and 1,000 connections, climbs the voice
    /// steps, stops it.
    private func measure(_ peer: Peer, port: Int, directory: String) throws -> CompareResult {
        print("\n== \(peer.title) on port \(port)")
        Console.flush()
        let server = try ServerUnderTest(peer, port: port, parley: parley, uws: uws, log: "\(directory)/\(peer.rawValue)-server.log")
        defer { server.stop() }
        let url = "ws://127.0.0.1:\(port)/echo"
        let pid = String(server.pid)
        var result = CompareResult(peer: peer)
        // What the process holds listening, before any connection.
        usleep(1_000_000)
        result.startupResident = ProcessFigures(pid: server.pid).residentBytes
        result.hold = try load(["hold", String(sessions), "--url", url, "--hold-seconds", "5", "--connect-timeout", "120",
                                "--server-pid", pid], report: "\(directory)/\(peer.rawValue)-hold")
        // The held sessions close before the echo runs start.
        usleep(3_000_000)
        for connections in [100, 1000] {
            let echo = try load(["echo", "--url", url, "--connections", String(connections), "--duration", String(echoSeconds),
                                 "--server-pid", pid], report: "\(directory)/\(peer.rawValue)-echo-\(connections)")
            if connections == 100 { result.echo100 = echo } else { result.echo1000 = echo }
        }
        // A voice session's shape without the codec: small messages at 50 a second each, paced,
        // echoed; the server's CPU per message and the round trip's p99 at each count.
        for connections in streams.split(separator: ",").compactMap({ Int($0) }) {
            usleep(3_000_000)
            let run = try load(["echo", "--url", url, "--connections", String(connections), "--rate", "50", "--size", "60",
                                "--warmup", "3", "--duration", String(echoSeconds), "--connect-timeout", "60", "--server-pid", pid],
                               report: "\(directory)/\(peer.rawValue)-streams-\(connections)")
            result.streams.append((connections, run))
        }
        if let speech, peer.servesVoice {
            for speaking in steps {
                usleep(3_000_000)
                let voice = try load(["voice", String(voiceSessions), "--speaking", String(speaking), "--url", "ws://127.0.0.1:\(port)/ws",
                                      "--input", speech, "--warmup", "3", "--duration", String(voiceSeconds), "--server-pid", pid],
                                     report: "\(directory)/\(peer.rawValue)-voice-\(speaking)")
                result.voices.append(voice ?? .object([("speaking", .int(speaking)), ("passed", .bool(false))]))
                if voice?["passed"]?.bool != true { break }
            }
        }
        return result
    }

    /// Runs this executable with `arguments`, its output to REPORT.txt (and shown), JSON to REPORT.json.
    private func load(_ arguments: [String], report: String) throws -> JSON? {
        let status = Subprocess.run(["/proc/self/exe"] + arguments + ["--json", report + ".json"], output: report + ".txt", echo: true)
        if status != 0 { print("   (exit \(status); the report says why)") }
        guard let text = try? TextFile.read(report + ".json") else { return nil }
        return try? JSON(parsing: text)
    }
}

/// The servers `compare` knows how to start.
enum Peer: String {
    case parley, uws, node, fastapi, websockets

    var title: String {
        switch self {
        case .parley: "Parley (1 process, --loops 1)"
        case .uws: "uWebSockets (1 process, 1 loop)"
        case .node: "Node ws (1 process)"
        case .fastapi: "FastAPI + uvicorn (1 process)"
        case .websockets: "websockets (1 process)"
        }
    }

    /// The peers with Parley's `/ws` voice path (the Python ones, LoadTests/peers/peer_voice.py).
    var servesVoice: Bool { self == .parley || self == .fastapi || self == .websockets }

    func command(port: Int, parley: String, uws: String?) -> [String] {
        switch self {
        // Speech is off: the voice scenario measures decoding, VAD and turns, which the peers
        // do too; recognition and synthesis are measured on their own (docs/benchmarks.md). So
        // are Silero and Smart Turn (make bench-vad, bench-turns): here Parley hears with the
        // energy detector and ends turns by silence, the work the Python peers' voice path does.
        case .parley: [parley, "serve", "--host", "127.0.0.1", "--port", String(port), "--loops", "1", "--transcriber", "none", "--synthesizer", "none",
                       "--vad", "energy", "--turn-model", "none"]
        case .uws: [uws ?? "uws-echo", String(port)]
        // Debian's node-ws lives in /usr/share/nodejs, which this node does not search by itself.
        case .node: ["/usr/bin/env", "NODE_PATH=/usr/share/nodejs", "node", "LoadTests/peers/node_ws_echo.js", String(port)]
        case .fastapi, .websockets: ["scripts/benchmarks/peers.sh", "run", rawValue, String(port)]
        }
    }
}

/// One server process for the length of its measurements.
final class ServerUnderTest {
    let pid: pid_t

    init(_ peer: Peer, port: Int, parley: String, uws: String?, log: String) throws {
        guard let pid = Subprocess.start(peer.command(port: port, parley: parley, uws: uws), output: log) else {
            throw LoadFailure("cannot start \(peer.title)")
        }
        self.pid = pid
        // Up until it accepts connections, at most 60 s (a first peer start installs nothing; the
        // venv must exist: scripts/benchmarks/peers.sh install).
        for _ in 0..<600 {
            if Self.accepts(port: port) { return }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                throw LoadFailure("\(peer.title) exited before listening; see \(log)")
            }
            usleep(100_000)
        }
        stop()
        throw LoadFailure("\(peer.title) did not listen on port \(port) within 60 s; see \(log)")
    }

    func stop() {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<100 where waitpid(pid, &status, WNOHANG) != pid { usleep(100_000) }
        if kill(pid, 0) == 0 {
            kill(pid, SIGKILL)
            waitpid(pid, &status, 0)
        }
    }

    private static func accepts(port: Int) -> Bool {
        switch ClientSocket.connect(to: .ipv4(127, 0, 0, 1, port: UInt16(port)), from: nil) {
        case .failure: return false
        case .success(let fd):
            defer { ClientSocket.close(fd) }
            var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            return poll(&entry, 1, 1000) > 0 && ClientSocket.pendingError(fd) == 0
        }
    }
}
