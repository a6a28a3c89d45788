import JSON
import Loop
import Testing
import TestSupport

/// `parley serve` against `parley mock-llm --fault …`, as a new user would meet a failing model: a
/// 500 or 429 is retried (Retry-After honoured) or handed to the fallback, a stalled or dropped
/// stream is cut, and when nothing works the turn is answered with the apology, within the budget.
@Suite struct UpstreamFaultTests {
    static let apology = "Sorry, I can't answer right now. Please try again in a moment."

    func mock(_ fault: String) throws -> ServerProcess {
        try ServerProcess(command: "mock-llm", arguments: "--first-token-ms 5 --tokens-per-second 200 --reply-tokens 6 --fault \(fault)")
    }

    func serve(_ primary: ServerProcess, _ extra: String = "") throws -> ServerProcess {
        try ServerProcess(arguments: "--llm openai --llm-base-url http://127.0.0.1:\(primary.port)/v1 --llm-model m --transcriber none --synthesizer none \(extra)",
                          environment: "OPENAI_API_KEY=sk-fault-test")
    }

    /// One text turn: the reply's text, how the response ended, and how long it took.
    func turn(_ server: ServerProcess) throws -> (text: String, status: String, seconds: Double, errors: [String]) {
        let client = try TestClient(port: server.port)
        #expect(try client.upgrade(path: "/v1/realtime").status == 101)
        _ = try client.readEvent()
        let started = MonotonicClock.nanoseconds()
        try client.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}}"#.utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create","response":{"output_modalities":["text"]}}"#.utf8)))
        var text = ""
        var errors: [String] = []
        while true {
            let event = try client.readEvent()
            if event["type"]?.string == "response.output_text.delta" { text += event["delta"]?.string ?? "" }
            if event["type"]?.string == "error" { errors.append(event["error"]?["code"]?.string ?? "") }
            if event["type"]?.string == "response.done" {
                return (text, event["response"]?["status"]?.string ?? "", MonotonicClock.seconds(since: started), errors)
            }
        }
    }

    @Test func a500IsRetriedThenHandedToTheFallback() throws {
        let broken = try mock("500"), healthy = try mock("none")
        let server = try serve(broken, "--llm-fallback openai --llm-fallback-base-url http://127.0.0.1:\(healthy.port)/v1 --llm-fallback-model m")
        let reply = try turn(server)
        #expect(reply.status == "completed" && !reply.text.isEmpty && reply.text != Self.apology && reply.errors.isEmpty, "\(reply)")
        #expect(server.metric("parley_upstream_retries_total") == 2 && server.metric("parley_upstream_fallbacks_total") == 1)
    }

    @Test func a429HonoursRetryAfterThenApologisesWithinTheBudget() throws {
        let limited = try mock("429")
        let server = try serve(limited, "--llm-turn-budget 3")
        let reply = try turn(server)
        // Retry-After: 1, twice, then the third attempt's failure leaves no upstream to try.
        #expect(reply.text == Self.apology && reply.status == "completed" && reply.errors == ["rate_limited"], "\(reply)")
        #expect(reply.seconds >= 2 && reply.seconds < 4, "\(reply.seconds) s")
        #expect(server.metric("parley_upstream_retries_total") == 2 && server.metric("parley_upstream_apologies_total") == 1)
    }

    @Test(arguments: ["stall", "drop"])
    func aReplyThatStopsMidwayIsCutAndApologisedFor(fault: String) throws {
        let failing = try mock(fault)
        let server = try serve(failing, "--llm-stall-seconds 1")
        let reply = try turn(server)
        // What was said stays; the apology follows it, and the caller is not left waiting a minute.
        #expect(reply.text.hasSuffix(" " + Self.apology) && reply.text.count > Self.apology.count + 1, "\(reply)")
        #expect(reply.seconds < 3, "\(reply.seconds) s")
        if fault == "stall" { #expect(server.metric("parley_upstream_stalls_total") == 1) }
    }

    @Test func withoutAnApologyTheResponseFailsWithTheError() throws {
        let broken = try mock("500")
        let server = try serve(broken, "--llm-turn-budget 1 --llm-apology ''")
        let reply = try turn(server)
        #expect(reply.status == "failed" && reply.text.isEmpty, "\(reply)")
    }
}
