/// An incremental HTTP/1.1 response parser for the upstream client: the head, then the body as
/// Content-Length, chunked, or "until the connection closes" frames it. Pure: bytes in, events
/// out; body bytes are handed out as ranges of the input, never copied.
struct HTTPResponseParser {
    struct Head: Sendable {
        public let status: Int
        public let headers: [(name: String, value: String)]

        func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name }?.value }
    }

    enum Event {
        case needMore
        case head(Head)
        /// Body bytes, at this range of the input.
        case body(Range<Int>)
        /// The response is complete; `reusable` when the connection may carry another request.
        case end(reusable: Bool)
        case failure(String)
    }

    private enum Framing {
        case length(Int)
        case chunked
        case untilClose
    }

    private enum State {
        case head
        case body(Framing)
        /// Expecting a chunk-size line.
        case chunkSize
        case chunkData(remaining: Int)
        /// The CRLF after a chunk's data.
        case chunkEnd
        /// Trailer lines after the last chunk, up to the empty line.
        case trailers
        case done
    }

    static let maxHeadBytes = 32 * 1024
    static let maxLineBytes = 4096

    private var state = State.head
    /// The unfinished head or line.
    private var line: [UInt8] = []
    private var headBytes = 0
    private var statusLine: String?
    private var headers: [(name: String, value: String)] = []
    private var keepAlive = true
    /// No body whatever the headers say (a response to HEAD).
    let bodiless: Bool

    init(bodiless: Bool = false) {
        self.bodiless = bodiless
    }

    /// Reads the next event from `bytes`, starting at `offset`; returns it and where reading stopped.
    mutating func next(_ bytes: UnsafeRawBufferPointer, from offset: Int) -> (Event, Int) {
        var i = offset
        while true {
            switch state {
            case .done:
                return (.needMore, i)
            case .head:
                guard let text = takeLine(bytes, &i, limit: Self.maxHeadBytes) else {
                    return line.count > Self.maxLineBytes ? (.failure("response header line too long"), i) : (.needMore, i)
                }
                headBytes += text.count + 2
                guard headBytes <= Self.maxHeadBytes else { return (.failure("response head too large"), i) }
                if statusLine == nil {
                    statusLine = text
                    continue
                }
                if !text.isEmpty {
                    guard let colon = text.firstIndex(of: ":") else { return (.failure("malformed response header"), i) }
                    headers.append((String(text[..<colon]), String(Substring(text[text.index(after: colon)...]).trimmingSpaces())))
                    continue
                }
                if let event = headComplete() { return (event, i) }
            case .body(.length(let remaining)):
                if remaining == 0 { state = .done; return (.end(reusable: keepAlive), i) }
                guard i < bytes.count else { return (.needMore, i) }
                let take = min(remaining, bytes.count - i)
                state = .body(.length(remaining - take))
                return (.body(i..<(i + take)), i + take)
            case .body(.untilClose):
                guard i < bytes.count else { return (.needMore, i) }
                return (.body(i..<bytes.count), bytes.count)
            case .body(.chunked), .chunkSize:
                state = .chunkSize
                guard let text = takeLine(bytes, &i, limit: Self.maxLineBytes) else {
                    return line.count > Self.maxLineBytes ? (.failure("chunk size line too long"), i) : (.needMore, i)
                }
                let hex = text.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0].trimmingSpaces()
                guard !hex.isEmpty, hex.count <= 15, let size = Int(hex, radix: 16) else { return (.failure("bad chunk size"), i) }
                state = size == 0 ? .trailers : .chunkData(remaining: size)
            case .chunkData(let remaining):
                guard i < bytes.count else { return (.needMore, i) }
                let take = min(remaining, bytes.count - i)
                state = remaining == take ? .chunkEnd : .chunkData(remaining: remaining - take)
                return (.body(i..<(i + take)), i + take)
            case .chunkEnd:
                guard let text = takeLine(bytes, &i, limit: 2) else { return line.count > 2 ? (.failure("chunk not followed by CRLF"), i) : (.needMore, i) }
                guard text.isEmpty else { return (.failure("chunk not followed by CRLF"), i) }
                state = .chunkSize
            case .trailers:
                guard let text = takeLine(bytes, &i, limit: Self.maxLineBytes) else {
                    return line.count > Self.maxLineBytes ? (.failure("trailer too long"), i) : (.needMore, i)
                }
                if text.isEmpty { state = .done; return (.end(reusable: keepAlive), i) }
            }
        }
    }

    /// The connection closed: ends a body framed by the close, fails anything else unfinished.
    mutating func connectionClosed() -> Event {
        switch state {
        case .body(.untilClose): state = .done; return .end(reusable: false)
        case .done: return .end(reusable: false)
        default: return .failure("connection closed before the response was complete")
        }
    }

    /// The head's empty line has arrived: sets up body framing. Nil for an interim (1xx) response,
    /// after which the real head follows and parsing simply goes on.
    private mutating func headComplete() -> Event? {
        let parts = statusLine!.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]), (100...999).contains(status) else {
            return .failure("malformed status line")
        }
        let head = Head(status: status, headers: headers)
        let connection = head.header("connection")?.lowercased() ?? ""
        keepAlive = parts[0] == "HTTP/1.1" ? !connection.contains("close") : connection.contains("keep-alive")
        if (100...199).contains(status) {
            statusLine = nil
            headers = []
            headBytes = 0
            return nil
        }
        headers = []
        if bodiless || status == 204 || status == 304 {
            state = .body(.length(0))
        } else if head.header("transfer-encoding")?.lowercased().contains("chunked") == true {
            state = .body(.chunked)
        } else if let length = head.header("content-length") {
            guard let n = Int(length), n >= 0 else { return .failure("bad Content-Length") }
            state = .body(.length(n))
        } else {
            state = .body(.untilClose)
            keepAlive = false
        }
        return .head(head)
    }

    /// Takes one CRLF-terminated line (without the CRLF), joining pieces across calls.
    private mutating func takeLine(_ bytes: UnsafeRawBufferPointer, _ i: inout Int, limit: Int) -> String? {
        while i < bytes.count {
            let byte = bytes[i]
            i += 1
            if byte == 10 {
                if line.last == 13 { line.removeLast() }
                defer { line.removeAll(keepingCapacity: true) }
                return String(decoding: line, as: UTF8.self)
            }
            line.append(byte)
            if line.count > limit + 1 { return nil }
        }
        return nil
    }
}
