import ArgumentParser
import JSON
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// `parley-load history N`: what a session's conversation history costs the server
/// (scripts/benchmarks/bench-history.sh).
struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Give N Realtime sessions MESSAGES text items each; print the server's resident and accounted bytes per session against the text held.",
        discussion: """
            Opens N sessions on /v1/realtime and waits for their session.created; reads the server's \
            resident memory (/proc/PID) and parley_accounted_bytes (/metrics) with them idle; sends each \
            session --messages `conversation.item.create` events (no responses) of --bytes bytes of text \
            (common English words, seeded: the same texts every run; user and assistant turns); waits \
            for the server's answers to go quiet; reads both again. Prints one JSON line.
            """)

    @Argument(help: "Sessions to open.")
    var sessions = 1000

    @Option(help: "Text items given to each session.")
    var messages = 64

    @Option(help: "Bytes of text in each item.")
    var bytes = 94

    @Option(help: "The Realtime endpoint; loopback addresses only.")
    var url = "ws://127.0.0.1:8080/v1/realtime"

    @Option(help: "The server's process id, for its resident memory (/proc/PID/statm).")
    var serverPid: Int32

    @Option(help: "Seconds allowed for every session to open.")
    var connectTimeout = 60.0

    func validate() throws {
        guard (1...19_000).contains(sessions) else { throw ValidationError("N must be 1...19000 (one client process)") }
        guard (1...100_000).contains(messages), (1...100_000).contains(bytes) else { throw ValidationError("--messages and --bytes must be 1...100000") }
    }

    static let words = "the a of to and in is you that it he was for on are as with his they at be this have from or one had by word but not what all were we when your can said there use an each which she do how their if will up other about out many then them these so some her would make like him into time has look two more write go see number no way could people my than first been call who oil its now find long down day did get come made may part".split(separator: " ").map(String.init)

    func run() throws {
        signal(SIGPIPE, SIG_IGN)
        DescriptorLimit.raiseToHard()
        let target = try LoadTarget(url)
        let run = try HistoryRun(.init(target: target, count: sessions, firstIndex: 0, sources: 16, rate: 1000, connectTimeout: connectTimeout))
        run.openAll()
        guard run.created.count == sessions else {
            throw LoadFailure("only \(run.created.count) of \(sessions) sessions said session.created (failures: \(Format.reasons(run.pool.failed)))")
        }
        run.settle(seconds: 1)
        let figures = ProcessFigures(pid: serverPid)
        func accounted() throws -> Double {
            do { return try ServerMetrics.fetch(from: target).value("parley_accounted_bytes") ?? 0 } catch { throw LoadFailure.unreachable(error, target) }
        }
        guard let idleResident = figures.residentBytes else { throw LoadFailure("no process \(serverPid)") }
        let idleAccounted = try accounted()

        var random = FastRandom(seed: 7)
        var textBytes = 0
        for connection in run.pool.openConnections {
            for _ in 0..<messages {
                var text = ""
                while text.utf8.count < bytes { text += Self.words[Int(random.next() % UInt64(Self.words.count))] + " " }
                text = String(text.utf8.prefix(bytes))!
                textBytes += text.utf8.count
                let assistant = random.next() % 2 == 0
                let type = assistant ? "output_text" : (random.next() % 2 == 0 ? "input_text" : "text")
                let event: JSON = .object([("type", .string("conversation.item.create")), ("item", .object([
                    ("type", .string("message")), ("role", .string(assistant ? "assistant" : "user")),
                    ("content", .array([.object([("type", .string(type)), ("text", .string(text))])])),
                ]))])
                Array(event.description.utf8).withUnsafeBytes { run.pool.sendFrame(ClientFrame.text, $0, on: connection) }
            }
        }
        run.drain(expected: sessions * messages)
        run.settle(seconds: 1)
        guard let fullResident = figures.residentBytes else { throw LoadFailure("process \(serverPid) is gone") }
        let fullAccounted = try accounted()
        let perText = Double(textBytes) / Double(sessions)
        let resident = (fullResident - idleResident) / Double(sessions)
        let accountedPer = (fullAccounted - idleAccounted) / Double(sessions)
        func rounded(_ x: Double) -> JSON { .number((x * 100).rounded() / 100) }
        print(JSON.object([
            ("sessions", .int(sessions)), ("messages", .int(messages)), ("text_bytes_per_session", .number(perText.rounded())),
            ("resident_bytes_per_session", .number(resident.rounded())), ("accounted_bytes_per_session", .number(accountedPer.rounded())),
            ("resident_over_text", rounded(resident / perText)), ("accounted_over_text", rounded(accountedPer / perText)),
            ("answers", .int(run.answers)), ("dropped", .int(run.pool.droppedCount)),
        ]).description)
        run.pool.closeAll()
    }
}

/// The sessions of one `history` run: which said session.created, and how many answers came.
final class HistoryRun: ConnectionEvents {
    let pool: ConnectionPool
    private(set) var created = Set<Int>()
    private(set) var answers = 0
    private var lastAnswer: UInt64 = 0

    init(_ plan: ConnectionPool.Plan) throws(ClientSocket.Failure) {
        pool = try ConnectionPool(plan)
        pool.events = self
    }

    func received(_ opcode: UInt8, _ payload: UnsafeRawBufferPointer, on connection: ClientConnection, in pool: ConnectionPool) {
        guard opcode == ClientFrame.text else { return }
        if RealtimeEventKind.of(payload) == .sessionCreated { created.insert(connection.slot) } else { answers += 1 }
        lastAnswer = MonotonicClock.nanoseconds()
    }

    func openAll() {
        let deadline = pool.startedAt + MonotonicClock.nanoseconds(pool.plan.connectTimeout + 5)
        while !(pool.settled && created.count >= pool.open) && MonotonicClock.nanoseconds() < deadline {
            pool.step(timeoutMilliseconds: 10)
        }
    }

    /// Reads for `seconds`, answering pings.
    func settle(seconds: Double) {
        let end = MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(seconds)
        while MonotonicClock.nanoseconds() < end { pool.step(timeoutMilliseconds: 50) }
    }

    /// Until at least `expected` answers have come and none for 2 s, or 120 s.
    func drain(expected: Int) {
        let bound = MonotonicClock.nanoseconds() + 120_000_000_000
        answers = 0
        lastAnswer = MonotonicClock.nanoseconds()
        while MonotonicClock.nanoseconds() < bound {
            pool.step(timeoutMilliseconds: 50)
            let quiet = MonotonicClock.nanoseconds() - lastAnswer
            if answers >= expected && quiet > 500_000_000 { return }
            if quiet > 2_000_000_000 { return }
        }
    }
}
