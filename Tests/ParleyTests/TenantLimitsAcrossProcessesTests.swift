import Glibc
import JSON
import Testing
import TestSupport

/// A tenant's limits hold for a deployment, not for each of its processes (issue 27): across the
/// workers of one box (their shared table) and across nodes on one Redis. The N+1th session is
/// refused with 429 and Retry-After wherever it lands, a closed session's place comes back, and a
/// session resumed on another node keeps its one place.
@Suite(.serialized) struct TenantLimitsAcrossProcessesTests {
    static let quiet = "--transcriber none --synthesizer none --turn-model none --vad energy"

    /// A keys file naming the tenant `acme`; removed with the value.
    final class KeysFile {
        let path = "/tmp/parley-tenant-keys-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        init() {
            let file = fopen(path, "w")
            fputs("acme sk-acme\n", file)
            fclose(file)
        }
        deinit { unlink(path) }
    }

    static let auth = "Authorization: Bearer sk-acme\r\n"

    /// Opens a session (a connection of its own: the kernel spreads them over the workers).
    static func open(_ port: Int, path: String = "/v1/realtime") throws -> (TestClient, (status: Int, headers: [String: String])) {
        let client = try TestClient(port: port)
        return (client, try client.upgrade(path: path, extraHeaders: auth))
    }

    @Test func aTenantCappedAtNGetsNAcrossFourWorkers() throws {
        let keys = KeysFile()
        let server = try ServerProcess(arguments: "--workers 4 --loops 1 --transcriber none --synthesizer none --turn-model none --api-keys \(keys.path) --tenant-max-sessions 3 \(Self.quiet)")
        var held: [TestClient] = []
        for _ in 0..<3 {
            let (client, answer) = try Self.open(server.port)
            #expect(answer.status == 101)
            held.append(client)
        }
        // Eight more tries: with four workers counting alone, most would land where there is room.
        for attempt in 0..<8 {
            let (_, answer) = try Self.open(server.port)
            #expect(answer.status == 429 && answer.headers["retry-after"] == "1", "attempt \(attempt): \(answer)")
        }
        // A session closed gives its place back, to whichever worker the next lands on.
        held.removeFirst().hangUp()
        var reopened = false
        #expect(RedisServer.waitUntil(seconds: 5) {
            guard let (client, answer) = try? Self.open(server.port), answer.status == 101 else { return false }
            held.append(client)
            reopened = true
            return true
        })
        #expect(reopened)
        let (_, again) = try Self.open(server.port)
        #expect(again.status == 429)
        // Each refusal counted once, by the worker that gave it, in the scrape summed over them
        // (the workers publish their figures every second or so).
        let refusals = "parley_tenant_refusals_total{tenant=\"acme\",reason=\"tenant_sessions\"}"
        #expect(RedisServer.waitUntil(seconds: 10) { (server.metric(refusals) ?? 0) >= 9 }, "\(server.metric(refusals) ?? -1)")
    }

    /// The /metrics text a process serves (summed over the workers with `--workers`).
    static func scrape(_ port: Int) throws -> String {
        let client = try TestClient(port: port)
        try client.send("GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n")
        return try client.readResponse().body
    }

    /// A worker killed with SIGKILL takes its sessions with it: the supervisor clears its column
    /// of the workers' table, so the tenant gets those places back once it has reaped it.
    @Test func aKilledWorkersSessionsGiveTheirPlacesBack() throws {
        let keys = KeysFile()
        let server = try ServerProcess(arguments: "--workers 2 --loops 1 --transcriber none --synthesizer none --turn-model none --api-keys \(keys.path) --tenant-max-sessions 4 \(Self.quiet)")
        var held: [TestClient] = []
        for _ in 0..<4 {
            let (client, answer) = try Self.open(server.port)
            #expect(answer.status == 101)
            held.append(client)
        }
        #expect(try Self.open(server.port).1.status == 429)
        // The worker holding the most of them, and how many.
        var busiest: (pid: pid_t, sessions: Int) = (0, 0)
        #expect(RedisServer.waitUntil(seconds: 5) {
            guard let text = try? Self.scrape(server.port) else { return false }
            var pids: [String: pid_t] = [:], sessions: [String: Int] = [:]
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: "\"")
                if line.hasPrefix("parley_worker_info{"), parts.count >= 4 { pids["worker-" + parts[1]] = pid_t(parts[3]) }
                if line.hasPrefix("parley_worker_sessions_open{"), parts.count >= 2 {
                    sessions[String(parts[1])] = Int(Double(line.split(separator: " ").last ?? "") ?? 0)
                }
            }
            let total = sessions.values.reduce(0, +)
            guard total == 4, let top = sessions.max(by: { $0.value < $1.value }),
                  let pid = pids[top.key] ?? pids["worker-" + top.key] else { return false }
            busiest = (pid, top.value)
            return true
        }, "the workers' sessions and pids in /metrics")
        guard busiest.pid > 0, busiest.sessions > 0 else { return }
        kill(busiest.pid, SIGKILL)
        // Its places come back once the supervisor has reaped it (and started another).
        var reopened: [TestClient] = []
        #expect(RedisServer.waitUntil(seconds: 10) {
            guard let (client, answer) = try? Self.open(server.port), answer.status == 101 else { return reopened.count >= busiest.sessions }
            reopened.append(client)
            return reopened.count >= busiest.sessions
        }, "\(reopened.count) of \(busiest.sessions) places came back")
        #expect(reopened.count == busiest.sessions)
        #expect(try Self.open(server.port).1.status == 429, "and no more than those")
        withExtendedLifetime(held) {}
    }

    @Test func aTenantCappedAtNGetsNAcrossTwoNodesOnOneRedisAndAResumeCountsOnce() throws {
        let keys = KeysFile()
        let redis = try RedisServer()
        let arguments = "--loops 2 --api-keys \(keys.path) --tenant-max-sessions 4 --store redis://127.0.0.1:\(redis.port) \(Self.quiet)"
        let nodes = [try ServerProcess(arguments: arguments), try ServerProcess(arguments: arguments)]
        var held: [TestClient] = []
        // One resumable session on the first node, then three more alternating.
        let (resumable, first) = try Self.open(nodes[0].port, path: "/v1/realtime?resume=1")
        #expect(first.status == 101)
        let created = try resumable.readEvent()
        let issued = try resumable.readEvent()
        let token = issued["token"]?.string ?? ""
        let lastSeq = created["seq"]?.int ?? 0
        #expect(token.hasPrefix("rt_"), "\(issued)")
        for index in 1..<4 {
            let (client, answer) = try Self.open(nodes[index % 2].port)
            #expect(answer.status == 101)
            held.append(client)
        }
        for node in nodes {
            let (_, answer) = try Self.open(node.port)
            #expect(answer.status == 429 && answer.headers["retry-after"] == "1", "\(answer)")
        }
        // The resumable session's client drops; it resumes on the other node. Parked, the session
        // still holds its place; resumed, it holds the same one, and is not refused as a fifth.
        resumable.hangUp()
        #expect(RedisServer.waitUntil(seconds: 5) { (nodes[0].metric("parley_sessions_detached") ?? 0) >= 1 })
        let (back, answer) = try Self.open(nodes[1].port, path: "/v1/realtime?resume_token=\(token)&last_seq=\(lastSeq)")
        #expect(answer.status == 101)
        #expect(try back.readEvent()["type"]?.string == "session.resumed")
        for node in nodes {
            let (_, answer) = try Self.open(node.port)
            #expect(answer.status == 429, "still four: \(answer)")
        }
        // The parked copy's end on the first node gives back nothing it no longer holds, and a
        // closed session gives its place back on whichever node it was.
        held.removeFirst().hangUp()
        var reopened: TestClient?
        #expect(RedisServer.waitUntil(seconds: 5) {
            guard let (client, answer) = try? Self.open(nodes[0].port), answer.status == 101 else { return false }
            reopened = client
            return true
        })
        #expect(reopened != nil)
        let (_, full) = try Self.open(nodes[1].port)
        #expect(full.status == 429)
        withExtendedLifetime((back, held, reopened)) {}
    }

    @Test func withoutRedisEachProcessAdmitsItsShareAndSaysSo() throws {
        let keys = KeysFile()
        let redis = try RedisServer()
        let node = try ServerProcess(arguments: "--loops 1 --api-keys \(keys.path) --tenant-max-sessions 2 --store redis://127.0.0.1:\(redis.port) \(Self.quiet)")
        let (one, answer) = try Self.open(node.port)
        #expect(answer.status == 101)
        #expect(node.metric("parley_tenant_shared_count_up") == 1)
        redis.kill()
        // Counted by the process alone, its share (the cap over its one worker): one more, then 429.
        let (two, second) = try Self.open(node.port)
        #expect(second.status == 101)
        let (_, third) = try Self.open(node.port)
        #expect(third.status == 429 && third.headers["retry-after"] != nil, "\(third)")
        #expect(node.metric("parley_tenant_shared_count_up") == 0)
        #expect((node.metric("parley_tenant_local_admissions_total") ?? 0) >= 1)
        node.signal(SIGTERM)
        _ = node.waitForExit(seconds: 10)
        #expect(node.remainingOutput().contains("tenant limits cannot be counted across processes"))
        withExtendedLifetime((one, two)) {}
    }
}

