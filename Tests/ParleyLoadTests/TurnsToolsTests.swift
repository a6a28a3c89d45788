import JSON
import Testing
@testable import parley_load

/// `turns --tools K`: the tool definitions every session declares, and the session.update that
/// carries them.
@Suite struct TurnsToolsTests {
    @Test(arguments: [0, 1, 20, 32, 33, 127, 128])
    func kDefinitionsWithUniqueNames(_ k: Int) {
        let tools = TurnsTools.definitions(k)
        #expect(tools.count == k)
        let names = tools.compactMap { $0["name"]?.string }
        #expect(names.count == k)
        #expect(Set(names).count == k)
    }

    @Test func theCatalogueStartsWithTheUsualAgentToolsAndVariesItsDomains() {
        let names = TurnsTools.definitions(4).compactMap { $0["name"]?.string }
        #expect(names == ["get_weather", "book_table", "search_flights", "search_hotels"])
        // The second tool of a domain only after every domain's first.
        #expect(TurnsTools.definitions(33).last?["name"]?.string == "get_weather_forecast")
    }

    /// Each one as the server accepts it (Session's ToolsField): a function with a valid name, a
    /// sentence, and an object schema of 2 to 4 typed properties whose required ones exist.
    @Test func everyDefinitionIsAFunctionTheServerAccepts() throws {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
        for tool in TurnsTools.definitions(TurnsTools.maxCount) {
            let name = try #require(tool["name"]?.string)
            #expect(tool["type"]?.string == "function")
            #expect((1...64).contains(name.utf8.count) && name.allSatisfy(allowed.contains), "\(name)")
            let description = try #require(tool["description"]?.string)
            #expect(description.hasSuffix(".") && description.split(separator: " ").count >= 4 && description.utf8.count <= 4096, "\(name)")
            let parameters = try #require(tool["parameters"])
            #expect(parameters["type"]?.string == "object")
            #expect(parameters.description.utf8.count <= 16 * 1024)
            let properties = try #require(parameters["properties"]?.object)
            #expect((2...4).contains(properties.count), "\(name) has \(properties.count) properties")
            #expect(Set(properties.map(\.0)).count == properties.count, "\(name)")
            for (property, schema) in properties {
                #expect(["string", "integer", "number", "boolean"].contains(schema["type"]?.string ?? ""), "\(name).\(property)")
                #expect(schema["description"]?.string?.isEmpty == false, "\(name).\(property)")
            }
            let required = try #require(parameters["required"]?.array).compactMap(\.string)
            #expect(!required.isEmpty && required.allSatisfy { r in properties.contains { $0.0 == r } }, "\(name)")
        }
    }

    @Test func definitionsAreValidJSONThatReadsBackTheSame() throws {
        for tool in TurnsTools.definitions(TurnsTools.maxCount) {
            #expect(try JSON(parsing: tool.description) == tool)
        }
    }

    @Test func definitionsAreStableAcrossCallsAndAPrefixOfTheCatalogue() {
        let all = TurnsTools.definitions(TurnsTools.maxCount)
        #expect(TurnsTools.definitions(TurnsTools.maxCount) == all)
        for k in [1, 20, 64] {
            #expect(TurnsTools.definitions(k) == Array(all.prefix(k)))
            #expect(TurnsTools.sessionUpdate(k) == TurnsTools.sessionUpdate(k))
        }
    }

    @Test(arguments: [1, 20, 128])
    func theSessionUpdateDeclaresTheToolsWithAutoChoice(_ k: Int) throws {
        let text = TurnsTools.sessionUpdate(k)
        #expect(!text.contains("\n"))
        let event = try JSON(parsing: text)
        #expect(event["type"]?.string == "session.update")
        let session = try #require(event["session"]?.object)
        #expect(session.map(\.0) == ["tools", "tool_choice"])
        #expect(event["session"]?["tool_choice"]?.string == "auto")
        #expect(event["session"]?["tools"]?.array == TurnsTools.definitions(k))
        // Well under the server's largest message (1 MiB by default).
        #expect(text.utf8.count < 256 * 1024)
    }

    @Test func twentyToolsMakeASessionUpdateOfAFewKilobytes() {
        let text = TurnsTools.sessionUpdate(20)
        #expect(text.hasPrefix(#"{"type":"session.update","session":{"tools":[{"type":"function","name":"get_weather","description":"Gets the current weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string""#))
        #expect(text.hasSuffix(#"}}],"tool_choice":"auto"}}"#))
        #expect((4_000...16_000).contains(text.utf8.count), "\(text.utf8.count) bytes")
    }

