import Access
import Codec
import JSON
@testable import Models
import Server
import Session
import Testing
import TestSupport
import Loop
import Metrics
import MockLLM
import Upstream

/// Whole sessions over real sockets: the handshake, the engine, a model, events back.
@Suite struct SessionEndToEndTests {
    /// A server with the session endpoints over `model`, and mock-llm routes for upstream tests.
    func server(model: (Int) -> any LanguageModel = { _ in BuiltinModel(wordInterval: 0.001) }, keys: [String]? = nil, origins: [String]? = nil) throws -> TestServer {
        // The model may need the server's own port (mock-llm on the same server): built lazily.
        let box = ModelBox()
        let server = try TestServer({ $0.loops = 2; $0.allowedOrigins = origins }, routes: { routes in
            MockLLMServer.install(on: &routes, options: MockLLMOptions())
            RealtimeEndpoint(model: box, modelName: "test-model", access: Access(keys: keys.map(APIKeys.init))).install(on: &routes)
        })
        box.set(model(server.port))
        return server
    }

    func connect(_ server: TestServer, path: String = "/v1/realtime", headers: String = "") throws -> TestClient {
        let client = try server.client()
        #expect(try client.upgrade(path: path, extraHeaders: headers).status == 101)
        return client
    }

    func readEvent(_ client: TestClient) throws -> JSON { try client.readEvent() }

    /// Reads events up to and including the first of type `last`.
    func readUntil(_ last: String, _ client: TestClient) throws -> [JSON] { try client.readEvents(until: last).events }

    func errorMessage(_ event: JSON) -> String {
        event["error"]?["message"]?.string ?? ""
    }

    func textTurn(_ text: String) -> String {
        #"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"\#(text)"}]}}"#
    }

