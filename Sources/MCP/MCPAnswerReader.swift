import JSON
import Upstream

/// Reads the HTTP answer to one message POSTed to an MCP server (transports, "Sending Messages to
/// the Server"): a notification's 202, a request's JSON body, or an event stream whose `data:`
/// events carry JSON-RPC messages, one of them the response to our request. Pure: the head and
/// the body's pieces in, an outcome out; no socket, no clock.
///
/// Bounded, as a server is untrusted: the whole answer (the JSON body, or every byte of the
/// stream) at most `limit` bytes, refused at the head when its Content-Length says more, so a
/// 50 MB tool list is never buffered. Messages on the stream that are not our response (progress,
/// log notifications, a server's own requests, which this client does not serve) are skipped,
/// at most `maxSkipped` of them.
struct MCPAnswerReader {
    enum Outcome: Equatable {
        /// Read on.
        case needMore
        /// The response: its `result`; or, for a notification, the 202 (`.null`).
        case result(JSON)
        case failed(MCPError)
        /// 404 to a request that carried a session id: the server has forgotten the session
        /// (transports, "Session Management" 3 and 4), so the client initialises again.
        case sessionGone
    }

    private enum Mode {
        case awaitingHead
        case json([UInt8])
        case events(ServerSentEventParser)
        /// A non-2xx status: its body, kept (bounded) to quote the server's message.
        case status(Int, [UInt8])
        /// A notification's 202: its body, if any, is not read into anything.
        case accepted
        case done
    }

    /// The request's id; nil for a notification, whose answer is a bare 202.
    let id: Int?
    let limit: Int
    /// Whether the request carried an `Mcp-Session-Id`.
    let carriedSession: Bool
    static let maxSkipped = 1000
    /// The most of an error body kept to quote.
    static let maxErrorBody = 8192

    private var mode = Mode.awaitingHead
    private var received = 0
    private var skipped = 0

    init(id: Int?, limit: Int, carriedSession: Bool) {
        self.id = id
        self.limit = limit
        self.carriedSession = carriedSession
    }

    /// The session id a server gave, if it is one a header may carry: visible ASCII only
    /// (transports, "Session Management" 1), and not absurdly long.
    static func sessionID(_ value: String?) -> String? {
        guard let value, !value.isEmpty, value.utf8.count <= 1024, value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
        return value
    }

    /// The response head: its status, and its Content-Type and Content-Length headers.
    mutating func head(status: Int, contentType: String?, contentLength: String?) -> Outcome {
        guard case .awaitingHead = mode else { return .needMore }
        if status == 404 && carriedSession { return finish(.sessionGone) }
        guard (200...299).contains(status) else {
            mode = .status(status, [])
            return .needMore
        }
        if let length = contentLength.flatMap({ Int($0.trimmingCharacters()) }), length > limit { return fail(.tooLarge(limit: limit)) }
        // A notification's answer is 202 and no body (transports, "Sending Messages" 4); a
        // server that answers 200 is as good.
        guard id != nil else {
            mode = .accepted
            return .needMore
        }
        if status == 202 { return fail(.malformed("a request was answered 202, with no response")) }
        let type = (contentType ?? "").split(separator: ";").first.map { $0.trimmingCharacters() } ?? ""
        switch type.lowercased() {
        case "application/json": mode = .json([])
        case "text/event-stream": mode = .events(ServerSentEventParser(maxEventBytes: limit))
        case "": return fail(.notMCP("the answer to a request has no content type"))
        default: return fail(.notMCP("the answer is \(type), not JSON or an event stream"))
        }
        return .needMore
    }

