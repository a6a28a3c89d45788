/// One `POST /v1/realtime/calls` over HTTP/1.1 on a fresh connection (`Connection: close`): the
/// request's bytes, and the response read from the bytes received so far. Pure: `WebRTCLoadRun`
/// moves the bytes. The response is bounded (an answer SDP is a few kilobytes).
enum OfferExchange {
    static let maxResponseBytes = 64 * 1024

    struct Response: Equatable {
        let status: Int
        /// Header names lower-cased, values trimmed, in order.
        let headers: [(String, String)]
        let body: [UInt8]

        static func == (a: Response, b: Response) -> Bool {
            a.status == b.status && a.body == b.body && a.headers.map(\.0) == b.headers.map(\.0) && a.headers.map(\.1) == b.headers.map(\.1)
        }

        func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
    }

    enum Invalid: Error, Equatable, CustomStringConvertible {
        case notHTTP(String)
        case tooLarge
        case badContentLength
        case closedEarly

        var description: String {
            switch self {
            case .notHTTP(let line): "not an HTTP response (\"\(line)\")"
            case .tooLarge: "a response over \(OfferExchange.maxResponseBytes) bytes"
            case .badContentLength: "a response with a bad Content-Length"
            case .closedEarly: "the connection closed before the whole response"
            }
        }
    }

    static func request(path: String, host: String, offer: String, bearer: String?) -> [UInt8] {
        let body = Array(offer.utf8)
        var head = "POST \(path) HTTP/1.1\r\nHost: \(host)\r\nUser-Agent: parley-load\r\nContent-Type: application/sdp\r\n"
        if let bearer { head += "Authorization: Bearer \(bearer)\r\n" }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    /// The response once its head and its Content-Length body are in `bytes`; nil while more is to
    /// come. `closed`: the server has closed, so what is there is all there is (a response without
    /// Content-Length ends with the connection, RFC 9112 section 6.3).
    static func response(_ bytes: [UInt8], closed: Bool = false) throws(Invalid) -> Response? {
        guard bytes.count <= maxResponseBytes else { throw .tooLarge }
        guard let end = headEnd(bytes) else {
            if closed { throw bytes.isEmpty ? .closedEarly : .notHTTP(String(decoding: bytes.prefix(40), as: UTF8.self)) }
            return nil
        }
        let lines = String(decoding: bytes[0..<end], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.first ?? ""
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]) else {
            throw .notHTTP(String(statusLine.prefix(40)))
        }
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((line[..<colon].lowercased(), String(line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" })))
        }
        let bodyStart = end + 4
        guard let lengthText = headers.first(where: { $0.0 == "content-length" })?.1 else {
            return closed ? Response(status: status, headers: headers, body: Array(bytes[bodyStart...])) : nil
        }
        guard let length = Int(lengthText.trimmingSuffix(" ")), length >= 0, length <= maxResponseBytes else { throw .badContentLength }
        guard bytes.count - bodyStart >= length else {
            if closed { throw .closedEarly }
            return nil
        }
        return Response(status: status, headers: headers, body: Array(bytes[bodyStart..<(bodyStart + length)]))
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 0x0D && bytes[i + 1] == 0x0A && bytes[i + 2] == 0x0D && bytes[i + 3] == 0x0A {
            return i
        }
        return nil
    }
}

private extension String {
    func trimmingSuffix(_ character: Character) -> Substring {
        var text = Substring(self)
        while text.last == character { text = text.dropLast() }
        return text
    }
}
