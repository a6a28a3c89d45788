import Loop

/// A `multipart/form-data` body (RFC 7578) split into its parts, as `POST /v1/realtime/calls` takes
/// an offer with its session (parts `sdp` and `session`). Pure: the body's bytes and its
/// Content-Type in, parts out; bounded (`maxParts`, `maxHeaderBytes`) and never trapping on input.
///
/// The framing is RFC 2046 section 5.1.1's: a delimiter is a line that is `--` and the boundary,
/// then optional white space (transport padding); the close delimiter has `--` after the boundary.
/// What precedes the first delimiter (the preamble) and follows the close (the epilogue) is
/// ignored. Lines may end in CRLF or a bare LF (curl's and some clients' hand-built bodies do), and
/// the line ending before a delimiter belongs to the delimiter, not to the part.
package struct MultipartFormData: Sendable, Equatable {
    package struct Part: Sendable, Equatable {
        /// Content-Disposition's `name` (RFC 7578 section 4.2).
        package var name: String
        package var filename: String?
        /// The part's Content-Type, if it has one (RFC 7578 section 4.4: text/plain otherwise).
        package var contentType: String?
        package var body: [UInt8]

        package init(name: String, filename: String? = nil, contentType: String? = nil, body: [UInt8]) {
            self.name = name
            self.filename = filename
            self.contentType = contentType
            self.body = body
        }
    }

    /// A call's form has two parts; 16 leaves room for clients that add their own.
    package static let maxParts = 16
    /// The header lines of one part, together.
    package static let maxHeaderBytes = 8_192

    package var parts: [Part]

    /// The first part called `name`.
    package func part(named name: String) -> Part? { parts.first { $0.name == name } }

    /// Splits `body`, framed by the boundary its `contentType` (the request's Content-Type) names.
    package init(body: [UInt8], contentType: String) throws(MultipartError) {
        try self.init(body: body, boundary: Self.boundary(contentType: contentType))
    }

    /// The boundary parameter of a `multipart/form-data` Content-Type, quoted or not (RFC 2046
    /// section 5.1.1: 1 to 70 characters of `bchars`, the last not a space).
    package static func boundary(contentType: String) throws(MultipartError) -> String {
        guard let (type, parameters) = HeaderParameters.parse(contentType) else { throw .malformedContentType }
        guard type.lowercased() == "multipart/form-data" else { throw .notMultipartFormData(type) }
        guard let boundary = parameters.first(where: { $0.name.lowercased() == "boundary" })?.value else { throw .missingBoundary }
        let bytes = Array(boundary.utf8)
        guard (1...70).contains(bytes.count), bytes.last != 0x20, bytes.allSatisfy(isBoundaryChar) else { throw .invalidBoundary }
        return boundary
    }

    private static func isBoundaryChar(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "+"), UInt8(ascii: "_"), UInt8(ascii: ","),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: "="), UInt8(ascii: "?"),
             UInt8(ascii: " "): true
        default: false
        }
    }

    package init(body: [UInt8], boundary: String) throws(MultipartError) {
        let dashBoundary = Array("--".utf8) + Array(boundary.utf8)
        guard var delimiter = Self.nextDelimiter(in: body, dashBoundary: dashBoundary, from: 0) else { throw .missingOpeningBoundary }
        var parts: [Part] = []
        while true {
            if delimiter.isClose {
                guard !parts.isEmpty else { throw .noParts }
                break
            }
            guard parts.count < Self.maxParts else { throw .tooManyParts(limit: Self.maxParts) }
            let start = delimiter.next
            guard let following = Self.nextDelimiter(in: body, dashBoundary: dashBoundary, from: start) else { throw .missingClosingBoundary }
            // The line ending before the delimiter is the delimiter's (RFC 2046 section 5.1.1). A part
            // with nothing in it shares that line ending with the line that opened it.
            var end = following.start
            if end > start, body[end - 1] == 0x0A { end -= 1 }
            if end > start, body[end - 1] == 0x0D { end -= 1 }
            parts.append(try Self.part(body[start..<end], index: parts.count + 1))
            delimiter = following
        }
        self.parts = parts
    }

    private struct Delimiter {
        /// Where `--boundary` starts.
        var start: Int
        /// Just after its line ending: where the part it opens starts.
        var next: Int
        var isClose: Bool
    }

    /// The next delimiter line at or after `from`: `--boundary` at the start of the body or of a
    /// line, then `--` (the close), or transport padding and a line ending. A line that merely starts
    /// with `--boundary` and goes on is a part's content, not a delimiter.
    private static func nextDelimiter(in body: [UInt8], dashBoundary: [UInt8], from: Int) -> Delimiter? {
        var index = from
        while index + dashBoundary.count <= body.count {
            defer { index += 1 }
            guard index == 0 || body[index - 1] == 0x0A else { continue }
            guard body[index..<(index + dashBoundary.count)].elementsEqual(dashBoundary) else { continue }
            var after = index + dashBoundary.count
            if after + 2 <= body.count, body[after] == 0x2D, body[after + 1] == 0x2D {
                return Delimiter(start: index, next: after + 2, isClose: true)
            }
            while after < body.count, body[after] == 0x20 || body[after] == 0x09 { after += 1 }
            if after < body.count, body[after] == 0x0D { after += 1 }
            if after < body.count, body[after] == 0x0A { return Delimiter(start: index, next: after + 1, isClose: false) }
        }
        return nil
    }

    /// One part: header lines up to an empty line (RFC 7578 section 4.8 names the ones that count),
    /// then its content.
    private static func part(_ bytes: ArraySlice<UInt8>, index: Int) throws(MultipartError) -> Part {
        var headers: [(name: String, value: String)] = []
        var position = bytes.startIndex
        while true {
            guard let lineFeed = bytes[position...].firstIndex(of: 0x0A) else { throw .malformedPartHeaders(part: index) }
            guard lineFeed - bytes.startIndex <= maxHeaderBytes else { throw .headersTooLarge(part: index) }
            var lineEnd = lineFeed
            if lineEnd > position, bytes[lineEnd - 1] == 0x0D { lineEnd -= 1 }
            let line = bytes[position..<lineEnd]
            position = lineFeed + 1
            if line.isEmpty { break }
            if line.first == 0x20 || line.first == 0x09 {
                // A folded line continues the last header (obsolete, RFC 5322 section 3.2.2).
                guard !headers.isEmpty else { throw .malformedPartHeaders(part: index) }
                headers[headers.count - 1].value += " " + String(String(decoding: line, as: UTF8.self)[...].trimmingSpaces())
                continue
            }
            guard let colon = line.firstIndex(of: 0x3A), colon > line.startIndex else { throw .malformedPartHeaders(part: index) }
            let name = String(decoding: line[..<colon], as: UTF8.self)
            let value = String(String(decoding: line[(colon + 1)...], as: UTF8.self)[...].trimmingSpaces())
            headers.append((name, value))
        }
        guard let disposition = headers.first(where: { $0.name.lowercased() == "content-disposition" })?.value else {
            throw .missingContentDisposition(part: index)
        }
        guard let (type, parameters) = HeaderParameters.parse(disposition) else { throw .malformedPartHeaders(part: index) }
        // RFC 7578 section 4.2: each part's disposition is form-data, with a name.
        guard type.lowercased() == "form-data" else { throw .notFormData(part: index) }
        guard let name = parameters.first(where: { $0.name.lowercased() == "name" })?.value else { throw .missingName(part: index) }
        let filename = parameters.first { $0.name.lowercased() == "filename" }?.value
        let contentType = headers.first { $0.name.lowercased() == "content-type" }?.value
        return Part(name: name, filename: filename, contentType: contentType, body: Array(bytes[position...]))
    }
}

