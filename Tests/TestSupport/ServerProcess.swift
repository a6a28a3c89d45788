import Glibc
import Synchronization

/// A `parley serve` child process for tests that need the real executable: its exit status, its
/// signal handling, its behaviour under a descriptor limit.
public final class ServerProcess {
    public let pid: pid_t
    public let port: Int
    /// The line saying where it listens.
    public let listeningLine: String
    /// What the process wrote before its listening line (start-up warnings), a line each.
    public let startupLines: [String]
    private let output: UnsafeMutablePointer<FILE>
    /// Its loop's time, when started `clocked` (`parley serve --test-clock`).
    public let clock: ServerClock?
    private let clockPath: String?
    private static let clocks = Atomic<Int>(0)

    public struct StartFailure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The executable built beside the test bundle.
    public static var parleyPath: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let exe = String(decoding: buffer[0..<max(0, n)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return exe[..<(exe.lastIndex(of: "/") ?? exe.endIndex)] + "/parley"
    }

    /// Which speech helper a `serve` uses.
    public enum SpeechHelper: Sendable {
        /// The test run's (`sharedSpeechHelperSocket`), when there is one and the arguments choose
        /// nothing of the helper's own (`choosesHelper`); else its own, as a server starts it.
        case sharedIfAny
        /// Its own: a test that kills it, counts its work, or reads that it is missing.
        case own
    }

    /// The speech helper scripts/tools/swift-test.sh starts for the run (`parley serve
    /// --speech-helper-only`, default models, no capacity), so that the models load once a run
    /// and not once a server (issue 50).
    public static var sharedSpeechHelperSocket: String? {
        guard let path = getenv("PARLEY_TEST_SPEECH_HELPER_SOCKET").map({ String(cString: $0) }), !path.isEmpty,
              access(path, F_OK) == 0 else { return nil }
        return path
    }

    /// Options that make a server's helper differ from the shared one (its models, its capacity,
    /// its program) or start a supervisor, which starts its own for its workers.
    static let helperChoices = ["--speech-capacity", "--transcriber whisper-base", "--whisper-model-dir", "--whisper-base-model-dir",
                                "--piper-voice", "--turn-model-file", "--speech-helper", "--workers"]

    static func choosesHelper(_ arguments: String) -> Bool {
        helperChoices.contains { arguments.contains($0) }
    }

    /// Starts `parley COMMAND --port 0 ARGS` (`serve`, or `mock-llm`) through a shell (so `ulimit`
    /// and environment variables can be set first) and waits for its "listening" line.
    /// `clocked`: its one loop runs on a clock the test moves (`clock`, `ClockedConversation`).
    public init(command subcommand: String = "serve", arguments: String = "", environment: String = "", descriptorLimit: Int? = nil,
                speechHelper: SpeechHelper = .sharedIfAny, clocked: Bool = false) throws {
        let limit = descriptorLimit.map { "ulimit -n \($0); " } ?? ""
        var arguments = arguments
        clockPath = clocked ? "/tmp/parley-test-clock-\(getpid())-\(Self.clocks.add(1, ordering: .relaxed).newValue).sock" : nil
        if let clockPath { arguments += " --test-clock \(clockPath)" }
        if subcommand == "serve", speechHelper == .sharedIfAny, !Self.choosesHelper(arguments), let socket = Self.sharedSpeechHelperSocket {
            arguments += " --speech-helper-socket \(socket)"
        }
        let command = "\(limit)exec env \(environment) '\(Self.parleyPath)' \(subcommand) --port 0 \(arguments) 2>&1"
        let (child, read) = try Subprocess.startPiped(["/bin/sh", "-c", command])
        pid = child
        output = fdopen(read, "r")
        // "parley listening on http://127.0.0.1:PORT/  (...)", or https, or "parley mock-llm listening on ...";
        // start-up warnings (a VAD model that did not load) may come before it.
        var line = [CChar](repeating: 0, count: 1024)
        var text = ""
        var before: [String] = []
        repeat {
            guard fgets(&line, Int32(line.count), output) != nil else {
                throw StartFailure(description: "parley exited before listening: \((before + [text]).joined())")
            }
            if !text.isEmpty { before.append(text) }
            text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        } while !text.contains(" listening on ") && before.count < 200
        startupLines = before
        let afterHost = text.split(separator: "127.0.0.1:", maxSplits: 1).dropFirst().first
        guard let port = afterHost.flatMap({ Int($0.prefix { $0.isNumber }) }) else {
            kill(child, SIGKILL)
            throw StartFailure(description: "unexpected first line: \(text)")
        }
        self.port = port
        listeningLine = text
        do {
            clock = try clockPath.map(ServerClock.init(path:))
        } catch {
            kill(child, SIGKILL)
            throw error
        }
    }

    deinit {
        if let clockPath { unlink(clockPath) }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        fclose(output)
    }

    public func signal(_ signal: Int32) { kill(pid, signal) }

    /// A series' value in the process's /metrics, read over HTTP; nil when it is not there.
    public func metric(_ series: String) -> Double? {
        guard let client = try? TestClient(port: port),
              (try? client.send("GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")) != nil,
              let response = try? client.readResponse() else { return nil }
        for line in response.body.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    /// Everything the process wrote (stdout and stderr) after its listening line, up to its end:
    /// call once it has exited, or it waits for it to.
    public func remainingOutput() -> String {
        var bytes: [UInt8] = []
        while true {
            let c = fgetc(output)
            if c == EOF { break }
            bytes.append(UInt8(truncatingIfNeeded: c))
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Waits up to `seconds` for the process to exit; its exit code, or nil if it did not exit
    /// normally in time.
    public func waitForExit(seconds: Double) -> Int32? {
        var status: Int32 = 0
        for _ in 0..<Int(seconds * 100) {
            if waitpid(pid, &status, WNOHANG) == pid {
                return status & 0x7F == 0 ? (status >> 8) & 0xFF : nil
            }
            usleep(10_000)
        }
        return nil
    }

    /// CPU seconds (user + system) the process has used so far, from /proc/PID/stat.
    public func cpuSeconds() -> Double {
        guard let file = fopen("/proc/\(pid)/stat", "r") else { return 0 }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 2048)
        guard fgets(&line, Int32(line.count), file) != nil else { return 0 }
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
        let fields = text[text.lastIndex(of: ")")!...].split(separator: " ")
        let ticks = (Double(fields[12]) ?? 0) + (Double(fields[13]) ?? 0)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
