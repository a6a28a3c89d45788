import Glibc
import JSON
import Loop
@testable import MCP
import Testing
import TestSupport

/// The MCP client against a real MCP server (PyPI `mcp`'s `MCPServer`, scripts/tests/mcp_test_server.py):
/// JSON and event-stream answers, with and without sessions; listing, calling, each kind of error,
/// time-outs with the cancellation sent, a server that forgets the session, answers too large.
@Suite struct MCPServerTests {
    enum Variant: String, CaseIterable {
        case json = "/json", sse = "/sse", statelessJSON = "/stateless-json", statelessSSE = "/stateless-sse"
        var stateful: Bool { self == .json || self == .sse }
    }

    func server() throws -> MCPTestServer { try MCPTestServer.shared.get() }

    /// A name for this test's requests in the server's events (its `X-Test` header).
    static func tag() -> String { "t\(UInt32.random(in: 0...UInt32.max))" }

    /// Runs `body` with a client of `url` on a fresh loop, until it hands back a value.
    static func run<T>(_ url: String, tag: String, authorization: String? = nil, headers: [(String, String)] = [],
                       settings: MCPClient.Settings = .init(), seconds: Double = 30,
                       _ body: (MCPClient, EventLoop, @escaping (T) -> Void) -> Void) throws -> T {
        let endpoint = try MCPEndpoint(url: url, authorization: authorization, headers: [("X-Test", tag)] + headers)
        var out: T?
        let finished = try runLoop(seconds: seconds) { loop, finish in
            let client = MCPClient(endpoint: endpoint, settings: settings, loop: loop)
            body(client, loop) { value in
                out = value
                finish()
            }
        }
        guard finished, let out else { throw MCPTestServer.Failure(description: "the client did not finish within \(seconds) s") }
        return out
    }

    static func list(_ url: String, tag: String, authorization: String? = nil, settings: MCPClient.Settings = .init()) throws -> Result<[MCPTool], MCPError> {
        try run(url, tag: tag, authorization: authorization, settings: settings) { client, _, done in client.listTools(done: done) }
    }

    static func call(_ url: String, tag: String, _ name: String, _ arguments: JSON = .object([]), authorization: String? = nil,
                     headers: [(String, String)] = [], timeout: Double? = nil) throws -> Result<MCPToolOutput, MCPError> {
        try run(url, tag: tag, authorization: authorization, headers: headers) { client, _, done in
            client.call(name: name, arguments: arguments, timeout: timeout, done: done)
        }
    }

    @Test(arguments: Variant.allCases)
    func listsEveryToolAcrossThePages(variant: Variant) throws {
        let server = try server()
        let tag = Self.tag()
        let tools = try Self.list(server.url(variant.rawValue), tag: tag).get()
        #expect(tools.map(\.name) == ["add", "slow", "fail", "secret", "huge"])
        #expect(tools[0].description == "Adds two numbers.")
        #expect(tools[0].inputSchema["properties"]?["a"]?["type"]?.string == "number")
        let lists = server.requests(tag).filter { $0.contains(" tools/list ") }
        #expect(lists.count == 3, "five tools, two a page: \(lists)")
    }

    @Test(arguments: Variant.allCases)
    func sendsTheSessionAndTheRevisionAfterInitialising(variant: Variant) throws {
        let server = try server()
        let tag = Self.tag()
        _ = try Self.call(server.url(variant.rawValue), tag: tag, "add", .object([("a", .int(1)), ("b", .int(2))])).get()
        let lines = server.requests(tag)
        let session = variant.stateful ? "session=yes" : "session=no"
        #expect(lines.count == 3, "\(lines)")
        #expect(lines.first?.contains("POST \(variant.rawValue) initialize session=no version=- ") == true, "\(lines)")
        #expect(lines.dropFirst().first?.contains("notifications/initialized \(session) version=2025-11-25") == true, "\(lines)")
        #expect(lines.last?.contains("tools/call \(session) version=2025-11-25") == true, "\(lines)")
    }

    @Test(arguments: Variant.allCases)
    func callsEachTool(variant: Variant) throws {
        let server = try server()
        let url = server.url(variant.rawValue)
        let tag = Self.tag()
        #expect(try Self.call(url, tag: tag, "add", .object([("a", .int(1)), ("b", .int(2))])).map(\.text) == .success("3.0"))
        #expect(try Self.call(url, tag: tag, "slow", .object([("seconds", .number(0.01))])).map(\.text) == .success("slept 0.01 s"))
        #expect(try Self.call(url, tag: tag, "fail") == .failure(.toolFailed("Error executing tool fail: the tool failed on purpose")))
        #expect(try Self.call(url, tag: tag, "secret") == .failure(.toolFailed("Error executing tool secret: no valid bearer token")))
        #expect(try Self.call(url, tag: tag, "secret", authorization: MCPTestServer.token).map(\.text) == .success("the secret is 42"))
    }

    @Test func anUnknownToolIsAProtocolError() throws {
        let result = try Self.call(try server().url("/json"), tag: Self.tag(), "nope")
        guard case .failure(let error) = result else { Issue.record("\(result)"); return }
        // The SDK answers an unknown tool with a JSON-RPC error, or a failed result: either is a clear failure.
        #expect(error.type == "protocol_error" || error.type == "tool_execution_error", "\(error)")
        #expect(error.message.contains("nope"), "\(error)")
    }

    @Test func aServerBehindABearerTokenIsAnHTTPErrorWithoutIt() throws {
        let url = try server().url("/protected")
        #expect(try Self.list(url, tag: Self.tag()) == .failure(.status(401, "a bearer token is required")))
        #expect(try Self.list(url, tag: Self.tag(), authorization: MCPTestServer.token).map(\.count) == .success(5))
    }

