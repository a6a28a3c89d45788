import Glibc
import JSON
import Testing
import TestSupport

/// Two clients resuming one token at the same moment on two nodes sharing a store (issue 27): the
/// node where the session is parked takes it from memory, the other loads it from the store, and
/// the store's compare-and-set rotation lets exactly one of them have it. The other reconnect is
/// refused as a used token is (`resume_token_invalid`, close 1008), and the session never forks.
@Suite(.serialized) struct ResumeRaceTests {
    static let rounds = Int(getenv("PARLEY_RACE_ROUNDS").map { String(cString: $0) } ?? "") ?? 100

    func node(store: String) throws -> ServerProcess {
        try ServerProcess(arguments: "--loops 2 --transcriber none --synthesizer none --turn-model none --vad energy --store \(store)")
    }

    /// What one reconnect came to: resumed (with the session's id), or refused (with the code).
    enum Outcome: Equatable {
        case resumed(String)
        case refused(code: String, close: UInt16?)
    }

    func race(store: String) throws {
        let nodes = [try node(store: store), try node(store: store)]
        var parkedOnFirst = 0
        for round in 1...Self.rounds {
            // A session on one node (alternating), its client gone without a goodbye: parked there.
            let home = nodes[round % 2], away = nodes[(round + 1) % 2]
            let client = try TestClient(port: home.port)
            #expect(try client.upgrade(path: "/v1/realtime?resume=1").status == 101)
            let created = try client.readEvent()
            let sessionID = created["session"]?["id"]?.string ?? ""
            let lastSeq = created["seq"]?.int ?? 0
            let issued = try client.readEvent()
            let token = issued["token"]?.string ?? ""
            #expect(!sessionID.isEmpty && token.hasPrefix("rt_"), "\(created) \(issued)")
            client.hangUp()
            let detached = "parley_sessions_detached"
            #expect(RedisServer.waitUntil(seconds: 5) { (home.metric(detached) ?? 0) >= 1 }, "round \(round): the session parked")
            parkedOnFirst += 1

            // Both reconnects are on the wire before either node answers.
            let here = try TestClient(port: home.port), there = try TestClient(port: away.port)
            let request = { (node: ServerProcess) in
                "GET /v1/realtime?resume_token=\(token)&last_seq=\(lastSeq) HTTP/1.1\r\nHost: 127.0.0.1:\(node.port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: \(TestClient.sampleKey)\r\nSec-WebSocket-Version: 13\r\n\r\n"
            }
            try here.send(request(home))
            try there.send(request(away))
            let outcomes = try [here, there].map { reconnect -> Outcome in
                let status = try reconnect.readResponse().status
                guard status == 101 else { return .refused(code: "HTTP \(status)", close: nil) }
                let first = try reconnect.readEvent()
                if first["type"]?.string == "session.resumed" { return .resumed(first["session_id"]?.string ?? first["session"]?["id"]?.string ?? "?") }
                return .refused(code: first["error"]?["code"]?.string ?? "\(first)", close: try reconnect.readClose())
            }
            let resumed = outcomes.filter { if case .resumed = $0 { true } else { false } }
            let refused = outcomes.filter { $0 == .refused(code: "resume_token_invalid", close: 1008) }
            #expect(resumed.count == 1 && refused.count == 1, "round \(round): \(outcomes)")
            if case .resumed(let id)? = resumed.first { #expect(id == sessionID, "round \(round): resumed \(id), opened \(sessionID)") }

            // The winner's session is the one live session: it answers, and ends when its client says so.
            let winner = outcomes[0] == resumed.first ? here : there
            try winner.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"still there?"}]}}"#.utf8)))
            let added = try winner.readEvents(until: "conversation.item.done").events.last
            #expect(added?["item"]?["role"]?.string == "user", "round \(round): \(String(describing: added))")
            try winner.send(TestClient.frame(0x8, [0x03, 0xE8]))
            _ = try? winner.readClose()
            winner.hangUp()
            let loser = winner === here ? there : here
            loser.hangUp()
            #expect(RedisServer.waitUntil(seconds: 5) { nodes.allSatisfy { ($0.metric("parley_sessions_open") ?? 1) == 0 } },
                    "round \(round): no session left open on either node: \(nodes.map { $0.metric("parley_sessions_open") ?? -1 })")
        }
        #expect(parkedOnFirst == Self.rounds)
        let taken = nodes.map { $0.metric("parley_sessions_resumed_total{result=\"taken\"}") ?? 0 }.reduce(0, +)
        let refused = nodes.map { $0.metric("parley_sessions_resumed_total{result=\"refused\"}") ?? 0 }.reduce(0, +)
        #expect(Int(taken + refused) == Self.rounds, "every round's loser counted: taken \(taken), refused \(refused)")
    }

    @Test func oneOfTwoRacingResumesWinsEveryTimeOnRedis() throws {
        let redis = try RedisServer()
        try race(store: "redis://127.0.0.1:\(redis.port)")
    }

    @Test func oneOfTwoRacingResumesWinsEveryTimeOnSQLite() throws {
        let directory = try TemporaryDirectory()
        try race(store: "sqlite:\(directory.root)/parley.db")
    }
}
