import JSON
import Testing
@testable import parley_load

@Suite struct EvalScriptTests {
    @Test func aScriptReadsTopToBottomWithExpectationsOnTheTurnAbove() throws {
        let script = try EvalScript(parsing: """
            # a comment
            name Weather
            voice joe
            session {"instructions": "Be brief.", "audio": {"input": {"turn_detection": {"eagerness": "high"}}}}
            tool get_weather {"temperature_c": 18}

            user says What is the weather in Paris?
            expect transcript contains Paris|paris france
            expect tool get_weather with city=Paris, units = metric
            expect reply starts within 1.5 s
            user interrupts after 800 ms en-gb+f3: Wait, Rome.
            expect reply not cut
            pause 500ms
            user types Thanks
            expect no tool
            session {"instructions": "Be long."}
            """, name: "weather.eval")
        #expect(script.name == "Weather")
        #expect(script.toolOutputs == ["get_weather": #"{"temperature_c": 18}"#])
        #expect(script.steps.count == 5)
        guard case .turn(let first) = script.steps[0], case .turn(let second) = script.steps[1], case .pause(500) = script.steps[2],
              case .turn(let third) = script.steps[3], case .update(let later) = script.steps[4] else {
            Issue.record("steps: \(script.steps)")
            return
        }
        #expect(first.input == .spoken("What is the weather in Paris?", .joe))
        #expect(first.line == 7 && first.overPreviousAfterMs == nil)
        #expect(first.expectations.map(\.kind) == [
            .transcriptContains(["Paris", "paris france"]),
            .tool("get_weather", [.init(key: "city", value: "Paris"), .init(key: "units", value: "metric")]),
            .replyStartsWithin(ms: 1_500),
        ])
        #expect(first.expectations.map(\.line) == [8, 9, 10])
        #expect(second.input == .spoken("Wait, Rome.", .enGB) && second.overPreviousAfterMs == 800)
        #expect(second.expectations.map(\.kind) == [.replyNotCut])
        #expect(third.input == .typed("Thanks") && third.expectations.map(\.kind) == [.noTool])
        #expect(later["instructions"]?.string == "Be long.")
    }

    @Test func theSessionIsMergedOverTheDefaultsObjectIntoObject() throws {
        let script = try EvalScript(parsing: """
            session {"audio": {"input": {"turn_detection": {"type": "server_vad"}}}, "instructions": "x"}
            user types hi
            """, name: "s")
        let session = script.openingSession
        #expect(session["instructions"]?.string == "x")
        #expect(session["audio"]?["input"]?["turn_detection"]?["type"]?.string == "server_vad")
        // Kept from the defaults beside the override.
        #expect(session["audio"]?["input"]?["turn_detection"]?["create_response"]?.bool == true)
        #expect(session["audio"]?["input"]?["format"]?["rate"]?.int == 24_000)
        #expect(script.serverDetectsTurns)
        let manual = try EvalScript(parsing: #"session {"audio": {"input": {"turn_detection": null}}}"# + "\nuser types hi", name: "m")
        #expect(!manual.serverDetectsTurns)
    }

    @Test func pausesInsideSpeechSplitItIntoParts() throws {
        let parts = try #require(EvalScript.spokenParts("I was wondering [pause 700 ms] if you could [pause 1 s] help"))
        #expect(parts.map(\.words) == ["I was wondering", "if you could", "help"])
        #expect(parts.map(\.pauseMs) == [700, 1_000, 0])
        #expect(EvalScript.spokenParts("[pause 1 s] hello") == nil)
        #expect(EvalScript.spokenParts("hello [pause soon] there") == nil)
        #expect(EvalScript.spokenParts("hello [pause 1 s") == nil)
        #expect(EvalScript.milliseconds("1.5 s") == 1_500 && EvalScript.milliseconds("800ms") == 800 && EvalScript.milliseconds("-1 s") == nil)
    }

    @Test(arguments: [
        ("user says", 1, "nothing to say"),
        ("expect reply cut", 1, "expect comes after the user turn"),
        ("user says x\nexpect reply is nice", 2, "unknown expectation"),
        ("user says x\nexpect tool get_weather with city", 2, "is not key=value"),
        ("voice robot\nuser says x", 1, "unknown voice \"robot\""),
        ("user says robot: x", 1, "unknown voice \"robot\""),
        ("session [1]\nuser says x", 1, "JSON object"),
        ("session {\nuser says x", 1, "JSON object"),
        ("user interrupts after 500 ms stop", 1, "comes right after the user turn"),
        ("user says a\npause 1 s\nuser interrupts after 500 ms stop", 3, "comes right after the user turn"),
        ("user says a\nuser interrupts after soon stop", 2, "is not a duration"),
        ("user sings x", 1, "user says, user plays"),
        ("shout x", 1, "unknown step \"shout\""),
        ("pause forever\nuser says x", 1, "pause takes a duration"),
        ("# only a comment", 0, "no user turn"),
    ])
    func badLinesAreRefusedNamingTheLineAndWhy(text: String, line: Int, reason: String) {
        do {
            _ = try EvalScript(parsing: text, name: "bad")
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.line == line)
            #expect(error.reason.contains(reason), "\(error)")
        }
    }
}