    /// `parley mock-llm` calls a tool when the prompt names it, by its whole name or by every word
    /// of it but a leading verb, plurals allowed (MockToolMatcher): no turn may name one.
    @Test func noTurnNamesATool() {
        func same(_ said: String, _ word: String) -> Bool {
            said == word || said == word + "s" || said == word + "es" || word == said + "s" || word == said + "es"
        }
        let verbs: Set<String> = ["get", "set", "fetch", "lookup", "look", "find", "retrieve", "query",
                                  "search", "read", "load", "show", "list", "check"]
        let turnWords = Set((1...1000).flatMap { TurnsTools.turnText($0).lowercased().split { !($0.isLetter || $0.isNumber) }.map(String.init) })
        for tool in TurnsTools.definitions(TurnsTools.maxCount) {
            let name = tool["name"]?.string ?? ""
            #expect(!turnWords.contains(name.lowercased()))
            let words = TurnsTools.words(of: name)
            let wanted = words.filter { !verbs.contains($0) }
            // Named only if every wanted word is said; here not even one is.
            for word in wanted.isEmpty ? words : wanted {
                #expect(!turnWords.contains { same($0, word) }, "\(name): '\(word)' is in a turn")
                #expect(!word.allSatisfy { $0.isNumber }, "\(name)")
            }
        }
    }

    @Test func theTurnTextIsAsBefore() {
        #expect(TurnsTools.turnText(7) == "hello number 7")
    }

    @Test func sessionUpdatedIsToldApartFromSessionCreated() {
        func kind(_ text: String) -> RealtimeEventKind {
            Array(text.utf8).withUnsafeBytes { RealtimeEventKind.of($0) }
        }
        #expect(kind(#"{"type":"session.updated","event_id":"e1","session":{}}"#) == .sessionUpdated)
        #expect(kind(#"{"type":"session.created","event_id":"e0","session":{}}"#) == .sessionCreated)
        #expect(kind(#"{"event_id":"e1","type":"session.updated"}"#) == .sessionUpdated)
    }

    /// The summary says how many tools, and memory per session ready and at the end, in text and JSON.
    @Test func theSummaryStatesToolsAndBytesPerSession() throws {
        let metrics = ServerMetrics(parsing: """
            parley_connections_open{endpoint="realtime"} 100
            parley_process_resident_memory_bytes 50000000
            parley_process_startup_resident_memory_bytes 40000000
            parley_resident_bytes_per_connection 1400
            parley_accounted_bytes_per_connection 360
            """)
        var summary = TurnsSummary(target: try LoadTarget("ws://127.0.0.1:1/v1/realtime"), requested: 100, processes: 1, sources: 16,
                                   turnInterval: 5, warmup: 5, duration: 10, tools: 20)
        summary.serverConnected = metrics
        summary.serverEnd = metrics
        #expect(summary.connectSection.contains("  tools            20 function tools per session"))
        #expect(summary.turnsSection.contains("tools: 20)"))
        #expect(summary.turnsSection.contains("  bytes/session    resident 1,400 B idle, 1,400 B at the end; accounted 360 B idle, 360 B at the end  (tools: 20;"))
        let json = summary.json
        #expect(json["tools"]?.int == 20)
        #expect(json["session_update_bytes"]?.int == TurnsTools.sessionUpdate(20).utf8.count)
        #expect(json["bytes_per_session"]?["idle"]?["resident"]?.double == 1400)
        #expect(json["bytes_per_session"]?["end"]?["accounted"]?.double == 360)

        let none = TurnsSummary(target: try LoadTarget("ws://127.0.0.1:1/v1/realtime"), requested: 100, processes: 1, sources: 16,
                                turnInterval: 5, warmup: 5, duration: 10, tools: 0)
        #expect(none.connectSection.contains("  tools            0  (no session.update)"))
        #expect(none.json["tools"]?.int == 0 && none.json["session_update_bytes"]?.int == 0)
    }

    @Test func aReportRowOfATurnsRunSaysItsToolsAndBytesPerSession() throws {
        let run = try JSON(parsing: """
            {"command":"turns","url":"ws://127.0.0.1:1/v1/realtime","requested":10000,"tools":20,"passed":true,
             "first_delta_ns":{"p99":864000000},"bytes_per_session":{"tools":20,"idle":{"resident":1336,"accounted":360},"end":null}}
            """)
        let report = LoadReport(title: "t", runs: [("turns-10000-tools-20", run)])
        #expect(report.rows == [["turns-10000-tools-20", "turns", "10,000 sessions, tools: 20, passed", "first delta p99 864.0 ms",
                                 "1,336 B/session resident, 360 B accounted (idle)"]])
    }
}
