import Glibc
import Loop

/// An HAProxy of the test's own in front of Parley nodes on 127.0.0.1, configured as deployed:
/// deploy/haproxy.cfg filled in by scripts/tools/haproxy-config.sh (front port and stats port free ones,
/// one server per node port), run in the foreground (`-db`) as a child; killed at deinit.
public final class HAProxyProcess {
    /// Where clients connect.
    public let port: Int
    /// HAProxy's own stats page and Prometheus metrics.
    public let statsPort: Int
    public let configFile: String
    /// Its log (HAProxy logs to stdout in the template).
    public let logFile: String
    private var pid: pid_t?

    public struct Failure: Error, CustomStringConvertible { public let description: String }

    public init(nodePorts: [Int]) throws {
        try Self.installIfMissing()
        port = try RedisServer.freePort()
        statsPort = try RedisServer.freePort()
        let base = "/tmp/parley-haproxy-test-\(getpid())-\(port)"
        configFile = base + ".cfg"
        logFile = base + ".log"
        let config = try Subprocess.capture(["env", "STATS_PORT=\(statsPort)", RedisServer.repositoryRoot + "/scripts/tools/haproxy-config.sh",
                                             String(port)] + nodePorts.map(String.init))
        guard config.status == 0 else { throw Failure(description: "haproxy-config.sh failed (\(config.status)): \(config.stderr)") }
        guard let file = fopen(configFile, "w") else { throw Failure(description: "cannot write \(configFile)") }
        fputs(config.stdout, file)
        fclose(file)
        let child = try Subprocess.start(["haproxy", "-f", configFile, "-db"], output: logFile)
        pid = child
        var status: Int32 = 0
        var exited = false
        guard RedisServer.waitUntil(seconds: 10, {
            if waitpid(child, &status, WNOHANG) == child { exited = true }
            return exited || RedisServer.accepts(port)
        }), !exited else {
            if exited { pid = nil } else { stop() }
            throw Failure(description: "haproxy did not listen on \(port): \(log())")
        }
    }

    deinit {
        stop()
        unlink(configFile)
        unlink(logFile)
    }

    /// Kills it and waits for it to end.
    public func stop() {
        guard let pid else { return }
        self.pid = nil
        Subprocess.stop(pid)
    }

    /// What it has logged so far (requests, server state changes), for a failing test's message.
    public func log() -> String {
        guard let bytes = Sys.readFile(logFile) else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func installIfMissing() throws {
        guard (try? Subprocess.run(["haproxy", "-v"], quiet: true)) != 0 else { return }
        let status = try Subprocess.run([RedisServer.repositoryRoot + "/scripts/tools/install-deps.sh", "haproxy"])
        guard status == 0 else { throw Failure(description: "haproxy is missing and scripts/tools/install-deps.sh haproxy failed (\(status))") }
    }
}