    @Test func textTurnStreamsDeltasAndCompletes() throws {
        let server = try server()
        let client = try connect(server)
        #expect(try readEvent(client)["type"]?.string == "session.created")
        try client.send(TestClient.frame(0x1, Array(textTurn("what is 12 times 7").utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        let events = try readUntil("response.done", client)
        let types = events.map { $0["type"]?.string ?? "?" }
        #expect(types.prefix(2) == ["conversation.item.added", "conversation.item.done"], "GA names the new item added, then done")
        #expect(types.contains("response.created"))
        let deltas = events.filter { $0["type"]?.string == "response.output_text.delta" }.compactMap { $0["delta"]?.string }
        #expect(deltas.count > 1, "the reply streams in pieces")
        #expect(deltas.joined().contains("84"))
        let done = events.last!
        #expect(done["response"]?["status"]?.string == "completed")
        #expect((done["response"]?["usage"]?["output_tokens"]?.int ?? 0) > 0)
    }

    @Test func theBuiltinAgentsUsageIsTheSessionsEstimate() throws {
        let server = try server()
        let client = try connect(server)
        _ = try readEvent(client)
        try client.send(TestClient.frame(0x1, Array(textTurn("what is 12 times 7").utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        let usage = try readUntil("response.done", client).last?["response"]?["usage"]
        // Input: ⌈18 / 4⌉ + 4 of framing; output: "12 times 7 is 84.", ⌈17 / 4⌉. As a cancelled
        // response would count them.
        #expect(usage?["input_tokens"]?.int == 9)
        #expect(usage?["output_tokens"]?.int == 5)
    }

    @Test func anUpstreamThatStopsAtItsTokenLimitEndsTheResponseIncomplete() throws {
        let upstream = try TestServer({ $0.loops = 1 }, routes: { routes in
            routes.stream("POST", "/v1/chat/completions") { _, stream in
                stream.start(.ok, headers: [("Content-Type", "text/event-stream")])
                stream.write(#"data: {"choices":[{"index":0,"delta":{"content":"Once upon"},"finish_reason":null}]}"# + "\n\n")
                stream.write(#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"# + "\n\ndata: [DONE]\n\n")
                stream.end()
            }
        })
        let server = try server(model: { _ in OpenAIChatModel(baseURL: UpstreamURL("http://127.0.0.1:\(upstream.port)/v1")!, model: "m", apiKey: nil) })
        let client = try connect(server)
        _ = try readEvent(client)
        try client.send(TestClient.frame(0x1, Array(textTurn("tell me a story").utf8)))
        // No limit of Parley's own: the upstream's (for Anthropic, its required default) stops it.
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        let response = try readUntil("response.done", client).last?["response"]
        #expect(response?["status"]?.string == "incomplete")
        #expect(response?["status_details"]?["reason"]?.string == "max_output_tokens")
        #expect(response?["output"]?.array?.first?["content"]?.array?.first?["text"]?.string == "Once upon")
        withExtendedLifetime(upstream) {}
    }

    @Test func betaClientsGetTheBetaEventNames() throws {
        let server = try server()
        let client = try connect(server, headers: "OpenAI-Beta: realtime=v1\r\n")
        _ = try readEvent(client)
        try client.send(TestClient.frame(0x1, Array(textTurn("hello").utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        let types = try readUntil("response.done", client).map { $0["type"]?.string ?? "?" }
        #expect(types.contains("response.text.delta") && !types.contains("response.output_text.delta"))
    }

    @Test func openAICompatibleUpstreamStreamsThroughAndFaultsBecomeFailedResponses() throws {
        let server = try server(model: { port in OpenAIChatModel(baseURL: UpstreamURL("http://127.0.0.1:\(port)/v1")!, model: "m", apiKey: nil) })
        let client = try connect(server)
        _ = try readEvent(client)
        try client.send(TestClient.frame(0x1, Array(textTurn("tell me a story").utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        let events = try readUntil("response.done", client)
        let text = events.filter { $0["type"]?.string == "response.output_text.delta" }.compactMap { $0["delta"]?.string }.joined()
        #expect(text.hasPrefix("You said: tell me a story"))
        #expect(events.last?["response"]?["status"]?.string == "completed")
        // The latencies of this turn are in /metrics (the counters are process-wide, so only
        // presence and movement are asserted).
        let metrics = server.server.renderMetrics()
        for series in ["parley_sessions_open ", "parley_session_responses_total{status=\"completed\"}",
                       "parley_server_added_latency_seconds_count ", "parley_upstream_first_token_seconds_bucket{le=\"+Inf\"}"] {
            #expect(metrics.contains(series), "missing \(series)")
        }
        #expect((server.metric("parley_server_added_latency_seconds_count") ?? 0) >= 20)
        #expect((server.metric("parley_accounted_bytes_per_connection") ?? 0) > 0)
    }

    @Test func aKeyTheUpstreamQuotesBackNeverReachesTheClient() throws {
        // An upstream that refuses the key and quotes it, as OpenAI's 401 does.
        let upstream = try TestServer({ $0.loops = 1 }, routes: { routes in
            routes.post("/v1/chat/completions") { _ in
                HTTPResponse(status: .unauthorized, contentType: "application/json",
                             body: #"{"error":{"message":"Incorrect API key provided: sk-proj-abcd1234SECRETKEY. Find your key at the dashboard."}}"#)
            }
        })
        let server = try server(model: { _ in
            OpenAIChatModel(baseURL: UpstreamURL("http://127.0.0.1:\(upstream.port)/v1")!, model: "m", apiKey: "sk-proj-abcd1234SECRETKEY")
        })
        let client = try connect(server)
        _ = try readEvent(client)
        try client.send(TestClient.frame(0x1, Array(textTurn("hi").utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        let events = try readUntil("response.done", client)
        let text = events.map(\.description).joined()
        // The key was registered when the model was made, so it is scrubbed whole (Secrets).
        #expect(text.contains("Incorrect API key provided: [redacted]"), "\(text)")
        #expect(!text.contains("SECRETKEY") && !text.contains("abcd1234"))
        withExtendedLifetime(upstream) {}
    }

    @Test func failingUpstreamGivesAnErrorAndAFailedResponseAndTheSessionGoesOn() throws {
        let server = try server(model: { port in
            OpenAIChatModel(baseURL: UpstreamURL("http://127.0.0.1:\(port)/v1")!, model: "m", apiKey: nil)
        })
        // A second mock whose every answer is a 500.
        let failing = try TestServer({ $0.loops = 1 }, routes: { routes in
            var options = MockLLMOptions()
            options.fault = .serverError
            MockLLMServer.install(on: &routes, options: options)
        })
        let broken = try self.server(model: { _ in OpenAIChatModel(baseURL: UpstreamURL("http://127.0.0.1:\(failing.port)/v1")!, model: "m", apiKey: nil) })
        let client = try connect(broken)
        _ = try readEvent(client)
        try client.send(TestClient.frame(0x1, Array(textTurn("hi").utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        let events = try readUntil("response.done", client)
        #expect(events.contains { $0["type"]?.string == "error" && ($0["error"]?["message"]?.string ?? "").contains("HTTP 500") })
        #expect(events.last?["response"]?["status"]?.string == "failed")
        // Still usable: a malformed event gets an error naming the problem, the socket stays open.
        try client.send(TestClient.frame(0x1, Array("{not json".utf8)))
        let error = try readEvent(client)
        #expect(error["type"]?.string == "error" && error["error"]?["code"]?.string == "invalid_json")
        withExtendedLifetime((server, failing)) {}
    }

    @Test func responseCancelStopsTheStreamMidway() throws {
        let server = try server(model: { port in OpenAIChatModel(baseURL: UpstreamURL("http://127.0.0.1:\(port)/v1")!, model: "m", apiKey: nil) })
        let client = try connect(server)
        _ = try readEvent(client)
        try client.send(TestClient.frame(0x1, Array(textTurn("go on").utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        _ = try readUntil("response.output_text.delta", client)
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.cancel"}"#.utf8)))
        let done = try readUntil("response.done", client).last!
        #expect(done["response"]?["status"]?.string == "cancelled")
    }

    @Test func upstreamConnectionsAreReusedAcrossTurns() throws {
        // One server hosts both the session endpoint and the mock upstream, on one loop, so its
        // accepted connections are this client's plus the upstream ones.
        let box = ModelBox()
        let server = try TestServer({ $0.loops = 1 }, routes: { routes in
            MockLLMServer.install(on: &routes, options: MockLLMOptions())
            RealtimeEndpoint(model: box, modelName: "m").install(on: &routes)
        })
        box.set(OpenAIChatModel(baseURL: UpstreamURL("http://127.0.0.1:\(server.port)/v1")!, model: "m", apiKey: nil))
        let client = try connect(server)
        _ = try readEvent(client)
        for turn in 1...3 {
            try client.send(TestClient.frame(0x1, Array(textTurn("turn \(turn)").utf8)))
            try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
            #expect(try readUntil("response.done", client).last?["response"]?["status"]?.string == "completed")
        }
        #expect(server.metric("parley_connections_accepted_total") == 2, "one client connection and one upstream connection")
    }

    @Test func speakingDuringAReplyCancelsItUpstream() throws {
        // A slow upstream: 400 words at 40 a second, so the reply is still streaming when speech comes.
        let slow = try TestServer({ $0.loops = 1 }, routes: { routes in
            var options = MockLLMOptions()
            options.replyTokens = 400
            options.tokensPerSecond = 40
            MockLLMServer.install(on: &routes, options: options)
        })
        let server = try server(model: { _ in OpenAIChatModel(baseURL: UpstreamURL("http://127.0.0.1:\(slow.port)/v1")!, model: "m", apiKey: nil) })
        let client = try connect(server, path: "/ws")
        _ = try readEvent(client)
        try client.send(TestClient.frame(0x1, Array(textTurn("talk for a while").utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        _ = try readUntil("response.output_text.delta", client)
        let wav = try WAVFile.read(path: try SpeechVectors.wav("Stop please"))
        let speech = try Resampler(from: wav.sampleRate, to: 48000).process(wav.samples)
        let encoder = try OpusEncoder()
        for start in stride(from: 0, to: speech.count - 959, by: 960) {
            try client.send(TestClient.frame(0x2, try encoder.encode(Array(speech[start..<(start + 960)]))))
        }
        let events = try readUntil("response.done", client)
        let types = events.map { $0["type"]?.string ?? "?" }
        #expect(types.contains("input_audio_buffer.speech_started"))
        let done = events.last!
        #expect(done["response"]?["status"]?.string == "cancelled")
        let delivered = events.filter { $0["type"]?.string == "response.output_text.delta" }.count
        #expect(delivered < 399, "the reply was cut short")
        withExtendedLifetime(slow) {}
    }

    @Test func audioMustMatchTheSessionsInputFormat() throws {
        let server = try server()
        // /ws expects Opus by default: a pcm16 append is refused with a message that says so.
        let ws = try connect(server, path: "/ws")
        _ = try readEvent(ws)
        try ws.send(TestClient.frame(0x1, Array(#"{"type":"input_audio_buffer.append","event_id":"e1","audio":"AAAAAA=="}"#.utf8)))
        let refused = try readEvent(ws)
        #expect(refused["type"]?.string == "error" && refused["error"]?["event_id"]?.string == "e1")
        #expect(errorMessage(refused).contains("input format is opus"))
        // /v1/realtime takes no binary frames at all.
        let realtime = try connect(server)
        _ = try readEvent(realtime)
        try realtime.send(TestClient.frame(0x2, [0xF8, 0xFF, 0xFE]))
        #expect(errorMessage(try readEvent(realtime)).contains("/ws only"))
    }

    @Test func browsersChooseTheBetaDialectBySubprotocol() throws {
        let server = try server()
        let client = try server.client()
        #expect(try client.upgrade(path: "/v1/realtime", extraHeaders: "Sec-WebSocket-Protocol: realtime, openai-beta.realtime-v1\r\n").status == 101)
        _ = try readEvent(client)
        try client.send(TestClient.frame(0x1, Array(textTurn("hello").utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        #expect(try readUntil("response.done", client).contains { $0["type"]?.string == "response.text.delta" })
    }

    @Test func browsersAuthenticateWithSubprotocols() throws {
        let server = try server(keys: ["sekret"])
        let refused = try server.client()
        #expect(try refused.upgrade(path: "/v1/realtime").status == 401)
        let browser = try server.client()
        let (status, headers) = try browser.upgrade(path: "/v1/realtime", extraHeaders: "Sec-WebSocket-Protocol: realtime, openai-insecure-api-key.sekret\r\n")
        #expect(status == 101 && headers["sec-websocket-protocol"] == "realtime")
        let sdk = try server.client()
        #expect(try sdk.upgrade(path: "/v1/realtime?model=gpt-realtime", extraHeaders: "Authorization: Bearer sekret\r\n").status == 101)
    }

    @Test func apiKeysAreCheckedBeforeTheUpgradeWithAJSONRefusal() throws {
        let server = try server(keys: ["key-one", "key-two"])
        for (headers, code) in [("", "missing_api_key"), ("Authorization: Bearer key-three\r\n", "invalid_api_key"),
                                ("api-key: key-on\r\n", "invalid_api_key")] {
            let client = try server.client()
            try client.send("GET /v1/realtime HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\(headers)\r\n")
            let response = try client.readResponse()
            #expect(response.status == 401 && response.headers["www-authenticate"] == "Bearer")
            let body = try JSON(parsing: response.body)
            #expect(body["error"]?["code"]?.string == code && body["error"]?["type"]?.string == "invalid_request_error", "\(response.body)")
            #expect(!response.body.contains("key-"), "a refusal never repeats a key")
        }
        #expect(try server.client().upgrade(path: "/v1/realtime", extraHeaders: "Authorization: Bearer key-two\r\n").status == 101)
        #expect(try server.client().upgrade(path: "/ws", extraHeaders: "api-key: key-one\r\n").status == 101)
        // Azure's path and header reach the same sessions; the deployment names the model.
        let azure = try server.client()
        #expect(try azure.upgrade(path: "/openai/realtime?api-version=2025-04-01-preview&deployment=gpt-4o-realtime", extraHeaders: "api-key: key-one\r\n").status == 101)
        #expect(try readEvent(azure)["session"]?["model"]?.string == "gpt-4o-realtime")
        #expect(try server.client().upgrade(path: "/openai/realtime?deployment=d").status == 401)
    }

    @Test func crossSiteUpgradesAreRefusedWhenOriginsAreListed() throws {
        let server = try server(origins: ["https://app.example.com"])
        #expect(try server.client().upgrade(path: "/v1/realtime", extraHeaders: "Origin: https://app.example.com\r\n").status == 101)
        #expect(try server.client().upgrade(path: "/v1/realtime").status == 101, "no Origin: not a browser")
        let evil = try server.client()
        try evil.send("GET /v1/realtime HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nOrigin: https://evil.example\r\n"
                      + "Cookie: session=abc\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let refused = try evil.readResponse()
        #expect(refused.status == 403 && refused.body.contains("origin_not_allowed"))
    }

    /// The process's count of turns that server VAD ended while the user was only pausing.
    static func prematureEnds() -> Int {
        _ = SessionMetrics.shared  // declared in the process registry when first used
        let line = MetricsRegistry.process.render().split(separator: "\n").first { $0.hasPrefix("parley_turn_premature_ends_total ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
    }

    /// Issue 24's premature reply, counted: a caller who pauses about 0.75 s mid-sentence ("I need
    /// a flight to … Boston on Friday": espeak-ng's own 0.4 s of trailing silence and 300 ms more)
    /// has the turn ended by the 500 ms of silence, and speaks again within the second after: `parley_turn_premature_ends_total` counts it. (Other tests
    /// run beside this one in the same process, so the count is checked to have grown.)
    @Test(arguments: ["en-us", "en-gb+f3"])
    func aPauseTakenForTheEndOfATurnIsCounted(voice: String) throws {
        let before = Self.prematureEnds()
        #expect(before >= 0, "the metric is declared")
        let server = try server()
        let client = try connect(server, path: "/ws")
        _ = try readEvent(client)
        let first = try WAVFile.read(path: try SpeechVectors.wav("I need a flight to", voice: voice))
        let second = try WAVFile.read(path: try SpeechVectors.wav("Boston on Friday", voice: voice))
        let toOpusRate = try Resampler(from: first.sampleRate, to: 48000)
        let speech = toOpusRate.process(first.samples) + [Int16](repeating: 0, count: 48 * 300)
            + toOpusRate.process(second.samples) + [Int16](repeating: 0, count: 48000)
        let encoder = try OpusEncoder()
        for start in stride(from: 0, to: speech.count - 959, by: 960) {
            try client.send(TestClient.frame(0x2, try encoder.encode(Array(speech[start..<(start + 960)]))))
        }
        // The first turn's end, then the user going on: a second speech_started.
        let events = try readUntil("input_audio_buffer.speech_stopped", client) + readUntil("input_audio_buffer.speech_started", client)
        let types = events.map { $0["type"]?.string ?? "?" }
        #expect(types.first == "input_audio_buffer.speech_started" && types.last == "input_audio_buffer.speech_started", "\(types)")
        #expect(Self.prematureEnds() >= before + 1)
    }

    @Test func opusFramesOnWsAreHeardAsSpeech() throws {
        let server = try server()
        let client = try connect(server, path: "/ws")
        _ = try readEvent(client)
        // Real speech, encoded in 20 ms Opus packets, then a second of silence.
        let wav = try WAVFile.read(path: try SpeechVectors.wav("What is the weather like in Paris"))
        let speech = try Resampler(from: wav.sampleRate, to: 48000).process(wav.samples) + [Int16](repeating: 0, count: 48000)
        let encoder = try OpusEncoder()
        for start in stride(from: 0, to: speech.count - 959, by: 960) {
            try client.send(TestClient.frame(0x2, try encoder.encode(Array(speech[start..<(start + 960)]))))
        }
        let events = try readUntil("response.done", client)
        let types = events.map { $0["type"]?.string ?? "?" }
        #expect(types.starts(with: ["input_audio_buffer.speech_started"]))
        #expect(types.contains("input_audio_buffer.speech_stopped") && types.contains("input_audio_buffer.committed"))
        #expect(events.last?["response"]?["status"]?.string == "completed")
    }
}

/// A model chosen after the server is up (so it can point at the server's own port).
final class ModelBox: LanguageModel, @unchecked Sendable {
    let name = "box"
    private var model: (any LanguageModel)?

    func set(_ model: any LanguageModel) { self.model = model }

    func stream(_ request: ModelRequest, on loop: EventLoop, _ onEvent: @escaping (ModelEvent) -> Void) -> any ModelCall {
        model!.stream(request, on: loop, onEvent)
    }
}