    mutating func body(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        received &+= bytes.count
        switch mode {
        case .awaitingHead, .done:
            return .needMore
        case .accepted:
            return received <= limit ? .needMore : fail(.tooLarge(limit: limit))
        case .status(let status, var kept):
            if kept.count < Self.maxErrorBody { kept += bytes.prefix(Self.maxErrorBody - kept.count) }
            // An error page need not be read to its end to be quoted; it is quoted from as many
            // bytes however the body came in.
            guard received <= limit else { return fail(.status(status, Self.quotedMessage(Array(kept.prefix(limit))))) }
            mode = .status(status, kept)
            return .needMore
        case .json(var kept):
            guard received <= limit else { return fail(.tooLarge(limit: limit)) }
            mode = .done  // not to copy the buffer on append
            kept.append(contentsOf: bytes)
            mode = .json(kept)
            return .needMore
        case .events(var parser):
            guard received <= limit else { return fail(.tooLarge(limit: limit)) }
            mode = .done
            let events: [ServerSentEventParser.Event]
            do { events = try parser.feed(bytes) } catch { return fail(.tooLarge(limit: limit)) }
            mode = .events(parser)
            for event in events {
                // A priming event (2025-11-25: an id and an empty data field) carries nothing.
                guard event.name == "message", !event.data.isEmpty else { continue }
                guard let json = try? JSON(parsing: event.data) else {
                    return fail(.notMCP("an event on the stream is not JSON"))
                }
                let outcome = ours(json)
                guard outcome == .needMore else { return outcome }
            }
            return .needMore
        }
    }

    /// The body ended.
    mutating func end() -> Outcome {
        switch mode {
        case .awaitingHead:
            mode = .done
            return .failed(.malformed("the server closed the connection without an answer"))
        case .done:
            return .needMore
        case .accepted:
            mode = .done
            return .result(.null)
        case .status(let status, let kept):
            mode = .done
            return .failed(.status(status, Self.quotedMessage(kept)))
        case .json(let kept):
            mode = .done
            guard let json = try? JSON(parsing: String(decoding: kept, as: UTF8.self)) else {
                return .failed(.notMCP("the answer is not JSON"))
            }
            let outcome = ours(json)
            guard outcome == .needMore else { return outcome }
            return fail(.malformed("the answer holds no response to request \(id ?? 0)"))
        case .events:
            // A stream the server ended before our response; 2025-11-25 lets a server close the
            // connection and have the client resume with a GET, which this client does not do.
            return fail(.malformed("the event stream ended before the response to request \(id ?? 0)"))
        }
    }

    /// What one JSON-RPC message (or a batch, as 2025-03-26 allowed) means for our request.
    private mutating func ours(_ json: JSON) -> Outcome {
        if let batch = json.array {
            for message in batch {
                let outcome = ours(message)
                guard outcome == .needMore else { return outcome }
            }
            return .needMore
        }
        guard let message = MCPMessage.parse(json) else { return fail(.malformed("a message is not JSON-RPC 2.0")) }
        switch message {
        case .result(let responseID, let result) where id.map({ MCPMessage.matches(responseID, $0) }) == true:
            mode = .done
            return .result(result)
        // A null id: the server could not read the request, so the error is ours (JSON-RPC 2.0 section 5).
        case .error(let responseID, let code, let text) where responseID.isNull || id.map({ MCPMessage.matches(responseID, $0) }) == true:
            mode = .done
            return .failed(.jsonRPC(code: code, message: text))
        default:
            skipped += 1
            return skipped > Self.maxSkipped ? fail(.malformed("more than \(Self.maxSkipped) messages before the response")) : .needMore
        }
    }

    private mutating func fail(_ error: MCPError) -> Outcome {
        finish(.failed(error))
    }

    private mutating func finish(_ outcome: Outcome) -> Outcome {
        mode = .done
        return outcome
    }

    /// A server's message from an error body: a JSON-RPC error's, an OAuth error's
    /// (`error_description`, RFC 6750 section 3), or a short plain-text body; nil for HTML or
    /// anything else not worth quoting.
    static func quotedMessage(_ body: [UInt8]) -> String? {
        let text = String(decoding: body, as: UTF8.self)
        if let json = try? JSON(parsing: text) {
            return json["error"]?["message"]?.string ?? json["error_description"]?.string ?? json["message"]?.string
                ?? json["error"]?.string
        }
        let trimmed = text.trimmingCharacters()
        guard !trimmed.isEmpty, trimmed.utf8.count <= 200, !trimmed.hasPrefix("<") else { return nil }
        return trimmed
    }
}

extension StringProtocol {
    /// Without leading and trailing white space.
    fileprivate func trimmingCharacters() -> String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
