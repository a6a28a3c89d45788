@testable import Models
import Server
import Testing
import TestSupport
import MockLLM
import Upstream

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
                let model: any LanguageModel = switch request.queryValue("kind") {
                case "anthropic": AnthropicModel(baseURL: base, model: "claude-mock", apiKey: "k", timeouts: timeouts)
                case "builtin": BuiltinModel(wordInterval: 0.001)
                default: OpenAIChatModel(baseURL: base, model: "gpt-mock", apiKey: "k", timeouts: timeouts)
                }
                stream.start()
                let messages = [ChatMessage(role: .system, text: "be brief"), ChatMessage(role: .user, text: "what is the weather")]
                let call = model.stream(ModelRequest(messages: messages), on: stream.loop) { event in
                    switch event {
                    case .delta(let text): stream.write("delta[\(text)]\n")
                    case .toolCallStarted(let index, let id, let name): stream.write("call[\(index) \(id) \(name)]\n")
                    case .toolCallArgumentsDelta(let index, let piece): stream.write("arguments[\(index) \(piece)]\n")
                    case .finished(let usage, let reason):
                        stream.write("finished \(usage.map { "\($0.inputTokens)/\($0.outputTokens)" } ?? "-")\(reason == .length ? " length" : "")\n")
                        stream.end()
                    case .failed(let error): stream.write("failed \(error.code): \(error.message)\n"); stream.end()
                    case .retrying: break
                    }
                }
                stream.onClose = { call.cancel() }
            }
        })
    }

    /// Runs a model call with an injected fault (passed to the mock as a header via the query), or
    /// against another `upstream`.
    func run(_ kind: Kind, fault: MockFault = .none, upstream: TestServer? = nil, on server: TestServer) throws -> [String] {
        let client = try server.client()
        // The mock reads X-Mock-* headers; the /run route cannot set them, so faults go through a
        // second mock whose default is the fault.
        let target = try upstream ?? (fault == .none ? server : TestServer({ $0.loops = 1 }, routes: { routes in
            var options = MockLLMOptions()
            options.fault = fault
            options.replyTokens = 6
            MockLLMServer.install(on: &routes, options: options)
        }))
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
        #expect(lines.last?.hasSuffix("length") == false, "a whole reply is no length stop")
    }

    /// An upstream that answers every request with these server-sent events.
    static func canned(_ path: String, _ events: String) throws -> TestServer {
        try TestServer({ $0.loops = 1 }, routes: { routes in
            routes.stream("POST", path) { _, stream in
                stream.start(.ok, headers: [("Content-Type", "text/event-stream")])
                stream.write(events)
                stream.end()
            }
        })
    }

    @Test func openAIFinishReasonLengthIsALengthStop() throws {
        let upstream = try Self.canned("/v1/chat/completions", """
            data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Once"},"finish_reason":null}]}

            data: {"choices":[{"index":0,"delta":{"content":" upon"},"finish_reason":null}]}

            data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}

            data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}

            data: [DONE]


            """)
        #expect(try run(.openai, upstream: upstream, on: try server()) == ["delta[Once]", "delta[ upon]", "finished 9/2 length"])
    }

    @Test func anthropicMaxTokensStopReasonIsALengthStop() throws {
        let upstream = try Self.canned("/v1/messages", """
            event: message_start
            data: {"type":"message_start","message":{"usage":{"input_tokens":9,"output_tokens":0}}}

            event: content_block_delta
            data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Once"}}

            event: content_block_delta
            data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" upon"}}

            event: message_delta
            data: {"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":2}}

            event: message_stop
            data: {"type":"message_stop"}


            """)
        #expect(try run(.anthropic, upstream: upstream, on: try server()) == ["delta[Once]", "delta[ upon]", "finished 9/2 length"])
    }

    @Test func builtinModelLeavesUsageToTheSession() throws {
        let server = try server()
        let client = try server.client()
        try client.send("GET /run?kind=builtin&port=1 HTTP/1.1\r\nHost: a\r\n\r\n")
        let lines = try client.readChunkedResponse().chunks.joined().split(separator: "\n").map(String.init)
        #expect(lines.count > 2)
        #expect(lines.last == "finished -")
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
