import JSON
@testable import Models
import Testing
@testable import Session
import MCP
@testable import SessionEngine

/// MCP tools through the engine, without sockets or a server: a server listed when the session
/// names it, its tools offered to the model, a call run with the Realtime API's events, approvals
/// taken once, cancellation, and every refusal.
@Suite struct SessionEngineMCPTests {
    static let weatherTool = MCPTool(name: "forecast", description: "The forecast for a city.",
                                     inputSchema: .object([("type", .string("object")), ("properties", .object([("city", .object([("type", .string("string"))]))]))]))
    static let deleteTool = MCPTool(name: "delete_all", description: "Deletes everything.", inputSchema: .object([("type", .string("object"))]))

    static func entry(label: String = "weather", approval: String = #""never""#, extra: String = "") -> String {
        #"{"type":"mcp","server_label":"\#(label)","server_url":"http://127.0.0.1:9/mcp","authorization":"tok-secret-123","headers":{"X-Key":"hdr-secret-456"},"require_approval":\#(approval)\#(extra)}"#
    }

    /// A session naming one server, its tools listed.
    func listed(_ entry: String = entry(), tools: [MCPTool] = [weatherTool, deleteTool], options: SessionEngine.Options = .init()) throws -> (EngineHarness, String) {
        var h = try EngineHarness.manual(options: options)
        _ = h.start()
        let updated = h.client(#"{"type":"session.update","session":{"tools":[\#(entry)]}}"#)
        #expect(updated.types == ["session.updated", "conversation.item.created", "mcp_list_tools.in_progress", "mcp.list"], "\(updated.types)")
        guard case .mcp(.list(let itemID, let server)) = updated.last else { throw HarnessFailure(description: "no list") }
        #expect(server.label == "weather" || server.label == "tools")
        let done = h.engine.handle(.mcpToolsListed(itemID: itemID, .success(tools)))
        #expect(done.types == ["mcp_list_tools.completed"])
        guard case .listTools(let label, let shown)? = done.itemsDone.first?.mcp else { throw HarnessFailure(description: "no list item") }
        #expect(label == server.label && shown.allSatisfy(tools.contains))
        return (h, itemID)
    }

    @Test func sessionUpdatedEchoesTheEntryWithItsSecretsRedacted() throws {
        var h = try EngineHarness.manual()
        _ = h.start()
        let updated = h.client(#"{"type":"session.update","session":{"tools":[\#(Self.entry())]}}"#)
        let text = updated.events[0].json(dialect: .ga)
        #expect(!text.contains("tok-secret-123") && !text.contains("hdr-secret-456"), "\(text)")
        let tool = try JSON(parsing: text)["session"]?["tools"]?.array?.first
        #expect(tool?["type"]?.string == "mcp" && tool?["server_label"]?.string == "weather")
        #expect(tool?["authorization"]?.string == "[redacted]" && tool?["headers"]?["X-Key"]?.string == "[redacted]")
        #expect(tool?["require_approval"]?.string == "never")
    }

    @Test func anUnchangedUpdateDoesNotListAgainButANewTokenDoes() throws {
        var (h, _) = try listed()
        let again = h.client(#"{"type":"session.update","session":{"tools":[\#(Self.entry())]}}"#)
        #expect(again.types == ["session.updated"])
        let other = Self.entry().replacing("tok-secret-123", with: "tok-other-789")
        let changed = h.client(#"{"type":"session.update","session":{"tools":[\#(other)]}}"#)
        #expect(changed.types == ["session.updated", "conversation.item.created", "mcp_list_tools.in_progress", "mcp.list"])
    }

    @Test func aConnectorIsRefusedAndTheSessionGoesOn() throws {
        var h = try EngineHarness.manual()
        _ = h.start()
        let refused = h.client(#"{"type":"session.update","session":{"tools":[{"type":"mcp","server_label":"cal","connector_id":"connector_googlecalendar"}]}}"#)
        #expect(refused.types == ["error"])
        #expect(refused.errors.first?.message.contains("connector_id") == true)
        #expect(h.client(#"{"type":"session.update","session":{"instructions":"hi"}}"#).types == ["session.updated"])
    }

    @Test func aURLOutsideTheAllowListIsRefused() throws {
        var options = SessionEngine.Options()
        options.tooling = ToolSettings(mcpAllowList: MCPAllowList(prefixes: ["http://127.0.0.1:9000"]))
        var h = try EngineHarness.manual(options: options)
        _ = h.start()
        let refused = h.client(#"{"type":"session.update","session":{"tools":[\#(Self.entry())]}}"#)
        #expect(refused.types == ["error"])
        #expect(refused.errors.first?.code == "mcp_server_not_allowed")
        #expect(h.engine.configuration.mcpServers.isEmpty)
    }

    @Test func aFailedListIsAFailedEventAndAnError() throws {
        var h = try EngineHarness.manual()
        _ = h.start()
        let updated = h.client(#"{"type":"session.update","session":{"tools":[\#(Self.entry())]}}"#)
        guard case .mcp(.list(let itemID, _)) = updated.last else { return }
        let failed = h.engine.handle(.mcpToolsListed(itemID: itemID, .failure(.notMCP("an HTML page"))))
        #expect(failed.types == ["mcp_list_tools.failed", "error"])
        #expect(failed.errors.first?.code == "mcp_list_tools_failed")
        // The model is asked without the tools.
        _ = h.say("hello")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        #expect(model.options.tools == nil)
    }

    @Test func aResponseWaitsForAServerStillBeingListed() throws {
        var h = try EngineHarness.manual()
        _ = h.start()
        let updated = h.client(#"{"type":"session.update","session":{"tools":[\#(Self.entry())]}}"#)
        guard case .mcp(.list(let itemID, _)) = updated.last else { return }
        _ = h.say("forecast for Paris")
        let created = h.client(#"{"type":"response.create"}"#)
        #expect(created.types == ["response.created"])
        let listed = h.engine.handle(.mcpToolsListed(itemID: itemID, .success([Self.weatherTool])))
        let model = try listed.model()
        #expect(model.options.tools?.tools.map(\.name) == ["forecast"])
    }

    /// The model calls `name` with `arguments` in response `id`.
    func call(_ h: inout EngineHarness, _ id: String, _ name: String, _ arguments: String, callID: String = "call_1") -> [SessionAction] {
        h.engine.handle(.modelToolCallStarted(responseID: id, index: 0, callID: callID, name: name))
            + h.engine.handle(.modelToolCallArguments(responseID: id, index: 0, delta: arguments))
            + h.finish(id, reason: .toolCalls)
    }

    @Test func aCallRunsWithTheFullEventSequenceAndTheNextResponseReadsItsOutput() throws {
        var (h, _) = try listed()
        _ = h.say("what is the forecast for Paris")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        #expect(model.options.tools?.tools.map(\.name) == ["forecast", "delete_all"])
        let started = h.engine.handle(.modelToolCallStarted(responseID: model.id, index: 0, callID: "call_1", name: "forecast"))
        #expect(started.types == ["response.output_item.added", "conversation.item.created"])
        guard case .outputItemAdded(_, _, let item) = started.events[0].kind, case .call(let added)? = item.mcp else { Issue.record("\(started.events)"); return }
        #expect(added.serverLabel == "weather" && added.name == "forecast" && added.output == nil)
        let delta = h.engine.handle(.modelToolCallArguments(responseID: model.id, index: 0, delta: #"{"city":"Paris"}"#))
        #expect(delta.types == ["response.mcp_call_arguments.delta"])
        let ran = h.finish(model.id, reason: .toolCalls)
        #expect(ran.types == ["response.mcp_call_arguments.done", "response.mcp_call.in_progress", "mcp.call"])
        guard let (itemID, server, tool, arguments) = ran.mcpCall else { Issue.record("\(ran.types)"); return }
        #expect(server.label == "weather" && tool == "forecast" && arguments == #"{"city":"Paris"}"#)
        // The JavaScript SDK asks for the item on in_progress.
        let retrieved = h.client(#"{"type":"conversation.item.retrieve","item_id":"\#(itemID)"}"#)
        #expect(retrieved.types == ["conversation.item.retrieved"])

        let answered = h.engine.handle(.mcpToolCalled(itemID: itemID, .success(MCPToolOutput(text: "Sunny, 21 C"))))
        #expect(answered.types == ["response.mcp_call.completed", "response.output_item.done", "response.done"])
        guard case .call(let done)? = answered.responseDone?.output.first?.mcp else { Issue.record("\(answered.events)"); return }
        #expect(done.output == "Sunny, 21 C" && done.error == nil)
        // No response follows by itself on /v1/realtime: the client asks.
        let next = try h.client(#"{"type":"response.create"}"#).model()
        #expect(next.messages.last == ChatMessage(role: .tool, text: "Sunny, 21 C", toolCallID: "call_1"))
        #expect(next.messages[next.messages.count - 2].toolCalls.first?.name == "forecast")
    }

    /// The call and its output are two messages for the model but one item for the client: what
    /// follows names the mcp_call item as its previous_item_id, an id the client was told of.
    @Test func theItemAfterACallNamesTheCallAsItsPrevious() throws {
        var (h, _) = try listed()
        _ = h.say("what is the forecast for Paris")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        let ran = call(&h, model.id, "forecast", #"{"city":"Paris"}"#)
        guard let itemID = ran.mcpCall?.itemID else { Issue.record("\(ran.types)"); return }
        _ = h.engine.handle(.mcpToolCalled(itemID: itemID, .success(MCPToolOutput(text: "Sunny"))))
        let next = h.say("thanks")
        let previous = next.events.compactMap { event -> String?? in
            if case .conversationItemCreated(_, let previous) = event.kind { previous } else { nil }
        }
        #expect(previous == [itemID], "\(previous)")
        // One inserted after the call comes after its output, which stays with the call.
        _ = h.client(#"{"type":"conversation.item.create","previous_item_id":"\#(itemID)","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"and Rome?"}]}}"#)
        let asked = try h.client(#"{"type":"response.create"}"#).model()
        let roles = asked.messages.suffix(4).map(\.role)
        #expect(roles == [.assistant, .tool, .user, .user], "\(roles)")
    }

    @Test func aSessionThatContinuesAnswersAfterTheCallByItself() throws {
        var options = SessionEngine.Options()
        options.tooling = ToolSettings(continuesAfterTools: true)
        var (h, _) = try listed(options: options)
        _ = h.say("forecast for Paris")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        let ran = call(&h, model.id, "forecast", #"{"city":"Paris"}"#)
        guard let itemID = ran.mcpCall?.itemID else { Issue.record("\(ran.types)"); return }
        let answered = h.engine.handle(.mcpToolCalled(itemID: itemID, .success(MCPToolOutput(text: "Sunny"))))
        #expect(answered.responseDone?.status == .completed)
        #expect(answered.types.suffix(3) == ["response.done", "response.created", "startModel"])
    }

    @Test func eachErrorKindFailsTheCall() throws {
        for error in [MCPError.toolFailed("no such city"), .jsonRPC(code: -32602, message: "bad params"), .status(500, nil), .timedOut(operation: "tools/call", seconds: 1)] {
            var (h, _) = try listed()
            _ = h.say("forecast")
            let model = try h.client(#"{"type":"response.create"}"#).model()
            let ran = call(&h, model.id, "forecast", "{}")
            guard let itemID = ran.mcpCall?.itemID else { Issue.record("\(ran.types)"); return }
            let failed = h.engine.handle(.mcpToolCalled(itemID: itemID, .failure(error)))
            #expect(failed.types.first == "response.mcp_call.failed")
            guard case .call(let done)? = failed.responseDone?.output.first?.mcp else { Issue.record("\(failed.types)"); continue }
            #expect(done.error == error && done.output == nil)
            let json = try JSON(parsing: failed.events.first { $0.type(in: .ga) == "response.output_item.done" }!.json(dialect: .ga))
            #expect(json["item"]?["error"]?["type"]?.string == error.type)
        }
    }

    @Test func aCancelStopsTheCallAtTheServer() throws {
        var (h, _) = try listed()
        _ = h.say("forecast")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        let ran = call(&h, model.id, "forecast", "{}")
        guard let itemID = ran.mcpCall?.itemID else { Issue.record("\(ran.types)"); return }
        let cancelled = h.client(#"{"type":"response.cancel"}"#)
        #expect(cancelled.types.contains("mcp.cancel") && cancelled.types.contains("response.mcp_call.failed"))
        #expect(cancelled.responseDone?.status == .cancelled)
        // A late answer changes nothing.
        #expect(h.engine.handle(.mcpToolCalled(itemID: itemID, .success(MCPToolOutput(text: "late")))).isEmpty)
    }

    @Test func anApprovedCallRunsOnceThenTheModelAnswers() throws {
        var (h, _) = try listed(Self.entry(approval: #""always""#))
        _ = h.say("delete everything")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        let asked = call(&h, model.id, "delete_all", "{}")
        #expect(!asked.types.contains("mcp.call"), "\(asked.types)")
        guard case .approvalRequest(let label, let name, _)? = asked.responseDone?.output.first?.mcp, let requestID = asked.responseDone?.output.first?.id else {
            Issue.record("\(asked.types)"); return
        }
        #expect(label == "weather" && name == "delete_all")
        // As the JavaScript SDK sends it: no id, a previous_item_id.
        let approved = h.client(#"{"type":"conversation.item.create","previous_item_id":"\#(requestID)","item":{"type":"mcp_approval_response","approval_request_id":"\#(requestID)","approve":true}}"#)
        #expect(approved.types.prefix(2) == ["conversation.item.created", "response.created"], "\(approved.types)")
        #expect(approved.types.contains("response.mcp_call.in_progress") && approved.types.last == "mcp.call")
        guard let (itemID, _, tool, _) = approved.mcpCall else { Issue.record("\(approved.types)"); return }
        #expect(tool == "delete_all")
        let replayed = h.client(#"{"type":"conversation.item.create","item":{"type":"mcp_approval_response","approval_request_id":"\#(requestID)","approve":true}}"#)
        #expect(replayed.types == ["error"] && replayed.errors.first?.message.contains("already answered") == true)
        let answered = h.engine.handle(.mcpToolCalled(itemID: itemID, .success(MCPToolOutput(text: "deleted"))))
        // The call's item is done with its outcome, before the model is asked to answer in the same response.
        #expect(answered.types.prefix(2) == ["response.mcp_call.completed", "response.output_item.done"], "\(answered.types)")
        let then = try answered.model()
        #expect(then.messages.last?.text == "deleted")
        _ = h.delta(then.id, "Done.")
        let done = h.finish(then.id)
        guard case .call(let ran)? = done.responseDone?.output.first?.mcp else { Issue.record("\(done.types)"); return }
        #expect(ran.approvalRequestID == requestID && ran.output == "deleted")
        // Each item's output_item.done once: the call's went out when it settled, the message's now.
        let itemsDone = (answered + done).events.compactMap { event -> Int? in
            if case .outputItemDone(_, let outputIndex, _) = event.kind { outputIndex } else { nil }
        }
        #expect(itemsDone == [0, 1], "\(itemsDone)")
    }

    @Test func aDeclinedCallIsNotRunAndTheModelIsTold() throws {
        var (h, _) = try listed(Self.entry(approval: #""always""#))
        _ = h.say("delete everything")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        let asked = call(&h, model.id, "delete_all", "{}")
        guard let requestID = asked.responseDone?.output.first?.id else { return }
        let declined = h.client(#"{"type":"conversation.item.create","item":{"id":"appr_1","type":"mcp_approval_response","approval_request_id":"\#(requestID)","approve":false,"reason":"not now"}}"#)
        #expect(!declined.types.contains("mcp.call"))
        let then = try declined.model()
        #expect(then.messages.last == ChatMessage(role: .tool, text: "The user declined this call: not now", toolCallID: requestID))
    }

    @Test func anUnknownApprovalIsRefused() throws {
        var (h, _) = try listed()
        let refused = h.client(#"{"type":"conversation.item.create","item":{"type":"mcp_approval_response","approval_request_id":"mcpr_nope","approve":true}}"#)
        #expect(refused.types == ["error"])
    }

    @Test func approvalFiltersAndToolChoiceForAServer() throws {
        let filtered = Self.entry(approval: #"{"never":{"tool_names":["forecast"]}}"#)
        var (h, _) = try listed(filtered)
        _ = h.say("forecast")
        let chosen = try h.client(#"{"type":"response.create","response":{"tool_choice":{"type":"mcp","server_label":"weather","name":"forecast"}}}"#).model()
        #expect(chosen.options.toolChoice == .function("forecast"))
        let ran = call(&h, chosen.id, "forecast", "{}")
        #expect(ran.types.last == "mcp.call")
        guard let itemID = ran.mcpCall?.itemID else { Issue.record("\(ran.types)"); return }
        _ = h.engine.handle(.mcpToolCalled(itemID: itemID, .success(MCPToolOutput(text: "ok"))))
        let any = try h.client(#"{"type":"response.create","response":{"tool_choice":{"type":"mcp","server_label":"weather"}}}"#).model()
        #expect(any.options.toolChoice == .required && any.options.tools?.tools.count == 2)
        let unknown = h.client(#"{"type":"response.create","response":{"tool_choice":{"type":"mcp","server_label":"nope"}}}"#)
        #expect(unknown.types == ["error"])
    }

    /// The filler is heard while the call runs: the voice is given it as a whole sentence, which it
    /// speaks at once, not held until the text after it (none while the tool runs) or the
    /// response's end (after the tool returned).
    @Test(arguments: ["One moment, let me check.", "Bear with me"])
    func theFillerIsSpokenWhileTheCallRuns(phrase: String) throws {
        var options = SessionEngine.Options(synthesizes: true)
        options.configuration.outputModalities = .audio
        options.tooling = ToolSettings(filler: .init(phrase: phrase, afterMs: 1000))
        var (h, _) = try listed(options: options)
        _ = h.say("what is the forecast for Paris")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        let ran = call(&h, model.id, "forecast", #"{"city":"Paris"}"#)
        let armed = ran.compactMap { action -> Int? in if case .toolWait(.arm(let token, _)) = action { token } else { nil } }
        guard ran.mcpCall != nil, let token = armed.first else { Issue.record("no call, or no filler timer: \(ran.types)"); return }
        let said = h.engine.handle(.toolWaitElapsed(token: token))
        guard case .speech(.text(_, _, _, let text))? = said.last else { Issue.record("nothing spoken: \(said.types)"); return }
        #expect(text.trimmed == phrase)
        #expect(SpokenSentences.sentenceEnd(in: text) == text.endIndex, "the voice would hold '\(text)' for the text after it")
    }

    @Test func namesThatCollideAcrossServersAndFunctionsArePrefixed() {
        var state = MCPToolState()
        let a = try! MCPServerEntry.parse(EventFields(try! JSON(parsing: Self.entry(label: "alpha")), path: "t"))
        let b = try! MCPServerEntry.parse(EventFields(try! JSON(parsing: Self.entry(label: "beta")), path: "t"))
        state.servers = [.init(entry: a, itemID: "i1", listing: .listed([Self.weatherTool, Self.deleteTool]), forSession: true),
                         .init(entry: b, itemID: "i2", listing: .listed([Self.weatherTool, MCPTool(name: "odd.name!", inputSchema: .object([]))]), forSession: true)]
        let names = state.targets([a, b], besides: [ToolDefinition(name: "delete_all")]).map(\.name)
        #expect(names == ["alpha__forecast", "alpha__delete_all", "beta__forecast", "odd_name_"])
        #expect(Set(names).count == names.count)
    }

    @Test func allowedToolsNarrowWhatTheModelIsOffered() throws {
        let (h, _) = try listed(Self.entry(extra: #","allowed_tools":["forecast"]"#))
        let offered = h.engine.offeredTools(functions: nil, servers: h.engine.configuration.mcpServers, choice: .auto)
        #expect(offered.tools?.tools.map(\.name) == ["forecast"])
    }
}

extension [SessionAction] {
    /// The MCP call these actions start, if any.
    var mcpCall: (itemID: String, server: MCPServerEntry, tool: String, arguments: String)? {
        for case .mcp(.call(let itemID, let server, let tool, let arguments)) in self { return (itemID, server, tool, arguments) }
        return nil
    }
}

@Suite struct MCPAllowListTests {
    @Test func prefixesMatchOnBoundaries() {
        let list = MCPAllowList(prefixes: ["https://Tools.example.com", "http://10.0.0.5:8000/mcp"])
        #expect(list.allows("https://tools.example.com/mcp"))
        #expect(list.allows("HTTPS://TOOLS.EXAMPLE.COM"))
        #expect(!list.allows("https://tools.example.com.evil.net/"))
        #expect(list.allows("http://10.0.0.5:8000/mcp?x=1"))
        #expect(!list.allows("http://10.0.0.5:8000/mcpx"))
        #expect(!list.allows("http://10.0.0.5:80001/mcp"))
        #expect(!MCPAllowList.none.allows("http://127.0.0.1/"))
        #expect(MCPAllowList.any.allows("http://169.254.169.254/"))
    }
}

@Suite struct ToolFillerTests {
    let settings = ToolFiller.Settings(phrase: "One moment.", afterMs: 1500)

    @Test func saidOnceAfterTheWaitNeverTwiceInARow() {
        var filler = ToolFiller()
        let first = filler.began(settings, speaks: true), again = filler.began(settings, speaks: true)
        #expect(first == .arm(token: 1, afterMs: 1500) && again == nil)
        let said = filler.due(1, userSpeaking: false)
        let second = filler.began(settings, speaks: true)
        let saidTwice = filler.due(2, userSpeaking: false)
        #expect(said && second == .arm(token: 2, afterMs: 1500) && !saidTwice)
        filler.somethingElseSaid()
        let third = filler.began(settings, speaks: true)
        let saidAgain = filler.due(3, userSpeaking: false)
        #expect(third == .arm(token: 3, afterMs: 1500) && saidAgain)
    }

    @Test func neverOverTheUserNorAfterTheToolReturnedNorOnText() {
        var filler = ToolFiller()
        _ = filler.began(settings, speaks: true)
        let overUser = filler.due(1, userSpeaking: true)
        _ = filler.began(settings, speaks: true)
        let ended = filler.ended()
        let afterReturn = filler.due(2, userSpeaking: false)
        let onText = filler.began(settings, speaks: false), off = filler.began(.off, speaks: true)
        #expect(!overUser && ended == .disarm && !afterReturn && onText == nil && off == nil)
    }
}

/// The filler in the engine: said inside the response that waits on an MCP call, or as an
/// out-of-band response while a client's function runs; a client's response.create waits for it.
@Suite struct ToolFillerEngineTests {
    static func spoken() -> SessionEngine.Options {
        var options = SessionEngine.Options(synthesizes: true)
        options.configuration.outputModalities = .audio
        options.configuration.turnDetection = nil
        return options
    }

    @Test func aLongMCPCallIsFilledInItsOwnResponse() throws {
        var (h, _) = try SessionEngineMCPTests().listed(options: Self.spoken())
        _ = h.say("forecast for Paris")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        let ran = SessionEngineMCPTests().call(&h, model.id, "forecast", "{}")
        guard let itemID = ran.mcpCall?.itemID else { Issue.record("\(ran.types)"); return }
        guard case .toolWait(.arm(let token, let afterMs))? = ran.first(where: { if case .toolWait = $0 { true } else { false } }) else {
            Issue.record("no timer: \(ran.types)"); return
        }
        #expect(afterMs == 1500)
        let filled = h.engine.handle(.toolWaitElapsed(token: token))
        #expect(filled.types.contains("speak.text") && filled.facts.contains(.fillerSaid(responseID: model.id)), "\(filled.types)")
        // Said once: a second timer of the same wait says nothing.
        #expect(h.engine.handle(.toolWaitElapsed(token: token)).isEmpty)
        let answered = h.engine.handle(.mcpToolCalled(itemID: itemID, .success(MCPToolOutput(text: "Sunny"))))
        #expect(answered.types.contains("response.mcp_call.completed") && answered.types.last == "speak.end", "\(answered.types)")
        let done = h.engine.handle(.speechOutput(responseID: model.id, .finished))
        #expect(done.responseDone?.output.map { $0.mcp == nil ? "message" : "mcp_call" } == ["mcp_call", "message"])
    }

    @Test func aClientsLongFunctionIsFilledOutOfBandAndItsResponseFollows() throws {
        var h = try EngineHarness(options: Self.spoken())
        _ = h.start()
        _ = h.client(#"{"type":"session.update","session":{"tools":[\#(SessionEngineToolTests.weather)]}}"#)
        _ = h.say("weather in Paris")
        let model = try h.respond()
        _ = h.engine.handle(.modelToolCallStarted(responseID: model, index: 0, callID: "call_1", name: "get_weather"))
        // A spoken response ends once its (here empty) speech is out.
        let ended = h.finish(model, reason: .toolCalls) + h.engine.handle(.speechOutput(responseID: model, .finished))
        guard case .toolWait(.arm(let token, _))? = ended.last(where: { if case .toolWait = $0 { true } else { false } }) else {
            Issue.record("no timer: \(ended.types)"); return
        }
        let filler = h.engine.handle(.toolWaitElapsed(token: token))
        #expect(filler.types.prefix(1) == ["response.created"] && filler.types.contains("speak.text"), "\(filler.types)")
        guard case .responseCreated(let created)? = filler.events.first?.kind else { return }
        #expect(created.conversationID == nil)
        // The client's output and response.create arrive while the filler is said: answered after it.
        _ = h.client(#"{"type":"conversation.item.create","item":{"type":"function_call_output","call_id":"call_1","output":"21 C"}}"#)
        #expect(h.client(#"{"type":"response.create"}"#).errors.isEmpty)
        let next = h.engine.handle(.speechOutput(responseID: created.id, .finished))
        #expect(next.types.contains("response.done"))
        let reply = try next.model()
        #expect(reply.messages.last == ChatMessage(role: .tool, text: "21 C", toolCallID: "call_1"))
    }

    @Test func noFillerOnATextSession() throws {
        var h = try EngineHarness.manual()
        _ = h.start()
        _ = h.client(#"{"type":"session.update","session":{"tools":[\#(SessionEngineToolTests.weather)]}}"#)
        _ = h.say("weather")
        let model = try h.respond()
        _ = h.engine.handle(.modelToolCallStarted(responseID: model, index: 0, callID: "call_1", name: "get_weather"))
        #expect(!h.finish(model, reason: .toolCalls).contains { if case .toolWait = $0 { true } else { false } })
    }
}

extension SessionEngineMCPTests {
    /// Deleting an mcp_call takes both of its messages out of what the model reads.
    @Test func deletingAnMCPCallDeletesItsCallAndItsOutput() throws {
        var (h, _) = try listed()
        _ = h.say("forecast")
        let model = try h.client(#"{"type":"response.create"}"#).model()
        let ran = call(&h, model.id, "forecast", "{}")
        guard let itemID = ran.mcpCall?.itemID else { Issue.record("\(ran.types)"); return }
        _ = h.engine.handle(.mcpToolCalled(itemID: itemID, .success(MCPToolOutput(text: "Sunny"))))
        let before = h.engine.history.count
        let deleted = h.client(#"{"type":"conversation.item.delete","item_id":"\#(itemID)"}"#)
        #expect(deleted.types == ["conversation.item.deleted"])
        #expect(h.engine.history.count == before - 2)
        #expect(!h.engine.history.contains { $0.role == .tool || !$0.toolCalls.isEmpty })
    }
}
