import Loop

/// The secrets of one MCP server entry (its authorization, its header values, the session id the
/// server gave), and the scrubbing of text that leaves the client: a server may quote a token back
/// in a 401's body or a tool's failure ("invalid token abc…"), and that text becomes an error a
/// client sees and a log line. Values are scrubbed by value here, as they belong to one session
/// and are not registered with the process-wide `Secrets` (which stays the size of the
/// configuration); `Secrets.scrub` then takes what has a known shape (`Bearer …`).
struct MCPRedaction: Sendable {
    /// Shorter values are not scrubbed: a header value of "1" or "yes" is no secret, and scrubbing
    /// it would garble every message.
    static let minimumBytes = 4
    /// The most of a server's own text an error message keeps.
    static let maxQuotedBytes = 1024

    private(set) var values: [String] = []

    init(_ values: [String] = []) {
        for value in values { add(value) }
    }

    mutating func add(_ value: String) {
        guard value.utf8.count >= Self.minimumBytes, !values.contains(value) else { return }
        values.append(value)
        // Longest first, so that a value containing another is replaced whole.
        values.sort { $0.utf8.count > $1.utf8.count }
    }

    /// `text` with every value written `[redacted]`.
    func scrub(_ text: String) -> String {
        var out = text
        for value in values where out.contains(value) {
            out = out.replacing(value, with: "[redacted]")
        }
        return Secrets.scrub(out)
    }

    /// A server's text for an error message: scrubbed, cut at `maxQuotedBytes` (on a character).
    func quote(_ text: String) -> String {
        let scrubbed = scrub(text)
        guard scrubbed.utf8.count > Self.maxQuotedBytes else { return scrubbed }
        var cut = ""
        for character in scrubbed {
            guard cut.utf8.count + character.utf8.count <= Self.maxQuotedBytes else { break }
            cut.append(character)
        }
        return cut + "…"
    }

    /// `error` with the server's text in it scrubbed.
    func scrub(_ error: MCPError) -> MCPError {
        switch error {
        case .jsonRPC(let code, let message): .jsonRPC(code: code, message: quote(message))
        case .toolFailed(let text): .toolFailed(scrub(text))
        case .status(let status, let said): .status(status, said.map(quote))
        case .unreachable(let why): .unreachable(quote(why))
        case .notMCP(let why): .notMCP(quote(why))
        case .malformed(let why): .malformed(quote(why))
        case .unsupportedVersion(let version): .unsupportedVersion(quote(version))
        case .timedOut, .tooLarge, .closed, .cancelled: error
        }
    }
}
