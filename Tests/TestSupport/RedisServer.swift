import Glibc
import Loop

/// A redis-server of the test's own on 127.0.0.1 and a port nothing else uses: no persistence, so
/// it leaves nothing behind; killed when the test lets go of it. A child of the test process (not
/// daemonized), so the test holds its pid from the start: a daemonized redis-server listens before
/// it writes its pid file, and a kill in between found no pid and left the server running.
public final class RedisServer {
    public let port: Int
    private var pid: pid_t?

    public struct Failure: Error, CustomStringConvertible { public let description: String }

    /// Starts one on `port` (a free one by default) and waits until it accepts connections.
    public init(port: Int? = nil) throws {
        try Self.installIfMissing()
        self.port = try port ?? Self.freePort()
        let child = try Subprocess.start(["redis-server", "--port", String(self.port), "--bind", "127.0.0.1", "--save", "",
                                          "--appendonly", "no", "--daemonize", "no", "--logfile", ""], quiet: true)
        pid = child
        var exited = false
        guard Self.waitUntil(seconds: 5, { Self.accepts(self.port) || { exited = Self.exited(child); return exited }() }), !exited else {
            if exited { pid = nil } else { kill() }
            throw Failure(description: "redis-server did not listen on \(self.port)\(exited ? " (it exited: is the port taken?)" : "")")
        }
    }

    deinit { kill() }

    /// SIGKILL, as a crash would end it; returns once it has exited, so its port refuses connections.
    public func kill() {
        guard let pid else { return }
        self.pid = nil
        Subprocess.stop(pid)
    }

    /// SIGSTOP: Redis holds its connections but answers nothing, as one stuck on a slow disk does.
    public func pause() {
        if let pid { Glibc.kill(pid, SIGSTOP) }
    }

    /// SIGCONT: it answers again, everything it was sent meanwhile in order.
    public func carryOn() {
        if let pid { Glibc.kill(pid, SIGCONT) }
    }

    private static func exited(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        // Reaped here only if it is already gone (it could not listen); `stop` then finds no child.
        return waitpid(pid, &status, WNOHANG) == pid
    }

    /// The test machine is set up by scripts/tools/install-deps.sh (make test runs it); a test run
    /// directly still finds redis-server by running it.
    private static func installIfMissing() throws {
        guard (try? Subprocess.run(["redis-server", "--version"], quiet: true)) != 0 else { return }
        let status = try Subprocess.run([repositoryRoot + "/scripts/tools/install-deps.sh"])
        guard status == 0 else { throw Failure(description: "redis-server is missing and scripts/tools/install-deps.sh failed (\(status))") }
    }

    /// The checkout this file is in.
    static var repositoryRoot: String {
        "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
    }

    /// A port the kernel just gave out and nothing holds.
    public static func freePort() throws -> Int {
        let fd = try Sys.streamSocket(family: AF_INET, .blocking)
        defer { Sys.close(fd) }
        try Sys.bind(fd, to: .ipv4(127, 0, 0, 1, port: 0))
        return try Sys.localAddress(fd).port
    }

    public static func accepts(_ port: Int) -> Bool {
        guard let fd = try? Sys.streamSocket(family: AF_INET, .blocking) else { return false }
        defer { Sys.close(fd) }
        return (try? Sys.connect(fd, to: .ipv4(127, 0, 0, 1, port: UInt16(port)))) != nil
    }

    public static func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(seconds)
        while MonotonicClock.nanoseconds() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}
