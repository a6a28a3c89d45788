import Glibc
import Testing
@testable import Server
import TestSupport

/// Random and mutated input, fed in random chunk sizes: the parsers must answer every byte
/// sequence with a result or a specific error, never a crash, a hang or unbounded buffering.
@Suite struct FuzzTests {
    /// 40 seeds in `make test`; `make fuzz` sets PARLEY_FUZZ_SEEDS to run many more.
    static let seeds: [UInt64] = Array(1...(getenv("PARLEY_FUZZ_SEEDS").flatMap { UInt64(String(cString: $0)) } ?? 40))

    @Test(arguments: seeds)
    func httpParserSurvivesRandomAndMutatedHeads(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let valid = Array("GET /echo?x=1 HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n".utf8)
        let input = seed % 2 == 0 ? random.bytes(4096) : random.mutate(valid, flips: 1 + Int(seed % 5))
        var parser = HTTPRequestParser(maxRequestLineBytes: 512, maxHeadBytes: 1024)
        var offset = 0
        while offset < input.count {
            let n = min(input.count - offset, Int.random(in: 1...64, using: &random))
            let result = input[offset..<(offset + n)].withUnsafeBytes { parser.parse($0) }
            // At most maxHeadBytes + 1 bytes are kept; array growth may double the allocation.
            #expect(parser.bufferedBytes <= 2 * 1025 + 64, "the parser buffered \(parser.bufferedBytes) bytes")
            switch result {
            case .needMore: offset += n
            case .request(_, let consumed):
                #expect(consumed >= 1 && consumed <= n)
                offset += consumed
            case .failure(let status):
                #expect([400, 411, 413, 414, 431, 505].contains(status.code))
                return
            }
        }
    }

    @Test(arguments: seeds)
    func frameReaderSurvivesRandomAndMutatedStreams(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var valid: [UInt8] = []
        for i in 0..<20 {
            let payload = random.bytes(Int.random(in: 0...300, using: &random))
            valid += TestClient.frame(i % 3 == 0 ? 0x9 : 0x2, Array(payload.prefix(i % 3 == 0 ? 125 : 300)), fin: true)
        }
        let input = seed % 2 == 0 ? random.bytes(8192) : random.mutate(valid, flips: 1 + Int(seed % 7))
        var harness = ReaderHarness(maxMessageBytes: 4096)
        harness.feed(input, chunk: Int.random(in: 1...512, using: &random))
        // After a failure nothing else is reported, and nothing delivered is over the limit.
        if let failure = harness.seen.firstIndex(where: { if case .failure = $0 { return true } else { return false } }) {
            #expect(failure == harness.seen.count - 1)
        }
        for case .message(_, let bytes) in harness.seen { #expect(bytes.count <= 4096) }
    }

    @Test func serverSurvivesGarbageAfterTheUpgrade() throws {
        // Garbage can also read as the start of a long valid frame; the idle ping then ends it.
        let server = try TestServer(loops: 2) { $0.idleTimeout = 0.3; $0.pingTimeout = 0.3 }
        var random = SeededRandom(seed: 7)
        for round in 0..<30 {
            let client = try server.client()
            #expect(try client.upgrade().status == 101)
            try? client.send(random.bytes(64 + round * 37))
            // The server fails the connection (with a close frame when it can say why) and hangs up.
            #expect(client.readsEOF(), "round \(round)")
            client.hangUp()
        }
        #expect(server.metric("parley_connections_open{endpoint=\"echo\"}", becomes: 0))
        #expect(server.metric("parley_accounted_bytes") == 0)
        let probe = try server.client()
        try probe.send("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(try probe.readResponse().status == 200)
    }
}
