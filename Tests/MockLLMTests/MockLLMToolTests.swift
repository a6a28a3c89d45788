import JSON
import Loop
import MockLLM
import Models
import Server
import Testing
import TestSupport

/// `parley mock-llm` calling tools, over real sockets: OpenAI `tool_calls` and Anthropic
/// `tool_use`, arguments made from the schema, `tool_choice`, parallel calls, the answer after a
/// tool result, and bad tool definitions.
@Suite struct MockLLMToolTests {
    func server() throws -> TestServer {
        try TestServer({ $0.loops = 1 }, routes: { routes in
            var options = MockLLMOptions()
            options.timeToFirstToken = 0.001
            options.tokensPerSecond = 2_000
            MockLLMServer.install(on: &routes, options: options)
        })
    }

    /// POSTs `body` to `path`; the status and the whole body.
    func post(_ path: String, _ body: String, headers: String = "", to server: TestServer) throws -> (status: Int, body: String) {
        let client = try server.client()
        try client.send("POST \(path) HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n\(headers)Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
        let response = try client.readChunkedResponse()
        return (response.status, response.chunks.joined())
    }

    /// A body's server-sent events: each one's `event:` name (Anthropic) and `data:` as JSON, nil
    /// for OpenAI's `[DONE]`.
    func events(_ body: String) throws -> [(name: String?, data: JSON?)] {
        try body.split(separator: "\n\n").map { block in
            var name: String?
            var data = ""
            for line in block.split(separator: "\n") {
                if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
            }
            return (name, data == "[DONE]" ? nil : try JSON(parsing: data))
        }
    }

    // MARK: Requests

    static let weather = #"{"name":"get_weather","description":"The weather in a city","schema":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer"},"detailed":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string"}},"options":{"type":"object"}},"required":["city"]}}"#
    static let time = #"{"name":"get_time","description":"The time in a time zone","schema":{"type":"object","properties":{"timezone":{"type":"string"}}}}"#

    /// Tools in OpenAI's shape, from `{"name","description","schema"}`.
    static func openAITools(_ tools: [String]) -> String {
        "[" + tools.map { tool in
            let t = try! JSON(parsing: tool)
            return JSON.object([("type", .string("function")), ("function", .object([
                ("name", t["name"]!), ("description", t["description"]!), ("parameters", t["schema"]!),
            ]))]).description
        }.joined(separator: ",") + "]"
    }

    /// Tools in Anthropic's shape.
    static func anthropicTools(_ tools: [String]) -> String {
        "[" + tools.map { tool in
            let t = try! JSON(parsing: tool)
            return JSON.object([("name", t["name"]!), ("description", t["description"]!), ("input_schema", t["schema"]!)]).description
        }.joined(separator: ",") + "]"
    }

    func openAI(_ prompt: String, tools: [String] = [weather, time], extra: String = "", stream: Bool = true) -> String {
        #"{"model":"gpt-mock","stream":\#(stream),"stream_options":{"include_usage":true},"tools":\#(Self.openAITools(tools)),"messages":[{"role":"system","content":"be brief"},{"role":"user","content":\#(JSON.quoted(prompt))}]\#(extra)}"#
    }

    func anthropic(_ prompt: String, tools: [String] = [weather, time], extra: String = "", stream: Bool = true) -> String {
        #"{"model":"claude-mock","max_tokens":256,"stream":\#(stream),"tools":\#(Self.anthropicTools(tools)),"messages":[{"role":"user","content":\#(JSON.quoted(prompt))}]\#(extra)}"#
    }

    // MARK: Reading replies

    struct Call: Equatable {
        var index: Int
        var id: String
        var name: String
        var arguments: String
        var pieces = 0
    }

    /// An OpenAI stream's calls (put together from their deltas), text, finish reason and whether
    /// it ended with usage and `[DONE]`.
    func openAIReply(_ body: String) throws -> (calls: [Call], text: String, finish: String?, usage: JSON?, done: Bool) {
        let events = try events(body)
        var calls: [Call] = []
        var text = ""
        var finish: String?
        var usage: JSON?
        for event in events {
            guard let data = event.data else { continue }
            if let u = data["usage"], !u.isNull { usage = u }
            guard let choice = data["choices"]?.array?.first else { continue }
            text += choice["delta"]?["content"]?.string ?? ""
            finish = choice["finish_reason"]?.string ?? finish
            for delta in choice["delta"]?["tool_calls"]?.array ?? [] {
                let index = delta["index"]?.int ?? -1
                if let id = delta["id"]?.string {
                    #expect(delta["type"]?.string == "function")
                    #expect(delta["function"]?["arguments"]?.string == "", "the first delta names the call; arguments follow")
                    calls.append(Call(index: index, id: id, name: delta["function"]?["name"]?.string ?? "", arguments: ""))
                } else if let piece = delta["function"]?["arguments"]?.string, let i = calls.firstIndex(where: { $0.index == index }) {
                    calls[i].arguments += piece
                    calls[i].pieces += 1
                }
            }
        }
        return (calls, text, finish, usage, events.last.map { $0.data == nil } ?? false)
    }

    /// An Anthropic stream's content blocks (type, id, name, and the text or input JSON), its stop
    /// reason and its event names in order.
    func anthropicReply(_ body: String) throws -> (blocks: [Call], types: [String], names: [String], stop: String?) {
        let events = try events(body)
        var blocks: [Call] = []
        var types: [String] = []
        var stop: String?
        for event in events {
            guard let data = event.data else { continue }
            #expect(event.name == data["type"]?.string, "the event name is the data's type")
            switch data["type"]?.string {
            case "content_block_start":
                let block = data["content_block"]
                #expect(data["index"]?.int == blocks.count, "blocks start in order")
                if block?["type"]?.string == "tool_use" { #expect(block?["input"] == .object([])) }
                types.append(block?["type"]?.string ?? "?")
                blocks.append(Call(index: data["index"]?.int ?? -1, id: block?["id"]?.string ?? "", name: block?["name"]?.string ?? "", arguments: ""))
            case "content_block_delta":
                let delta = data["delta"]
                guard let i = blocks.firstIndex(where: { $0.index == data["index"]?.int }) else { Issue.record("a delta for an unstarted block"); continue }
                blocks[i].arguments += delta?["partial_json"]?.string ?? delta?["text"]?.string ?? ""
                blocks[i].pieces += 1
                #expect(delta?["type"]?.string == (types[i] == "tool_use" ? "input_json_delta" : "text_delta"))
            case "message_delta":
                stop = data["delta"]?["stop_reason"]?.string
            default: break
            }
        }
        return (blocks, types, events.compactMap(\.name), stop)
    }

    // MARK: Calls

    @Test func openAIStreamsACallWithArgumentsFromTheSchema() throws {
        let server = try server()
        let response = try post("/v1/chat/completions", openAI("What's the weather in Paris today?"), to: server)
        #expect(response.status == 200)
        let reply = try openAIReply(response.body)
        #expect(reply.calls.count == 1)
        let call = try #require(reply.calls.first)
        #expect(call.index == 0 && call.name == "get_weather" && call.id.hasPrefix("call_"))
        #expect((2...3).contains(call.pieces), "the arguments come in two or three pieces")
        let arguments = try JSON(parsing: call.arguments)
        #expect(arguments == .object([("city", .string("Paris")), ("unit", .string("celsius")), ("days", .int(1)), ("detailed", .bool(true)),
                                      ("tags", .array([])), ("options", .object([]))]))
        #expect(reply.text.isEmpty)
        #expect(reply.finish == "tool_calls")
        #expect(reply.usage?["completion_tokens"]?.int == 1 + call.pieces, "usage counts the stream's pieces")
        #expect(reply.done)
        // The first chunk is the assistant's, with the call's start.
        let first = try #require(try events(response.body).first?.data?["choices"]?.array?.first?["delta"])
        #expect(first["role"]?.string == "assistant" && first["tool_calls"] != nil)
    }

    @Test func anthropicStreamsAToolUseBlock() throws {
        let server = try server()
        let response = try post("/v1/messages", anthropic("what's the weather in New York?"), to: server)
        #expect(response.status == 200)
        let reply = try anthropicReply(response.body)
        #expect(reply.names.first == "message_start" && reply.names.last == "message_stop")
        #expect(reply.names.filter { $0 == "content_block_start" }.count == 1)
        #expect(reply.names.suffix(3) == ["content_block_stop", "message_delta", "message_stop"])
        #expect(reply.types == ["tool_use"])
        let call = try #require(reply.blocks.first)
        #expect(call.index == 0 && call.name == "get_weather" && call.id.hasPrefix("toolu_"))
        #expect((2...3).contains(call.pieces))
        let input = try JSON(parsing: call.arguments)
        #expect(input["city"]?.string == "New York")
        #expect(input["unit"]?.string == "celsius" && input["days"]?.int == 1 && input["detailed"]?.bool == true)
        #expect(reply.stop == "tool_use")
    }

    @Test func aToolIsNamedByItsNameOrTheWordsOfIt() throws {
        let server = try server()
        let search = #"{"name":"searchFlightPrices","description":"fares","schema":{"type":"object","properties":{"destination":{"type":"string"},"class":{"type":"string","enum":["economy","business"]},"limit":{"type":"integer","minimum":5}}}}"#
        // The whole name, as a word.
        var reply = try openAIReply(post("/v1/chat/completions", openAI("please call get_time"), to: server).body)
        #expect(reply.calls.map(\.name) == ["get_time"])
        // Arguments are the built-in agent's (ToolIntent): a string with nothing to say is empty.
        #expect(try JSON(parsing: reply.calls[0].arguments) == .object([("timezone", .string(""))]))
        // The words of a camel-case name without its verb, one of them plural, in any case; an enum
        // value the prompt says; a minimum.
        reply = try openAIReply(post("/v1/chat/completions", openAI("FLIGHT prices in Tokyo, business please", tools: [Self.weather, search]), to: server).body)
        #expect(reply.calls.map(\.name) == ["searchFlightPrices"])
        #expect(try JSON(parsing: reply.calls[0].arguments) == .object([("destination", .string("Tokyo")), ("class", .string("business")), ("limit", .int(5))]))
        // Only some of the words: no call, the made-up text.
        reply = try openAIReply(post("/v1/chat/completions", openAI("how much is a flight", tools: [search]), to: server).body)
        #expect(reply.calls.isEmpty && reply.finish == "stop")
        #expect(reply.text.hasPrefix("You said: how much is a flight"))
    }

    @Test func twoNamedToolsAreTwoParallelCallsInTheOrderNamed() throws {
        let server = try server()
        let prompt = "what's the time and the weather in Lisbon?"
        let openAI = try openAIReply(post("/v1/chat/completions", openAI(prompt), to: server).body)
        #expect(openAI.calls.map(\.index) == [0, 1])
        #expect(openAI.calls.map(\.name) == ["get_time", "get_weather"])
        #expect(Set(openAI.calls.map(\.id)).count == 2, "each call has its own id")
        #expect(try JSON(parsing: openAI.calls[1].arguments)["city"]?.string == "Lisbon")
        #expect(openAI.finish == "tool_calls")

        let anthropic = try anthropicReply(post("/v1/messages", anthropic(prompt), to: server).body)
        #expect(anthropic.types == ["tool_use", "tool_use"])
        #expect(anthropic.blocks.map(\.index) == [0, 1] && anthropic.blocks.map(\.name) == ["get_time", "get_weather"])
        #expect(anthropic.names.filter { $0 == "content_block_stop" }.count == 2)
        #expect(anthropic.stop == "tool_use")

        // Parallel calls turned off: the first only.
        let one = try openAIReply(post("/v1/chat/completions", self.openAI(prompt, extra: #","parallel_tool_calls":false"#), to: server).body)
        #expect(one.calls.map(\.name) == ["get_time"])
        let single = try anthropicReply(post("/v1/messages", self.anthropic(prompt, extra: #","tool_choice":{"type":"auto","disable_parallel_tool_use":true}"#), to: server).body)
        #expect(single.blocks.map(\.name) == ["get_time"])
    }

    @Test func aReplyThatSpeaksThenCalls() throws {
        let server = try server()
        let prompt = "let me check the weather in Rome"
        let openAI = try openAIReply(post("/v1/chat/completions", openAI(prompt), to: server).body)
        #expect(openAI.text == "Let me check that.")
        #expect(openAI.calls.map(\.name) == ["get_weather"] && openAI.finish == "tool_calls")
        let anthropic = try anthropicReply(post("/v1/messages", anthropic(prompt), to: server).body)
        #expect(anthropic.types == ["text", "tool_use"])
        #expect(anthropic.blocks[0].arguments == "Let me check that.")
        #expect(anthropic.blocks[1].index == 1)
        #expect(try JSON(parsing: anthropic.blocks[1].arguments)["city"]?.string == "Rome")
        #expect(anthropic.stop == "tool_use")
    }

    // MARK: tool_choice

    @Test func toolChoiceNoneNeverCalls() throws {
        let server = try server()
        let openAI = try openAIReply(post("/v1/chat/completions", openAI("weather in Paris", extra: #","tool_choice":"none""#), to: server).body)
        #expect(openAI.calls.isEmpty && openAI.finish == "stop" && openAI.text.hasPrefix("You said: weather in Paris"))
        let anthropic = try anthropicReply(post("/v1/messages", anthropic("weather in Paris", extra: #","tool_choice":{"type":"none"}"#), to: server).body)
        #expect(anthropic.types == ["text"] && anthropic.stop == "end_turn")
    }

    /// The mock and the built-in agent hear a request for a tool alike (one reading, `ToolIntent`):
    /// the tool the agent calls is the mock's first call, with the same arguments.
    @Test(arguments: ["what's the weather in Paris", "weather in new york in fahrenheit for 3 days", "please call get_time",
                      "what time is it in Tokyo, and the weather there?", "the weather in Rio de Janeiro, detailed"])
    func theMockCallsWhatTheBuiltinAgentCalls(prompt: String) throws {
        let server = try server()
        let mock = try openAIReply(post("/v1/chat/completions", openAI(prompt), to: server).body)
        let tools = try [Self.weather, Self.time].map { text in
            let tool = try JSON(parsing: text)
            return ToolDefinition(name: tool["name"]!.string!, parameters: tool["schema"]!)
        }
        guard case .call(let name, let arguments) = BuiltinAgent().respond(to: [ChatMessage(role: .user, text: prompt)], tools: tools) else {
            return #expect(mock.calls.isEmpty, "the agent calls nothing for \(prompt)")
        }
        #expect(mock.calls.first?.name == name, "\(prompt)")
        #expect(try mock.calls.first.map { try JSON(parsing: $0.arguments) } == JSON(parsing: arguments), "\(prompt)")
    }

    @Test func toolChoiceRequiredCallsTheFirstToolIfNoneIsNamed() throws {
        let server = try server()
        let openAI = try openAIReply(post("/v1/chat/completions", openAI("hello there", extra: #","tool_choice":"required""#), to: server).body)
        #expect(openAI.calls.map(\.name) == ["get_weather"] && openAI.finish == "tool_calls")
        // No place in the prompt: the built-in agent's reading (ToolIntent) takes its last uncommon word.
        #expect(try JSON(parsing: openAI.calls[0].arguments)["city"]?.string == "hello", "no place in the prompt")
        // A named tool still wins.
        let named = try openAIReply(post("/v1/chat/completions", self.openAI("what time is it", extra: #","tool_choice":"required""#), to: server).body)
        #expect(named.calls.map(\.name) == ["get_time"])
        let anthropic = try anthropicReply(post("/v1/messages", anthropic("hello there", extra: #","tool_choice":{"type":"any"}"#), to: server).body)
        #expect(anthropic.blocks.map(\.name) == ["get_weather"] && anthropic.stop == "tool_use")
        // Without one, auto answers in text.
        let auto = try openAIReply(post("/v1/chat/completions", self.openAI("hello there", extra: #","tool_choice":"auto""#), to: server).body)
        #expect(auto.calls.isEmpty && auto.finish == "stop")
    }

    @Test func aNamedToolChoiceCallsThatTool() throws {
        let server = try server()
        let openAI = try openAIReply(post("/v1/chat/completions",
                                          openAI("the weather in Oslo", extra: #","tool_choice":{"type":"function","function":{"name":"get_time"}}"#), to: server).body)
        #expect(openAI.calls.map(\.name) == ["get_time"] && openAI.finish == "tool_calls")
        let anthropic = try anthropicReply(post("/v1/messages", anthropic("the weather in Oslo", extra: #","tool_choice":{"type":"tool","name":"get_time"}"#), to: server).body)
        #expect(anthropic.blocks.map(\.name) == ["get_time"])
    }

    // MARK: After a tool result

    @Test func openAIAnswersAToolResultWithItsOutput() throws {
        let server = try server()
        let body = #"""
            {"model":"m","stream":true,"tools":\#(Self.openAITools([Self.weather, Self.time])),"messages":[
             {"role":"user","content":"weather in Paris and the time"},
             {"role":"assistant","content":null,"tool_calls":[
               {"id":"call_w","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
               {"id":"call_t","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
             {"role":"tool","tool_call_id":"call_w","content":"18 C and sunny"},
             {"role":"tool","tool_call_id":"call_t","content":[{"type":"text","text":"half past\nnine"}]}]}
            """#
        let reply = try openAIReply(post("/v1/chat/completions", body, to: server).body)
        #expect(reply.calls.isEmpty && reply.finish == "stop")
        #expect(reply.text == #"The get_weather tool says: "18 C and sunny". The get_time tool says: "half past nine"."#)
    }

    @Test func anthropicAnswersAToolResultWithItsOutput() throws {
        let server = try server()
        let long = String(repeating: "abcdefghij", count: 40)
        let body = #"""
            {"model":"m","max_tokens":100,"stream":true,"tools":\#(Self.anthropicTools([Self.weather])),"messages":[
             {"role":"user","content":"weather in Paris"},
             {"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
             {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"\#(long)"}]}]}]}
            """#
        let reply = try anthropicReply(post("/v1/messages", body, to: server).body)
        #expect(reply.types == ["text"] && reply.stop == "end_turn")
        let text = try #require(reply.blocks.first?.arguments)
        #expect(text == "The get_weather tool says: \"\(long.prefix(200))…\".", "the output is quoted, cut to 200 characters")

        // A string result, an error, and an id with no call before it.
        let failed = #"""
            {"model":"m","max_tokens":100,"stream":false,"messages":[
             {"role":"user","content":"weather"},
             {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_x","content":"timeout","is_error":true}]}]}
            """#
        let whole = try JSON(parsing: post("/v1/messages", failed, to: server).body)
        #expect(whole["content"]?.array?.first?["text"]?.string == #"The tool failed: "timeout"."#)
    }

    // MARK: Whole answers

    @Test func nonStreamedRepliesCarryTheCalls() throws {
        let server = try server()
        let openAI = try JSON(parsing: post("/v1/chat/completions", openAI("weather in Paris", stream: false), to: server).body)
        let choice = try #require(openAI["choices"]?.array?.first)
        #expect(choice["finish_reason"]?.string == "tool_calls")
        #expect(choice["message"]?["role"]?.string == "assistant" && choice["message"]?["content"]?.isNull == true)
        let call = try #require(choice["message"]?["tool_calls"]?.array?.first)
        #expect(call["id"]?.string?.hasPrefix("call_") == true && call["type"]?.string == "function")
        #expect(call["function"]?["name"]?.string == "get_weather")
        let arguments = try JSON(parsing: call["function"]?["arguments"]?.string ?? "")
        #expect(arguments["city"]?.string == "Paris")

        let anthropic = try JSON(parsing: post("/v1/messages", anthropic("weather in Paris", stream: false), to: server).body)
        #expect(anthropic["stop_reason"]?.string == "tool_use")
        let block = try #require(anthropic["content"]?.array?.first)
        #expect(block["type"]?.string == "tool_use" && block["name"]?.string == "get_weather" && block["id"]?.string?.hasPrefix("toolu_") == true)
        #expect(block["input"]?["city"]?.string == "Paris")
    }

    @Test func theCallKeepsTheTimeToFirstToken() throws {
        let server = try server()
        let started = ContinuousClock.now
        let reply = try openAIReply(post("/v1/chat/completions", openAI("weather in Paris"), headers: "X-Mock-First-Token-Ms: 200\r\n", to: server).body)
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        #expect(reply.calls.count == 1)
    }

    // MARK: Bad input

    static let badOpenAI: [(String, String)] = [
        (#""tools":{"type":"function"}"#, "'tools' must be an array"),
        (#""tools":[1]"#, "'tools[0]' must be an object"),
        (#""tools":[{"type":"function"}]"#, "'tools[0].function' must be an object"),
        (#""tools":[{"type":"function","function":{"description":"x"}}]"#, "'tools[0].function.name' is missing"),
        (#""tools":[{"type":"function","function":{"name":7}}]"#, "'tools[0].function.name' must be"),
        (#""tools":[{"type":"function","function":{"name":"get weather"}}]"#, "'tools[0].function.name' must be"),
        (#""tools":[{"type":"function","function":{"name":"f","parameters":[]}}]"#, "parameters' must be a JSON Schema object"),
        (#""tools":[{"type":"retrieval"}]"#, "'tools[0].type' must be"),
        (#""tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]"#, "unique"),
        (#""tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"sometimes""#, "'tool_choice' must be"),
        (#""tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}"#, "not among the declared tools"),
        (#""tool_choice":"required""#, "no tools are declared"),
        (#""tools":[{"type":"function","function":{"name":"f"}}],"parallel_tool_calls":"yes""#, "'parallel_tool_calls'"),
    ]

    @Test(arguments: badOpenAI.indices)
    func badOpenAIToolDefinitionsAreA400(_ i: Int) throws {
        let (fields, message) = Self.badOpenAI[i]
        let server = try server()
        let response = try post("/v1/chat/completions", #"{"model":"m","stream":true,\#(fields),"messages":[{"role":"user","content":"weather"}]}"#, to: server)
        #expect(response.status == 400)
        let error = try JSON(parsing: response.body)["error"]
        #expect(error?["type"]?.string == "invalid_request_error")
        #expect(error?["message"]?.string?.contains(message) == true, "\(error?["message"]?.string ?? "-")")
    }

    static let badAnthropic: [(String, String)] = [
        (#""tools":"get_weather""#, "'tools' must be an array"),
        (#""tools":[{"description":"no name","input_schema":{"type":"object"}}]"#, "'tools[0].name' is missing"),
        (#""tools":[{"name":"f","input_schema":"object"}]"#, "'tools[0].input_schema' must be"),
        (#""tools":[{"name":"f"}],"tool_choice":"any""#, "'tool_choice' must be an object"),
        (#""tools":[{"name":"f"}],"tool_choice":{"type":"tool"}"#, "needs a 'name'"),
        (#""tools":[{"name":"f"}],"tool_choice":{"type":"sometimes"}"#, "'tool_choice.type' must be"),
    ]

    @Test(arguments: badAnthropic.indices)
    func badAnthropicToolDefinitionsAreA400(_ i: Int) throws {
        let (fields, message) = Self.badAnthropic[i]
        let server = try server()
        let response = try post("/v1/messages", #"{"model":"m","max_tokens":9,"stream":true,\#(fields),"messages":[{"role":"user","content":"weather"}]}"#, to: server)
        #expect(response.status == 400)
        #expect(try JSON(parsing: response.body)["error"]?["message"]?.string?.contains(message) == true, "\(response.body)")
    }

    @Test func aToolResultWithoutItsIdIsA400AndTheServerGoesOn() throws {
        let server = try server()
        let openAI = try post("/v1/chat/completions", #"{"messages":[{"role":"user","content":"hi"},{"role":"tool","content":"x"}]}"#, to: server)
        #expect(openAI.status == 400 && openAI.body.contains("tool_call_id"))
        let anthropic = try post("/v1/messages", #"{"max_tokens":9,"messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}"#, to: server)
        #expect(anthropic.status == 400 && anthropic.body.contains("tool_use_id"))
        // Odd but well-formed input is answered, not refused: empty tools, schemas without
        // properties, nested type lists.
        let odd = #"{"stream":true,"tools":[{"type":"function","function":{"name":"ping"}},{"type":"function","function":{"name":"set_mode","parameters":{"properties":{"mode":{"type":["null","string"],"enum":[null,"fast"]},"n":{"type":"number","maximum":0}}}}}],"messages":[{"role":"user","content":"ping, and set mode"}]}"#
        let reply = try openAIReply(post("/v1/chat/completions", odd, to: server).body)
        #expect(reply.calls.map(\.name) == ["ping", "set_mode"])
        #expect(reply.calls.first?.arguments == "{}")
        #expect(try JSON(parsing: reply.calls[1].arguments) == .object([("mode", .null), ("n", .int(0))]))
        let empty = try openAIReply(post("/v1/chat/completions", #"{"stream":true,"tools":[],"messages":[{"role":"user","content":"hi"}]}"#, to: server).body)
        #expect(empty.calls.isEmpty && empty.finish == "stop")
    }
}
