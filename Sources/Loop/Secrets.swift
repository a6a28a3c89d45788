import Synchronization

/// Every secret Parley holds, scrubbed from text before the text leaves the module that made it:
/// an upstream's error body, a log line, an error event for a client. Redaction by shape alone let
/// a key of another shape through: an upstream that quoted `vllm-token-…` back in its 401 had it
/// written to the log and sent to the browser in the `error` event (issue 41). So each secret
/// Parley is given (upstream keys, client API keys, operator keys, JWT secrets, the signing key,
/// carrier tokens) is registered here once, where it is loaded, and scrubbed by value whatever its
/// shape; the ones Parley mints by the thousand (client secrets `ek_…`, resume tokens `rt_…`) and
/// the ones clients bring (bearer tokens) are scrubbed by shape, so the registry stays the size of
/// the configuration.
public enum Secrets {
    /// Shorter values are not registered: scrubbing them would redact ordinary words, and a key
    /// that short is no secret.
    public static let minimumBytes = 8

    private static let registered = Mutex<[String]>([])

    /// Registers `value`, and its parts between `-`, `_`, `.` and `:` that are `minimumBytes` or
    /// longer (the random part of `vllm-token-3f9a…`, a JWT's segments), so that an upstream that
    /// quotes a key without its prefix is scrubbed too.
    public static func register(_ value: String) {
        let trimmed = value.trimmingPrefix(while: \.isWhitespace)
        let whole = String(trimmed.reversed().drop(while: \.isWhitespace).reversed())
        guard whole.utf8.count >= minimumBytes else { return }
        let parts = whole.split(whereSeparator: { "-_.:".contains($0) || $0.isWhitespace }).map(String.init)
            .filter { $0.utf8.count >= minimumBytes && $0 != whole }
        registered.withLock { values in
            for part in [whole] + parts where !values.contains(part) { values.append(part) }
            // Longest first: a part is replaced only where its whole value was not.
            values.sort { $0.utf8.count > $1.utf8.count }
        }
    }

    /// Whether `value` is scrubbed (registered, or of a shape that is): for start-up checks and tests.
    public static func isRegistered(_ value: String) -> Bool { registered.withLock { $0.contains(value) } }

    /// `text` with every registered secret and every secret of a known shape written `[redacted]`.
    public static func scrub(_ text: String) -> String {
        var out = text
        for value in registered.withLock({ $0 }) where out.contains(value) {
            out = out.replacing(value, with: "[redacted]")
        }
        return byShape(out)
    }

    /// A mark after which a secret follows. A token runs to the next space, quote or separator
    /// (a JWT and a client secret have dots); a key is letters, digits, `-`, `_` and `*`. A prefix
    /// of Parley's or a vendor's must begin a word ("task-queue" holds no key).
    private struct Shape {
        let mark: String
        let token: Bool
        let wordStart: Bool
        let minimum: Int
    }

    private static let shapes: [Shape] = [
        Shape(mark: "Bearer ", token: true, wordStart: false, minimum: 4),
        Shape(mark: "sk-", token: false, wordStart: true, minimum: 4),
        // Minted here: a client secret (payload.signature), a resume token (24 characters).
        Shape(mark: "ek_", token: true, wordStart: true, minimum: 16),
        Shape(mark: "rt_", token: false, wordStart: true, minimum: 16),
        // A browser's key in its WebSocket subprotocols (OpenAI's "openai-insecure-api-key.").
        Shape(mark: "insecure-api-key.", token: true, wordStart: false, minimum: 4),
        // A secret in a URL's query.
        Shape(mark: "resume_token=", token: true, wordStart: false, minimum: 4),
        Shape(mark: "api_key=", token: true, wordStart: false, minimum: 4),
        Shape(mark: "token=", token: true, wordStart: false, minimum: 4),
        Shape(mark: "secret=", token: true, wordStart: false, minimum: 4),
        Shape(mark: "password=", token: true, wordStart: false, minimum: 4),
    ]

    static func byShape(_ text: String) -> String {
        guard shapes.contains(where: { text.contains($0.mark) }) else { return text }
        var out = ""
        var rest = Substring(text)
        while let (range, shape) = shapes.compactMap({ shape in rest.firstRange(of: shape.mark).map { ($0, shape) } })
            .min(by: { $0.0.lowerBound < $1.0.lowerBound }) {
            let before = range.lowerBound > rest.startIndex ? rest[rest.index(before: range.lowerBound)] : " "
            out += rest[..<range.upperBound]
            rest = rest[range.upperBound...]
            guard !shape.wordStart || !(before.isLetter || before.isNumber) else { continue }
            let secret = rest.prefix { shape.token ? !$0.isWhitespace && !"\"',&;".contains($0)
                                                   : $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "*" }
            if secret.count >= shape.minimum, !secret.hasPrefix("[redacted]") {
                out += "[redacted]"
                rest = rest.dropFirst(secret.count)
            }
        }
        return out + rest
    }
}
