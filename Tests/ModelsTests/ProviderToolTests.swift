import JSON
import Metrics
@testable import Models
import Server
import Synchronization
import Testing
import TestSupport
import Upstream

/// Function calling in the HTTP providers: the requests they build for a conversation with tools,
/// calls and results, and how they read streamed calls, from recorded chunks and over real sockets.
@Suite struct ProviderToolTests {
    static let weather = ToolDefinition(name: "get_weather", description: "The weather in a city.", parameters: try! JSON(parsing: #"""
        {"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}
        """#))
    static let time = ToolDefinition(name: "get_time", parameters: try! JSON(parsing: #"{"type":"object","properties":{"tz":{"type":"string"}}}"#))

    /// A reply with text and two calls (the session keeps each call as an assistant message of its
    /// own), both answered, then the user again.
    static let conversation = [
        ChatMessage(role: .system, text: "be brief"),
        ChatMessage(role: .user, text: "What is the weather in Paris and Rome?"),
        ChatMessage(role: .assistant, text: "Checking."),
        ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: "call_1", name: "get_weather", arguments: #"{"city":"Paris"}"#)]),
        ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: "call_2", name: "get_weather", arguments: #"{"city":"Rome"}"#)]),
        ChatMessage(role: .tool, text: "18 C", toolCallID: "call_1"),
        ChatMessage(role: .tool, text: "21 C", toolCallID: "call_2"),
        ChatMessage(role: .user, text: "And Oslo?"),
    ]

    static let request = ModelRequest(messages: conversation, tools: .of([weather, time]), toolChoice: .required)

    static let openAI = OpenAIChatModel(baseURL: UpstreamURL("http://127.0.0.1:1/v1")!, model: "gpt-mock", apiKey: nil)
    static let anthropic = AnthropicModel(baseURL: UpstreamURL("http://127.0.0.1:1/v1")!, model: "claude-mock", apiKey: nil)

    // MARK: OpenAI requests

    @Test func openAIRequestCarriesToolsCallsAndResults() throws {
        let body = Self.openAI.body(Self.request)
        #expect(body["tools"] == (try JSON(parsing: #"""
            [{"type":"function","function":{"name":"get_weather","description":"The weather in a city.",
              "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
             {"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"tz":{"type":"string"}}}}}]
            """#)))
        #expect(body["tool_choice"] == .string("required"))
        #expect(body["messages"] == (try JSON(parsing: #"""
            [{"role":"system","content":"be brief"},
             {"role":"user","content":"What is the weather in Paris and Rome?"},
             {"role":"assistant","content":"Checking.","tool_calls":[
               {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
               {"id":"call_2","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]},
             {"role":"tool","tool_call_id":"call_1","content":"18 C"},
             {"role":"tool","tool_call_id":"call_2","content":"21 C"},
             {"role":"user","content":"And Oslo?"}]
            """#)))
        // The body is what goes on the wire, and parses back as itself.
        #expect(try JSON(parsing: body.description) == body)
    }

    @Test func openAIToolChoiceForms() {
        func choice(_ choice: ToolChoice) -> JSON? {
            Self.openAI.body(ModelRequest(messages: [ChatMessage(role: .user, text: "hi")], tools: .of([Self.weather]), toolChoice: choice))["tool_choice"]
        }
        #expect(choice(.auto) == .string("auto"))
        #expect(choice(.none) == .string("none"))
        #expect(choice(.required) == .string("required"))
        #expect(choice(.function("get_weather")) == .object([("type", .string("function")), ("function", .object([("name", .string("get_weather"))]))]))
    }

    @Test func openAIRequestWithoutToolsHasNeitherToolsNorChoice() {
        for tools in [nil, ToolSet.of([])] {
            let body = Self.openAI.body(ModelRequest(messages: [ChatMessage(role: .user, text: "hi")], tools: tools, toolChoice: .required))
            #expect(body["tools"] == nil)
            #expect(body["tool_choice"] == nil)
            #expect(body["messages"] == .array([.object([("role", .string("user")), ("content", .string("hi"))])]))
        }
    }

    @Test func openAICallsJoinOnlyTheAssistantMessageJustBefore() throws {
        let messages = OpenAIChatModel.messages([
            ChatMessage(role: .user, text: "hi"),
            ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: "a", name: "f", arguments: "{}")]),
            ChatMessage(role: .tool, text: "1", toolCallID: "a"),
            ChatMessage(role: .assistant, text: "Done."),
            ChatMessage(role: .user, text: "again"),
            ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: "b", name: "f", arguments: "")]),
        ])
        #expect(JSON.array(messages) == (try JSON(parsing: #"""
            [{"role":"user","content":"hi"},
             {"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]},
             {"role":"tool","tool_call_id":"a","content":"1"},
             {"role":"assistant","content":"Done."},
             {"role":"user","content":"again"},
             {"role":"assistant","content":null,"tool_calls":[{"id":"b","type":"function","function":{"name":"f","arguments":""}}]}]
            """#)))
    }

    /// A result whose call was trimmed from the history would have the API refuse the request.
    @Test func openAIResultWithoutItsCallIsLeftOut() throws {
        let messages = OpenAIChatModel.messages([
            ChatMessage(role: .tool, text: "18 C", toolCallID: "call_gone"),
            ChatMessage(role: .user, text: "thanks"),
        ])
        #expect(messages == [.object([("role", .string("user")), ("content", .string("thanks"))])])
    }

    // MARK: Anthropic requests

    @Test func anthropicRequestCarriesToolsCallsAndResults() throws {
        let body = Self.anthropic.body(Self.request)
        #expect(body["system"] == .string("be brief"))
        #expect(body["tools"] == (try JSON(parsing: #"""
            [{"name":"get_weather","description":"The weather in a city.",
              "input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
             {"name":"get_time","input_schema":{"type":"object","properties":{"tz":{"type":"string"}}}}]
            """#)))
        #expect(body["tool_choice"] == (try JSON(parsing: #"{"type":"any"}"#)))
        #expect(body["messages"] == (try JSON(parsing: #"""
            [{"role":"user","content":"What is the weather in Paris and Rome?"},
             {"role":"assistant","content":[
               {"type":"text","text":"Checking."},
               {"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}},
               {"type":"tool_use","id":"call_2","name":"get_weather","input":{"city":"Rome"}}]},
             {"role":"user","content":[
               {"type":"tool_result","tool_use_id":"call_1","content":"18 C"},
               {"type":"tool_result","tool_use_id":"call_2","content":"21 C"},
               {"type":"text","text":"And Oslo?"}]}]
            """#)))
        #expect(try JSON(parsing: body.description) == body)
    }

    @Test func anthropicToolChoiceForms() throws {
        func choice(_ choice: ToolChoice) -> String? {
            Self.anthropic.body(ModelRequest(messages: [ChatMessage(role: .user, text: "hi")], tools: .of([Self.weather]), toolChoice: choice))["tool_choice"]?.description
        }
        #expect(choice(.auto) == #"{"type":"auto"}"#)
        #expect(choice(.none) == #"{"type":"none"}"#)
        #expect(choice(.required) == #"{"type":"any"}"#)
        #expect(choice(.function("get_weather")) == #"{"type":"tool","name":"get_weather"}"#)
        let plain = Self.anthropic.body(ModelRequest(messages: [ChatMessage(role: .user, text: "hi")], toolChoice: .required))
        #expect(plain["tools"] == nil && plain["tool_choice"] == nil)
    }

    /// A leading assistant turn is dropped, and with it the results of its calls; text-only turns
    /// keep their plain string content; user text before a result goes after it, as results lead.
    @Test func anthropicTurnsKeepTheirRulesWithBlocks() throws {
        let turns = AnthropicModel.turns([
            ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: "early", name: "f", arguments: "{}")]),
            ChatMessage(role: .tool, text: "x", toolCallID: "early"),
            ChatMessage(role: .user, text: "hi"),
            ChatMessage(role: .user, text: "there"),
            ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: "a", name: "f", arguments: "")]),
            ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: "b", name: "f", arguments: "[1, 2]")]),
            ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: "c", name: "f", arguments: "{\"cut")]),
            ChatMessage(role: .user, text: "wait"),
            ChatMessage(role: .tool, text: "1", toolCallID: "a"),
            ChatMessage(role: .tool, text: "2", toolCallID: "b"),
            ChatMessage(role: .tool, text: "3", toolCallID: "c"),
            ChatMessage(role: .tool, text: "?", toolCallID: "unknown"),
            ChatMessage(role: .assistant, text: "Done."),
        ])
        #expect(JSON.array(turns) == (try JSON(parsing: #"""
            [{"role":"user","content":"hi\n\nthere"},
             {"role":"assistant","content":[
               {"type":"tool_use","id":"a","name":"f","input":{}},
               {"type":"tool_use","id":"b","name":"f","input":{}},
               {"type":"tool_use","id":"c","name":"f","input":{}}]},
             {"role":"user","content":[
               {"type":"tool_result","tool_use_id":"a","content":"1"},
               {"type":"tool_result","tool_use_id":"b","content":"2"},
               {"type":"tool_result","tool_use_id":"c","content":"3"},
               {"type":"text","text":"wait"}]},
             {"role":"assistant","content":"Done."}]
            """#)))
    }

    // MARK: Decoding recorded streams

    /// What `decode` makes of these server-sent events, read as `UpstreamModelCall` reads them:
    /// the events, then how the reply ended (an end without `.done` is a clean end of body).
    static func decoded(_ stream: String, _ decode: UpstreamModelCall.Decode) throws -> [ModelEvent] {
        var parser = ServerSentEventParser()
        var ending = UpstreamModelCall.Ending()
        var out: [ModelEvent] = []
        for event in try Array(stream.utf8).withUnsafeBytes({ try parser.feed($0) }) {
            switch decode(event, &ending) {
            case .events(let events): out += events
            case .done: return out + [.finished(ending.usage, reason: ending.reason)]
            case .failed(let error): return out + [.failed(error)]
            }
        }
        return out + [.finished(ending.usage, reason: ending.reason)]
    }

    static func openAIChunks(_ deltas: [String], finish: String? = "tool_calls") -> String {
        var chunks = deltas.map { #"data: {"choices":[{"index":0,"delta":\#($0),"finish_reason":null}]}"# + "\n\n" }
        if let finish { chunks.append(#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"\#(finish)"}]}"# + "\n\n") }
        chunks.append(#"data: {"choices":[],"usage":{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42}}"# + "\n\ndata: [DONE]\n\n")
        return chunks.joined()
    }

    @Test func openAITextThenParallelCallsInterleaved() throws {
        let events = try Self.decoded(Self.openAIChunks([
            #"{"role":"assistant","content":"Let me check."}"#,
            #"{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}"#,
            #"{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{\"tz\":"}}]}"#,
            #"{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}},{"index":1,"function":{"arguments":"\"CET\"}"}}]}"#,
            #"{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}"#,
        ]), OpenAIChatModel.decode)
        #expect(events == [
            .delta("Let me check."),
            .toolCallStarted(index: 0, id: "call_a", name: "get_weather"),
            .toolCallStarted(index: 1, id: "call_b", name: "get_time"),
            .toolCallArgumentsDelta(index: 1, #"{"tz":"#),
            .toolCallArgumentsDelta(index: 0, #"{"city":"#),
            .toolCallArgumentsDelta(index: 1, #""CET"}"#),
            .toolCallArgumentsDelta(index: 0, #""Paris"}"#),
            .finished(Usage(inputTokens: 30, outputTokens: 12), reason: .toolCalls),
        ])
    }

    @Test func openAIOneChunkWithTextAndTwoWholeCalls() throws {
        let events = try Self.decoded(Self.openAIChunks([
            #"{"content":"Sure.","tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},{"index":1,"id":"c1","type":"function","function":{"name":"get_time","arguments":"{}"}}]}"#,
        ]), OpenAIChatModel.decode)
        #expect(events == [
            .delta("Sure."),
            .toolCallStarted(index: 0, id: "c0", name: "get_weather"),
            .toolCallArgumentsDelta(index: 0, #"{"city":"Oslo"}"#),
            .toolCallStarted(index: 1, id: "c1", name: "get_time"),
            .toolCallArgumentsDelta(index: 1, "{}"),
            .finished(Usage(inputTokens: 30, outputTokens: 12), reason: .toolCalls),
        ])
    }

    @Test func openAIFinishReasonsStillReadAsBefore() throws {
        #expect(try Self.decoded(Self.openAIChunks([#"{"content":"Hi"}"#], finish: "stop"), OpenAIChatModel.decode)
            == [.delta("Hi"), .finished(Usage(inputTokens: 30, outputTokens: 12), reason: .stop)])
        #expect(try Self.decoded(Self.openAIChunks([#"{"content":"Hi"}"#], finish: "length"), OpenAIChatModel.decode)
            == [.delta("Hi"), .finished(Usage(inputTokens: 30, outputTokens: 12), reason: .length)])
    }

    /// Servers that leave out `index`, number every call 0, or send the arguments as an object:
    /// followed where the meaning is plain.
    @Test func openAIStrayButUnambiguousCallPieces() throws {
        let events = try Self.decoded(Self.openAIChunks([
            #"{"tool_calls":[{"id":"x","function":{"name":"get_weather","arguments":"{\"city\":"}}]}"#,
            #"{"tool_calls":[{"function":{"arguments":"\"Oslo\"}"}}]}"#,
            #"{"tool_calls":[{"index":0,"id":"y","function":{"name":"get_time","arguments":{"tz":"CET"}}}]}"#,
            #"{"tool_calls":[{"index":0,"id":"z","function":{"name":"get_time"}}]}"#,
            #"{"tool_calls":[{"index":0,"id":"z","function":{"arguments":"{}"}}]}"#,
        ]), OpenAIChatModel.decode)
        #expect(events == [
            .toolCallStarted(index: 0, id: "x", name: "get_weather"),
            .toolCallArgumentsDelta(index: 0, #"{"city":"#),
            .toolCallArgumentsDelta(index: 0, #""Oslo"}"#),
            .toolCallStarted(index: 1, id: "y", name: "get_time"),
            .toolCallArgumentsDelta(index: 1, #"{"tz":"CET"}"#),
            .toolCallStarted(index: 2, id: "z", name: "get_time"),
            .toolCallArgumentsDelta(index: 2, "{}"),
            .finished(Usage(inputTokens: 30, outputTokens: 12), reason: .toolCalls),
        ])
    }

    @Test(arguments: [
        (#"{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}"#, "tool call 1 began without an id"),
        (#"{"tool_calls":[{"index":1,"id":"c","function":{"arguments":"{}"}}]}"#, "tool call 1 began without a function name"),
        (#"{"tool_calls":"get_weather"}"#, "delta.tool_calls is not an array"),
        (#"{"tool_calls":[7]}"#, "a delta.tool_calls entry is not an object"),
        (#"{"tool_calls":[{"index":"0","id":"c","function":{"name":"f"}}]}"#, "a tool call's index is not a whole number"),
        (#"{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":42}}]}"#, "the arguments of tool call 0 are not a string"),
    ])
    func openAIMalformedCallFails(chunk: String, problem: String) throws {
        let events = try Self.decoded(Self.openAIChunks([
            #"{"tool_calls":[{"index":0,"id":"ok","function":{"name":"get_time","arguments":"{}"}}]}"#, chunk,
            #"{"content":"never seen"}"#,
        ]), OpenAIChatModel.decode)
        #expect(events == [
            .toolCallStarted(index: 0, id: "ok", name: "get_time"),
            .toolCallArgumentsDelta(index: 0, "{}"),
            .failed(ModelError(code: "upstream_error", message: "the upstream sent a malformed function call: \(problem)")),
        ])
    }

    @Test func openAIPieceWithoutIndexOrIDBeforeAnyCallFails() throws {
        let events = try Self.decoded(Self.openAIChunks([#"{"tool_calls":[{"function":{"arguments":"{}"}}]}"#]), OpenAIChatModel.decode)
        #expect(events == [.failed(ModelError(code: "upstream_error",
                                              message: "the upstream sent a malformed function call: a tool call without an index began without an id"))])
    }

    static func anthropicEvents(_ events: [String], stop: String = "tool_use") -> String {
        var all = [#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":40,"output_tokens":1}}}"#]
        all += events
        all.append(#"{"type":"message_delta","delta":{"stop_reason":"\#(stop)","stop_sequence":null},"usage":{"output_tokens":50}}"#)
        all.append(#"{"type":"message_stop"}"#)
        return all.map { data in
            let name = (try? JSON(parsing: data))?["type"]?.string ?? "message"
            return "event: \(name)\ndata: \(data)\n\n"
        }.joined()
    }

    @Test func anthropicTextThenTwoCalls() throws {
        let events = try Self.decoded(Self.anthropicEvents([
            #"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            #"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me check."}}"#,
            #"{"type":"content_block_stop","index":0}"#,
            #"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{}}}"#,
            #"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            #"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Par"}}"#,
            #"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"is\"}"}}"#,
            #"{"type":"content_block_stop","index":1}"#,
            #"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_b","name":"get_time","input":{}}}"#,
            #"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"tz\":\"CET\"}"}}"#,
            #"{"type":"content_block_stop","index":2}"#,
        ]), AnthropicModel.decode)
        #expect(events == [
            .delta("Let me check."),
            .toolCallStarted(index: 0, id: "toolu_a", name: "get_weather"),
            .toolCallArgumentsDelta(index: 0, #"{"city": "Par"#),
            .toolCallArgumentsDelta(index: 0, #"is"}"#),
            .toolCallStarted(index: 1, id: "toolu_b", name: "get_time"),
            .toolCallArgumentsDelta(index: 1, #"{"tz":"CET"}"#),
            .finished(Usage(inputTokens: 40, outputTokens: 50), reason: .toolCalls),
        ])
    }

    @Test func anthropicInterleavedCallsKeepTheirIndexes() throws {
        let events = try Self.decoded(Self.anthropicEvents([
            #"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t0","name":"get_weather","input":{}}}"#,
            #"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"get_time","input":{}}}"#,
            #"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
            #"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Oslo\"}"}}"#,
        ]), AnthropicModel.decode)
        #expect(events == [
            .toolCallStarted(index: 0, id: "t0", name: "get_weather"),
            .toolCallStarted(index: 1, id: "t1", name: "get_time"),
            .toolCallArgumentsDelta(index: 1, "{}"),
            .toolCallArgumentsDelta(index: 0, #"{"city":"Oslo"}"#),
            .finished(Usage(inputTokens: 40, outputTokens: 50), reason: .toolCalls),
        ])
    }

    @Test func anthropicStopReasonsStillReadAsBefore() throws {
        let text = #"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#
        #expect(try Self.decoded(Self.anthropicEvents([text], stop: "end_turn"), AnthropicModel.decode)
            == [.delta("Hi"), .finished(Usage(inputTokens: 40, outputTokens: 50), reason: .stop)])
        #expect(try Self.decoded(Self.anthropicEvents([text], stop: "max_tokens"), AnthropicModel.decode)
            == [.delta("Hi"), .finished(Usage(inputTokens: 40, outputTokens: 50), reason: .length)])
    }

    @Test(arguments: [
        (#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
         "arguments for content block 0, which is no tool_use block"),
        (#"{"type":"content_block_delta","index":5,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
         "arguments for content block 5, which is no tool_use block"),
        (#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta"}}"#, "an input_json_delta without partial_json"),
        (#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","name":"get_time","input":{}}}"#, "tool_use block 2 has no id"),
        (#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t2","input":{}}}"#, "tool_use block 2 has no name"),
        (#"{"type":"content_block_start","content_block":{"type":"tool_use","id":"t2","name":"f","input":{}}}"#, "a tool_use block without an index"),
    ])
    func anthropicMalformedCallFails(event: String, problem: String) throws {
        let events = try Self.decoded(Self.anthropicEvents([
            #"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            #"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"get_time","input":{}}}"#,
            event,
            #"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"never seen"}}"#,
        ]), AnthropicModel.decode)
        #expect(events == [
            .toolCallStarted(index: 0, id: "t1", name: "get_time"),
            .failed(ModelError(code: "upstream_error", message: "the upstream sent a malformed function call: \(problem)")),
        ])
    }

    // MARK: Over real sockets

    final class Received: Sendable {
        let bodies = Mutex<[String]>([])
    }

    /// One server that is both the upstream, answering `path` with these server-sent events (and
    /// keeping the bodies it was sent), and a `/run` route that calls the `kind` provider against
    /// it with the conversation above and writes each event it reports as a line.
    static func run(_ kind: String, path: String, events: String) throws -> (lines: [String], body: JSON?) {
        let received = Received()
        let server = try TestServer({ $0.loops = 1 }, routes: { routes in
            routes.stream("POST", path) { request, stream in
                received.bodies.withLock { $0.append(String(decoding: request.body, as: UTF8.self)) }
                stream.start(.ok, headers: [("Content-Type", "text/event-stream")])
                stream.write(events)
                stream.end()
            }
            routes.stream("GET", "/run") { request, stream in
                let port = request.queryValue("port").flatMap { Int($0) } ?? 0
                let base = UpstreamURL("http://127.0.0.1:\(port)/v1")!
                let model: any LanguageModel = kind == "anthropic"
                    ? AnthropicModel(baseURL: base, model: "claude-mock", apiKey: "k")
                    : OpenAIChatModel(baseURL: base, model: "gpt-mock", apiKey: "k")
                stream.start()
                let call = model.stream(Self.request, on: stream.loop) { event in
                    switch event {
                    case .delta(let text): stream.write("delta[\(text)]\n")
                    case .toolCallStarted(let index, let id, let name): stream.write("call[\(index) \(id) \(name)]\n")
                    case .toolCallArgumentsDelta(let index, let piece): stream.write("arguments[\(index) \(piece)]\n")
                    case .finished(let usage, let reason):
                        stream.write("finished \(usage.map { "\($0.inputTokens)/\($0.outputTokens)" } ?? "-") \(reason)\n")
                        stream.end()
                    case .failed(let error): stream.write("failed \(error.code): \(error.message)\n"); stream.end()
                    case .retrying: break
                    }
                }
                stream.onClose = { call.cancel() }
            }
        })
        let client = try server.client()
        try client.send("GET /run?port=\(server.port) HTTP/1.1\r\nHost: a\r\n\r\n")
        let lines = try client.readChunkedResponse().chunks.joined().split(separator: "\n").map(String.init)
        let body = try received.bodies.withLock { $0.first }.map { try JSON(parsing: $0) }
        return (lines, body)
    }

    static func count(_ histogram: Histogram) -> Int {
        let rendered = histogram.render()
        let line = rendered.split(separator: "\n").first { $0.hasPrefix(histogram.name + "_count ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
    }

    @Test func openAIStreamsCallsOverSockets() throws {
        let deltasBefore = Self.count(UpstreamMetrics.shared.serverAdded)
        let firstBefore = Self.count(UpstreamMetrics.shared.firstToken)
        let (lines, body) = try Self.run("openai", path: "/v1/chat/completions", events: Self.openAIChunks([
            #"{"role":"assistant","content":"Let me"}"#,
            #"{"content":" check.","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}},{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{}"}}]}"#,
            #"{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\"Oslo\"}"}}]}"#,
        ]))
        #expect(lines == [
            "delta[Let me]", "delta[ check.]",
            "call[0 call_a get_weather]", "call[1 call_b get_time]", "arguments[1 {}]",
            #"arguments[0 {"city":"Oslo"}]"#,
            "finished 30/12 toolCalls",
        ])
        #expect(body?["tool_choice"] == .string("required"))
        #expect(body?["tools"]?.array?.compactMap { $0["function"]?["name"]?.string } == ["get_weather", "get_time"])
        #expect(body?["messages"]?.array?.count == 6)
        // Text deltas are still measured; calls are not text.
        #expect(Self.count(UpstreamMetrics.shared.serverAdded) >= deltasBefore + 2)
        #expect(Self.count(UpstreamMetrics.shared.firstToken) >= firstBefore + 1)
    }

    @Test func anthropicStreamsCallsOverSockets() throws {
        let (lines, body) = try Self.run("anthropic", path: "/v1/messages", events: Self.anthropicEvents([
            #"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            #"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking."}}"#,
            #"{"type":"content_block_stop","index":0}"#,
            #"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{}}}"#,
            #"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Oslo\"}"}}"#,
            #"{"type":"content_block_stop","index":1}"#,
        ]))
        #expect(lines == ["delta[Checking.]", "call[0 toolu_a get_weather]", #"arguments[0 {"city":"Oslo"}]"#, "finished 40/50 toolCalls"])
        #expect(body?["tool_choice"]?.description == #"{"type":"any"}"#)
        #expect(body?["tools"]?.array?.compactMap { $0["name"]?.string } == ["get_weather", "get_time"])
        #expect(body?["messages"]?.array?.count == 3)
    }

    @Test func malformedCallOverSocketsFailsTheCall() throws {
        let (lines, _) = try Self.run("openai", path: "/v1/chat/completions", events: Self.openAIChunks([
            #"{"content":"Hm"}"#,
            #"{"tool_calls":[{"index":3,"function":{"arguments":"{}"}}]}"#,
        ]))
        #expect(lines == ["delta[Hm]", "failed upstream_error: the upstream sent a malformed function call: tool call 3 began without an id"])
    }
}
