/// An incremental HTTP/1.1 request-head parser with hard bounds.
///
/// Bytes go in as they arrive; the parser keeps only the unfinished head (bounded by
/// `maxHeadBytes`) and reports a request, a need for more bytes, or the status that refuses the
/// request. It does no I/O.
struct HTTPRequestParser {
    enum Result: Equatable {
        /// All bytes consumed; the head is not complete yet.
        case needMore
        /// A complete head; `consumed` bytes of the input belonged to it, the rest follows it.
        case request(HTTPRequest, consumed: Int)
        /// The request is refused with this status; the connection closes after the response.
        case failure(HTTPStatus)
    }

    let maxRequestLineBytes: Int
    let maxHeadBytes: Int
    let maxBodyBytes: Int
    /// The head so far. Empty (and unallocated) between requests.
    private var head: [UInt8] = []
    /// How many bytes of "\r\n\r\n" the head currently ends with.
    private var terminatorMatched = 0
    /// The head holds a line feed, so the request line ended (within its bound, or the head would
    /// have been refused). Kept rather than looked for again at every byte, which cost each byte
    /// of a long head a scan of the request line.
    private var requestLineEnded = false

    init(maxRequestLineBytes: Int = 8192, maxHeadBytes: Int = 16384, maxBodyBytes: Int = 1 << 20) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeadBytes = maxHeadBytes
        self.maxBodyBytes = maxBodyBytes
    }

    var bufferedBytes: Int { head.capacity }

    mutating func parse(_ input: UnsafeRawBufferPointer) -> Result {
        for (i, byte) in input.enumerated() {
            // Fail at once on what cannot be HTTP (a TLS ClientHello starts with 0x16, for one)
            // rather than when the head completes, which such a peer never makes happen.
            if head.isEmpty && !Self.isTokenByte(byte) { return .failure(.badRequest) }
            if byte < 0x20 && byte != 13 && byte != 10 && byte != 9 { return .failure(.badRequest) }
            head.append(byte)
            if byte == 10 { requestLineEnded = true }
            terminatorMatched = Self.advance(terminatorMatched, byte)
            if terminatorMatched == 4 {
                let result = Self.parseHead(head.dropLast(4), maxBodyBytes: maxBodyBytes)
                head = []
                terminatorMatched = 0
                requestLineEnded = false
                switch result {
                case .success(let request): return .request(request, consumed: i + 1)
                case .failure(let status): return .failure(status)
                }
            }
            if head.count > maxHeadBytes { return .failure(lineOverflow ? .uriTooLong : .headersTooLarge) }
            if lineOverflow { return .failure(.uriTooLong) }
        }
        return .needMore
    }

    /// The request line alone is over its bound (no line break yet past `maxRequestLineBytes`).
    private var lineOverflow: Bool { head.count > maxRequestLineBytes && !requestLineEnded }

    private static func advance(_ matched: Int, _ byte: UInt8) -> Int {
        switch (matched, byte) {
        case (0, 13), (2, 13): return matched + 1
        case (1, 10), (3, 10): return matched + 1
        case (_, 13): return 1
        default: return 0
        }
    }

    private static func parseHead(_ bytes: ArraySlice<UInt8>, maxBodyBytes: Int) -> Swift.Result<HTTPRequest, HTTPStatus> {
        var lines = split(bytes)
        guard !lines.isEmpty else { return .failure(.badRequest) }
        let requestLine = lines.removeFirst()
        guard let (method, target, minor) = parseRequestLine(requestLine) else { return .failure(.badRequest) }
        guard minor >= 0 else { return .failure(.httpVersionNotSupported) }
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(lines.count)
        for line in lines {
            guard let header = parseHeader(line) else { return .failure(.badRequest) }
            headers.append(header)
        }
        let request = HTTPRequest(method: method, target: target, minorVersion: minor, headers: headers)
        // RFC 9112 section 3.2: an HTTP/1.1 request without exactly one Host is refused.
        if minor >= 1 && headers.filter({ $0.name.lowercased() == "host" }).count != 1 {
            return .failure(.badRequest)
        }
        // Bodies are framed by Content-Length only: chunked uploads get 411, which asks for a length.
        if request.header("transfer-encoding") != nil { return .failure(.lengthRequired) }
        let lengths = Set(request.headers.filter { $0.name.lowercased() == "content-length" }.map(\.value))
        guard lengths.count <= 1 else { return .failure(.badRequest) }  // RFC 9112 section 6.3: conflicting lengths
        if let length = lengths.first {
            guard !length.isEmpty, length.utf8.allSatisfy({ (48...57).contains($0) }), let n = Int(length) else { return .failure(.badRequest) }
            guard n <= maxBodyBytes else { return .failure(.contentTooLarge) }
        }
        return .success(request)
    }

    /// Splits on CRLF; a bare CR or LF anywhere inside a line makes the head malformed.
    private static func split(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        var i = bytes.startIndex
        while i < bytes.endIndex {
            if bytes[i] == 13, i + 1 < bytes.endIndex, bytes[i + 1] == 10 {
                lines.append(bytes[start..<i])
                i += 2
                start = i
            } else {
                i += 1
            }
        }
        lines.append(bytes[start..<bytes.endIndex])
        return lines
    }

    private static func parseRequestLine(_ line: ArraySlice<UInt8>) -> (String, String, Int)? {
        let parts = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(isTokenByte) else { return nil }
        guard !parts[1].isEmpty, parts[1].allSatisfy({ $0 > 32 && $0 < 127 }) else { return nil }
        let version = Array(parts[2])
        guard version.count == 8, version.starts(with: Array("HTTP/".utf8)), version[6] == UInt8(ascii: "."),
              (48...57).contains(version[5]), (48...57).contains(version[7]) else { return nil }
        // Only HTTP/1.x is served here; -1 asks for 505.
        let minor = version[5] == UInt8(ascii: "1") ? Int(version[7] - 48) : -1
        return (String(decoding: parts[0], as: UTF8.self), String(decoding: parts[1], as: UTF8.self), minor)
    }

    private static func parseHeader(_ line: ArraySlice<UInt8>) -> (name: String, value: String)? {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let name = line[line.startIndex..<colon]
        // No whitespace before the colon, no obsolete line folding (RFC 9112 section 5).
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else { return nil }
        var value = line[(colon + 1)...]
        while let f = value.first, f == 32 || f == 9 { value.removeFirst() }
        while let l = value.last, l == 32 || l == 9 { value.removeLast() }
        guard value.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else { return nil }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    /// RFC 9110 tchar.
    private static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(b)
        }
    }
}
