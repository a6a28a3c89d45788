import JSON
@testable import MCP
import Testing

/// The answer to one POST to an MCP server, read from its head and body pieces: JSON or an event
/// stream, bounded, with the session's 404 told apart.
@Suite struct MCPAnswerReaderTests {
    /// Feeds `body` in pieces of `piece` bytes; the first outcome that is not `.needMore`, or the end's.
    func read(_ reader: inout MCPAnswerReader, status: Int = 200, type: String?, length: String? = nil, _ body: String, piece: Int = 7) -> MCPAnswerReader.Outcome {
        let head = reader.head(status: status, contentType: type, contentLength: length)
        guard head == .needMore else { return head }
        let bytes = Array(body.utf8)
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + piece)
            let outcome = bytes[start..<end].withUnsafeBytes { reader.body($0) }
            guard outcome == .needMore else { return outcome }
            start = end
        }
        return reader.end()
    }

    func reader(id: Int? = 3, limit: Int = 1 << 20, session: Bool = true) -> MCPAnswerReader {
        MCPAnswerReader(id: id, limit: limit, carriedSession: session)
    }

    @Test func aJSONAnswerGivesTheResult() {
        var reader = reader()
        let outcome = read(&reader, type: "application/json; charset=utf-8", #"{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}"#)
        #expect(outcome == .result(.object([("tools", .array([]))])))
    }

    @Test func aJSONRPCErrorIsAProtocolErrorWithItsCode() {
        var reader = reader()
        let outcome = read(&reader, type: "application/json", #"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Unknown tool: nope"}}"#)
        #expect(outcome == .failed(.jsonRPC(code: -32602, message: "Unknown tool: nope")))
    }

    @Test func anEventStreamSkipsPrimingNotificationsAndServerRequestsThenGivesOurResponse() {
        var reader = reader()
        let stream = """
            id: 1
            data:

            event: message
            data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}

            data: {"jsonrpc":"2.0","id":"s-1","method":"ping"}

            data: {"jsonrpc":"2.0","id":2,"result":{"not":"ours"}}

            data: {"jsonrpc":"2.0",
            data:  "id":3,"result":{"content":[]}}

            data: {"never":"read"}

            """
        #expect(read(&reader, type: "text/event-stream", stream) == .result(.object([("content", .array([]))])))
    }

    @Test func theResponseArrivesWhateverTheSizeOfTheReads() {
        for piece in [1, 2, 5, 64, 4096] {
            var reader = reader()
            let stream = "data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\r\n\r\n"
            #expect(read(&reader, type: "text/event-stream", stream, piece: piece) == .result(.object([])), "pieces of \(piece)")
        }
    }

    @Test func aStreamThatEndsWithoutOurResponseIsMalformed() {
        var reader = reader()
        let outcome = read(&reader, type: "text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n")
        #expect(outcome == .failed(.malformed("the event stream ended before the response to request 3")))
    }

    @Test func anAnnouncedLengthOverTheLimitIsRefusedAtTheHead() {
        var reader = reader(limit: 4 << 20)
        #expect(reader.head(status: 200, contentType: "application/json", contentLength: "52428800") == .failed(.tooLarge(limit: 4 << 20)))
    }

    @Test func aBodyThatGrowsPastTheLimitIsRefusedWithoutReadingOn() {
        var reader = reader(limit: 100)
        let body = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"text\":\"" + String(repeating: "x", count: 200) + "\"}}"
        #expect(read(&reader, type: "application/json", body) == .failed(.tooLarge(limit: 100)))
        var stream = self.reader(limit: 100)
        #expect(read(&stream, type: "text/event-stream", "data: " + body + "\n\n") == .failed(.tooLarge(limit: 100)))
        // A stream of small events counts every byte, not one event's.
        var endless = self.reader(limit: 1000)
        let notes = String(repeating: "data: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n", count: 100)
        #expect(read(&endless, type: "text/event-stream", notes) == .failed(.tooLarge(limit: 1000)))
    }

    @Test func anHTMLPageOrAMissingContentTypeIsNotMCP() {
        var html = reader()
        #expect(read(&html, type: "text/html; charset=utf-8", "<!doctype html>") == .failed(.notMCP("the answer is text/html, not JSON or an event stream")))
        var none = reader()
        #expect(read(&none, type: nil, "{}") == .failed(.notMCP("the answer to a request has no content type")))
        var notJSON = reader()
        #expect(read(&notJSON, type: "application/json", "<html>") == .failed(.notMCP("the answer is not JSON")))
        var badEvent = reader()
        #expect(read(&badEvent, type: "text/event-stream", "data: <html>\n\n") == .failed(.notMCP("an event on the stream is not JSON")))
    }

    @Test func aNon2xxStatusIsAnHTTPErrorQuotingTheServersMessage() {
        var oauth = reader(session: false)
        let outcome = read(&oauth, status: 401, type: "application/json", #"{"error":"invalid_token","error_description":"a bearer token is required"}"#)
        #expect(outcome == .failed(.status(401, "a bearer token is required")))
        var rpc = reader()
        #expect(read(&rpc, status: 400, type: "application/json", #"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: Missing session ID"}}"#)
            == .failed(.status(400, "Bad Request: Missing session ID")))
        var html = reader()
        #expect(read(&html, status: 502, type: "text/html", "<html><body>Bad gateway</body></html>") == .failed(.status(502, nil)))
    }

    @Test func a404ToARequestWithASessionMeansTheSessionIsGone() {
        var withSession = reader(session: true)
        #expect(withSession.head(status: 404, contentType: "application/json", contentLength: nil) == .sessionGone)
        var without = reader(session: false)
        #expect(read(&without, status: 404, type: "text/plain", "Not Found") == .failed(.status(404, "Not Found")))
    }

    @Test func aNotificationIsAnsweredByA202() {
        var reader = reader(id: nil)
        #expect(read(&reader, status: 202, type: nil, "") == .result(.null))
        var request = self.reader()
        #expect(request.head(status: 202, contentType: nil, contentLength: "0") == .failed(.malformed("a request was answered 202, with no response")))
    }

    @Test func aBatchIsSearchedForOurResponse() {
        var reader = reader()
        #expect(read(&reader, type: "application/json", #"[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":3,"result":{"ok":true}}]"#)
            == .result(.object([("ok", .bool(true))])))
    }

    @Test func anErrorWithANullIDIsOurs() {
        var reader = reader()
        #expect(read(&reader, type: "application/json", #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#)
            == .failed(.jsonRPC(code: -32700, message: "Parse error")))
    }

    @Test func tooManyMessagesBeforeTheResponseAreRefused() {
        var reader = reader()
        let notes = String(repeating: "data: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n", count: MCPAnswerReader.maxSkipped + 1)
        #expect(read(&reader, type: "text/event-stream", notes, piece: 4096) == .failed(.malformed("more than \(MCPAnswerReader.maxSkipped) messages before the response")))
    }

    @Test func aSessionIDIsKeptOnlyIfAHeaderMayCarryIt() {
        #expect(MCPAnswerReader.sessionID("9faaad2134ba46ec") == "9faaad2134ba46ec")
        #expect(MCPAnswerReader.sessionID("has space") == nil)
        #expect(MCPAnswerReader.sessionID("") == nil)
        #expect(MCPAnswerReader.sessionID(String(repeating: "a", count: 1025)) == nil)
        #expect(MCPAnswerReader.sessionID("é") == nil)
    }
}
