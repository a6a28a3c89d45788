#if canImport(Glibc)
import Glibc
#endif
import Loop
import Models
import Speech
import Synchronization
import SpeechContracts

/// Runs the speech helper (helpers/parley_speech.py, in the project venv's Python) beside the
/// server, one per box: `parley serve` starts it (with `--workers N`, the supervisor does, and
/// every worker's loops connect to its socket), waits for its `ready` line, checks that it speaks
/// this server's protocol version (`hello`), marks it up for the loops (`SpeechHelperStatus`), and
/// starts it again when it ends, after a pause that doubles with each failure in a row (1 s to
/// 30 s). One thread watches it; the loops never wait on it. A helper of another protocol version
/// is said once, in one line naming both, and not started again: restarting it would not help.
///
/// The helper's stdin is a pipe this process holds open and never writes: when this process ends,
/// however it ends, the helper reads end-of-file and exits, so no helper outlives its server. Its
/// stderr is this process's, so a Python traceback lands in the server's log.
final class SpeechHelperProcess: Sendable {
    /// What the helper's life says: warnings (it ended, it could not start) and news (it is ready).
    enum Report: Sendable {
        case warning(String)
        case ready(pid: Int32, models: String, seconds: Double)
    }

    let status: SpeechHelperStatus
    private let report: @Sendable (Report) -> Void
    private let python: String
    private let arguments: [String]
    private let state = Mutex((pid: pid_t?.none, stopping: false, livesEnded: 0))
    private let metrics = SpeechMetrics.shared

    /// A start that lasted this long was no failure: the next pause starts from 1 s again.
    static let healthyRunSeconds = 60.0
    static let maxBackoffSeconds = 30.0

    /// The private directory (mode 0700, from `Sys.makeTemporaryDirectory`) its socket is made in.
    private let directory: String

    init(python: String, script: String, directory: String, modelArguments: [String], report: @escaping @Sendable (Report) -> Void) {
        self.report = report
        let socketPath = directory + "/helper.sock"
        self.directory = directory
        status = SpeechHelperStatus(socketPath: socketPath)
        self.python = python
        arguments = [python, script, "--socket", socketPath, "--exit-with-stdin"] + modelArguments
    }

    func start() throws(SystemError) {
        try Thread.spawn(name: "parley-helper") { [self] in
            // The signals the server or the supervisor waits for (sigwait in its main thread) are
            // never this thread's: started before they are blocked there, it would take a SIGTERM
            // at its default action and end the process instead of draining it.
            _ = Sys.blockSignals([SIGINT, SIGTERM, SIGHUP, SIGCHLD])
            watch()
        }
    }

