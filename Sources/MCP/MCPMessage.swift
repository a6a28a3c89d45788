import JSON

/// The JSON-RPC 2.0 messages of MCP that this client sends, and the reading of what a server sends
/// back (MCP basic/index: requests, responses, notifications; revisions 2025-06-18 and 2025-11-25).
/// Values: JSON in, JSON out.
enum MCPMessage {
    /// The revision the client asks for: the latest it speaks (basic/lifecycle, version
    /// negotiation: the client SHOULD send its latest).
    static let latestVersion = "2025-11-25"
    /// The revisions whose Streamable HTTP transport this client follows. 2025-03-26 introduced the
    /// transport; what later revisions changed (the protocol-version header, priming events) it
    /// handles too.
    static let supportedVersions: Set<String> = ["2025-11-25", "2025-06-18", "2025-03-26"]

    // MARK: Sent

    /// `initialize`: the client's revision, no optional capabilities (it offers no roots, sampling
    /// or elicitation), and who it is.
    static func initialize(id: Int, clientVersion: String) -> JSON {
        request(id: id, method: "initialize", params: .object([
            ("protocolVersion", .string(latestVersion)),
            ("capabilities", .object([])),
            ("clientInfo", .object([("name", .string("parley")), ("version", .string(clientVersion))])),
        ]))
    }

    static let initialized = JSON.object([("jsonrpc", .string("2.0")), ("method", .string("notifications/initialized"))])

    /// `tools/list`, for the page after `cursor` (server/utilities/pagination: cursors are opaque,
    /// sent back exactly as given).
    static func listTools(id: Int, cursor: String?) -> JSON {
        request(id: id, method: "tools/list", params: cursor.map { .object([("cursor", .string($0))]) })
    }

    static func callTool(id: Int, name: String, arguments: JSON) -> JSON {
        request(id: id, method: "tools/call", params: .object([("name", .string(name)), ("arguments", arguments)]))
    }

    /// `notifications/cancelled` (basic/utilities/cancellation): sent for a call that timed out
    /// or that the caller gave up, since a dropped connection is no cancellation (transports:
    /// "disconnection SHOULD NOT be interpreted as the client cancelling its request").
    static func cancelled(requestID: Int, reason: String) -> JSON {
        .object([
            ("jsonrpc", .string("2.0")),
            ("method", .string("notifications/cancelled")),
            ("params", .object([("requestId", .int(requestID)), ("reason", .string(reason))])),
        ])
    }

    private static func request(id: Int, method: String, params: JSON?) -> JSON {
        var members: [(String, JSON)] = [("jsonrpc", .string("2.0")), ("id", .int(id)), ("method", .string(method))]
        if let params { members.append(("params", params)) }
        return .object(members)
    }

    // MARK: Received

    /// One message from the server.
    enum Incoming: Equatable {
        /// A success response.
        case result(id: JSON, JSON)
        /// An error response; `id` is null when the server could not tell which request failed.
        case error(id: JSON, code: Int, message: String)
        /// A request of the server's (a ping, sampling, elicitation): this client offers none.
        case request(id: JSON, method: String)
        case notification(method: String)
    }

    /// Reads one message; nil when `json` is not a JSON-RPC 2.0 message.
    static func parse(_ json: JSON) -> Incoming? {
        guard case .object = json, json["jsonrpc"]?.string == "2.0" else { return nil }
        if let method = json["method"]?.string {
            guard let id = json["id"], !id.isNull else { return .notification(method: method) }
            return .request(id: id, method: method)
        }
        let id = json["id"] ?? .null
        if let error = json["error"] {
            guard let code = error["code"]?.int else { return nil }
            return .error(id: id, code: code, message: error["message"]?.string ?? "")
        }
        guard let result = json["result"], !id.isNull else { return nil }
        return .result(id: id, result)
    }

    /// Whether `id` in a response names our request `ours`: a number, or (leniently) the same
    /// number written as a string.
    static func matches(_ id: JSON, _ ours: Int) -> Bool {
        if let number = id.int { return number == ours }
        return id.string == String(ours)
    }

    /// The revision in an `initialize` result, if this client speaks it.
    static func negotiatedVersion(_ result: JSON) -> Result<String, MCPError> {
        guard let version = result["protocolVersion"]?.string else {
            return .failure(.malformed("the initialize result has no protocolVersion"))
        }
        guard supportedVersions.contains(version) else { return .failure(.unsupportedVersion(version)) }
        return .success(version)
    }
}
