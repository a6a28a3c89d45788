#if canImport(Glibc)
import Glibc
#endif
import Loop
import Models
import Synchronization

/// Runs the speech helper (helpers/parley_speech.py, in the project venv's Python) beside the
/// server: starts it, waits for its `ready` line, marks it up for the loops
/// (`SpeechHelperStatus`), and starts it again when it ends, after a pause that doubles with each
/// failure in a row (1 s to 30 s). One thread watches it; the loops never wait on it.
///
/// The helper's stdin is a pipe this process holds open and never writes: when this process ends,
/// however it ends, the helper reads end-of-file and exits, so no helper outlives its server. Its
/// stderr is this process's, so a Python traceback lands in the server's log.
public final class SpeechHelperProcess: Sendable {
    /// What the helper's life says: warnings (it ended, it could not start) and news (it is ready).
    public enum Report: Sendable {
        case warning(String)
        case ready(pid: Int32, models: String, seconds: Double)
    }

    public let status: SpeechHelperStatus
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

    public init(python: String, script: String, directory: String, modelArguments: [String], report: @escaping @Sendable (Report) -> Void) {
        self.report = report
        let socketPath = directory + "/helper.sock"
        self.directory = directory
        status = SpeechHelperStatus(socketPath: socketPath)
        self.python = python
        arguments = [python, script, "--socket", socketPath, "--exit-with-stdin"] + modelArguments
    }

    public func start() throws(SystemError) {
        try Thread.spawn(name: "parley-helper") { [self] in watch() }
    }

    /// Waits until the helper is ready, its first life has ended (it could not load: the callers'
    /// fallbacks serve until a later life is ready), or `seconds` have passed; true when ready.
    /// `parley serve` waits so that a server which says it listens also hears and speaks.
    public func waitUntilReady(seconds: Double) -> Bool {
        let deadline = MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)
        while status.readyGeneration == nil && state.withLock({ $0.livesEnded == 0 }) && MonotonicClock.nanoseconds() < deadline {
            usleep(10_000)
        }
        return status.readyGeneration != nil
    }

    /// Stops the helper for good (the server is draining).
    public func stop() {
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
}
