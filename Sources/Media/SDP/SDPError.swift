/// Why a session description could not be read: one case per way the text can be wrong, each
/// naming the line (1-based, counting every line of the input) so that a 400 tells the sender where.
package enum SDPError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The input is longer than `SessionDescription.maxBytes`.
    case tooLarge(bytes: Int, limit: Int)
    /// A line is longer than `SessionDescription.maxLineBytes`.
    case lineTooLong(line: Int, limit: Int)
    /// More than `SessionDescription.maxMediaSections` m= lines.
    case tooManyMediaSections(limit: Int)
    /// A line is not `<letter>=<value>` (RFC 8866 section 5), or holds a NUL or a bare CR.
    case malformedLine(line: Int)
    /// A line's value is not UTF-8 (RFC 8866 section 5 allows ISO 10646 in UTF-8 only).
    case invalidUTF8(line: Int)
    /// The first line is not `v=0` (RFC 8866 section 5.1).
    case missingVersion(line: Int)
    /// A field every description must carry before its first m= line: o=, s= or t= (RFC 8866 section 5).
    case missingField(String)
    /// An m= line that is not `<media> <port>[/<count>] <proto> <fmt> ...` (RFC 8866 section 5.14).
    case malformedMediaLine(line: Int)
    /// An a= line with an empty name.
    case malformedAttribute(line: Int)

    package var description: String {
        switch self {
        case .tooLarge(let bytes, let limit): "SDP of \(bytes) bytes is larger than the limit of \(limit)"
        case .lineTooLong(let line, let limit): "SDP line \(line) is longer than \(limit) bytes"
        case .tooManyMediaSections(let limit): "SDP has more than \(limit) m= sections"
        case .malformedLine(let line): "SDP line \(line) is not <type>=<value>"
        case .invalidUTF8(let line): "SDP line \(line) is not valid UTF-8"
        case .missingVersion(let line): "SDP line \(line) should be v=0"
        case .missingField(let field): "SDP has no \(field)= line before its first m= line"
        case .malformedMediaLine(let line): "SDP line \(line) is not a valid m= line"
        case .malformedAttribute(let line): "SDP line \(line) is an attribute without a name"
        }
    }
}
