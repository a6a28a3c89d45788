import Glibc
import JSON
import Logging
import Loop
@testable import MCP
import Server
import Synchronization
import Testing
import TestSupport

/// The MCP client against servers that misbehave in ways a real MCP server does not: one that
/// accepts and never answers, one that is not there, an event stream that never ends, a tool
/// list far past the limit.
@Suite struct MCPClientTests {
    /// A fake MCP server at /mcp: `initialize` and notifications answered properly, `tools/list`
    /// by `list`, which writes what it likes on the stream.
    static func fake(list: @escaping @Sendable (JSON, HTTPResponseStream) -> Void) throws -> TestServer {
        // Room for all a test writes at once: the client, not the server's queue, is to stop it.
        try TestServer({ $0.loops = 1; $0.maxOutboundBytes = 16 << 20 }, routes: { routes in
            routes.stream("POST", "/mcp") { request, stream in
                let body = (try? JSON(parsing: String(decoding: request.body, as: UTF8.self))) ?? .null
                switch body["method"]?.string {
                case "initialize":
                    stream.start(.ok, headers: [("Content-Type", "application/json"), ("Mcp-Session-Id", "fake-session-1")])
                    stream.write(#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}"#)
                    stream.end()
                case "tools/list":
                    list(body, stream)
                default:
                    stream.start(HTTPStatus(code: 202, reason: "Accepted"))
                    stream.end()
                }
            }
        })
    }

    static func list(port: Int, settings: MCPClient.Settings) throws -> Result<[MCPTool], MCPError> {
        try MCPServerTests.run("http://127.0.0.1:\(port)/mcp", tag: "fake", settings: settings) { client, _, done in client.listTools(done: done) }
    }

    @Test func aServerThatAcceptsAndNeverAnswersIsCutAtTheListTimeout() throws {
        // A listening socket nobody accepts from: the kernel completes the handshake, and then nothing.
        let fd = try Sys.streamSocket(family: AF_INET, .blocking)
        defer { Sys.close(fd) }
        try Sys.listen(fd, on: .ipv4(127, 0, 0, 1, port: 0))
        var settings = MCPClient.Settings()
        settings.listTimeout = 0.5
        let started = MonotonicClock.nanoseconds()
        let result = try Self.list(port: try Sys.localAddress(fd).port, settings: settings)
        #expect(result == .failure(.timedOut(operation: "tools/list", seconds: 0.5)))
        #expect(MonotonicClock.nanoseconds() &- started < 5_000_000_000)
    }

    @Test func aServerThatIsNotThereIsUnreachable() throws {
        let port = try RedisServer.freePort()
        let result = try Self.list(port: port, settings: .init())
        guard case .failure(let error) = result, case .unreachable = error else { Issue.record("\(result)"); return }
        #expect(error.type == "protocol_error" && error.code == MCPError.connectionClosedCode)
    }

    @Test func anEventStreamThatNeverEndsIsCutAtItsDeadline() throws {
        let server = try Self.fake { _, stream in
            stream.start(.ok, headers: [("Content-Type", "text/event-stream")])
            stream.write("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n")
        }
        var settings = MCPClient.Settings()
        settings.listTimeout = 0.5
        #expect(try Self.list(port: server.port, settings: settings) == .failure(.timedOut(operation: "tools/list", seconds: 0.5)))
    }

    @Test func aFiftyMegabyteToolListIsRefusedEarlyNotBuffered() throws {
        // Written as the client reads it: at most 6 MiB ever leaves, as the client stops at its 4 MiB.
        let server = try Self.fake { _, stream in
            stream.start(.ok, headers: [("Content-Type", "text/event-stream")])
            stream.write(#"data: {"jsonrpc":"2.0","id":2,"result":{"tools":["#)
            let tool = Array(#"{"name":"t","inputSchema":{"type":"object"}},"#.utf8)
            let piece = [UInt8]((0..<(65536 / tool.count)).flatMap { _ in tool })
            for _ in 0..<(6 << 20) / piece.count { stream.write(piece) }
        }
        let result = try Self.list(port: server.port, settings: .init())
        #expect(result == .failure(.tooLarge(limit: 4 << 20)))
    }

    @Test(arguments: [true, false])
    func aListThatPagesForeverIsStopped(sameCursor: Bool) throws {
        let server = try Self.fake { request, stream in
            let id = request["id"]?.int ?? 0
            stream.start(.ok, headers: [("Content-Type", "application/json")])
            stream.write(#"{"jsonrpc":"2.0","id":\#(id),"result":{"tools":[],"nextCursor":"\#(sameCursor ? 0 : id)"}}"#)
            stream.end()
        }
        var settings = MCPClient.Settings()
        settings.maxPages = 5
        let result = try Self.list(port: server.port, settings: settings)
        #expect(result == .failure(.malformed(sameCursor ? "the server gave the same cursor twice" : "the server's list runs past 5 pages")))
    }

    @Test func operationsAfterCloseFailAtOnce() throws {
        let result = try MCPServerTests.run("http://127.0.0.1:9/mcp", tag: "closed") { (client, _, done: @escaping (Result<MCPToolOutput, MCPError>) -> Void) in
            client.close()
            client.call(name: "add", arguments: .object([]), done: done)
        }
        #expect(result == .failure(.closed))
    }

    /// The client's log lines when a server forgets the session and then lets a call time out:
    /// they name the server by scheme, host and port, and hold no token, header value, session id
    /// or the URL's query.
    @Test func logLinesHoldNoSecret() throws {
        let sessions = Mutex(0)
        let server = try TestServer({ $0.loops = 1 }, routes: { routes in
            routes.stream("POST", "/mcp") { request, stream in
                let body = (try? JSON(parsing: String(decoding: request.body, as: UTF8.self))) ?? .null
                let id = body["id"]?.int ?? 0
                let session = request.headers.first { $0.name.lowercased() == "mcp-session-id" }?.value
                switch body["method"]?.string {
                case "initialize":
                    let number = sessions.withLock { $0 += 1; return $0 }
                    stream.start(.ok, headers: [("Content-Type", "application/json"), ("Mcp-Session-Id", "session-secret-\(number)")])
                    stream.write(#"{"jsonrpc":"2.0","id":\#(id),"result":{"protocolVersion":"2025-06-18","capabilities":{}}}"#)
                    stream.end()
                case "tools/call" where session == "session-secret-1":
                    stream.start(HTTPStatus(code: 404, reason: "Not Found"))
                    stream.end()
                case "tools/call":
                    stream.start(.ok, headers: [("Content-Type", "text/event-stream")])
                default:
                    stream.start(HTTPStatus(code: 202, reason: "Accepted"))
                    stream.end()
                }
            }
        })
        let lines = LogLines()
        let log = Logger(label: "test") { _ in LineHandler(lines: lines) }
        let endpoint = try MCPEndpoint(url: "http://127.0.0.1:\(server.port)/mcp?key=query-secret-1", authorization: "token-secret-1",
                                       headers: [("X-Key", "header-secret-1")])
        var result: Result<MCPToolOutput, MCPError>?
        _ = try runLoop(seconds: 10) { loop, finish in
            let client = MCPClient(endpoint: endpoint, loop: loop, log: log)
            client.call(name: "slow", arguments: .object([]), timeout: 1) { outcome in
                result = outcome
                finish()
            }
        }
        #expect(result == .failure(.timedOut(operation: "tools/call", seconds: 1)))
        let logged = lines.all
        #expect(logged.count == 2, "\(logged)")
        #expect(logged.allSatisfy { $0.contains("http://127.0.0.1:\(server.port)") }, "\(logged)")
        for secret in ["token-secret", "header-secret", "session-secret", "query-secret"] {
            #expect(!logged.contains { $0.contains(secret) }, "\(secret) in \(logged)")
        }
    }
}

/// Log lines, each its message and metadata as text.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

struct LineHandler: LogHandler {
    let lines: LogLines
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel = Logger.Level.trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lines.append("\(event.message) \(metadata.merging(event.metadata ?? [:]) { $1 })")
    }
}
