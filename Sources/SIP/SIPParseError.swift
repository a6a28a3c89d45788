/// Why bytes are not a SIP message Parley accepts: one case per way they can be wrong, so that the
/// transport can answer 400 with a reason phrase, or (on a stream) close, and count which it was.
package enum SIPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Nothing but CRLFs: a keep-alive, not a message (RFC 5626 section 3.5.1).
    case empty
    /// The header section does not end in an empty line.
    case incompleteHeaderSection
    /// The header section is longer than the framer's bound.
    case headerSectionTooLarge(limit: Int)
    /// Content-Length says more than the framer's bound.
    case bodyTooLarge(limit: Int)
    /// A datagram holds fewer body bytes than its Content-Length (RFC 3261 section 18.3: answered 400).
    case bodyTruncated(contentLength: Int, available: Int)
    /// A stream message without Content-Length, which a stream cannot frame (RFC 3261 section 18.3).
    case contentLengthRequired
    /// The header section is not UTF-8 (RFC 3261 section 25.1: TEXT-UTF8).
    case invalidUTF8
    /// The first line is not `Method SP Request-URI SP SIP/2.0` with single spaces (section 7.1).
    case malformedRequestLine
    /// The first line is not `SIP/2.0 SP 3DIGIT SP Reason-Phrase` with a code from 100 to 699 (section 7.2).
    case malformedStatusLine
    /// A version other than SIP/2.0 (RFC 4475 section 3.1.2.16: answered 505).
    case unsupportedVersion
    /// A Request-URI that is not a URI, or a SIP URI with headers (section 19.1.1 does not allow them there).
    case malformedRequestURI
    /// A header line with no colon, a name that is not a token, a bare CR or LF, or a fold before any header.
    case malformedHeaderLine
    /// A known header whose value does not follow its grammar.
    case malformedHeader(String)
    /// A header every request or response carries (section 8.1.1) is absent.
    case missingHeader(String)
    /// The CSeq method differs from the request's (section 8.1.1.5; RFC 4475 section 3.1.2.17).
    case methodMismatch

    package var description: String {
        switch self {
        case .empty: "the message is empty"
        case .incompleteHeaderSection: "the header section does not end in an empty line"
        case .headerSectionTooLarge(let limit): "the header section is larger than \(limit) bytes"
        case .bodyTooLarge(let limit): "the body is larger than \(limit) bytes"
        case .bodyTruncated(let length, let available): "Content-Length is \(length) but only \(available) bytes follow"
        case .contentLengthRequired: "a message on a stream needs Content-Length"
        case .invalidUTF8: "the header section is not UTF-8"
        case .malformedRequestLine: "malformed request line"
        case .malformedStatusLine: "malformed status line"
        case .unsupportedVersion: "SIP version not supported"
        case .malformedRequestURI: "malformed Request-URI"
        case .malformedHeaderLine: "malformed header line"
        case .malformedHeader(let name): "malformed \(name) header"
        case .missingHeader(let name): "missing \(name) header"
        case .methodMismatch: "CSeq method does not match the request method"
        }
    }
}
