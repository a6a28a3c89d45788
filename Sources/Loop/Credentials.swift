/// Credentials in text that is about to leave the process: a log line, or an error an upstream
/// wrote that goes on to a client. One scrubber for both, so a key quoted back by an API ("Incorrect
/// API key provided: sk-ab…") reaches neither.
public enum Credentials {
    /// Credentials that an upstream may quote back in an error ("Incorrect API key provided:
    /// sk-ab…"): a bearer token, or an OpenAI- or Anthropic-style key, becomes `[redacted]`.
    public static func scrub(_ text: String) -> String {
        guard text.contains("sk-") || text.contains("Bearer ") || text.contains("ek_") else { return text }
        var out = ""
        var rest = Substring(text)
        while let range = ["Bearer ", "sk-", "ek_"].compactMap({ rest.firstRange(of: $0) }).min(by: { $0.lowerBound < $1.lowerBound }) {
            let bearer = rest[range] == "Bearer "
            out += rest[..<range.upperBound]
            rest = rest[range.upperBound...]
            // A bearer token runs to the next space (a JWT has dots); a key is letters, digits, - _ and *.
            let secret = rest.prefix { bearer ? !$0.isWhitespace && $0 != "\"" && $0 != "'" && $0 != ","
                                              : $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "*" }
            if secret.count >= 4 {
                out += "[redacted]"
                rest = rest.dropFirst(secret.count)
            }
        }
        return out + rest
    }
}
