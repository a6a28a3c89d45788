import JSON
import Models
import Testing
@testable import SessionEngine

/// A stored GPT-Live session and its forks, as values: what is kept (no credential), what a fork
/// inherits, and which overrides it takes on each transport.
@Suite struct LiveStoredSessionTests {
    private func config(_ session: String) throws -> LiveSessionConfig {
        try LiveSessionConfig.parse(EventFields(try JSON(parsing: session)))
    }

    private func fields(_ text: String) throws -> EventFields { EventFields(try JSON(parsing: text), path: "session") }

    private static let responses = #"{"model":"gpt-live-1","instructions":"Be brief.","audio":{"format":{"type":"audio/pcmu","rate":8000},"output":{"voice":{"id":"voice_ada"}}},"store":true,"safety_identifier":"u-42","delegation":{"type":"responses","acknowledgement_delay_ms":250,"responses":{"model":"gpt-5.2","instructions":"Be exact.","max_output_tokens":300,"tools":[{"type":"function","name":"order_status","parameters":{"type":"object","properties":{}}},{"type":"mcp","server_label":"crm","server_url":"http://127.0.0.1:9/mcp","authorization":"tok-7f3a9b","headers":{"X-Key":"hdr-55e1"}}]}}}"#

    private func stored(_ session: String = Self.responses) throws -> LiveStoredSession {
        LiveStoredSession(tenant: "acme", config: try config(session),
                          history: LiveStoredSession.history([
                              ChatMessage(role: .system, text: "Caller is Ada."),
                              ChatMessage(role: .user, text: "Where is order 7?"),
                              ChatMessage(role: .assistant, text: "", toolCalls: [ToolCall(id: "c1", name: "delegate", arguments: "{}")]),
                              ChatMessage(role: .tool, text: "{\"status\":\"shipped\"}", toolCallID: "c1"),
                              ChatMessage(role: .assistant, text: "It shipped on Monday."),
                          ]),
                          recording: "sess_1.opus", endedAt: 1_800_000_000)
    }

    @Test func keepsTheConversationsWordsAndReadsBackWhatItWrote() throws {
        let kept = try stored()
        // The tool call and its result are the turn's own; what came of them is in the reply.
        #expect(kept.history.map(\.role) == [.system, .user, .assistant])
        #expect(kept.history.map(\.text) == ["Caller is Ada.", "Where is order 7?", "It shipped on Monday."])
        let read = try #require(LiveStoredSession.parse(kept.json.description))
        #expect(read.tenant == "acme" && read.recording == "sess_1.opus" && read.endedAt == 1_800_000_000)
        #expect(read.history.map(\.text) == kept.history.map(\.text) && read.history.map(\.role) == kept.history.map(\.role))
        #expect(read.config.model == "gpt-live-1" && read.config.voice == "voice_ada" && read.config.customVoice)
        #expect(read.config.instructions == "Be brief." && read.config.format == .pcmu && read.config.store && read.config.safetyIdentifier == "u-42")
        #expect(read.config.delegation.acknowledgementDelayMs == 250)
        #expect(read.config.delegation.backend?.instructions == "Be exact." && read.config.delegation.backend?.maxOutputTokens == 300)
        #expect(LiveStoredSession.parse("{\"tenant\":\"acme\"}") == nil && LiveStoredSession.parse("not json") == nil)
    }

    @Test func neitherTheResourceNorTheStoreHoldsACredential() throws {
        let kept = try stored()
        let resource = kept.config.resource(id: "sess_1", expiresAt: 0).description
        for text in [resource, kept.json.description] {
            #expect(!text.contains("tok-7f3a9b") && !text.contains("hdr-55e1"))
            #expect(text.contains("[redacted]") && text.contains("order_status"))
        }
    }