@Suite struct EvalJudgeTests {
    private func expect(_ kind: EvalScript.Expectation.Kind) -> EvalScript.Expectation {
        EvalScript.Expectation(kind: kind, line: 1, text: "x")
    }

    private let weather = EvalObservation(
        heard: "What's the weather in Paris today?",
        replies: [
            .init(status: "completed", text: "", toolCalls: [.init(name: "get_weather", arguments: .object([("city", .string("paris")), ("days", .int(2))]))]),
            .init(status: "completed", text: "It's 18 degrees and light rain in Paris.", toolCalls: []),
        ],
        earlyReplies: 0, replyStartMs: 640)

    @Test func wordsAreMatchedWholeAndInOrderWhateverTheCaseAndPunctuation() {
        #expect(EvalJudge.contains("It's 18 degrees, and light rain.", "LIGHT RAIN"))
        #expect(EvalJudge.contains("What is 12 times 7?", "12 times 7"))
        #expect(!EvalJudge.contains("What is 12 times 7?", "7 times 12"))
        #expect(!EvalJudge.contains("Parisian", "paris"))
        #expect(!EvalJudge.contains("anything", ""))
    }

    @Test func aTurnWithAToolCallAndItsAnswerPassesWhatItDid() {
        for kind: EvalScript.Expectation.Kind in [
            .transcriptContains(["Rome", "paris"]), .replyContains(["18"]), .replyLacks(["snow"]),
            .tool("get_weather", [.init(key: "city", value: "Paris"), .init(key: "days", value: "2.0")]),
            .replyStartsWithin(ms: 640), .replyNotCut, .noEarlyReply,
        ] {
            let verdict = EvalJudge.judge(expect(kind), weather)
            #expect(verdict.passed, "\(kind): \(verdict.detail)")
        }
    }

