import Access
@testable import Server

/// The HTTP request parser as a connection drives it (`HTTP1Protocol.process`): reads of any size,
/// pipelined requests, bodies skipped by their Content-Length, and after an accepted WebSocket
/// upgrade the rest of the bytes read as frames. The input is a `Reads` byte and then the stream.
///
/// Checks: the parser buffers a bounded head and nothing once a request is out; it refuses only
/// with the statuses it documents; a request it returns is well formed (so what routing, the
/// handshake and the log see is); written back out, the request parses to itself; and the
/// handshake's response has no line break inside a header.
enum HTTPFuzz {
    /// Small bounds, so that inputs of a few KB reach them; the server's defaults are 8 KiB, 16 KiB
    /// and 1 MiB.
    static let maxRequestLineBytes = 256
    static let maxHeadBytes = 1024
    static let maxBodyBytes = 2048
    /// One byte over the head's bound is held before the refusal; array growth may double that.
    static let maxBuffered = 2 * (maxHeadBytes + 1) + 64
    static let refusals: Set<Int> = [400, 411, 413, 414, 431, 505]

    static func run(_ input: UnsafeRawBufferPointer) {
        var parser = HTTPRequestParser(maxRequestLineBytes: maxRequestLineBytes, maxHeadBytes: maxHeadBytes, maxBodyBytes: maxBodyBytes)
        var body: (request: HTTPRequest, remaining: Int)?
        var frames: FrameStream?
        for read in Reads(input).reads {
            var offset = 0
            while offset < read.count {
                let rest = UnsafeRawBufferPointer(rebasing: read[offset...])
                if frames != nil {
                    frames!.receive(rest)
                    break
                }
                if let (request, remaining) = body {
                    let take = min(remaining, rest.count)
                    offset += take
                    body = remaining > take ? (request, remaining - take) : nil
                    if body == nil, upgrades(request) { frames = FrameStream() }
                    continue
                }
                switch parser.parse(rest) {
                case .needMore:
                    precondition(parser.bufferedBytes <= maxBuffered, "the parser holds \(parser.bufferedBytes) bytes")
                    offset = read.count
                case .failure(let status):
                    precondition(refusals.contains(status.code), "refused with \(status.code)")
                    return
                case .request(let request, let consumed):
                    precondition(consumed >= 1 && consumed <= rest.count, "consumed \(consumed) of \(rest.count) bytes")
                    precondition(parser.bufferedBytes == 0, "the parser holds \(parser.bufferedBytes) bytes between requests")
                    check(request)
                    offset += consumed
                    if request.contentLength > 0 {
                        body = (request, request.contentLength)
                    } else if upgrades(request) {
                        frames = FrameStream()
                    }
                }
            }
        }
    }

    private static func check(_ request: HTTPRequest) {
        precondition(!request.method.isEmpty && !request.target.isEmpty && (0...9).contains(request.minorVersion))
        precondition(!request.target.utf8.contains { $0 <= 32 || $0 == 127 }, "a target with a space or control byte")
        for (name, value) in request.headers {
            precondition(!name.isEmpty && !name.utf8.contains { $0 <= 32 || $0 == UInt8(ascii: ":") }, "header name \(name)")
            precondition(!value.utf8.contains { $0 == 10 || $0 == 13 || $0 == 0 }, "a header value with a line break")
        }
        precondition((0...maxBodyBytes).contains(request.contentLength), "Content-Length \(request.contentLength) passed")
        precondition(request.header("transfer-encoding") == nil, "a Transfer-Encoding request passed")
        _ = (request.path, request.queryValue("model"), request.keepAlive)

        var head = "\(request.method) \(request.target) HTTP/1.\(request.minorVersion)\r\n"
        for (name, value) in request.headers { head += "\(name): \(value)\r\n" }
        // Larger bounds: invalid UTF-8 in a value reads as U+FFFD, which writes back longer.
        var again = HTTPRequestParser(maxRequestLineBytes: 4 * maxRequestLineBytes, maxHeadBytes: 4 * maxHeadBytes, maxBodyBytes: maxBodyBytes)
        let reparsed = Array((head + "\r\n").utf8).withUnsafeBytes { again.parse($0) }
        guard case .request(let same, _) = reparsed, same == request else {
            preconditionFailure("the request written back parses as \(reparsed), not \(request)")
        }
    }

    /// The handshake's verdict, as an endpoint offering the `realtime` subprotocol reaches it.
    private static func upgrades(_ request: HTTPRequest) -> Bool {
        let verdict = WebSocketHandshake.evaluate(request) { request, offered in
            _ = APIKeys.presented(in: request, offered: offered)
            return .success(WebSocketAdmission(subprotocol: offered.contains("realtime") ? "realtime" : nil, handler: EchoHandler.shared))
        }
        let response: HTTPResponse
        switch verdict {
        case .accept(let accepted, _): response = accepted
        case .refuse(let refused): response = refused
        }
        for (name, value) in response.headers {
            precondition(!(name + value).utf8.contains { $0 == 10 || $0 == 13 }, "a line break in response header \(name)")
        }
        if case .accept = verdict { return true }
        return false
    }
}
