import JSON

/// A GPT-Live client event, parsed strictly (openai SDK 3.54.0, `openai/types/live/client_event.py`:
/// fifteen events). An unknown field is `unknown_parameter`; an unknown type `unknown_event`.
package struct LiveCommand: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        case start(LiveSessionConfig)
        /// `session.update`: the delegation given (nil: unchanged). Triggers other than none are refused.
        case update(delegation: LiveDelegation?)
        /// `session.input_audio.append`: the audio's bytes in the session's format.
        case audio([UInt8])
        case mute
        case unmute
        /// `session.output_audio.fixture.play`: the application's own audio, pcm16 at 24 kHz.
        case fixture([UInt8])
        case instructions(Append)
        case thinking(Append)
        case commentary(Append)
        /// `response.create` and `response.item.create`: the Responses backend's commands (an
        /// item: a function call's output, or a message).
        case responseCreate
        case responseItemCreate(NewConversationItem)
        /// `decision.create`, `decision.item.create`, `decision.item.delete`.
        case decision(type: String)
        /// `transport.dtmf.send`: one key to press on a SIP call (a sideband's command).
        case dtmf(Character)
        case close
    }

    /// The text of an `…append` event, and the delegation it answers, if any.
    package struct Append: Sendable, Equatable {
        package var content: String
        package var delegationID: String?
    }

    package var eventID: String?
    package var kind: Kind

    /// The event's `type`, as the client sent it.
    package var type: String {
        switch kind {
        case .start: "session.start"
        case .update: "session.update"
        case .audio: "session.input_audio.append"
        case .mute: "session.input_audio.mute"
        case .unmute: "session.input_audio.unmute"
        case .fixture: "session.output_audio.fixture.play"
        case .instructions: "session.instructions.append"
        case .thinking: "session.thinking.append"
        case .commentary: "session.commentary.append"
        case .responseCreate: "response.create"
        case .responseItemCreate: "response.item.create"
        case .decision(let type): type
        case .dtmf: "transport.dtmf.send"
        case .close: "session.close"
        }
    }

    package init(eventID: String?, kind: Kind) {
        self.eventID = eventID
        self.kind = kind
    }

    /// The longest appended text: the engine's instruction budget.
    package static let maxAppendBytes = SessionConfiguration.maxInstructionBytes

    /// `text`, one client message; the error carries the `event_id` once it was read.
    /// `forking`: the stored session a fork's connection starts from, whose `session.start` gives
    /// overrides of it (`ForkSessionConfig`) rather than a whole configuration.
    package static func parse(_ message: UnsafeRawBufferPointer, forking: LiveStoredSession? = nil) throws(ProtocolError) -> LiveCommand {
        // A microphone's append, fifty times a second, is read in place (`AudioAppendScan`).
        let bytes = message.assumingMemoryBound(to: UInt8.self)
        if let found = AudioAppendScan.scan(bytes, type: "session.input_audio.append"),
           let audio = Base64.decode(UnsafeBufferPointer(rebasing: bytes[found.audio])) {
            let eventID = found.eventID.map { String(decoding: UnsafeBufferPointer(rebasing: bytes[$0]), as: UTF8.self) }
            return LiveCommand(eventID: eventID, kind: .audio(audio))
        }
        let json: JSON
        do {
            json = try JSON(parsing: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw ProtocolError(.invalidJSON, "the event is not valid JSON: \(error.reason) at byte \(error.offset)")
        }
        guard json.object != nil else { throw ProtocolError(.invalidValue, "an event must be a JSON object") }
        let event = EventFields(json)
        let eventID = try? event.string("event_id")
        do {
            return LiveCommand(eventID: eventID, kind: try kind(event, forking: forking))
        } catch {
            var error = error
            error.eventID = eventID
            throw error
        }
    }

    private static func kind(_ event: EventFields, forking: LiveStoredSession?) throws(ProtocolError) -> Kind {
        let type = try event.requiredString("type")
        let common: Set<String> = ["type", "event_id"]
        switch type {
        case "session.start":
            try event.refuseUnknown(common.union(["session"]))
            guard let session = try event.object("session") else { throw event.missing("session") }
            if let forking { return .start(try forking.fork(session, media: false)) }
            return .start(try LiveSessionConfig.parse(session))
        case "session.update":
            try event.refuseUnknown(common.union(["session"]))
            guard let session = try event.object("session") else { throw event.missing("session") }
            try session.refuseUnknown(["delegation", "triggers"])
            try LiveSessionConfig.refuseTriggers(session)
            guard session.has("delegation") else { return .update(delegation: nil) }
            return .update(delegation: try LiveDelegation.parse(try session.object("delegation"), update: true))
        case "session.input_audio.append":
            try event.refuseUnknown(common.union(["audio"]))
            return .audio(try audio(event))
        case "session.input_audio.mute":
            try event.refuseUnknown(common)
            return .mute
        case "session.input_audio.unmute":
            try event.refuseUnknown(common)
            return .unmute
        case "session.output_audio.fixture.play":
            try event.refuseUnknown(common.union(["audio"]))
            return .fixture(try audio(event))
        case "session.instructions.append":
            return .instructions(try append(event, common))
        case "session.thinking.append":
            return .thinking(try append(event, common))
        case "session.commentary.append":
            return .commentary(try append(event, common))
        case "response.create":
            try event.refuseUnknown(common)
            return .responseCreate
        case "response.item.create":
            try event.refuseUnknown(common.union(["item"]))
            guard let item = try event.object("item") else { throw event.missing("item") }
            return .responseItemCreate(try NewConversationItem.parse(item))
        case "decision.create", "decision.item.create", "decision.item.delete":
            return .decision(type: type)
        case "session.close":
            try event.refuseUnknown(common)
            return .close
        case "transport.dtmf.send":
            try event.refuseUnknown(common.union(["event"]))
            let key = try event.requiredString("event")
            guard key.count == 1, let pressed = key.first, "0123456789*#ABCD".contains(pressed) else {
                throw event.invalid("event", "must be one DTMF key: 0-9, A-D, * or #")
            }
            return .dtmf(pressed)
        default:
            throw ProtocolError(.unknownEvent, "unknown event type '\(type)'", param: "type")
        }
    }

    private static func audio(_ event: EventFields) throws(ProtocolError) -> [UInt8] {
        let text = try event.requiredString("audio")
        guard let bytes = Base64.decode(text.utf8) else { throw event.invalid("audio", "is not valid base64") }
        return bytes
    }

    private static func append(_ event: EventFields, _ common: Set<String>) throws(ProtocolError) -> Append {
        try event.refuseUnknown(common.union(["content", "delegation_id"]))
        let content = try event.requiredString("content")
        guard !content.isEmpty, content.utf8.count <= maxAppendBytes else {
            throw event.invalid("content", "must be 1 to \(maxAppendBytes) bytes")
        }
        return Append(content: content, delegationID: try event.string("delegation_id"))
    }
}