    @Test func aForkInheritsTheStoredSessionAndItsConversation() throws {
        let kept = try stored(#"{"model":"gpt-live-1","instructions":"Be brief.","store":true,"audio":{"output":{"voice":"cedar"}}}"#)
        let fork = try kept.fork(try fields("{}"), media: false)
        #expect(fork.model == "gpt-live-1" && fork.voice == "cedar" && fork.instructions == "Be brief." && fork.store)
        #expect(fork.format == .pcm24k)
        #expect(fork.input.map(\.text) == ["Caller is Ada.", "Where is order 7?", "It shipped on Monday."])
        #expect(fork.input.map { $0.json["role"]?.string } == ["developer", "user", "assistant"])
        // The history shows as the fork's own `input`, in the shape a client gives it.
        #expect(fork.resource(id: "sess_2", expiresAt: 0)["input"]?.array?.count == 3)

        let overridden = try kept.fork(try fields(#"{"audio":{"format":{"type":"audio/pcma"}},"store":false}"#), media: false)
        #expect(overridden.format == .pcma && !overridden.store)
        let call = try kept.fork(try fields(#"{"client":{"data_channel":{"allowed_client_events":["session.update"]}}}"#), media: true)
        #expect(call.format == .negotiated && call.client?["data_channel"] != nil && call.dataChannel?.clientEvents == ["session.update"])
        #expect(try kept.fork(nil, media: true).input.count == 3)
    }

    @Test func aForkRefusesWhatItCannotChange() throws {
        let kept = try stored(#"{"model":"gpt-live-1","store":true}"#)
        func refusal(_ overrides: String, media: Bool = false) throws -> ProtocolError? {
            let given = try fields(overrides)
            do throws(ProtocolError) { _ = try kept.fork(given, media: media) } catch { return error }
            return nil
        }
        // The model is inherited ("do not supply a new model"); the strict schema says so.
        #expect(try refusal(#"{"model":"gpt-live-2"}"#)?.code == .unknownParameter)
        #expect(try refusal(#"{"instructions":"Be loud."}"#)?.param == "session.instructions")
        // A WebRTC fork negotiates its format; a WebSocket fork has no data channel to permit.
        #expect(try refusal(#"{"audio":{"format":{"type":"audio/pcmu"}}}"#, media: true)?.code == .unknownParameter)
        #expect(try refusal(#"{"client":{"data_channel":{}}}"#)?.param == "session.client")
        // The delegation's owner stays the stored session's.
        #expect(try refusal(#"{"delegation":{"type":"responses","responses":{"model":"m"}}}"#)?.param == "session.delegation.type")
    }

    @Test func aForkOfABackendThatSentCredentialsGivesItsToolsAgain() throws {
        let kept = try #require(LiveStoredSession.parse(try stored().json.description))
        let empty = try fields("{}")
        do throws(ProtocolError) {
            _ = try kept.fork(empty, media: false)
            Issue.record("a fork with redacted MCP credentials was started")
        } catch {
            #expect(error.param == "session.delegation" && error.message.contains("delegation.responses.tools"))
        }
        let fork = try kept.fork(try fields(#"{"delegation":{"type":"responses","responses":{"tools":[{"type":"mcp","server_label":"crm","server_url":"http://127.0.0.1:9/mcp","authorization":"tok-new"}]}}}"#),
                                 media: false)
        let backend = try #require(fork.delegation.backend)
        // The tools given replace the stored ones; the rest of the backend stays as it was.
        #expect(backend.mcpServers.map(\.label) == ["crm"] && backend.tools?.tools.isEmpty != false)
        #expect(backend.instructions == "Be exact." && backend.model == "gpt-5.2" && backend.maxOutputTokens == 300)
        #expect(fork.delegation.acknowledgementDelayMs == 250)
    }

    @Test func anUpdateOfTheBackendKeepsWhatItDoesNotGive() throws {
        let start = try config(Self.responses)
        let update = try LiveDelegation.parse(try fields(#"{"type":"responses","responses":{"instructions":"Be warm."}}"#), update: true)
        let updated = start.delegation.updated(to: update)
        let backend = try #require(updated.backend)
        #expect(backend.instructions == "Be warm." && backend.model == "gpt-5.2" && backend.maxOutputTokens == 300)
        #expect(backend.tools?.tools.map(\.name) == ["order_status"] && backend.mcpServers.map(\.label) == ["crm"])
        #expect(updated.acknowledgementDelayMs == 250)
        #expect(backend.json["instructions"]?.string == "Be warm." && backend.json["model"]?.string == "gpt-5.2")
    }
}
