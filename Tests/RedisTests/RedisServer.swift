import Glibc
import Loop
import TestSupport

/// A redis-server of the test's own on 127.0.0.1 and a port nothing else uses: no persistence, so
/// it leaves nothing behind; killed when the test lets go of it. Daemonized (with a pid file) so
/// that Subprocess starts it without holding the test's descriptors open in it.
final class RedisServer {
    let port: Int
    private let pidFile: String

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// Starts one on `port` (a free one by default) and waits until it accepts connections.
    init(port: Int? = nil) throws {
        try Self.installIfMissing()
        self.port = try port ?? Self.freePort()
        // Unique per instance: a server restarted on the same port must not share the old one's file.
        pidFile = "/tmp/parley-redis-test-\(getpid())-\(self.port)-\(UInt32.random(in: 0...UInt32.max)).pid"
        let status = try Subprocess.run(["redis-server", "--port", String(self.port), "--bind", "127.0.0.1", "--save", "",
                                         "--appendonly", "no", "--daemonize", "yes", "--pidfile", pidFile, "--logfile", ""], quiet: true)
        guard status == 0 else { throw Failure(description: "redis-server exited with \(status)") }
        guard Self.waitUntil(seconds: 5, { Self.accepts(self.port) }) else { throw Failure(description: "redis-server did not listen on \(self.port)") }
    }

    deinit { kill() }

    /// SIGKILL, as a crash would end it; returns once the port refuses connections.
    func kill() {
        guard let text = Sys.readFile(pidFile), let pid = Int32(String(decoding: text, as: UTF8.self).filter(\.isNumber)) else { return }
        _ = Glibc.kill(pid, SIGKILL)
        unlink(pidFile)
        _ = Self.waitUntil(seconds: 5) { !Self.accepts(self.port) }
    }

    /// The test machine is set up by scripts/install-deps.sh (make test runs it); a test run
    /// directly still finds redis-server by running it.
    private static func installIfMissing() throws {
        guard (try? Subprocess.run(["redis-server", "--version"], quiet: true)) != 0 else { return }
        let root = String(#filePath.split(separator: "/").dropLast(3).joined(separator: "/"))
        let status = try Subprocess.run(["/\(root)/scripts/install-deps.sh"])
        guard status == 0 else { throw Failure(description: "redis-server is missing and scripts/install-deps.sh failed (\(status))") }
    }

    /// A port the kernel just gave out and nothing holds.
    static func freePort() throws -> Int {
        let fd = try Sys.tcpSocket(family: AF_INET, .blocking)
        defer { Sys.close(fd) }
        try Sys.bind(fd, to: .ipv4(127, 0, 0, 1, port: 0))
        return try Sys.localAddress(fd).port
    }

    static func accepts(_ port: Int) -> Bool {
        guard let fd = try? Sys.tcpSocket(family: AF_INET, .blocking) else { return false }
        defer { Sys.close(fd) }
        return (try? Sys.connect(fd, to: .ipv4(127, 0, 0, 1, port: UInt16(port)))) != nil
    }

    static func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(seconds)
        while MonotonicClock.nanoseconds() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}

/// Runs a fresh event loop on this thread, as a server's loop thread runs one: `body` starts the
/// work and calls `finish` when it is done. False if `seconds` passed first.
func runLoop(seconds: Double = 15, _ body: (EventLoop, @escaping () -> Void) throws -> Void) throws -> Bool {
    let loop = try EventLoop(handle: LoopHandle(index: 0))
    var finished = false
    try body(loop) {
        finished = true
        loop.stop()
    }
    let timeout = loop.schedule(after: seconds) { loop.stop() }
    if !finished { loop.run() }
    timeout.cancel()
    return finished
}

/// Checks `condition` every 10 ms on the loop and calls `then` once it holds.
func poll(_ loop: EventLoop, until condition: @escaping () -> Bool, then: @escaping () -> Void) {
    if condition() { return then() }
    loop.schedule(after: 0.01) { poll(loop, until: condition, then: then) }
}

/// A series' value in Prometheus text (`name{labels}` exactly as rendered).
func metric(_ text: String, _ series: String) -> Int? {
    for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
        return Int(line.dropFirst(series.count + 1))
    }
    return nil
}