/// Why a multipart body was refused.
package enum MultipartError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformedContentType
    case notMultipartFormData(String)
    case missingBoundary
    case invalidBoundary
    /// No `--boundary` line in the body.
    case missingOpeningBoundary
    /// The body ends before `--boundary--`.
    case missingClosingBoundary
    /// A close delimiter with no part before it (RFC 2046 section 5.1.1 asks for at least one).
    case noParts
    case tooManyParts(limit: Int)
    /// A part's headers are not `Name: value` lines ended by an empty line (parts count from 1).
    case malformedPartHeaders(part: Int)
    case headersTooLarge(part: Int)
    case missingContentDisposition(part: Int)
    case notFormData(part: Int)
    case missingName(part: Int)

    package var description: String {
        switch self {
        case .malformedContentType: "the Content-Type cannot be read"
        case .notMultipartFormData(let type): "the Content-Type is \(type), not multipart/form-data"
        case .missingBoundary: "the multipart/form-data Content-Type has no boundary"
        case .invalidBoundary: "the multipart boundary is not 1 to 70 characters of RFC 2046's set"
        case .missingOpeningBoundary: "the multipart body has no boundary line"
        case .missingClosingBoundary: "the multipart body ends before its closing boundary"
        case .noParts: "the multipart body has no parts"
        case .tooManyParts(let limit): "the multipart body has more than \(limit) parts"
        case .malformedPartHeaders(let part): "part \(part) of the multipart body has malformed headers"
        case .headersTooLarge(let part): "part \(part) of the multipart body has headers longer than \(MultipartFormData.maxHeaderBytes) bytes"
        case .missingContentDisposition(let part): "part \(part) of the multipart body has no Content-Disposition"
        case .notFormData(let part): "part \(part) of the multipart body is not form-data"
        case .missingName(let part): "part \(part) of the multipart body has no name"
        }
    }
}

