/// A client event Parley cannot act on: not JSON, not an event it knows, or a field missing or out
/// of range. It becomes an `error` event (type `invalid_request_error`) and the session goes on.
public struct ProtocolError: Error, Equatable, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The text is not JSON.
        public static let invalidJSON = Code(rawValue: "invalid_json")
        /// The `type` names no client event of the Realtime API.
        public static let unknownEvent = Code(rawValue: "unknown_event")
        /// A Realtime API client event that Parley does not implement (e.g. `conversation.item.delete`).
        public static let unsupportedEvent = Code(rawValue: "unsupported_event")
        /// A required field is absent.
        public static let missingField = Code(rawValue: "missing_field")
        /// A field has the wrong type or a value out of range.
        public static let invalidValue = Code(rawValue: "invalid_value")
        /// A field the event does not define, in a protocol that refuses rather than ignores
        /// them (GPT-Live's: "the session configuration is strict").
        public static let unknownParameter = Code(rawValue: "unknown_parameter")
        /// A well-formed value Parley does not support (said in docs/protocol.md).
        public static let unsupportedValue = Code(rawValue: "unsupported_value")
    }

    public var code: Code
    /// Names the field and what was wrong with it.
    public var message: String
    /// The field's path, e.g. `session.audio.input.turn_detection.threshold`, as OpenAI's `param`.
    public var param: String?
    /// The client's `event_id`, when the event got far enough to have one.
    public var eventID: String?

    public init(_ code: Code, _ message: String, param: String? = nil, eventID: String? = nil) {
        self.code = code
        self.message = message
        self.param = param
        self.eventID = eventID
    }

    public var description: String { "\(code): \(message)" }
}
