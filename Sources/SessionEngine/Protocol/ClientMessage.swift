import JSON

/// One text message from a client, parsed and validated: audio to append, or an event for the
/// session engine. The two are told apart here because audio never reaches the engine as an event:
/// the connection checks it against the session's input format
/// (`SessionConfiguration.refusal(of:allowsOpus:)`), decodes it as that format says (`AudioInput`)
/// and hands the engine `.audio`. Parsing knows nothing of the session, so the bytes stay bytes.
public enum ClientMessage: Sendable, Equatable {
    /// `input_audio_buffer.append`: the base64 `audio`, decoded to bytes: pcm16 or G.711, as the
    /// session's input format says.
    case audioAppend(eventID: String?, [UInt8])
    /// Every other client event.
    case event(ClientEvent)

    /// Parses one client message from a WebSocket text message.
    public static func parse(_ text: String) throws(ProtocolError) -> ClientMessage {
        var text = text
        return try text.withUTF8 { bytes in
            Result { () throws(ProtocolError) in try parse(UnsafeRawBufferPointer(bytes)) }
        }.get()
    }

    /// Parses one client message from a WebSocket text message's bytes, as the connection holds
    /// them. A microphone's append is read in place (`AudioAppendScan`): no String is made of its
    /// 1.8 KB, only the decoded audio; its base64 not valid, or any other message, is read whole.
    public static func parse(_ message: UnsafeRawBufferPointer) throws(ProtocolError) -> ClientMessage {
        let bytes = message.assumingMemoryBound(to: UInt8.self)
        if let found = AudioAppendScan.scan(bytes),
           let audio = Base64.decode(UnsafeBufferPointer(rebasing: bytes[found.audio])) {
            let eventID = found.eventID.map { String(decoding: UnsafeBufferPointer(rebasing: bytes[$0]), as: UTF8.self) }
            return .audioAppend(eventID: eventID, audio)
        }
        return try parseWhole(String(decoding: bytes, as: UTF8.self))
    }

    /// The message read as a JSON tree: every message but a microphone's append, and the errors.
    package static func parseWhole(_ text: String) throws(ProtocolError) -> ClientMessage {
        let json: JSON
        do {
            json = try JSON(parsing: text)
        } catch {
            throw ProtocolError(.invalidJSON, "the event is not valid JSON: \(error.reason) at byte \(error.offset)")
        }
        guard json.object != nil else { throw ProtocolError(.invalidValue, "an event must be a JSON object") }
        let event = EventFields(json)
        // The client's event_id first, so that every later error can carry it.
        let eventID = try event.string("event_id")
        do {
            let type = try event.requiredString("type")
            if type == "input_audio_buffer.append" { return .audioAppend(eventID: eventID, try base64(event, "audio")) }
            return .event(ClientEvent(eventID: eventID, try ClientEvent.kind(of: event, type: type)))
        } catch {
            var error = error
            error.eventID = eventID
            throw error
        }
    }

    private static func base64(_ event: EventFields, _ key: String) throws(ProtocolError) -> [UInt8] {
        let text = try event.requiredString(key)
        guard let bytes = Base64.decode(text.utf8) else { throw event.invalid(key, "is not valid base64") }
        return bytes
    }
}
