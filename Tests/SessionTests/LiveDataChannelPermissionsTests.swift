import JSON
import Testing
@testable import SessionEngine

/// A WebRTC front end's data channel held to `client.data_channel`: what it may send, what it is
/// sent; a WebSocket session and the sidebands are not held to it.
@Suite struct LiveDataChannelPermissionsTests {
    private func command(_ text: String) throws -> LiveCommand {
        try Array(text.utf8).withUnsafeBytes { try LiveCommand.parse($0) }
    }

    private func permissions(_ client: String) throws -> LiveDataChannelPermissions {
        try LiveDataChannelPermissions.parse(EventFields(try JSON(parsing: client), path: "session.client"))
    }

    /// A WebRTC call's session (the format its media's), started with `client`.
    private func call(_ client: String, media: Bool = true) throws -> LiveConversation {
        var config = try LiveSessionConfig.parse(EventFields(try JSON(parsing: #"{"model":"m","client":\#(client)}"#), path: "session"), media: media)
        if !media { config.format = .pcm24k }
        var live = LiveConversation(sessionID: "sess_1", seed: 3, expiresAt: 100)
        _ = live.command(LiveCommand(eventID: nil, kind: .start(config)), nowMs: 0)
        _ = live.engine(ServerEvent(eventID: "e", .sessionUpdated(SessionInfo(id: "sess_1", model: "m", configuration: SessionConfiguration()))), nowMs: 1)
        return live
    }

    @Test func listsAllowWhatTheyNameAndAllOrOmittedAllowsEverything() throws {
        let some = try permissions(#"{"data_channel":{"allowed_client_events":["session.update","session.close"],"allowed_server_events":[{"type":"session.output_transcript.delta"},{"type":"response.event","response_event":"response.completed"}]}}"#)
        #expect(some.allows(clientEvent: "session.close") && !some.allows(clientEvent: "session.commentary.append"))
        #expect(some.allows(serverEvent: .object([("type", .string("session.output_transcript.delta"))])))
        #expect(!some.allows(serverEvent: .object([("type", .string("session.input_transcript.delta"))])))
        let completed = JSON.object([("type", .string("response.event")), ("event", .object([("type", .string("response.completed"))]))])
        let delta = JSON.object([("type", .string("response.event")), ("event", .object([("type", .string("response.output_text.delta"))]))])
        #expect(some.allows(serverEvent: completed) && !some.allows(serverEvent: delta))
        // The channel's own life always reaches it.
        for type in ["session.started", "session.closed", "info"] { #expect(some.allows(serverEvent: .object([("type", .string(type))]))) }

        let all = try permissions(#"{"data_channel":{"allowed_client_events":"all"}}"#)
        #expect(all.clientEvents == nil && all.serverEvents == nil && all.allows(clientEvent: "session.update"))
        let none = try permissions(#"{"data_channel":{"allowed_client_events":[],"allowed_server_events":[]}}"#)
        #expect(!none.allows(clientEvent: "session.close") && !none.allows(serverEvent: .object([("type", .string("error"))])))
        #expect(none.notice.contains("may send no events"))
    }

    @Test func badSelectorsAreRefusedWithTheirPath() throws {
        for (client, param) in [(#"{"data_channel":{"allowed_client_events":"some"}}"#, "session.client.data_channel.allowed_client_events"),
                                (#"{"data_channel":{"allowed_server_events":[{"type":"response.event"}]}}"#, "session.client.data_channel.allowed_server_events[0].response_event"),
                                (#"{"data_channel":{"allowed_server_events":[{"type":"info","response_event":"x"}]}}"#, "session.client.data_channel.allowed_server_events[0].response_event"),
                                (#"{"data_channel":{"allowed_server_events":["info"]}}"#, "session.client.data_channel.allowed_server_events[0]"),
                                (#"{"data_channel":{"allowed_events":[]}}"#, "session.client.data_channel.allowed_events"),
                                (#"{}"#, "session.client.data_channel")] {
            do {
                _ = try permissions(client)
                Issue.record("taken: \(client)")
            } catch let error as ProtocolError {
                #expect(error.param == param, "\(client)")
            }
        }
    }

    @Test func aCallsFrontEndIsHeldToThemAndAWebSocketIsNot() throws {
        var live = try call(#"{"data_channel":{"allowed_client_events":["session.close"],"allowed_server_events":[{"type":"session.output_transcript.delta"}]}}"#)
        let notice = live.permissionsNotice()
        #expect(notice?["type"]?.string == "info" && notice?["code"]?.string == "data_channel_permissions")
        let refused = try #require(live.refusal(ofPrimary: try command(#"{"type":"session.commentary.append","event_id":"c1","content":"hi","delegation_id":null}"#)))
        #expect(refused.code.rawValue == "event_not_allowed" && refused.eventID == "c1")
        #expect(live.refusal(ofPrimary: try command(#"{"type":"session.close"}"#)) == nil)
        #expect(!live.reachesPrimary(.object([("type", .string("session.input_transcript.delta"))])))

        let socket = try call(#"{"data_channel":{"allowed_client_events":[]}}"#, media: false)
        #expect(socket.refusal(ofPrimary: try command(#"{"type":"session.close"}"#)) == nil)
        let open = try call(#"{"data_channel":{}}"#)
        #expect(open.refusal(ofPrimary: try command(#"{"type":"session.close"}"#)) == nil)
    }
}
