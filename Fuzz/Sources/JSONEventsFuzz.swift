import JSON
import Session
import SessionEngine

/// A text message as a session takes it (`RealtimeSessionHandler`): decoded as UTF-8, parsed as
/// JSON, then as a client event. Checks that whatever parses writes back out, compact and
/// indented, as JSON that parses to the same value, and that a refused event's `error` event, the
/// client's own text quoted in its message, reads back as JSON with that message.
enum JSONEventsFuzz {
    static func run(_ input: UnsafeRawBufferPointer) {
        let text = String(decoding: input, as: UTF8.self)
        if let json = try? JSON(parsing: text) {
            precondition((try? JSON(parsing: json.description)) == json, "\(json) does not read back")
            precondition((try? JSON(parsing: json.pretty)) == json, "\(json.pretty) does not read back")
        }
        do {
            _ = try ClientMessage.parse(text)
        } catch {
            let event = ServerEvent(eventID: "event_1", .error(EventError(error))).json(dialect: .ga)
            let message = (try? JSON(parsing: event))?["error"]?["message"]?.string
            precondition(message == error.message, "the error event \(event) does not read back")
        }
    }
}