    /// Waits until the helper is ready, its first life has ended (it could not load: the callers'
    /// fallbacks serve until a later life is ready), or `seconds` have passed; true when ready.
    /// `parley serve` waits so that a server which says it listens also hears and speaks.
    func waitUntilReady(seconds: Double) -> Bool {
        let deadline = MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)
        while status.readyGeneration == nil && state.withLock({ $0.livesEnded == 0 }) && MonotonicClock.nanoseconds() < deadline {
            usleep(10_000)
        }
        return status.readyGeneration != nil
    }

    /// Stops the helper for good (the server is draining).
    func stop() {
        let pid = state.withLock { state -> pid_t? in
            state.stopping = true
            return state.pid
        }
        if let pid { Sys.signal(pid, SIGTERM) }
        Directory.removeFlat(directory)
    }

    private func watch() {
        var backoff = 1.0
        var first = true
        while !state.withLock({ $0.stopping }) {
            if !first {
                metrics.helperRestarts.add(1)
                report(.warning("speech helper: starting again in \(backoff) s; meanwhile turns end by silence, and recognition and the voice fail"))
                usleep(UInt32(backoff * 1_000_000))
                if state.withLock({ $0.stopping }) { return }
            }
            first = false
            let started = MonotonicClock.nanoseconds()
            runOnce()
            backoff = MonotonicClock.seconds(since: started) >= Self.healthyRunSeconds ? 1 : min(Self.maxBackoffSeconds, backoff * 2)
        }
    }

    /// One life of the helper: spawn, read its stdout until it ends, reap it.
    private func runOnce() {
        let input: (read: Int32, write: Int32)
        let output: (read: Int32, write: Int32)
        let pid: pid_t
        do throws(SystemError) {
            input = try Sys.pipe()
            output = try Sys.pipe()
            pid = try Sys.spawn(python, arguments, standardInput: input.read, standardOutput: output.write)
        } catch {
            report(.warning("speech helper: cannot start \(python): \(error)"))
            state.withLock { $0.livesEnded += 1 }
            return
        }
        Sys.close(input.read)
        Sys.close(output.write)
        defer {
            Sys.close(input.write)
            Sys.close(output.read)
        }
        state.withLock { $0.pid = pid }
        let started = MonotonicClock.nanoseconds()
        var line: [UInt8] = []
        var served = false
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { chunk.deallocate() }
        reading: while true {
            guard case .transferred(let n)? = try? Sys.read(output.read, into: chunk) else { break }
            for byte in chunk[..<n] {
                guard byte == UInt8(ascii: "\n") else {
                    if line.count < 4096 { line.append(byte) }
                    continue
                }
                let text = String(decoding: line, as: UTF8.self)
                line = []
                if text.hasPrefix("ready") && !served {
                    if let mismatch = Self.versionMismatch(status.socketPath) {
                        report(.warning("speech helper: \(arguments[1]) speaks protocol version \(mismatch), this parley speaks \(SpeechHelperContract.version); it is not used (turns end by silence, and recognition and the voice fail): run the helper of this build"))
                        state.withLock { $0.stopping = true }
                        Sys.signal(pid, SIGTERM)
                        break reading
                    }
                    served = true
                    status.markReady()
                    metrics.helperUp.add(1)
                    report(.ready(pid: pid, models: String(text.dropFirst(6)), seconds: MonotonicClock.seconds(since: started)))
                }
            }
            if state.withLock({ $0.stopping }) { break reading }
        }
        status.markDown()
        if served { metrics.helperUp.add(-1) }
        let end = try? Sys.waitForExit(pid)
        state.withLock {
            $0.pid = nil
            $0.livesEnded += 1
        }
        if !state.withLock({ $0.stopping }) {
            report(.warning("speech helper ended: \(end.map { "\($0)" } ?? "unknown status") after \(MonotonicClock.seconds(since: started)) s"))
        }
    }

    /// Asks the helper at `path` its protocol version (`hello`; 5 s at most, polled every 10 ms on
    /// this watcher thread, never a loop's): nil when it is this server's, else the one it speaks
    /// ("none" when it said nothing the server could read).
    static func versionMismatch(_ path: String) -> String? {
        guard let address = SocketAddress.unix(path: path), let fd = try? Sys.streamSocket(family: AF_UNIX) else { return nil }
        defer { Sys.close(fd) }
        let hello = SpeechHelperFrame(.hello, id: 0, [("version", .int(SpeechHelperContract.version))]).encoded()
        // A Unix socket connects at once, and its buffer takes a few dozen bytes at once.
        guard (try? Sys.connect(fd, to: address)) == true,
              case .transferred(hello.count)? = hello.withUnsafeBytes({ try? Sys.write(fd, $0) }) else { return nil }
        var reader = SpeechHelperFrame.Reader()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { buffer.deallocate() }
        let deadline = MonotonicClock.nanoseconds() + 5_000_000_000
        while MonotonicClock.nanoseconds() < deadline {
            switch try? Sys.read(fd, into: buffer) {
            case .wouldBlock?:
                usleep(10_000)
            case .transferred(let n)?:
                guard let frames = try? reader.read(UnsafeRawBufferPointer(rebasing: buffer[..<n])) else { return "none" }
                if let answer = frames.first {
                    let version = answer.header["version"]?.int
                    // Version 1 sent none.
                    return version == SpeechHelperContract.version && answer.header["error"] == nil ? nil : String(version ?? 1)
                }
            default:
                return "none"
            }
        }
        return "none"
    }
}
