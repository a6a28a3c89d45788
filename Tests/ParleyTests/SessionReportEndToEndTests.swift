import Glibc
import JSON
import Testing
import TestSupport

/// Every session that ends leaves a report (issue 28): its turns, usage and ending, written to the
/// store, read at `GET /v1/sessions/{id}` with an operator's key and never a client's, and still
/// there after the server is killed with SIGKILL and started again on the same SQLite file.
@Suite(.serialized) struct SessionReportEndToEndTests {
    static let quiet = "--transcriber none --synthesizer none --turn-model none --vad energy"

    /// A file holding `text`; removed with the value.
    final class File {
        let path = "/tmp/parley-report-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        init(_ text: String) {
            let file = fopen(path, "w")
            fputs(text, file)
            fclose(file)
        }
        deinit { for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) } }
    }

    /// GET /v1/sessions/ID with `key` (if any): the status and the body.
    static func report(_ port: Int, _ id: String, key: String?) throws -> (status: Int, body: String) {
        let client = try TestClient(port: port)
        try client.send("GET /v1/sessions/\(id) HTTP/1.1\r\nHost: a\r\n\(key.map { "Authorization: Bearer \($0)\r\n" } ?? "")\r\n")
        let (status, _, chunks) = try client.readChunkedResponse()
        return (status, chunks.joined())
    }

    /// A session that asks one typed question, gets its text answer and closes: its id.
    static func converse(_ port: Int, key: String?) throws -> String {
        let client = try TestClient(port: port)
        #expect(try client.upgrade(path: "/v1/realtime", extraHeaders: key.map { "Authorization: Bearer \($0)\r\n" } ?? "").status == 101)
        let id = try client.readEvent()["session"]?["id"]?.string ?? ""
        let ask = #"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"what is twelve times seven"}]}}"#
        try client.send(TestClient.frame(0x1, Array(ask.utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create","response":{"output_modalities":["text"]}}"#.utf8)))
        _ = try client.readEvents(until: "response.done")
        try client.send(TestClient.frame(0x8, [0x03, 0xE8]))
        _ = try? client.readClose()
        return id
    }

    @Test func aReportIsReadWithAnOperatorKeyOnlyAndOutlivesAKill() throws {
        let keys = File("acme sk-client\n"), operators = File("sk-operator\n"), database = File("")
        unlink(database.path)
        let arguments = "--loops 1 --api-keys \(keys.path) --operator-keys \(operators.path) --store sqlite:\(database.path) \(Self.quiet)"
        var server = try ServerProcess(arguments: arguments)
        let id = try Self.converse(server.port, key: "sk-client")
        #expect(id.hasPrefix("sess_"))
        var read = (status: 0, body: "")
        #expect(RedisServer.waitUntil(seconds: 5) {
            read = (try? Self.report(server.port, id, key: "sk-operator")) ?? (0, "")
            return read.status == 200
        }, "\(read)")
        let report = try JSON(parsing: read.body)
        #expect(report["object"]?.string == "parley.session_report" && report["id"]?.string == id && report["tenant"]?.string == "acme")
        let turn = report["turns"]?.array?.first
        #expect(turn?["user"]?.string == "what is twelve times seven", "\(read.body)")
        #expect(turn?["reply"]?.string?.contains("84") == true && turn?["status"]?.string == "completed", "\(read.body)")
        #expect((report["usage"]?["output_tokens"]?.int ?? 0) > 0 && report["ended"]?["code"]?.int == 1000, "\(read.body)")
        // Never a client's key, never without one; an unknown or malformed id is a 404.
        #expect(try Self.report(server.port, id, key: "sk-client").status == 403)
        #expect(try Self.report(server.port, id, key: nil).status == 401)
        #expect(try Self.report(server.port, "sess_unknown", key: "sk-operator").status == 404)
        #expect(try Self.report(server.port, "..%2F..%2Fetc", key: "sk-operator").status == 404)

        // Killed outright, started again on the same file: the report is still there.
        server.signal(SIGKILL)
        _ = server.waitForExit(seconds: 5)
        server = try ServerProcess(arguments: arguments)
        let again = try Self.report(server.port, id, key: "sk-operator")
        #expect(again.status == 200 && again.body == read.body, "\(again)")
    }

    @Test func onRedisAReportWrittenByOneNodeIsReadOnAnother() throws {
        let redis = try RedisServer()
        let operators = File("sk-operator\n")
        let arguments = "--loops 1 --operator-keys \(operators.path) --store redis://127.0.0.1:\(redis.port) \(Self.quiet)"
        let nodes = [try ServerProcess(arguments: arguments), try ServerProcess(arguments: arguments)]
        let id = try Self.converse(nodes[0].port, key: nil)
        var read = (status: 0, body: "")
        #expect(RedisServer.waitUntil(seconds: 5) {
            read = (try? Self.report(nodes[1].port, id, key: "sk-operator")) ?? (0, "")
            return read.status == 200
        }, "\(read)")
        #expect(read.body.contains("\"what is twelve times seven\""))
        // With operator keys, even a server without client auth wants one.
        #expect(try Self.report(nodes[1].port, id, key: nil).status == 401)
    }

    @Test func aServerWithoutAuthOrStoreKeepsReportsInMemoryForAnyoneOnLoopback() throws {
        let server = try ServerProcess(arguments: "--loops 1 \(Self.quiet)")
        let id = try Self.converse(server.port, key: nil)
        var read = (status: 0, body: "")
        #expect(RedisServer.waitUntil(seconds: 5) {
            read = (try? Self.report(server.port, id, key: nil)) ?? (0, "")
            return read.status == 200
        }, "\(read)")
        #expect(read.body.contains("\"what is twelve times seven\""))
    }
}
