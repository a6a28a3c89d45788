import JSON

/// What an untrusted WebRTC front end may send and receive on its data channel
/// (`session.client.data_channel`, openai SDK 3.54.0 `data_channel_config.py`): the client events
/// it may send, and the server events it is sent; `"all"` or an omitted list allows every one, an
/// empty list none. A Responses event is selected by its envelope and its inner type
/// (`{"type": "response.event", "response_event": "response.completed"}`). Trusted sidebands are
/// not held to it, and a WebSocket session has no front end to hold.
package struct LiveDataChannelPermissions: Sendable, Equatable {
    /// nil: every client event.
    package var clientEvents: Set<String>?
    /// nil: every server event. Entries are a type, or `response.event/<inner type>`.
    package var serverEvents: Set<String>?

    /// What reaches the channel whatever it allows: its session's start and end, and the notice of
    /// its permissions (a front end that never heard `session.started` could not begin).
    static let alwaysSent: Set<String> = ["session.started", "session.closed", "info"]

    /// `client` of a session's configuration (`{"data_channel": {…}}`).
    package static func parse(_ client: EventFields) throws(ProtocolError) -> LiveDataChannelPermissions {
        try client.refuseUnknown(["data_channel"])
        guard let channel = try client.object("data_channel") else { throw client.missing("data_channel") }
        try channel.refuseUnknown(["allowed_client_events", "allowed_server_events"])
        var permissions = LiveDataChannelPermissions()
        if let list = try allowList(channel, "allowed_client_events") {
            permissions.clientEvents = Set(try list.enumerated().map { (index, name) throws(ProtocolError) in
                guard let name = name.string, !name.isEmpty else { throw channel.invalid("allowed_client_events[\(index)]", "must be a client event's type") }
                return name
            })
        }
        if let list = try allowList(channel, "allowed_server_events") {
            permissions.serverEvents = Set(try list.enumerated().map { (index, selector) throws(ProtocolError) in
                guard selector.object != nil else { throw channel.invalid("allowed_server_events[\(index)]", "must be an object with 'type'") }
                let fields = EventFields(selector, path: channel.name("allowed_server_events[\(index)]"))
                try fields.refuseUnknown(["type", "response_event"])
                let type = try fields.requiredString("type")
                let inner = try fields.string("response_event")
                switch (type == "response.event", inner) {
                case (true, let inner?): return "response.event/\(inner)"
                case (true, nil): throw fields.missing("response_event")
                case (false, nil): return type
                case (false, _?): throw fields.invalid("response_event", "is for 'response.event' selectors only")
                }
            })
        }
        return permissions
    }

    /// `"all"` (nil), a list, or nothing given (nil: "omission preserves the allow-all behavior").
    private static func allowList(_ channel: EventFields, _ key: String) throws(ProtocolError) -> [JSON]? {
        guard channel.has(key), !channel.isNull(key) else { return nil }
        if let all = try? channel.string(key) {
            guard all == "all" else { throw channel.invalid(key, "must be 'all' or a list, got '\(all)'") }
            return nil
        }
        return try channel.array(key)
    }

    package func allows(clientEvent type: String) -> Bool { clientEvents?.contains(type) ?? true }

    package func allows(serverEvent event: JSON) -> Bool {
        guard let serverEvents, let type = event["type"]?.string, !Self.alwaysSent.contains(type) else { return true }
        if type == "response.event", let inner = event["event"]?["type"]?.string { return serverEvents.contains("response.event/\(inner)") }
        return serverEvents.contains(type)
    }

    /// The `info` notice's words: what the channel may send and is sent.
    package var notice: String {
        func said(_ names: Set<String>?) -> String {
            guard let names else { return "every event" }
            return names.isEmpty ? "no events" : names.sorted().joined(separator: ", ")
        }
        return "this data channel may send \(said(clientEvents)) and is sent \(said(serverEvents)) (and always session.started, session.closed and info)"
    }
}
