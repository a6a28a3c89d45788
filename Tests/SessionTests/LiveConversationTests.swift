import JSON
import Testing
@testable import SessionEngine

/// GPT-Live's rules as a value: Live commands and engine events in, steps out; no socket, no
/// clock (the test says what time it is).
@Suite struct LiveConversationTests {
    private func command(_ text: String) throws -> LiveCommand {
        try Array(text.utf8).withUnsafeBytes { try LiveCommand.parse($0) }
    }

    private func sent(_ steps: [LiveConversation.Step]) -> [JSON] {
        steps.compactMap { if case .send(let json) = $0 { json } else { nil } }
    }

    private func types(_ steps: [LiveConversation.Step]) -> [String] {
        sent(steps).map { $0["type"]?.string ?? "?" }
    }

    private func engineEvents(_ steps: [LiveConversation.Step]) -> [ClientEvent] {
        steps.compactMap { if case .engine(let event) = $0 { event } else { nil } }
    }

    private func event(_ kind: ServerEvent.Kind) -> ServerEvent { ServerEvent(eventID: "event_x", kind) }

    private func response(_ id: String, _ status: RealtimeResponse.Status) -> RealtimeResponse {
        RealtimeResponse(id: id, conversationID: nil, status: status, outputModalities: .audio, voice: "cedar", outputAudioFormat: .pcmu, maxOutputTokens: nil)
    }

    private static let start = #"{"type":"session.start","event_id":"e1","session":{"model":"gpt-live-1","instructions":"Be brief.","audio":{"format":{"type":"audio/pcmu","rate":8000},"output":{"voice":"cedar"}},"input":[{"role":"developer","content":[{"type":"input_text","text":"Caller is Ada."}]}]}}"#

    /// A session that has started (the engine took its settings).
    private func started() throws -> LiveConversation {
        var live = LiveConversation(sessionID: "sess_1", seed: 7, expiresAt: 100)
        _ = live.command(try command(Self.start), nowMs: 0)
        _ = live.engine(event(.sessionUpdated(SessionInfo(id: "sess_1", model: "m", configuration: SessionConfiguration()))), nowMs: 5)
        return live
    }

