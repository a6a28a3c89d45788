import Testing
@testable import Server

@Suite struct HTTPRequestParserTests {
    func parse(_ text: String, parser: HTTPRequestParser = HTTPRequestParser()) -> HTTPRequestParser.Result {
        var parser = parser
        return Array(text.utf8).withUnsafeBytes { parser.parse($0) }
    }

    func status(_ text: String, parser: HTTPRequestParser = HTTPRequestParser()) -> Int? {
        if case .failure(let status) = parse(text, parser: parser) { return status.code }
        return nil
    }

    @Test func parsesARequestHead() throws {
        let text = "GET /metrics?x=1 HTTP/1.1\r\nHost: example.com\r\nAccept:  text/plain \r\nX-Empty:\r\n\r\n"
        guard case .request(let request, let consumed) = parse(text) else { Issue.record("no request"); return }
        #expect(consumed == text.utf8.count)
        #expect(request.method == "GET" && request.target == "/metrics?x=1" && request.path == "/metrics")
        #expect(request.queryValue("x") == "1")
        #expect(request.header("ACCEPT") == "text/plain")
        #expect(request.header("x-empty") == "")
        #expect(request.keepAlive)
    }

    @Test func isIncrementalDownToSingleBytes() {
        var parser = HTTPRequestParser()
        let bytes = Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        for (i, byte) in bytes.enumerated() {
            let result = [byte].withUnsafeBytes { parser.parse($0) }
            if i < bytes.count - 1 {
                #expect(result == .needMore)
            } else if case .request(let request, let consumed) = result {
                #expect(request.target == "/" && consumed == 1)
            } else {
                Issue.record("last byte did not complete the request: \(result)")
            }
        }
    }

    @Test func leavesPipelinedBytesUnconsumed() {
        let first = "GET /a HTTP/1.1\r\nHost: a\r\n\r\n"
        guard case .request(_, let consumed) = parse(first + "GET /b HTTP/1.1\r\n") else { Issue.record("no request"); return }
        #expect(consumed == first.utf8.count)
    }

    @Test func keepAliveFollowsVersionAndConnectionHeader() {
        func keepAlive(_ text: String) -> Bool? {
            if case .request(let r, _) = parse(text) { return r.keepAlive }
            return nil
        }
        #expect(keepAlive("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n") == false)
        #expect(keepAlive("GET / HTTP/1.0\r\n\r\n") == false)
        #expect(keepAlive("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n") == true)
    }

    @Test(arguments: [
        "GET /\r\nHost: a\r\n\r\n",                      // no version
        "GET  / HTTP/1.1\r\nHost: a\r\n\r\n",            // double space
        "GET / HTTP/1.1 extra\r\nHost: a\r\n\r\n",
        "G(T / HTTP/1.1\r\nHost: a\r\n\r\n",             // method is not a token
        "GET / HTTX/1.1\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost : a\r\n\r\n",            // space before the colon
        "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",  // obsolete line folding
        "GET / HTTP/1.1\r\nNoColon\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\n: empty-name\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n",       // bare LF inside the head
        "GET / HTTP/1.1\r\nX: a\u{7F}b\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\n\r\n",                         // HTTP/1.1 without Host
        "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",  // conflicting lengths
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -5\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5x\r\n\r\n",
    ])
    func malformedRequestsGet400(_ text: String) {
        #expect(status(text) == 400)
    }

    @Test func bodiesAreBoundedAndFramedByContentLengthOnly() {
        let parser = HTTPRequestParser(maxBodyBytes: 10)
        #expect(status("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n", parser: parser) == 413)
        #expect(status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", parser: parser) == 411)
        guard case .request(let request, _) = parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n", parser: parser) else {
            Issue.record("a body within the limit was refused")
            return
        }
        #expect(request.contentLength == 10)
    }

    @Test func notHTTPFailsAtTheFirstByteNotAtTheDeadline() {
        // A TLS ClientHello to a plain port: the head never completes, so waiting would only time out.
        var parser = HTTPRequestParser()
        #expect(([0x16, 0x03, 0x01, 0x02, 0x00] as [UInt8]).withUnsafeBytes { parser.parse($0) } == .failure(.badRequest))
        var control = HTTPRequestParser()
        #expect(Array("GET /\u{01}".utf8).withUnsafeBytes { control.parse($0) } == .failure(.badRequest))
    }

    @Test func refusesOtherMajorVersionsWith505() {
        #expect(status("GET / HTTP/2.0\r\nHost: a\r\n\r\n") == 505)
    }

    @Test func boundsTheRequestLine() {
        let parser = HTTPRequestParser(maxRequestLineBytes: 64, maxHeadBytes: 1024)
        #expect(status("GET /" + String(repeating: "a", count: 100), parser: parser) == 414)
    }

    @Test func boundsTheHeadWith431() {
        let parser = HTTPRequestParser(maxRequestLineBytes: 64, maxHeadBytes: 1024)
        let many = (0..<100).map { "X-Header-\($0): value\r\n" }.joined()
        #expect(status("GET / HTTP/1.1\r\nHost: a\r\n" + many, parser: parser) == 431)
    }

    /// A request line just under its bound, then headers up to the head's: the line's end is
    /// remembered as it passes (the parser once looked for it again at every later byte, which
    /// libFuzzer's http target found slow: docs/benchmarks.md, "Fuzzing"). Fed a byte at a time,
    /// the head still parses; a longer line is 414, a longer head 431.
    @Test func aLongRequestLineThenALongHeadParsesAndItsBoundsHold() {
        func head(requestLine: Int, padding: Int) -> [UInt8] {
            let line = "GET /" + String(repeating: "a", count: requestLine - 16) + " HTTP/1.1\r\n"
            return Array((line + "Host: a\r\nX-Pad: " + String(repeating: "b", count: padding) + "\r\n\r\n").utf8)
        }
        func feed(_ bytes: [UInt8]) -> HTTPRequestParser.Result {
            var parser = HTTPRequestParser()
            for byte in bytes.dropLast() {
                let result = [byte].withUnsafeBytes { parser.parse($0) }
                guard result == .needMore else { return result }
            }
            return [bytes.last!].withUnsafeBytes { parser.parse($0) }
        }
        let fits = head(requestLine: 8192, padding: 16384 - 8192 - 40)
        guard case .request(let request, _) = feed(fits) else { Issue.record("refused a head within both bounds"); return }
        #expect(request.target.count == 8192 - 15)
        #expect(feed(head(requestLine: 8200, padding: 10)) == .failure(.uriTooLong))
        #expect(feed(head(requestLine: 8192, padding: 16384)) == .failure(.headersTooLarge))
    }
}