    @Test func theSecretsAServerQuotesBackAreScrubbed() throws {
        let server = try server()
        let secret = "hdr-secret-9a8b7c6d"
        let result = try Self.call(server.url("/json"), tag: Self.tag(), "fail", .object([("echo", .bool(true))]),
                                   authorization: MCPTestServer.token, headers: [("X-Secret", secret)])
        guard case .failure(let error) = result else { Issue.record("\(result)"); return }
        let shown = "\(error) \(error.json)"
        #expect(shown.contains("the tool failed on purpose (you sent [redacted], x-secret [redacted], session [redacted])"), "\(shown)")
        #expect(!shown.contains(MCPTestServer.token) && !shown.contains(secret))
    }

    @Test(arguments: [Variant.json, .sse])
    func aCallThatTimesOutIsCancelledAtTheServer(variant: Variant) throws {
        let server = try server()
        let tag = Self.tag()
        // Listed first, so the session is open and the half second is the call's alone. The loop
        // runs on after the failure until the server has the cancellation, which goes out after it.
        let result = try Self.run(server.url(variant.rawValue), tag: tag) { (client, loop, done: @escaping (Result<MCPToolOutput, MCPError>) -> Void) in
            client.listTools { _ in
                client.call(name: "slow", arguments: .object([("seconds", .int(30))]), timeout: 0.5) { result in
                    poll(loop, until: { server.requests(tag).contains { $0.contains("notifications/cancelled") } }) { done(result) }
                }
            }
        }
        #expect(result == .failure(.timedOut(operation: "tools/call", seconds: 0.5)))
        #expect(server.waitFor(tag, "notifications/cancelled", "session=yes", "request=5"), "\(server.requests(tag))")
        #expect(server.waitFor(tag, "tool slow cancelled"), "the server stopped the tool: \(server.requests(tag))")
    }

    @Test func aCallTheCallerCancelsIsCancelledAtTheServerAndNeverAnswers() throws {
        let server = try server()
        let tag = Self.tag()
        let answered = try Self.run(server.url("/json"), tag: tag) { (client, loop, done: @escaping (Bool) -> Void) in
            var answered = false
            let call = client.call(name: "slow", arguments: .object([("seconds", .int(30))])) { _ in answered = true }
            poll(loop, until: { server.requests(tag).contains { $0.contains("tools/call") } }) {
                call.cancel()
                loop.schedule(after: 0.3) { done(answered) }
            }
        }
        #expect(!answered)
        #expect(server.waitFor(tag, "notifications/cancelled", "request=2"), "\(server.requests(tag))")
        #expect(server.waitFor(tag, "tool slow cancelled"))
    }

    @Test(arguments: [Variant.json, .sse])
    func anAnswerPastTheLimitIsRefusedAndTheClientGoesOn(variant: Variant) throws {
        let server = try server()
        let results = try Self.run(server.url(variant.rawValue), tag: Self.tag()) { (client, _, done: @escaping ([Result<MCPToolOutput, MCPError>]) -> Void) in
            client.call(name: "huge", arguments: .object([("megabytes", .int(10))])) { first in
                client.call(name: "add", arguments: .object([("a", .int(2)), ("b", .int(2))])) { second in done([first, second]) }
            }
        }
        #expect(results[0] == .failure(.tooLarge(limit: 4 << 20)))
        #expect(results[1].map(\.text) == .success("4.0"))
    }

    @Test func anHTMLPageIsNoMCPServer() throws {
        let result = try Self.list(try server().url("/html"), tag: Self.tag())
        #expect(result == .failure(.notMCP("the answer is text/html, not JSON or an event stream")))
    }

    @Test func closingEndsTheSessionWithADelete() throws {
        let server = try server()
        let tag = Self.tag()
        _ = try Self.run(server.url("/json"), tag: tag) { (client, _, done: @escaping (Bool) -> Void) in
            client.listTools { _ in
                client.close()
                client.listTools { after in done(after == .failure(.closed)) }
            }
        }
        #expect(server.waitFor(tag, "DELETE /json", "session=yes"), "\(server.requests(tag))")
    }

    /// The server restarts between two calls and so forgets the session: the client's next request
    /// gets a 404, and it initialises again and sends the request again, once.
    @Test func aServerThatForgetsTheSessionIsInitialisedAgain() throws {
        let first = try MCPTestServer()
        let port = first.port
        let tag = Self.tag()
        let result = try Self.run(first.url("/json"), tag: tag, seconds: 90) { (client, loop, done: @escaping (Result<MCPToolOutput, MCPError>) -> Void) in
            client.listTools { _ in
                first.kill()
                var second: MCPTestServer?
                // Started off the loop's thread would need a lock; a start here blocks the loop,
                // which has nothing else to do meanwhile.
                second = try? MCPTestServer(port: port, events: first.events)
                client.call(name: "add", arguments: .object([("a", .int(1)), ("b", .int(1))])) { result in
                    withExtendedLifetime(second) { done(result) }
                }
            }
        }
        #expect(result.map(\.text) == .success("2.0"))
        let lines = first.requests(tag).map { $0.split(separator: " ").prefix(4).joined(separator: " ") }
        #expect(lines.suffix(4) == ["POST /json tools/call session=yes", "POST /json initialize session=no",
                                    "POST /json notifications/initialized session=yes", "POST /json tools/call session=yes"], "\(lines)")
    }
}