    @Test func startSetsTheEngineAndAnswersOnceTheEngineTookIt() throws {
        var live = LiveConversation(sessionID: "sess_1", seed: 7, expiresAt: 100)
        let steps = live.command(try command(Self.start), nowMs: 0)
        let update = try #require(engineEvents(steps).first)
        guard case .sessionUpdate(let settings) = update.kind else { Issue.record("not a session update: \(update)"); return }
        #expect(settings.instructions == "Be brief.")
        #expect(settings.voice == "cedar")
        #expect(settings.inputAudioFormat == .pcmu && settings.outputAudioFormat == .pcmu)
        #expect(settings.tools?.tools.map(\.name) == ["delegate"])
        #expect(types(steps).isEmpty)
        #expect(!live.hasStarted)

        let answer = live.engine(event(.sessionUpdated(SessionInfo(id: "sess_1", model: "m", configuration: SessionConfiguration()))), nowMs: 5)
        #expect(types(answer) == ["session.started"])
        let session = try #require(sent(answer).first?["session"])
        #expect(sent(answer).first?["client_event_id"]?.string == "e1")
        #expect(session["id"]?.string == "sess_1" && session["expires_at"]?.int == 100 && session["model"]?.string == "gpt-live-1")
        #expect(session["audio"]?["format"]?["type"]?.string == "audio/pcmu")
        // The initial history goes in after the start: a developer message as a system item.
        let items = engineEvents(answer)
        #expect(items.count == 1)
        if case .conversationItemCreate(let item) = items.first?.kind { #expect(item.role == .system && item.text == "Caller is Ada.") }
        #expect(live.hasStarted)
    }

    @Test func anEngineRefusalLeavesTheSessionUnstartedAndItMayStartAgain() throws {
        var live = LiveConversation(sessionID: "sess_1", seed: 7, expiresAt: 100)
        _ = live.command(try command(Self.start), nowMs: 0)
        let refused = live.engine(event(.error(EventError(type: .invalidRequest, code: "invalid_value", message: "no"))), nowMs: 1)
        #expect(types(refused) == ["error"])
        #expect(!live.hasStarted)
        #expect(!engineEvents(live.command(try command(Self.start), nowMs: 2)).isEmpty)
    }

    @Test func commandsBeforeTheStartAndASecondStartAreRefused() throws {
        var live = LiveConversation(sessionID: "sess_1", seed: 7, expiresAt: 100)
        let early = live.command(try command(#"{"type":"session.input_audio.append","event_id":"a1","audio":"AAAA"}"#), nowMs: 0)
        #expect(sent(early).first?["error"]?["code"]?.string == "session_not_started")
        #expect(sent(early).first?["client_event_id"]?.string == "a1")
        var live2 = try started()
        let again = live2.command(try command(Self.start), nowMs: 9)
        #expect(sent(again).first?["error"]?["code"]?.string == "session_already_started")
    }

    @Test func audioAt16kHzIsTheEnginesRateBothWays() throws {
        var live = LiveConversation(sessionID: "sess_1", seed: 7, expiresAt: 100)
        let steps = live.command(try command(#"{"type":"session.start","session":{"model":"m","audio":{"format":{"type":"audio/pcm","rate":16000}}}}"#), nowMs: 0)
        guard case .sessionUpdate(let settings)? = engineEvents(steps).first?.kind else { Issue.record("no session update: \(steps)"); return }
        #expect(settings.inputAudioFormat == .pcm16k && settings.outputAudioFormat == .pcm16k)
        #expect(RealtimeAudioFormat.pcm16k.engineRate == 16_000 && RealtimeAudioFormat.pcm16k.sampleRate == 16_000)
        let started = live.engine(event(.sessionUpdated(SessionInfo(id: "sess_1", model: "m", configuration: SessionConfiguration()))), nowMs: 5)
        #expect(sent(started).first?["session"]?["audio"]?["format"]?["rate"]?.int == 16_000)
        _ = live.command(try command(#"{"type":"session.input_audio.mute"}"#), nowMs: 6)
        #expect(live.heard([1, 2, 3, 4]) == [0, 0, 0, 0])
        // 32 bytes a millisecond's worth of output: 320 bytes are 10 ms on the timeline.
        #expect(live.replyAudio([UInt8](repeating: 0, count: 320), responseID: "resp_1", nowMs: 10)?["end_ms"]?.int == 20)
    }

    @Test func strictFieldsAreRefusedWithTheirPath() {
        let cases: [(String, String, String)] = [
            (#"{"type":"session.start","session":{"model":"m","voice":"x"}}"#, "unknown_parameter", "session.voice"),
            (#"{"type":"session.start","session":{"model":"m","audio":{"format":{"type":"audio/pcm","rate":24000,"bits":16}}}}"#, "unknown_parameter", "session.audio.format.bits"),
            (#"{"type":"session.start","session":{"model":"m","audio":{"format":{"type":"audio/pcm","rate":22050}}}}"#, "invalid_value", "session.audio.format.rate"),
            (#"{"type":"session.start","session":{"model":"m","delegation":{"type":"decisions","decisions":{}}}}"#, "unsupported_value", "session.delegation.type"),
            (#"{"type":"session.start","session":{"model":"m","triggers":[{"type":"x"}]}}"#, "unsupported_value", "session.triggers"),
            (#"{"type":"session.start","session":{"instructions":"x"}}"#, "missing_field", "session.model"),
            (#"{"type":"session.input_audio.mute","muted":true}"#, "unknown_parameter", "muted"),
            (#"{"type":"session.speak"}"#, "unknown_event", "type"),
        ]
        for (text, code, param) in cases {
            do {
                _ = try command(text)
                Issue.record("taken: \(text)")
            } catch let error as ProtocolError {
                #expect(error.code.rawValue == code, "\(text)")
                #expect(error.param == param, "\(text)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }

    @Test func mutedAudioReachesTheEngineAsSilenceInTheSessionsFormat() throws {
        var live = try started()
        let loud: [UInt8] = [0x10, 0x20, 0x30, 0x40]
        let append = #"{"type":"session.input_audio.append","audio":"ECAwQA=="}"#
        #expect(live.command(try command(append), nowMs: 10) == [.audio(loud)])
        #expect(types(live.command(try command(#"{"type":"session.input_audio.mute"}"#), nowMs: 11)) == ["session.input_audio.muted"])
        // µ-law's silence is 0xFF: the model hears a pause, and the timeline goes on.
        #expect(live.command(try command(append), nowMs: 12) == [.audio([0xFF, 0xFF, 0xFF, 0xFF])])
        #expect(types(live.command(try command(#"{"type":"session.input_audio.unmute"}"#), nowMs: 13)) == ["session.input_audio.unmuted"])
        #expect(live.command(try command(append), nowMs: 14) == [.audio(loud)])
    }

    @Test func aFixturePlaysOutMutesTheInputAndHoldsAppends() throws {
        var live = try started()  // a µ-law session: the fixture is pcm16 at 24 kHz all the same
        // A reply is in flight: the fixture cuts it.
        _ = live.engine(event(.responseCreated(response("resp_1", .inProgress))), nowMs: 20)
        let samples: [Int16] = (0..<24_000).map { Int16(truncatingIfNeeded: $0 * 37) }  // 1 s
        let bytes = samples.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] }
        let play = live.command(try command(#"{"type":"session.output_audio.fixture.play","event_id":"f1","audio":"\#(Base64.encode(bytes))"}"#), nowMs: 100)
        #expect(engineEvents(play).first?.kind == .responseCancel(responseID: "resp_1"))
        #expect(types(play) == ["session.output_audio.fixture.playing"])
        // Its audio goes out through the session's output, as a reply's does (in the session's
        // format, on its carrier), not as events made here.
        guard case .playFixture(let played, let id) = play.last else { Issue.record("no fixture played: \(play)"); return }
        #expect(played == samples && id.hasPrefix("fixture_"))
        // On the output timeline, where the fixture's own audio begins.
        let audio = live.replyAudio([UInt8](repeating: 0xFF, count: 160), responseID: id, nowMs: 120)
        #expect(audio?["start_ms"]?.int == 120 && audio?["end_ms"]?.int == 140)

        #expect(live.command(try command(#"{"type":"session.input_audio.append","audio":"ECAwQA=="}"#), nowMs: 200) == [.audio([0xFF, 0xFF, 0xFF, 0xFF])])
        let during = live.command(try command(#"{"type":"session.instructions.append","content":"x","delegation_id":null}"#), nowMs: 300)
        #expect(sent(during).first?["error"]?["code"]?.string == "fixture_active")
        let twice = live.command(try command(#"{"type":"session.output_audio.fixture.play","audio":"VVU="}"#), nowMs: 300)
        #expect(sent(twice).first?["error"]?["code"]?.string == "fixture_active")

        let ended = live.fixturePlayed(true, nowMs: 1100)
        #expect(types(ended) == ["session.output_audio.fixture.played"])
        #expect(sent(ended).first?["client_event_id"]?.string == "f1")
        #expect(live.fixturePlayed(true, nowMs: 1101).isEmpty)
        #expect(live.command(try command(#"{"type":"session.input_audio.append","audio":"ECAwQA=="}"#), nowMs: 1200) == [.audio([0x10, 0x20, 0x30, 0x40])])

        // One that cannot be played (no speech workers) says so, and the input is heard again.
        _ = live.command(try command(#"{"type":"session.output_audio.fixture.play","event_id":"f2","audio":"AAA="}"#), nowMs: 1300)
        let failed = live.fixturePlayed(false, nowMs: 1310)
        #expect(sent(failed).first?["error"]?["code"]?.string == "fixture_failed" && sent(failed).first?["client_event_id"]?.string == "f2")
        #expect(!live.hearsSilence)
    }

    @Test func aFixtureIsCheckedWholeBeforeAnythingIsCut() throws {
        var live = try started()
        _ = live.engine(event(.responseCreated(response("resp_1", .inProgress))), nowMs: 20)
        let long = [UInt8](repeating: 0x55, count: 48_000 * 30 + 2)
        for audio in [Base64.encode(long), "VQ==", ""] {
            let steps = live.command(try command(#"{"type":"session.output_audio.fixture.play","audio":"\#(audio)"}"#), nowMs: 30)
            #expect(sent(steps).first?["error"]?["code"]?.string == "invalid_value" && engineEvents(steps).isEmpty && !live.hearsSilence)
        }
    }

    private func delegate(_ live: inout LiveConversation, nowMs: Int) -> [LiveConversation.Step] {
        _ = live.engine(event(.responseCreated(response("resp_d", .inProgress))), nowMs: nowMs)
        let created = live.engine(event(.functionCallArgumentsDone(FunctionCallLocation(responseID: "resp_d", itemID: "item_c", outputIndex: 0, callID: "call_1"),
                                                                   name: "delegate", arguments: #"{"task":"weather in Paris"}"#)), nowMs: nowMs)
        return created + live.engine(event(.responseDone(response("resp_d", .completed))), nowMs: nowMs + 10)
    }

    private func scripted(_ steps: [LiveConversation.Step]) -> [String] {
        engineEvents(steps).compactMap { if case .responseCreate(let overrides) = $0.kind { overrides.scripted?.text } else { nil } }
    }

    @Test func aDelegateCallBecomesADelegationAnsweredInTheConversationAndAcknowledged() throws {
        var live = try started()
        let steps = delegate(&live, nowMs: 500)
        #expect(types(steps) == ["session.delegation.created", "session.usage.updated"])
        let delegation = try #require(sent(steps).first)
        #expect(delegation["delegation"]?["target"]?.string == "client" && delegation["offset_ms"]?.int == 500)
        let id = try #require(delegation["delegation"]?["id"]?.string)
        // The call is answered once its response is done, and the acknowledgement (delay 0) said.
        let outputs = engineEvents(steps).compactMap { if case .conversationItemCreate(let item) = $0.kind { item.function } else { nil } }
        #expect(outputs.count == 1)
        if case .output(let callID, let output) = outputs.first { #expect(callID == "call_1" && output.contains(id)) }
        #expect(scripted(steps) == [LiveConversation.acknowledgement])
    }

    @Test func commentaryCancelsTheAcknowledgementAndIsSpokenOnceTheReplyEnds() throws {
        var live = try started()
        _ = live.command(try command(#"{"type":"session.update","session":{"delegation":{"type":"client","acknowledgement_delay_ms":400}}}"#), nowMs: 400)
        let steps = delegate(&live, nowMs: 500)
        #expect(scripted(steps).isEmpty)
        #expect(steps.contains(.arm(.acknowledgement, afterMs: 390)))
        // The user speaks meanwhile: a reply is in flight, so the commentary waits for it.
        _ = live.engine(event(.responseCreated(response("resp_u", .inProgress))), nowMs: 600)
        let comment = live.command(try command(#"{"type":"session.commentary.append","content":"Sunny, 21 degrees.","delegation_id":"deleg_x"}"#), nowMs: 700)
        #expect(types(comment) == ["session.commentary.appended"])
        #expect(scripted(comment).isEmpty)
        #expect(scripted(live.timer(.acknowledgement, nowMs: 900)).isEmpty)
        let done = live.engine(event(.responseDone(response("resp_u", .completed))), nowMs: 1000)
        #expect(scripted(done) == ["Sunny, 21 degrees."])
    }

    @Test func aDelayedAcknowledgementIsSaidWhenDue() throws {
        var live = try started()
        _ = live.command(try command(#"{"type":"session.update","session":{"delegation":{"type":"client","acknowledgement_delay_ms":400}}}"#), nowMs: 400)
        // An update that omits the delay keeps it.
        let kept = live.command(try command(#"{"type":"session.update","session":{"delegation":{"type":"client"}}}"#), nowMs: 450)
        #expect(sent(kept).first?["session"]?["delegation"]?["acknowledgement_delay_ms"]?.int == 400)
        _ = delegate(&live, nowMs: 500)
        #expect(scripted(live.timer(.acknowledgement, nowMs: 900)) == [LiveConversation.acknowledgement])
    }

    @Test func thinkingIsKnownNotSaid() throws {
        var live = try started()
        _ = delegate(&live, nowMs: 0)
        let steps = live.command(try command(#"{"type":"session.thinking.append","content":"Looking it up.","delegation_id":"deleg_1"}"#), nowMs: 50)
        #expect(types(steps) == ["session.thinking.appended"])
        if case .conversationItemCreate(let item) = engineEvents(steps).first?.kind {
            #expect(item.role == .system && item.text.contains("Looking it up.") && item.text.contains("deleg_1"))
        } else {
            Issue.record("no system item")
        }
        #expect(scripted(steps).isEmpty)
    }

    @Test func theInputTranscriptIsSentAsDeltasThatAreNeverRewritten() throws {
        var live = try started()
        _ = live.engine(event(.speechStarted(audioStartMs: 1200, itemID: "item_1")), nowMs: 1300)
        var text = ""
        func take(_ steps: [LiveConversation.Step]) {
            for json in sent(steps) where json["type"]?.string == "session.input_transcript.delta" {
                text += json["delta"]?.string ?? ""
                #expect(json["start_ms"]?.int == 1200)
            }
        }
        // The recogniser's hypothesis grows; its last word (here with a period) waits.
        take(live.engine(event(.inputAudioTranscriptionDelta(itemID: "item_1", contentIndex: 0, delta: "Please.")), nowMs: 1500))
        #expect(text.isEmpty)
        take(live.engine(event(.inputAudioTranscriptionDelta(itemID: "item_1", contentIndex: 0, delta: " Check the")), nowMs: 1700))
        #expect(text == "Please. Check")
        _ = live.engine(event(.speechStopped(audioEndMs: 2600, itemID: "item_1")), nowMs: 2700)
        // The final rewrote the first word's punctuation: the words past those sent follow.
        take(live.engine(event(.inputAudioTranscriptionCompleted(itemID: "item_1", contentIndex: 0, transcript: "Please, check the weather.", audioSeconds: 1.4)),
                         nowMs: 2900))
        #expect(text == "Please. Check the weather.")
    }

    @Test func responsesAndDecisionsCommandsAreRefusedAndCloseEndsTheSession() throws {
        var live = try started()
        #expect(sent(live.command(try command(#"{"type":"response.create"}"#), nowMs: 0)).first?["error"]?["message"]?.string == "response.create requires Responses delegation.")
        #expect(sent(live.command(try command(#"{"type":"response.item.create","item":{"type":"function_call_output","call_id":"c","output":"x"}}"#), nowMs: 0)).first?["error"]?["code"]?.string == "invalid_request")
        #expect(sent(live.command(try command(#"{"type":"decision.create","event_id":"d"}"#), nowMs: 0)).first?["error"]?["code"]?.string == "unsupported_event")
        let close = live.command(try command(#"{"type":"session.close","event_id":"c"}"#), nowMs: 2500)
        #expect(close.last == .close)
        let closed = try #require(sent(close).first)
        #expect(closed["reason"]?.string == "close_requested" && closed["usage"]?["seconds"]?.double == 2.5 && closed["client_event_id"]?.string == "c")
    }

    // MARK: Responses delegation

    private static let responsesStart = #"{"type":"session.start","session":{"model":"gpt-live-1","delegation":{"type":"responses","acknowledgement_delay_ms":0,"responses":{"model":"gpt-5.2","instructions":"Be exact.","tools":[{"type":"function","name":"order_status","parameters":{"type":"object","properties":{"order_id":{"type":"string"}}}},{"type":"mcp","server_label":"agent","server_url":"http://127.0.0.1:9/agent"}]}}}}"#

    @Test func aResponsesDelegationParsesItsBackendAndRefusesHostedTools() throws {
        let start = try command(Self.responsesStart)
        guard case .start(let config) = start.kind, let backend = config.delegation.backend else { Issue.record("no backend"); return }
        #expect(backend.model == "gpt-5.2" && backend.instructions == "Be exact.")
        #expect(backend.tools?.tools.map(\.name) == ["order_status"] && backend.mcpServers.map(\.label) == ["agent"])
        let update = backend.engineUpdate
        #expect(update.outputModalities == .text && update.turnDetection == .manual)
        do {
            _ = try command(#"{"type":"session.start","session":{"model":"m","delegation":{"type":"responses","responses":{"model":"x","tools":[{"type":"web_search"}]}}}}"#)
            Issue.record("a hosted tool was taken")
        } catch let error as ProtocolError {
            #expect(error.code == .unsupportedValue && error.param == "session.delegation.responses.tools[0].type")
        }
    }

    @Test func aResponsesDelegationHandsTheTaskToTheBackendAndSpeaksItsAnswer() throws {
        var live = LiveConversation(sessionID: "sess_1", seed: 7, expiresAt: 100)
        _ = live.command(try command(Self.responsesStart), nowMs: 0)
        _ = live.engine(event(.sessionUpdated(SessionInfo(id: "sess_1", model: "m", configuration: SessionConfiguration()))), nowMs: 5)
        let steps = delegate(&live, nowMs: 500)
        let delegation = try #require(sent(steps).first)
        #expect(delegation["delegation"]?["target"]?.string == "responses")
        let id = try #require(delegation["delegation"]?["id"]?.string)
        #expect(steps.contains(.delegate(task: "weather in Paris", delegationID: id)))
        // The application's commands go to the backend now.
        let item = live.command(try command(#"{"type":"response.item.create","item":{"type":"function_call_output","call_id":"call_9","output":"{}"}}"#), nowMs: 600)
        if case .backend(let event) = item.first, case .conversationItemCreate(let created) = event.kind {
            #expect(created.function == .output(callID: "call_9", output: "{}"))
        } else {
            Issue.record("not for the backend: \(item)")
        }
        #expect(live.command(try command(#"{"type":"response.create","event_id":"r"}"#), nowMs: 610) == [.backend(ClientEvent(eventID: "r", .responseCreate(ResponseOverrides())))])
        // Its events come in envelopes naming the delegation; its answer is spoken.
        let envelope = live.backend(.event(.object([("type", .string("response.completed"))])), nowMs: 700)
        #expect(sent(envelope).first?["type"]?.string == "response.event" && sent(envelope).first?["delegation_id"]?.string == id)
        // The acknowledgement is playing: the answer waits for its end.
        _ = live.engine(event(.responseCreated(response("resp_ack", .inProgress))), nowMs: 700)
        #expect(scripted(live.backend(.answered("Order 42 has shipped."), nowMs: 800)).isEmpty)
        #expect(scripted(live.engine(event(.responseDone(response("resp_ack", .completed))), nowMs: 900)) == ["Order 42 has shipped."])
    }

    @Test func theBackendsEventsAreResponsesEventsAndItsOutcomeIsTheAnswer() {
        var events = LiveResponsesEvents()
        let at = ContentLocation(responseID: "resp_b", itemID: "item_b")
        var outcomes = events.translate(event(.responseCreated(response("resp_b", .inProgress))))
        outcomes += events.translate(event(.outputTextDelta(at, delta: "Order 42 ")))
        outcomes += events.translate(event(.outputTextDelta(at, delta: "has shipped.")))
        outcomes += events.translate(event(.responseDone(response("resp_b", .completed))))
        let types = outcomes.compactMap { if case .event(let json) = $0 { json["type"]?.string } else { nil } }
        #expect(types == ["response.created", "response.output_text.delta", "response.output_text.delta", "response.completed"])
        let first = outcomes.first.flatMap { if case .event(let json) = $0 { json } else { nil } }
        #expect(first?["event_id"] == nil && first?["sequence_number"]?.int == 0 && first?["response"]?["object"]?.string == "response")
        #expect(outcomes.last == .answered("Order 42 has shipped."))

        // A response that called the application's function is not an answer: the application
        // answers the call first.
        var calling = LiveResponsesEvents()
        _ = calling.translate(event(.responseCreated(response("resp_c", .inProgress))))
        _ = calling.translate(event(.functionCallArgumentsDone(FunctionCallLocation(responseID: "resp_c", itemID: "i", outputIndex: 0, callID: "call_1"),
                                                               name: "order_status", arguments: "{}")))
        #expect(!calling.translate(event(.responseDone(response("resp_c", .completed)))).contains { if case .answered = $0 { true } else { false } })
        // One that ended on an MCP call's result goes on.
        var serving = LiveResponsesEvents()
        _ = serving.translate(event(.responseCreated(response("resp_m", .inProgress))))
        _ = serving.translate(event(.mcpCallCompleted(MCPCallLocation(responseID: "resp_m", itemID: "m", outputIndex: 0))))
        #expect(serving.translate(event(.responseDone(response("resp_m", .completed)))).last == .continues)
    }
}
