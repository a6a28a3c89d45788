import Testing
@testable import Upstream

@Suite struct HTTPResponseParserTests {
    /// Feeds `text` in pieces of `chunk` bytes; returns status, body and whether the connection is reusable.
    func parse(_ text: String, chunk: Int = .max, closeAtEnd: Bool = false) -> (status: Int?, body: String, reusable: Bool?, failure: String?) {
        var parser = HTTPResponseParser()
        var status: Int?, body: [UInt8] = [], reusable: Bool?, failure: String?
        let bytes = Array(text.utf8)
        var start = 0
        outer: while start < bytes.count {
            let piece = Array(bytes[start..<min(bytes.count, start + chunk)])
            start += piece.count
            var offset = 0
            while true {
                let (event, next) = piece.withUnsafeBytes { parser.next($0, from: offset) }
                offset = next
                switch event {
                case .needMore: continue outer
                case .head(let head): status = head.status
                case .body(let range): body += piece[range]
                case .end(let r): reusable = r; break outer
                case .failure(let why): failure = why; break outer
                }
            }
        }
        if closeAtEnd, reusable == nil, failure == nil {
            switch parser.connectionClosed() {
            case .end(let r): reusable = r
            case .failure(let why): failure = why
            default: break
            }
        }
        return (status, String(decoding: body, as: UTF8.self), reusable, failure)
    }

    @Test func contentLengthBody() {
        let r = parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        #expect(r.status == 200 && r.body == "hello" && r.reusable == true)
    }

    @Test func chunkedBodyInAnyPieces() {
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n"
        for chunk in [1, 2, 3, 7, 1000] {
            let r = parse(text, chunk: chunk)
            #expect(r.body == "hello world" && r.reusable == true, "pieces of \(chunk)")
        }
    }

    @Test func bodyUntilCloseAndConnectionClose() {
        let r = parse("HTTP/1.1 200 OK\r\n\r\nstreamed until the end", closeAtEnd: true)
        #expect(r.body == "streamed until the end" && r.reusable == false)
        #expect(parse("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").reusable == false)
    }

    @Test func interimResponsesAreSkipped() {
        let r = parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")
        #expect(r.status == 201 && r.body == "ok")
    }

    @Test func malformedResponsesFail() {
        #expect(parse("HTTX/1.1 200 OK\r\n\r\n").failure != nil)
        #expect(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").failure == "bad chunk size")
        #expect(parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", closeAtEnd: true).failure != nil)
    }
}

@Suite struct ServerSentEventParserTests {
    @Test func dispatchesOnBlankLinesAcrossAnySplit() throws {
        let text = ": comment\r\nevent: delta\r\ndata: {\"a\":1}\r\n\r\ndata: line one\ndata: line two\n\ndata: [DONE]\r\rid: 7\n"
        let expected = [ServerSentEventParser.Event(name: "delta", data: "{\"a\":1}"),
                        .init(name: "message", data: "line one\nline two"), .init(name: "message", data: "[DONE]")]
        for size in [1, 2, 5, 1000] {
            var parser = ServerSentEventParser()
            var events: [ServerSentEventParser.Event] = []
            let bytes = Array(text.utf8)
            for start in stride(from: 0, to: bytes.count, by: size) {
                events += try bytes[start..<min(bytes.count, start + size)].withUnsafeBytes { try parser.feed($0) }
            }
            #expect(events == expected, "pieces of \(size)")
        }
    }

    @Test func eventsAreBounded() {
        var parser = ServerSentEventParser(maxEventBytes: 64)
        #expect(throws: ServerSentEventParser.Failure.eventTooLarge) { try parser.feed("data: " + String(repeating: "x", count: 100)) }
    }
}
