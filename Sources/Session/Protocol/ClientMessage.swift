import Codec
import JSON
import Loop

/// One text message from a client, parsed and validated: audio to append, or an event for the
/// session engine. The two are told apart here because audio never reaches the engine as an event:
/// the connection checks it against the session's input format
/// (`SessionConfiguration.refusal(ofInput:allowsOpus:)`), resamples it to 16 kHz and hands the
/// engine `.audio`.
public enum ClientMessage: Sendable, Equatable {
    /// `input_audio_buffer.append`: pcm16 samples at 24 kHz, decoded from the base64 `audio`.
    case audioAppend(eventID: String?, [Int16])
    /// Every other client event.
    case event(ClientEvent)

    /// Parses one client message from a WebSocket text message.
    public static func parse(_ text: String) throws(ProtocolError) -> ClientMessage {
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
            if type == "input_audio_buffer.append" { return .audioAppend(eventID: eventID, try pcm16(event, "audio")) }
            return .event(ClientEvent(eventID: eventID, try ClientEvent.kind(of: event, type: type)))
        } catch {
            var error = error
            error.eventID = eventID
            throw error
        }
    }

    /// Base64 of 16-bit little-endian samples.
    private static func pcm16(_ event: EventFields, _ key: String) throws(ProtocolError) -> [Int16] {
        let text = try event.requiredString(key)
        guard let bytes = Base64.decode(text.utf8) else { throw event.invalid(key, "is not valid base64") }
        guard bytes.count % 2 == 0 else {
            throw event.invalid(key, "must hold whole 16-bit samples, got \(bytes.count) bytes")
        }
        return bytes.withUnsafeBytes { PCM.int16s(littleEndian: $0) }
    }
}
