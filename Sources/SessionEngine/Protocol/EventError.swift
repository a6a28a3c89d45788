import JSON

/// The body of an `error` event, and of a failed response's `status_details.error`.
public struct EventError: Sendable, Equatable {
    public enum Kind: String, Sendable, Equatable {
        /// The client asked for something invalid; the session goes on.
        case invalidRequest = "invalid_request_error"
        /// Something failed on the server's side (e.g. the model); the session goes on.
        case server = "server_error"
    }

    public var type: Kind
    public var code: String
    public var message: String
    /// The client event's field at fault, if any.
    public var param: String?
    /// The client's `event_id` of the event that caused this, if known.
    public var eventID: String?

    public init(type: Kind, code: String, message: String, param: String? = nil, eventID: String? = nil) {
        self.type = type
        self.code = code
        self.message = message
        self.param = param
        self.eventID = eventID
    }

    public init(_ error: ProtocolError) {
        self.init(type: .invalidRequest, code: error.code.rawValue, message: error.message, param: error.param, eventID: error.eventID)
    }

    package var json: JSON {
        .object([
            ("type", .string(type.rawValue)),
            ("code", .string(code)),
            ("message", .string(message)),
            ("param", param.map(JSON.string) ?? .null),
            ("event_id", eventID.map(JSON.string) ?? .null),
        ])
    }
}
