import JSON
import Loop
import MockLLM
@testable import Models
import Server
import Session
import Testing
import TestSupport
import Upstream

/// A function call end to end over real sockets: a Realtime session declares a tool, the model
/// upstream (mock-llm, in the OpenAI and the Anthropic format) calls it, the client answers with the
/// output, and the model's answer uses it.
@Suite struct ToolRoundTripTests {
    func server(_ format: String) throws -> TestServer {
        let box = ModelBox()
        let server = try TestServer({ $0.loops = 2 }, routes: { routes in
            var options = MockLLMOptions()
            options.timeToFirstToken = 0.005
            options.tokensPerSecond = 2000
            MockLLMServer.install(on: &routes, options: options)
            RealtimeEndpoint(model: box, modelName: "test-model").install(on: &routes)
        })
        let base = UpstreamURL("http://127.0.0.1:\(server.port)/v1")!
        box.set(format == "anthropic" ? AnthropicModel(baseURL: base, model: "claude-mock", apiKey: "k")
                                      : OpenAIChatModel(baseURL: base, model: "gpt-mock", apiKey: "k"))
        return server
    }

    static let tool = #"{"type":"function","name":"get_weather","description":"The weather in a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}"#

    @Test(arguments: ["openai", "anthropic"])
    func theModelCallsTheToolAndAnswersWithItsOutput(format: String) throws {
        let server = try server(format)
        let client = try server.client()
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        #expect(try client.readEvent()["type"]?.string == "session.created")
        try client.send(TestClient.frame(0x1, Array(#"{"type":"session.update","session":{"tools":[\#(Self.tool)],"tool_choice":"auto"}}"#.utf8)))
        let updated = try client.readEvent()
        #expect(updated["session"]?["tools"]?.array?.first?["name"]?.string == "get_weather")

        try client.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"what's the weather in Paris"}]}}"#.utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        let first = try client.readEvents(until: "response.done").events
        let types = first.compactMap { $0["type"]?.string }
        #expect(types.contains("response.function_call_arguments.delta"))
        let done = try #require(first.first { $0["type"]?.string == "response.function_call_arguments.done" })
        #expect(done["name"]?.string == "get_weather")
        let arguments = try JSON(parsing: done["arguments"]?.string ?? "")
        #expect(arguments["city"]?.string == "Paris")
        let callID = try #require(done["call_id"]?.string)
        let response = first.last!["response"]
        #expect(response?["status"]?.string == "completed")
        #expect(response?["output"]?.array?.first?["type"]?.string == "function_call")

        try client.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.create","item":{"type":"function_call_output","call_id":"\#(callID)","output":"{\"temperature_c\":21,\"sky\":\"clear\"}"}}"#.utf8)))
        #expect(try client.readEvent()["item"]?["type"]?.string == "function_call_output")
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        let second = try client.readEvents(until: "response.done").events
        let text = second.filter { $0["type"]?.string == "response.output_text.delta" }.compactMap { $0["delta"]?.string }.joined()
        #expect(text.contains("get_weather") && text.contains("21"), "\(text)")
        #expect(second.last?["response"]?["status"]?.string == "completed")
        // Process-wide series (other tests add to them too): at least this round trip's.
        #expect((server.metric("parley_tool_calls_total{status=\"completed\"}") ?? 0) >= 1)
        #expect((server.metric("parley_tool_client_seconds_count") ?? 0) >= 1)
    }
}
