import JSON
import Loop
@testable import Models
import Server
import Testing
import TestSupport

/// The built-in agent and the client's functions: it calls one when asked plainly for what it
/// does (or when `tool_choice` makes it), with arguments made from the schema and the user's
/// words, streamed as a real model streams a call; and it answers with the function's output.
@Suite struct BuiltinAgentToolTests {
    static let weather = ToolDefinition(name: "get_weather", description: "The weather in a city.", parameters: try! JSON(parsing: #"""
        {"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}
        """#))
    static let time = ToolDefinition(name: "get_time", parameters: try! JSON(parsing: #"{"type":"object","properties":{"timezone":{"type":"string"}}}"#))
    static let tools = ToolSet.of([weather, time])

    static func user(_ text: String) -> ChatMessage { ChatMessage(role: .user, text: text) }

    /// Runs the built-in model's real `stream` on an event loop of its own, on this thread, until
    /// it finishes (or `cancelAfter` events, when the call is cancelled and the loop runs on a
    /// little to show nothing follows); every event it reported.
    func run(_ request: ModelRequest, interval: Double = 0.001, cancelAfter: Int? = nil) throws -> [ModelEvent] {
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        var events: [ModelEvent] = []
        var call: (any ModelCall)?
        call = BuiltinModel(wordInterval: interval).stream(request, on: loop) { event in
            events.append(event)
            switch event {
            case .finished, .failed: loop.stop()
            default:
                if events.count == cancelAfter {
                    call?.cancel()
                    loop.schedule(after: 10 * interval) { loop.stop() }
                }
            }
        }
        let timeout = loop.schedule(after: 5) { loop.stop() }
        loop.run()
        timeout.cancel()
        call = nil
        return events
    }

    func text(_ events: [ModelEvent]) -> String {
        events.map { if case .delta(let text) = $0 { text } else { "" } }.joined()
    }

    func arguments(_ events: [ModelEvent]) -> String {
        events.map { if case .toolCallArgumentsDelta(0, let piece) = $0 { piece } else { "" } }.joined()
    }

    // MARK: Calls, streamed

    @Test func askingForTheWeatherCallsGetWeatherWithTheCity() throws {
        let events = try run(ModelRequest(messages: [Self.user("What's the weather in Paris?")], tools: Self.tools))
        try #require(events.count == 4, "\(events)")
        guard case .toolCallStarted(0, let id, "get_weather") = events[0] else { Issue.record("\(events[0])"); return }
        #expect(id.hasPrefix("call_") && id.count == 29, "\(id)")
        #expect(events[1] == .toolCallArgumentsDelta(index: 0, #"{"city":"#))
        #expect(events[2] == .toolCallArgumentsDelta(index: 0, #""Paris"}"#))
        #expect(events[3] == .finished(nil, reason: .toolCalls))
        #expect(try JSON(parsing: arguments(events)) == JSON.object([("city", .string("Paris"))]))
    }

    @Test func eachCallHasAnIdOfItsOwn() throws {
        let request = ModelRequest(messages: [Self.user("weather in Rome")], tools: Self.tools)
        let ids = try (0..<5).map { _ in
            try run(request).compactMap { if case .toolCallStarted(_, let id, _) = $0 { id } else { nil } }.first
        }
        #expect(Set(ids.compactMap { $0 }).count == 5)
    }

    @Test func theCallIsPacedLikeWords() throws {
        let started = MonotonicClock.nanoseconds()
        let events = try run(ModelRequest(messages: [Self.user("what's the weather in Paris")], tools: Self.tools), interval: 0.02)
        let seconds = Double(MonotonicClock.nanoseconds() - started) / 1e9
        #expect(events.count == 4)
        // Three intervals: start, piece, piece, finished.
        #expect(seconds >= 0.055, "\(seconds) s")
    }

    @Test func aCancelledCallReportsNothingMore() throws {
        let events = try run(ModelRequest(messages: [Self.user("what's the weather in Paris")], tools: Self.tools), interval: 0.005, cancelAfter: 2)
        #expect(events.count == 2, "\(events)")
        if case .toolCallStarted = events[0] {} else { Issue.record("\(events)") }
    }

    // MARK: tool_choice

    @Test func toolChoiceNoneAnswersInWords() throws {
        let messages = [Self.user("What's the weather in Paris?")]
        let events = try run(ModelRequest(messages: messages, tools: Self.tools, toolChoice: .none))
        #expect(!events.contains { if case .toolCallStarted = $0 { true } else { false } })
        #expect(text(events) == BuiltinAgent().reply(to: messages))
        #expect(events.last == .finished(nil, reason: .stop))
    }

    @Test func toolChoiceRequiredCallsTheToolNamedOrElseTheFirst() throws {
        let named = try run(ModelRequest(messages: [Self.user("what time is it in Tokyo")], tools: Self.tools, toolChoice: .required))
        guard case .toolCallStarted(0, _, "get_time") = named.first else { Issue.record("\(named)"); return }
        #expect(try JSON(parsing: arguments(named)) == JSON.object([("timezone", .string("Tokyo"))]))
        #expect(named.last == .finished(nil, reason: .toolCalls))

        let unnamed = try run(ModelRequest(messages: [Self.user("hello there")], tools: Self.tools, toolChoice: .required))
        guard case .toolCallStarted(0, _, "get_weather") = unnamed.first else { Issue.record("\(unnamed)"); return }
        #expect((try JSON(parsing: arguments(unnamed)))["city"]?.string?.isEmpty == false)
        #expect(unnamed.last == .finished(nil, reason: .toolCalls))
    }

    @Test func aNamedFunctionIsCalledWhateverTheMessageSays() throws {
        let events = try run(ModelRequest(messages: [Self.user("What's the weather in Paris?")], tools: Self.tools, toolChoice: .function("get_time")))
        guard case .toolCallStarted(0, _, "get_time") = events.first else { Issue.record("\(events)"); return }
        #expect(events.last == .finished(nil, reason: .toolCalls))
        // And with auto, the same message calls the weather.
        #expect(BuiltinAgent().respond(to: [Self.user("What's the weather in Paris?")], tools: Self.tools.tools, choice: .auto)
                == .call(name: "get_weather", arguments: #"{"city":"Paris"}"#))
    }

    @Test func aMessageThatNamesNoToolIsAnsweredAsWithout() throws {
        // "times" is no request for get_time: arithmetic is the agent's own to answer.
        let messages = [Self.user("what is 12 times 7")]
        for choice in [ToolChoice.auto, .none] {
            let events = try run(ModelRequest(messages: messages, tools: Self.tools, toolChoice: choice))
            #expect(text(events) == "12 times 7 is 84.")
            #expect(events.last == .finished(nil, reason: .stop))
            #expect(events.count == 6, "a word at a time: \(events)")
        }
        // The time, which it cannot tell, is asked of the client's clock.
        #expect(BuiltinAgent().respond(to: [Self.user("What time is it?")], tools: Self.tools.tools) == .call(name: "get_time", arguments: #"{"timezone":""}"#))
        #expect(BuiltinAgent().respond(to: [Self.user("Write me a sonnet about the sea")], tools: Self.tools.tools)
                == .say(BuiltinAgent().reply(to: [Self.user("Write me a sonnet about the sea")])))
    }

    @Test func onlyATypedUserMessageAtTheEndAsksForACall() {
        let agent = BuiltinAgent()
        let tools = Self.tools.tools
        // A spoken turn nobody transcribed asks for nothing.
        #expect(agent.respond(to: [ChatMessage.untranscribedSpeech(milliseconds: 1200)], tools: tools).isSay)
        // Nor does a request answered already.
        #expect(agent.respond(to: [Self.user("weather in Paris"), ChatMessage(role: .assistant, text: "Sunny.")], tools: tools).isSay)
        // Instructions after it change nothing.
        #expect(!agent.respond(to: [Self.user("weather in Paris"), ChatMessage(role: .system, text: "be brief")], tools: tools).isSay)
        // No tools, no call.
        #expect(agent.respond(to: [Self.user("weather in Paris")], tools: [], choice: .required).isSay)
    }

    // MARK: Which tool, which arguments

    @Test(arguments: [
        ("getCurrentWeather", "how's the weather in Oslo?", true),
        ("get_current_weather", "weather please", true),
        ("lookup_order_status", "what's the status of my order 1234", true),
        ("lookup_order_status", "what's your status", false),
        ("search_flights", "any flights to Lisbon?", true),
        ("get_weather", "call get_weather", true),
        ("get_weather", "whether or not", false),
        ("send_email", "send an email to Ada", true),
    ])
    func theToolIsTheOneWhoseNameTheMessageSays(name: String, message: String, calls: Bool) {
        let tool = ToolDefinition(name: name)
        #expect(!ToolIntent.named(in: message, [tool.name]).isEmpty == calls, "\(name): \(message)")
    }

    @Test func ofSeveralToolsTheOneNamedFirstIsCalled() {
        let news = ToolDefinition(name: "get_news")
        #expect(ToolIntent.named(in: "news and then the weather", [Self.weather.name, news.name]) == [1, 0])
        #expect(ToolIntent.named(in: "the weather, then news", [news.name, Self.weather.name]) == [1, 0])
    }

    func call(_ schema: String, _ message: String, name: String = "get_weather") throws -> JSON {
        let tool = ToolDefinition(name: name, parameters: try JSON(parsing: schema))
        guard case .call(name, let arguments) = BuiltinAgent().respond(to: [Self.user(message)], tools: [tool], choice: .required) else {
            Issue.record("no call for \(message)")
            return .null
        }
        return try JSON(parsing: arguments)
    }

    @Test func placesAreTheCapitalisedWordsAfterInForOrTo() throws {
        let schema = #"{"type":"object","properties":{"location":{"type":"string"}}}"#
        #expect(try call(schema, "What's the weather in New York today?")["location"] == .string("New York"))
        #expect(try call(schema, "weather for tomorrow in Rio de Janeiro")["location"] == .string("Rio de Janeiro"))
        #expect(try call(schema, "I want to go to San Francisco", name: "book_trip")["location"] == .string("San Francisco"))
        #expect(try call(schema, "forecast for London, please")["location"] == .string("London"))
        // Recognisers write speech in lowercase.
        #expect(try call(schema, "what's the weather in new york today")["location"] == .string("New York"))
        let destination = #"{"type":"object","properties":{"destination":{"type":"string"},"passengers":{"type":"integer"}},"required":["destination"]}"#
        #expect(try call(destination, "book a flight to Buenos Aires for 3 people", name: "book_flight")
                == .object([("destination", .string("Buenos Aires")), ("passengers", .int(3))]))
    }

    @Test func otherArgumentsComeFromTheSchemaAndTheMessage() throws {
        let schema = #"""
            {"type":"object","properties":{
              "city":{"type":"string"},
              "unit":{"type":"string","enum":["celsius","fahrenheit"]},
              "style":{"type":"string","enum":["brief","detailed"]},
              "days":{"type":"integer","minimum":1,"maximum":7},
              "hours":{"type":"integer"},
              "ratio":{"type":"number"},
              "alerts":{"type":"boolean"},
              "tags":{"type":"array","items":{"type":"string"}},
              "options":{"type":"object","properties":{"lang":{"type":"string","enum":["en","fr"]},"count":{"type":["integer","null"]}}},
              "note":{"type":"string"}
            },"required":["city"]}
            """#
        let arguments = try call(schema, "weather in Paris in fahrenheit for the next 12 days")
        #expect(arguments == (try JSON(parsing: #"""
            {"city":"Paris","unit":"fahrenheit","style":"brief","days":7,"hours":12,"ratio":12,"alerts":true,"tags":[],
             "options":{"lang":"en","count":12},"note":"days"}
            """#)))
        let plain = try call(schema, "weather in Paris")
        #expect(plain["unit"] == .string("celsius"))
        #expect(plain["hours"] == .int(1))
        #expect(plain["days"] == .int(1))
        #expect(plain["note"] == .string("Paris"))
        #expect(try call(#"{"type":"object","properties":{"query":{"type":"string"}}}"#, "search the docs for 'event loop'", name: "search_docs")
                == .object([("query", .string("event loop"))]))
        #expect(try call(#"{"type":"object","properties":{}}"#, "what time is it", name: "get_time") == .object([]))
        #expect(try call(#"{"type":"object"}"#, "what time is it", name: "get_time") == .object([]))
    }

    // MARK: The answer to a function's output

    func afterOutput(_ output: String, arguments: String = #"{"city":"Paris"}"#, choice: ToolChoice = .auto) throws -> [ModelEvent] {
        let messages = [
            ChatMessage(role: .system, text: "be brief"),
            Self.user("What's the weather in Paris?"),
            ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: "call_1", name: "get_weather", arguments: arguments)]),
            ChatMessage(role: .tool, text: output, toolCallID: "call_1"),
        ]
        return try run(ModelRequest(messages: messages, tools: Self.tools, toolChoice: choice))
    }

    @Test func theAnswerToAWeatherReportSaysItInASentence() throws {
        let events = try afterOutput(#"{"temperature":21,"conditions":"Clear"}"#)
        #expect(text(events) == "It's 21 degrees and clear in Paris.")
        #expect(events.count == 8, "a word at a time: \(events)")
        #expect(events.last == .finished(nil, reason: .stop))
        // Even when a call is required: it answers, rather than call again and again.
        #expect(text(try afterOutput(#"{"temperature_c":21,"sky":"partly cloudy","city":"Paris, FR"}"#, choice: .required))
                == "It's 21 degrees Celsius and partly cloudy in Paris, FR.")
        #expect(text(try afterOutput(#"{"temp":"70","unit":"F"}"#, arguments: "{}")) == "It's 70 degrees Fahrenheit.")
    }

    @Test func otherOutputsAreQuoted() throws {
        #expect(text(try afterOutput("18 C and sunny")) == "Here is what get_weather returned: 18 C and sunny.")
        #expect(text(try afterOutput(#"{"status":"shipped","eta":"Tuesday","items":3}"#))
                == "Here is what get_weather returned: status is shipped, eta is Tuesday and items is 3.")
        #expect(text(try afterOutput(#""rain later""#)) == "Here is what get_weather returned: rain later.")
        #expect(text(try afterOutput(#"{"error":"city not found"}"#)) == "The call to get_weather failed: city not found.")
        #expect(text(try afterOutput("  ")) == "There was no output from get_weather.")
    }

    @Test func severalOutputsAreEachAnswered() {
        let messages = [
            Self.user("weather in Paris and Rome"),
            ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: "a", name: "get_weather", arguments: #"{"city":"Paris"}"#)]),
            ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: "b", name: "get_weather", arguments: #"{"city":"Rome"}"#)]),
            ChatMessage(role: .tool, text: #"{"temperature":18}"#, toolCallID: "a"),
            ChatMessage(role: .tool, text: #"{"temperature":24}"#, toolCallID: "b"),
        ]
        #expect(BuiltinAgent().reply(to: messages) == "It's 18 degrees in Paris. It's 24 degrees in Rome.")
        // An output whose call was trimmed from the history still gets an answer.
        #expect(BuiltinAgent().reply(to: [ChatMessage(role: .tool, text: "42", toolCallID: "gone")]) == "Here is what the function returned: 42.")
    }
}

extension BuiltinAgent.Action {
    var isSay: Bool { if case .say = self { true } else { false } }
}
