import JSON
import Models
import Server
import Testing
@testable import Session
@testable import SessionEngine

/// A session's report from the facts its engine tells (what the driver feeds it): the turns with
/// what each side said, the tool called and how long it took, usage, errors, a cut reply, and
/// nothing secret.
@Suite struct SessionReportTests {
    /// Feeds every fact in `actions` to `report`, at `now`.
    func feed(_ report: SessionReport, _ actions: [SessionAction], at now: UInt64 = 1_000_000_000) {
        for case .fact(let fact) in actions { report.observe(fact, at: now) }
    }

    /// `response.create`, its events fed; the response's id.
    func respond(_ h: inout EngineHarness, _ report: SessionReport) throws -> String {
        let created = h.client(#"{"type":"response.create"}"#)
        feed(report, created)
        return try created.model().id
    }

    @Test func aTypedTurnAndAToolCallAreReportedWithTheirWordsUsageAndDuration() throws {
        var h = try EngineHarness.manual()
        let report = SessionReport()
        feed(report, h.start())
        feed(report, h.client(#"{"type":"session.update","session":{"tools":[\#(SessionEngineToolTests.weather)]}}"#))
        feed(report, h.say("what's the weather in Paris"))
        let first = try respond(&h, report)
        feed(report, h.engine.handle(.modelToolCallStarted(responseID: first, index: 0, callID: "call_1", name: "get_weather")))
        feed(report, h.engine.handle(.modelToolCallArguments(responseID: first, index: 0, delta: #"{"city":"Paris"}"#)))
        feed(report, h.finish(first, usage: Usage(inputTokens: 30, outputTokens: 5), reason: .toolCalls))
        // The client answers the call 250 ms later, and asks for the answer.
        feed(report, h.client(#"{"type":"conversation.item.create","item":{"type":"function_call_output","call_id":"call_1","output":"{\"sky\":\"clear\"}"}}"#),
             at: 1_250_000_000)
        let second = try respond(&h, report)
        feed(report, h.delta(second, "It is clear in Paris."))
        feed(report, h.finish(second, usage: Usage(inputTokens: 40, outputTokens: 7)))
        feed(report, h.client(#"{"type":"response.cancel","event_id":"not_now"}"#))

        let json = report.json(sessionID: "sess_1", tenant: "acme", model: "gpt-realtime", endpoint: "/v1/realtime", startedAt: 1_700_000_000,
                               ending: .init(closeCode: 1000, reason: "closed by the client", seconds: 12.5, audioInSeconds: 0))
        let turns = try #require(json["turns"]?.array)
        #expect(turns.count == 2, "\(json.pretty)")
        #expect(turns[0]["user"]?.string == "what's the weather in Paris")
        let call = try #require(turns[0]["tool_calls"]?.array?.first, "\(json.pretty)")
        #expect(call["name"]?.string == "get_weather" && call["arguments"]?.string == #"{"city":"Paris"}"#)
        #expect(call["seconds"]?.double == 0.25, "\(call)")
        #expect(turns[1]["reply"]?.string == "It is clear in Paris." && turns[1]["status"]?.string == "completed")
        #expect(json["usage"]?["input_tokens"]?.int == 70 && json["usage"]?["output_tokens"]?.int == 12)
        #expect(json["ended"]?["code"]?.int == 1000 && json["tenant"]?.string == "acme")
        #expect(json["errors_total"]?.int == 1 && json["errors"]?.array?.first?["code"]?.string != nil, "the cancel with nothing to cancel")
    }

    @Test func aResumeIsCountedAndItsTokenNeverKept() {
        let report = SessionReport()
        report.observe(.sessionResumed, at: 1)
        let json = report.json(sessionID: "sess_1", tenant: nil, model: "m", endpoint: "/v1/realtime", startedAt: 0,
                               ending: .init(closeCode: 1006, reason: SessionEnding(WebSocketCloseCode.abnormal).reportReason, seconds: 1, audioInSeconds: 0))
        #expect(json["resumes"]?.int == 1)
        #expect(!json.description.contains("rt_"), "\(json.description)")
        #expect(json["ended"]?["reason"]?.string == "the connection dropped")
    }

    @Test func aLongSessionKeepsItsLatestTurnsAndClipsLongText() {
        let report = SessionReport()
        let long = String(repeating: "word ", count: 1_000)
        for index in 0..<(SessionReport.maxTurns + 5) {
            report.observe(.userItem(itemID: "item_\(index)", text: index == SessionReport.maxTurns + 4 ? long : "turn \(index)"), at: 1)
        }
        #expect(report.turns.count == SessionReport.maxTurns && report.droppedTurns == 5)
        #expect(report.turns.first?.user == "turn 5")
        #expect((report.turns.last?.user?.utf8.count ?? 0) <= SessionReport.maxTextBytes)
    }
}