/// A tenant's model tokens a minute (`--tenant-tokens-per-minute`): spent by its replies, and once
/// spent, its next reply fails with `tenant_tokens` and a new session gets 429 until they refill.
@Suite struct TenantTokenBudgetTests {
    @Test func aSpentBudgetFailsTheNextReplyAndRefusesTheNextSession() throws {
        let keys = TenantLimitsAcrossProcessesTests.KeysFile()
        let server = try ServerProcess(arguments: "--loops 1 --api-keys \(keys.path) --tenant-tokens-per-minute 20 \(TenantLimitsAcrossProcessesTests.quiet)")
        let (client, answer) = try TenantLimitsAcrossProcessesTests.open(server.port)
        #expect(answer.status == 101)
        _ = try client.readEvent()
        let ask = #"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"what is twelve times seven, and what is the weather in Paris today?"}]}}"#
        try client.send(TestClient.frame(0x1, Array(ask.utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create","response":{"output_modalities":["text"]}}"#.utf8)))
        let first = try client.readEvents(until: "response.done").events.last
        let used = first?["response"]?["usage"]?["total_tokens"]?.int ?? 0
        #expect(first?["response"]?["status"]?.string == "completed" && used > 20, "\(String(describing: first))")
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create","response":{"output_modalities":["text"]}}"#.utf8)))
        let second = try client.readEvents(until: "response.done").events.last
        #expect(second?["response"]?["status"]?.string == "failed", "\(String(describing: second))")
        #expect(second?["response"]?["status_details"]?["error"]?["code"]?.string == "tenant_tokens", "\(String(describing: second))")
        let (_, refused) = try TenantLimitsAcrossProcessesTests.open(server.port)
        #expect(refused.status == 429 && Int(refused.headers["retry-after"] ?? "") ?? 0 >= 1, "\(refused)")
    }
}
