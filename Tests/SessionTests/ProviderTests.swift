import Server
import Session
import Testing
import TestSupport

/// Each provider against `parley mock-llm`'s routes, over real sockets: a `/run` route calls the
/// model on its loop and writes every event it reports as a line.
@Suite struct ProviderTests {
    enum Kind: String, CaseIterable { case openai, anthropic }

    func server() throws -> TestServer {
        try TestServer({ $0.loops = 1 }, routes: { routes in
            MockLLMServer.install(on: &routes, options: MockLLMOptions())
            routes.stream("GET", "/run") { request, stream in
                let port = request.queryValue("port").flatMap { Int($0) } ?? 0
                let base = UpstreamURL("http://127.0.0.1:\(port)/v1")!
                var timeouts = HTTPClientRequest.Timeouts()
                timeouts.idle = 0.5
                let model: any LanguageModel = request.queryValue("kind") == "anthropic"
                    ? AnthropicModel(baseURL: base, model: "claude-mock", apiKey: "k", timeouts: timeouts)
                    : OpenAIChatModel(baseURL: base, model: "gpt-mock", apiKey: "k", timeouts: timeouts)
                stream.start()
                let messages = [ChatMessage(role: .system, text: "be brief"), ChatMessage(role: .user, text: "what is the weather")]
                let call = model.stream(ModelRequest(messages: messages), on: stream.loop) { event in
                    switch event {
                    case .delta(let text): stream.write("delta[\(text)]\n")
                    case .finished(let usage): stream.write("finished \(usage.map { "\($0.inputTokens)/\($0.outputTokens)" } ?? "-")\n"); stream.end()
                    case .failed(let error): stream.write("failed \(error.code): \(error.message)\n"); stream.end()
                    }
                }
                stream.onClose = { call.cancel() }
            }
        })
    }

    /// Runs a model call with an injected fault (passed to the mock as a header via the query).
    func run(_ kind: Kind, fault: MockFault = .none, on server: TestServer) throws -> [String] {
        let client = try server.client()
        // The mock reads X-Mock-* headers; the /run route cannot set them, so faults go through a
        // second mock whose default is the fault.
        let target = fault == .none ? server : try TestServer({ $0.loops = 1 }, routes: { routes in
            var options = MockLLMOptions()
            options.fault = fault
            options.replyTokens = 6
            MockLLMServer.install(on: &routes, options: options)
        })
        try client.send("GET /run?kind=\(kind.rawValue)&port=\(target.port) HTTP/1.1\r\nHost: a\r\n\r\n")
        let lines = try client.readChunkedResponse().chunks.joined().split(separator: "\n").map(String.init)
        withExtendedLifetime(target) {}
        return lines
    }

    @Test(arguments: Kind.allCases)
    func streamsDeltasThenFinishesWithUsage(kind: Kind) throws {
        let server = try server()
        let lines = try run(kind, on: server)
        let text = lines.filter { $0.hasPrefix("delta[") }.map { $0.dropFirst(6).dropLast() }.joined()
        #expect(text.hasPrefix("You said: what is the weather"))
        #expect(lines.filter { $0.hasPrefix("delta[") }.count == 20)
        #expect(lines.last?.hasPrefix("finished ") == true)
        #expect(lines.last != "finished -", "usage is reported")
    }

    @Test(arguments: Kind.allCases)
    func serverErrorBecomesAFailureQuotingTheUpstream(kind: Kind) throws {
        let lines = try run(kind, fault: .serverError, on: try server())
        #expect(lines == ["failed upstream_error: the language model upstream answered HTTP 500: injected fault: internal error"])
    }

    @Test(arguments: Kind.allCases)
    func rateLimitIsReportedAsSuch(kind: Kind) throws {
        let lines = try run(kind, fault: .rateLimited, on: try server())
        #expect(lines.count == 1 && lines[0].hasPrefix("failed rate_limited:"))
    }

    @Test(arguments: Kind.allCases)
    func droppedStreamFailsAfterItsDeltas(kind: Kind) throws {
        let lines = try run(kind, fault: .drop, on: try server())
        #expect(lines.filter { $0.hasPrefix("delta[") }.count == 3)
        #expect(lines.last?.hasPrefix("failed upstream_unavailable:") == true, "\(lines)")
    }

    @Test(arguments: Kind.allCases)
    func stalledStreamHitsTheIdleTimeout(kind: Kind) throws {
        let lines = try run(kind, fault: .stall, on: try server())
        #expect(lines.filter { $0.hasPrefix("delta[") }.count == 1)
        #expect(lines.last?.hasPrefix("failed upstream_timeout:") == true)
    }

    @Test func unreachableUpstreamFailsCleanly() throws {
        let server = try server()
        let client = try server.client()
        try client.send("GET /run?kind=openai&port=1 HTTP/1.1\r\nHost: a\r\n\r\n")
        let lines = try client.readChunkedResponse().chunks.joined()
        #expect(lines.hasPrefix("failed upstream_unavailable:"))
    }
}
