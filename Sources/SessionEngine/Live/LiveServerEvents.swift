import JSON

/// GPT-Live's server events as JSON, each with its own `event_id` and, when a client command
/// caused it, that command's `client_event_id` (openai SDK 3.54.0, `openai/types/live/server_event.py`).
package struct LiveServerEvents: Sendable {
    private var ids: IDGenerator

    package init(seed: UInt64) {
        ids = IDGenerator(seed: seed)
    }

    package mutating func make(_ type: String, _ fields: [(String, JSON)] = [], replyingTo clientEventID: String? = nil) -> JSON {
        var members: [(String, JSON)] = [("type", .string(type)), ("event_id", .string(ids.make("event")))]
        members += fields
        if let clientEventID { members.append(("client_event_id", .string(clientEventID))) }
        return .object(members)
    }

    package mutating func error(_ error: ProtocolError) -> JSON {
        self.error(EventError(error))
    }

    /// `error`: `error.type`, `code`, `message`, `param` and the command's `client_event_id`, in
    /// the error and beside it.
    package mutating func error(_ error: EventError) -> JSON {
        var body: [(String, JSON)] = [("type", .string(error.type.rawValue)), ("code", .string(error.code)), ("message", .string(error.message))]
        if let param = error.param { body.append(("param", .string(param))) }
        if let eventID = error.eventID { body.append(("client_event_id", .string(eventID))) }
        return make("error", [("error", .object(body))], replyingTo: error.eventID)
    }

    package mutating func id(_ prefix: String) -> String { ids.make(prefix) }
}

/// The Live errors Parley sends for commands it cannot take now (docs/protocol.md, "GPT-Live").
package enum LiveRefusal {
    package static func notStarted(_ what: String, eventID: String?) -> ProtocolError {
        ProtocolError(.init(rawValue: "session_not_started"), "\(what) before session.started: send session.start first and wait for session.started",
                      param: "type", eventID: eventID)
    }

    package static func alreadyStarted(eventID: String?) -> ProtocolError {
        ProtocolError(.init(rawValue: "session_already_started"), "the session has already started; session.start is sent once (use session.update to change the delegation)",
                      param: "type", eventID: eventID)
    }

    package static func fixtureActive(_ what: String, eventID: String?) -> ProtocolError {
        ProtocolError(.init(rawValue: "fixture_active"), "\(what) is rejected while an audio fixture plays; wait for session.output_audio.fixture.played",
                      param: "type", eventID: eventID)
    }

    package static func needsResponses(_ type: String, eventID: String?) -> ProtocolError {
        ProtocolError(.init(rawValue: "invalid_request"), "\(type) requires Responses delegation.", param: "type", eventID: eventID)
    }

    package static func decisions(_ type: String, eventID: String?) -> ProtocolError {
        ProtocolError(.unsupportedEvent, "\(type) is a Decisions command, and Parley does not support Decisions (docs/protocol.md, \"GPT-Live\")",
                      param: "type", eventID: eventID)
    }

    package static func fixtureTooLong(seconds: Double, eventID: String?) -> ProtocolError {
        let tenths = Int((seconds * 10).rounded())
        return ProtocolError(.invalidValue, "the fixture holds \(tenths / 10).\(tenths % 10) s of audio; at most \(Int(LiveConversation.maxFixtureSeconds)) s may be played",
                      param: "audio", eventID: eventID)
    }

    package static func fixtureShape(eventID: String?) -> ProtocolError {
        ProtocolError(.invalidValue, "the fixture's audio must be whole 16-bit samples (pcm16 at 24 kHz, whatever the session's format), and not empty", param: "audio", eventID: eventID)
    }
}