    @Test func andFailsWhatItDidNotSayingWhatWasSeen() {
        let cases: [(EvalScript.Expectation.Kind, String)] = [
            (.transcriptContains(["London"]), #"heard "What's the weather in Paris today?""#),
            (.replyContains(["sunny"]), #"replied "It's 18 degrees and light rain in Paris.""#),
            (.replyLacks(["light rain"]), "replied"),
            (.tool("get_weather", [.init(key: "city", value: "Rome")]), #"called get_weather({"city":"paris","days":2})"#),
            (.tool("get_time", []), "called get_weather"),
            (.noTool, "called get_weather"),
            (.replyStartsWithin(ms: 500), "640 ms after the user's last word"),
            (.replyCut, "response(s) completed, completed"),
            (.noReply, "replied"),
        ]
        for (kind, detail) in cases {
            let verdict = EvalJudge.judge(expect(kind), weather)
            #expect(!verdict.passed, "\(kind)")
            #expect(verdict.detail.contains(detail), "\(kind): \(verdict.detail)")
        }
    }

    @Test func aCutReplyAndSilenceAndAnEarlyReplyAreSeenForWhatTheyAre() {
        let cut = EvalObservation(heard: nil, replies: [.init(status: "cancelled", text: "I'm Parley's", toolCalls: [])], earlyReplies: 1)
        #expect(EvalJudge.judge(expect(.replyCut), cut).passed)
        #expect(!EvalJudge.judge(expect(.replyNotCut), cut).passed)
        #expect(!EvalJudge.judge(expect(.noEarlyReply), cut).passed)
        #expect(EvalJudge.judge(expect(.transcriptContains(["x"])), cut).detail == "no transcript of the user's words came")
        #expect(EvalJudge.judge(expect(.replyStartsWithin(ms: 9_000)), cut).detail == "no reply audio or text came")
        let silent = EvalObservation()
        #expect(EvalJudge.judge(expect(.noReply), silent).passed)
        #expect(!EvalJudge.judge(expect(.replyNotCut), silent).passed)
        let broken = EvalObservation(replies: [.init(status: "completed", text: "84", toolCalls: [])], problem: "no reply audio came to speak over")
        let verdict = EvalJudge.judge(expect(.replyContains(["84"])), broken)
        #expect(!verdict.passed && verdict.detail == "no reply audio came to speak over")
    }

    @Test func aResponseDoneIsReadForItsWordsAndCalls() throws {
        let done = try JSON(parsing: """
            {"id":"r1","status":"completed","output":[
              {"type":"function_call","name":"get_weather","call_id":"c1","arguments":"{\\"city\\":\\"Paris\\"}"},
              {"type":"message","content":[{"type":"output_audio","transcript":"It is 18 degrees."}]},
              {"type":"message","content":[{"type":"output_text","text":"Anything else?"}]}]}
            """)
        let reply = EvalRun.reply(done)
        #expect(reply.status == "completed")
        #expect(reply.text == "It is 18 degrees. Anything else?")
        #expect(reply.toolCalls == [.init(name: "get_weather", arguments: .object([("city", .string("Paris"))]))])
        #expect(EvalRun.reply(nil) == .init(status: nil, text: "", toolCalls: []))
    }

    @Test func junitCarriesEveryExpectationWithFailuresEscaped() {
        let verdicts = [
            EvalVerdict(expectation: .init(kind: .replyCut, line: 4, text: "reply cut"), passed: true, detail: "response(s) cancelled"),
            EvalVerdict(expectation: .init(kind: .replyContains(["<b>"]), line: 5, text: "reply contains <b>"), passed: false, detail: "replied \"a & b\"\u{1}"),
        ]
        let xml = JUnitReport.xml([
            .init(name: "Barge-in", file: "e/b.eval", verdicts: verdicts, error: nil, seconds: 2.5),
            .init(name: "Broken", file: "e/x.eval", verdicts: [], error: "line 3: unknown step", seconds: 0),
        ])
        #expect(xml.contains(#"<testsuites name="parley-load eval" tests="3" failures="1" errors="1" time="2.500">"#))
        #expect(xml.contains(#"<testcase classname="Barge-in" name="line 4: expect reply cut"><system-out>response(s) cancelled</system-out></testcase>"#))
        #expect(xml.contains(#"name="line 5: expect reply contains &lt;b&gt;"><failure message="replied &quot;a &amp; b&quot;"/>"#))
        #expect(xml.contains(#"<testcase classname="Broken" name="run"><error message="line 3: unknown step"/></testcase>"#))
    }
}

@Suite struct NumberWordsTests {
    @Test(arguments: [
        ("twelve times seven", "12 times 7"),
        ("What is 12 times seven?", "what is 12 times 7"),
        ("three hundred and forty five", "345"),
        ("one hundred eight", "108"),
        ("two thousand and five", "2005"),
        ("twenty five thousand three hundred", "25300"),
        ("a hundred", "a 100"),
        ("four five six seven", "4 5 6 7"),
        ("twenty twenty", "20 20"),
        ("rock and roll and five", "rock and roll and 5"),
        ("eighty four.", "84"),
    ])
    func spelledNumbersFoldToDigits(text: String, folded: String) {
        #expect(EvalJudge.words(text).joined(separator: " ") == folded)
    }
}
