import JSON
import Models
import Session
import Testing
import TestSupport

/// The built-in agent calling the client's function over a Realtime session: the call's events,
/// then the answer made from the function's output (the agent itself: ModelsTests'
/// BuiltinAgentToolTests).
@Suite struct BuiltinAgentSessionTests {
    @Test func aRealtimeSessionGetsTheCallAndTheAnswer() throws {
        let server = try TestServer({ $0.loops = 1 }, routes: { routes in
            RealtimeEndpoint(model: BuiltinModel(wordInterval: 0.001), modelName: "test").install(on: &routes)
        })
        let client = try server.client()
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        #expect(try client.readEvent()["type"]?.string == "session.created")
        let tool = #"{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}"#
        try client.send(TestClient.frame(0x1, Array(#"{"type":"session.update","session":{"tools":[\#(tool)]}}"#.utf8)))
        #expect(try client.readEvent()["type"]?.string == "session.updated")
        try client.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"what's the weather in Paris"}]}}"#.utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        let first = try client.readEvents(until: "response.done").events
        #expect(first.filter { $0["type"]?.string == "response.function_call_arguments.delta" }.count == 2)
        let done = try #require(first.first { $0["type"]?.string == "response.function_call_arguments.done" })
        #expect(done["name"]?.string == "get_weather")
        #expect(done["arguments"]?.string == #"{"city":"Paris"}"#)
        let callID = try #require(done["call_id"]?.string)
        #expect(first.last?["response"]?["status"]?.string == "completed")

        try client.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.create","item":{"type":"function_call_output","call_id":"\#(callID)","output":"{\"temperature_c\":21,\"sky\":\"clear\"}"}}"#.utf8)))
        #expect(try client.readEvent()["item"]?["type"]?.string == "function_call_output")
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create"}"#.utf8)))
        let second = try client.readEvents(until: "response.done").events
        let text = second.filter { $0["type"]?.string == "response.output_text.delta" }.compactMap { $0["delta"]?.string }.joined()
        #expect(text == "It's 21 degrees Celsius and clear in Paris.")
        #expect(second.last?["response"]?["status"]?.string == "completed")
    }
}
