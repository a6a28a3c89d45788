import JSON
import CLinux
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// A child copy of this program, started to hold a share of the connections: one process can hold
/// only as many sockets as its descriptor limit allows. It reads nothing from its stdin but waits
/// for end-of-file there, which is how the parent tells it to finish (and which also happens if the
/// parent dies). It reports on stdout, one JSON object per line.
final class WorkerProcess {
    let index: Int
    let pid: pid_t
    /// When it was started, for placing its own timings on the parent's clock.
    let spawnedAt: UInt64
    private var stdinFD: Int32
    private(set) var stdoutFD: Int32
    private var partialLine: [UInt8] = []
    /// The last report it sent.
    private(set) var latest: JSON?
    private(set) var exitStatus: Int32?

    struct SpawnFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// Starts `/proc/self/exe` with `arguments` (the subcommand and its options).
    init(index: Int, arguments: [String]) throws(SpawnFailure) {
        self.index = index
        var toChild: [Int32] = [-1, -1]
        var fromChild: [Int32] = [-1, -1]
        // Close-on-exec, so that no other worker inherits these ends; dup2 onto 0 and 1 clears it
        // for the child's own copies.
        // (pipe2 is not exported to Swift; the parent is single-threaded, so no exec can slip in
        // between pipe and fcntl.)
        guard pipe(&toChild) == 0 else { throw SpawnFailure(description: "pipe: \(ErrnoName.of(errno))") }
        guard pipe(&fromChild) == 0 else {
            toChild.forEach { _ = Glibc.close($0) }
            throw SpawnFailure(description: "pipe: \(ErrnoName.of(errno))")
        }
        for fd in toChild + fromChild { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)

        let argv: [UnsafeMutablePointer<CChar>?] = (["parley-load"] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = Self.environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, "/proc/self/exe", &actions, nil, argv, envp)
        _ = Glibc.close(toChild[0])
        _ = Glibc.close(fromChild[1])
        guard rc == 0 else {
            _ = Glibc.close(toChild[1])
            _ = Glibc.close(fromChild[0])
            throw SpawnFailure(description: "posix_spawn(/proc/self/exe): \(String(cString: strerror(rc)))")
        }
        self.pid = pid
        spawnedAt = MonotonicClock.nanoseconds()
        stdinFD = toChild[1]
        stdoutFD = fromChild[0]
        _ = fcntl(stdoutFD, F_SETFL, fcntl(stdoutFD, F_GETFL) | O_NONBLOCK)
    }

    /// This process's environment as it was at exec, passed on unchanged (nothing here changes it).
    /// Read from /proc because `environ` is a C global that Swift 6 will not let us touch.
    private static var environment: [String] {
        let fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { _ = Glibc.close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        return bytes.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    deinit {
        if stdinFD >= 0 { _ = Glibc.close(stdinFD) }
        if stdoutFD >= 0 { _ = Glibc.close(stdoutFD) }
    }

    /// The worker closed its stdout: it has finished, or died.
    var outputClosed: Bool { stdoutFD < 0 }

    /// Reads what the worker has written and returns the whole lines among it, parsed.
    /// A line that is not JSON is passed through to stderr: it is the worker speaking to a person.
    func readReports() -> [JSON] {
        guard stdoutFD >= 0 else { return [] }
        var reports: [JSON] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(stdoutFD, $0.baseAddress, $0.count) }
            if n > 0 {
                partialLine += chunk[0..<n]
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) {
                _ = Glibc.close(stdoutFD)
                stdoutFD = -1
            }
            break
        }
        while let newline = partialLine.firstIndex(of: 0x0A) {
            let line = String(decoding: partialLine[..<newline], as: UTF8.self)
            partialLine.removeFirst(newline + 1)
            if let report = try? JSON(parsing: line) {
                reports.append(report)
                latest = report
            } else if !line.isEmpty {
                Console.error("worker \(index): \(line)\n")
            }
        }
        return reports
    }

    /// Writes one line to the worker's stdin (`turns` says when the turns begin this way). A line
    /// is far below the pipe's capacity, so the write does not block; a worker that has gone
    /// gives EPIPE, which is ignored: its missing reports say the rest.
    func send(line: String) {
        guard stdinFD >= 0 else { return }
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(stdinFD, $0.baseAddress, $0.count) }
            if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
        }
    }

    /// Asks the worker to finish: it sees end-of-file on its stdin.
    func requestStop() {
        guard stdinFD >= 0 else { return }
        _ = Glibc.close(stdinFD)
        stdinFD = -1
    }

    func terminate(_ signal: Int32 = SIGTERM) {
        guard exitStatus == nil else { return }
        kill(pid, signal)
    }

    /// Reaps the worker if it has exited; true once it has.
    @discardableResult
    func reap() -> Bool {
        guard exitStatus == nil else { return true }
        var status: Int32 = 0
        let rc = waitpid(pid, &status, WNOHANG)
        guard rc == pid else { return false }
        exitStatus = status
        return true
    }

    /// "exited with status 1", "killed by signal 9".
    var exitDescription: String {
        guard let status = exitStatus else { return "still running" }
        let signal = status & 0x7F
        if signal == 0 { return "exited with status \((status >> 8) & 0xFF)" }
        return "killed by signal \(signal)"
    }

    var exitedCleanly: Bool { exitStatus == 0 }
}
