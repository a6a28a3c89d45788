import Glibc
import Loop
import TestSupport

/// scripts/tests/mcp_test_server.py (PyPI `mcp`, pinned, in .venv-mcp) on 127.0.0.1 and a free
/// port, as a child of the test process: its variants on their paths (/json, /sse,
/// /stateless-json, /stateless-sse, /protected, /html), and every request it got as a line of its
/// events file. Killed when let go of; one the test run never lets go of (`shared`) exits by
/// itself when the test process is gone.
final class MCPTestServer {
    let port: Int
    let events: String
    private var pid: pid_t?

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// One server for every test that only talks to it: Python's start costs seconds on a busy
    /// machine, and the tests tell their requests apart by the `X-Test` header they send.
    nonisolated(unsafe) static let shared = Result { try MCPTestServer() }

    static let root = "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
    static let token = "test-token-5f2a9c77"

    /// Starts one on `port` (a free one by default), keeping the events in `events` (a new file by
    /// default), and waits until it accepts connections.
    init(port: Int? = nil, events: String? = nil) throws {
        let script = Self.root + "/scripts/tools/mcp-test-server.sh"
        // The venv first, apart: the first run installs `mcp` from PyPI, which takes far longer
        // than a start should be waited for.
        let installed = try Subprocess.run([script, "--install-only"])
        guard installed == 0 else { throw Failure(description: "\(script) --install-only failed (\(installed)): is PyPI reachable?") }
        self.port = try port ?? RedisServer.freePort()
        self.events = events ?? "/tmp/parley-mcp-events-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).txt"
        let child = try Subprocess.start([script, "--port", String(self.port), "--events", self.events, "--token", Self.token],
                                         output: self.events + ".log")
        pid = child
        guard RedisServer.waitUntil(seconds: 60, { RedisServer.accepts(self.port) }) else {
            kill()
            throw Failure(description: "the MCP test server did not listen on \(self.port) within 60 s (see \(self.events).log)")
        }
    }

    deinit { kill() }

    func kill() {
        guard let pid else { return }
        self.pid = nil
        Subprocess.stop(pid)
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// The events file's lines that carry `test` (the X-Test header's value), or all of them.
    func requests(_ test: String? = nil) -> [String] {
        guard let file = fopen(events, "r") else { return [] }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n <= 0 { break }
            bytes += buffer[..<n]
        }
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
        guard let test else { return lines }
        return lines.filter { $0.contains("x-test=\(test) ") }
    }

    /// Waits (up to `seconds`) until a line carrying `test` contains every one of `parts`.
    func waitFor(_ test: String?, _ parts: String..., seconds: Double = 10) -> Bool {
        RedisServer.waitUntil(seconds: seconds) {
            requests(test).contains { line in parts.allSatisfy { line.contains($0) } }
        }
    }
}