/// A header value of the form `type; name=value; name="quoted value"` (Content-Type, RFC 9110
/// section 5.6.6; Content-Disposition, RFC 6266 section 4.1).
enum HeaderParameters {
    static func parse(_ value: String) -> (type: String, parameters: [(name: String, value: String)])? {
        let bytes = Array(value.utf8)
        var index = 0
        func skipSpaces() { while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 } }
        func token(until stops: [UInt8]) -> String {
            let start = index
            while index < bytes.count, !stops.contains(bytes[index]) { index += 1 }
            return String(String(decoding: bytes[start..<index], as: UTF8.self)[...].trimmingSpaces())
        }
        skipSpaces()
        let type = token(until: [0x3B])
        guard !type.isEmpty else { return nil }
        var parameters: [(name: String, value: String)] = []
        while index < bytes.count {
            index += 1  // the ';'
            skipSpaces()
            if index == bytes.count { break }
            let name = token(until: [0x3D, 0x3B])
            guard index < bytes.count, bytes[index] == 0x3D, !name.isEmpty else { return nil }
            index += 1
            skipSpaces()
            var parameterValue: [UInt8] = []
            if index < bytes.count, bytes[index] == 0x22 {
                // A quoted-string; a backslash quotes the next character (RFC 9110 section 5.6.4).
                index += 1
                var closed = false
                while index < bytes.count {
                    let byte = bytes[index]
                    index += 1
                    if byte == 0x22 { closed = true; break }
                    if byte == 0x5C, index < bytes.count { parameterValue.append(bytes[index]); index += 1; continue }
                    parameterValue.append(byte)
                }
                guard closed else { return nil }
                skipSpaces()
                guard index == bytes.count || bytes[index] == 0x3B else { return nil }
                parameters.append((name, String(decoding: parameterValue, as: UTF8.self)))
            } else {
                parameters.append((name, token(until: [0x3B])))
            }
        }
        return (type, parameters)
    }
}
