import JSON

/// Why an MCP list or call failed, in the three kinds the Realtime API reports on an `mcp_call` or
/// an `mcp_list_tools.failed` (`protocol_error {code, message}`, `tool_execution_error {message}`,
/// `http_error {code, message}`), with the transport's own failures (no connection, a time-out, an
/// answer too large, a server that is not an MCP server) mapped into them.
///
/// Every message is made without the secrets of the tool entry (its authorization, its header
/// values, the MCP session id): the server is named by host and port only, as a URL's path or
/// query may carry a key, and whatever text a server sends back (an error's message, a tool's
/// failure, an HTTP error body) is scrubbed of those values by `MCPRedaction` before it is kept.
public enum MCPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A JSON-RPC error answer (MCP basic/index: `{code, message}`).
    case jsonRPC(code: Int, message: String)
    /// The tool ran and failed: a `tools/call` result with `isError: true`; its text.
    case toolFailed(String)
    /// A non-2xx status, with the server's own message when its body had one.
    case status(Int, String?)
    /// No connection: the name did not resolve, the connect was refused or timed out, TLS failed,
    /// or the connection dropped mid-answer.
    case unreachable(String)
    /// No answer within the operation's time-out (`operation`: "tools/call", say).
    case timedOut(operation: String, seconds: Double)
    /// The answer (JSON, or the whole event stream) passed the byte limit.
    case tooLarge(limit: Int)
    /// Not an MCP server's answer: an HTML page, a content type that is neither JSON nor an event
    /// stream, a body that is not JSON.
    case notMCP(String)
    /// JSON-RPC, but not the answer MCP defines (no result, a tool list that is not a list, …).
    case malformed(String)
    /// The server chose a protocol revision this client does not speak.
    case unsupportedVersion(String)
    /// The client was closed before the operation could run.
    case closed
    /// The session stopped wanting the call (a barge-in, a cancelled response): `why`.
    case cancelled(String)

    /// JSON-RPC's and the MCP SDKs' codes for the failures that have no code of their own: the
    /// SDKs' `ConnectionClosed` and `RequestTimeout`, and JSON-RPC 2.0's parse, internal and
    /// invalid-params errors (JSON-RPC 2.0 section 5.1).
    public static let connectionClosedCode = -32000
    public static let requestTimeoutCode = -32001
    public static let parseErrorCode = -32700
    public static let internalErrorCode = -32603
    public static let invalidParamsCode = -32602
    /// JSON-RPC's implementation-defined range, as LSP and the MCP SDKs use it for a request cancelled.
    public static let requestCancelledCode = -32800

    /// The Realtime API's `type` of the error: `protocol_error`, `tool_execution_error` or `http_error`.
    public var type: String {
        switch self {
        case .toolFailed: "tool_execution_error"
        case .status: "http_error"
        default: "protocol_error"
        }
    }

    /// The error's `code`: the HTTP status, the JSON-RPC code, or the code its failure maps to;
    /// nil for a tool's own failure, which has none.
    public var code: Int? {
        switch self {
        case .jsonRPC(let code, _): code
        case .toolFailed: nil
        case .status(let status, _): status
        case .unreachable, .tooLarge, .closed: Self.connectionClosedCode
        case .cancelled: Self.requestCancelledCode
        case .timedOut: Self.requestTimeoutCode
        case .notMCP: Self.parseErrorCode
        case .malformed: Self.internalErrorCode
        case .unsupportedVersion: Self.invalidParamsCode
        }
    }

    public var message: String {
        switch self {
        case .jsonRPC(_, let message): message
        case .toolFailed(let text): text
        case .status(let status, let said): "the MCP server answered HTTP \(status)" + (said.map { ": \($0)" } ?? "")
        case .unreachable(let why): "the MCP server could not be reached: \(why)"
        case .timedOut(let operation, let seconds): "the MCP server did not answer \(operation) within \(Self.seconds(seconds))"
        case .tooLarge(let limit): "the MCP server's answer is larger than the limit of \(limit) bytes"
        case .notMCP(let why): "not an MCP server: \(why)"
        case .malformed(let why): "the MCP server sent a malformed answer: \(why)"
        case .unsupportedVersion(let version): "the MCP server speaks protocol revision \(version), which this client does not"
        case .closed: "the MCP client was closed"
        case .cancelled(let why): "the call was cancelled: \(why)"
        }
    }

    /// The error as the Realtime API writes it in an item or an event.
    public var json: JSON {
        var members: [(String, JSON)] = [("type", .string(type))]
        if let code { members.append(("code", .int(code))) }
        members.append(("message", .string(message)))
        return .object(members)
    }

    public var description: String { "\(type)\(code.map { " \($0)" } ?? ""): \(message)" }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() && value < 1e9 ? "\(Int(value)) s" : "\(value) s"
    }
}
