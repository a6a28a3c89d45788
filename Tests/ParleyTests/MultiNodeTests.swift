import Glibc
import JSON
import Loop
import Testing
import TestSupport

/// Resume across nodes, as deployed (docs/operations.md, "Deploying"): Parley nodes sharing a
/// Redis store behind HAProxy with deploy/haproxy.cfg's rules. A node drained (SIGTERM) or killed
/// (kill -9) hands its sessions to the other through the client's reconnect; a Redis that cannot
/// be reached leaves sessions working without resume. Everything on loopback.
@Suite struct MultiNodeTests {
    /// A model slow enough that a reply is in flight for about two seconds.
    func slowModel() throws -> ServerProcess {
        try ServerProcess(command: "mock-llm", arguments: "--first-token-ms 5 --tokens-per-second 15 --reply-tokens 30")
    }

    func node(_ model: ServerProcess, store: String, _ extra: String = "") throws -> ServerProcess {
        try ServerProcess(arguments: "--loops 2 --llm openai --llm-base-url http://127.0.0.1:\(model.port)/v1 --llm-model m --transcriber none --synthesizer none --store \(store) --drain-seconds 8 \(extra)",
                          environment: "OPENAI_API_KEY=sk-multinode-test")
    }

    /// Redis, the model, two nodes on that Redis and HAProxy in front of them.
    struct Cluster {
        let redis: RedisServer
        let model: ServerProcess
        let nodes: [ServerProcess]
        let proxy: HAProxyProcess

        /// The node holding `count` sessions open (the other holding none), once that is so.
        func nodeHolding(_ count: Int) -> (holding: ServerProcess, other: ServerProcess)? {
            var found: (ServerProcess, ServerProcess)?
            _ = RedisServer.waitUntil(seconds: 3) {
                let open = nodes.map { $0.metric("parley_sessions_open") ?? -1 }
                if open == [Double(count), 0] { found = (nodes[0], nodes[1]) }
                if open == [0, Double(count)] { found = (nodes[1], nodes[0]) }
                return found != nil
            }
            return found
        }
    }

    func cluster() throws -> Cluster {
        let redis = try RedisServer()
        let model = try slowModel()
        let store = "redis://127.0.0.1:\(redis.port)"
        let nodes = [try node(model, store: store), try node(model, store: store)]
        return Cluster(redis: redis, model: model, nodes: nodes, proxy: try HAProxyProcess(nodePorts: nodes.map(\.port)))
    }

    struct Refused: Error, CustomStringConvertible { let description: String }

    /// A resumable session; the last event's seq is tracked by the caller from here.
    final class Session {
        var client: TestClient
        var token: String
        var seq = 1
        let sessionID: String
        init(port: Int) throws {
            client = try TestClient(port: port)
            let status = try client.upgrade(path: "/v1/realtime?resume=1").status
            guard status == 101 else { throw Refused(description: "upgrade answered \(status)") }
            let created = try client.readEvent()
            #expect(created["type"]?.string == "session.created" && created["seq"]?.int == 1, "\(created)")
            sessionID = created["session"]?["id"]?.string ?? ""
            let issued = try client.readEvent()
            #expect(issued["type"]?.string == "session.resume_token", "\(issued)")
            token = issued["token"]?.string ?? ""
        }

        func ask(_ text: String) throws {
            try client.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"\#(text)"}]}}"#.utf8)))
            try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create","response":{"output_modalities":["text"]}}"#.utf8)))
        }

        /// Events up to the first of type `last`, each numbered one past the one before (control
        /// events, which carry no seq, aside); a new token is taken.
        func read(until last: String) throws -> [JSON] {
            var events: [JSON] = []
            while events.last?["type"]?.string != last {
                let event = try client.readEvent()
                if let n = event["seq"]?.int {
                    #expect(n == seq + 1, "seq \(n) after \(seq): \(event)")
                    seq = n
                } else if event["type"]?.string == "session.resume_token", let fresh = event["token"]?.string {
                    token = fresh
                }
                events.append(event)
            }
            return events
        }

        /// The drain's goodbye: the reply in flight finished, a fresh token, close 1012.
        func readDrain() throws -> [JSON] {
            let before = token
            let events = try read(until: "session.resume_token")
            #expect(token.hasPrefix("rt_") && token != before)
            #expect(try client.readClose() == 1012)
            return events
        }

        /// Reconnects through `port` with the newest token and the last seq read; the session.resumed event.
        func resume(port: Int) throws -> JSON {
            client = try TestClient(port: port)
            let status = try client.upgrade(path: "/v1/realtime?resume_token=\(token)&last_seq=\(seq)").status
            guard status == 101 else { throw Refused(description: "resume upgrade answered \(status)") }
            let resumed = try client.readEvent()
            if resumed["type"]?.string == "session.resumed", let next = resumed["token"]?.string {
                #expect(next != token)
                token = next
            }
            return resumed
        }
    }

    static let storeResumes = "parley_sessions_resumed_total{result=\"store\"}"

    @Test func aDrainedNodesSessionResumesOnTheOtherNodeThroughHAProxy() throws {
        let cluster = try cluster()
        let session = try Session(port: cluster.proxy.port)
        try session.ask("remember the word lantern")
        let turn = try session.read(until: "response.done")
        let userItem = turn.first { $0["type"]?.string == "conversation.item.done" && $0["item"]?["role"]?.string == "user" }?["item"]?["id"]?.string ?? ""
        #expect(!userItem.isEmpty)
        try session.ask("now a long answer")
        _ = try session.read(until: "response.output_text.delta")
        let (drained, other) = try #require(cluster.nodeHolding(1), "one node holds the session")

        drained.signal(SIGTERM)
        let rest = try session.readDrain()
        let done = rest.first { $0["type"]?.string == "response.done" }
        #expect(done?["response"]?["status"]?.string == "completed", "\(rest.map { $0["type"]?.string ?? "" })")

        let resumed = try session.resume(port: cluster.proxy.port)
        #expect(resumed["type"]?.string == "session.resumed" && resumed["last_seq"]?.int == session.seq && resumed["replayed"]?.int == 0, "\(resumed)")
        #expect(other.metric(Self.storeResumes) == 1)
        #expect(drained.waitForExit(seconds: 10) == 0)

        // The first turn is still in the conversation, and it goes on.
        try session.client.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.retrieve","item_id":"\#(userItem)"}"#.utf8)))
        let retrieved = try session.read(until: "conversation.item.retrieved").last
        #expect(retrieved?["item"]?["content"]?.array?.first?["text"]?.string == "remember the word lantern", "\(String(describing: retrieved))")
        try session.ask("and again")
        let third = try session.read(until: "response.done").last
        #expect(third?["response"]?["status"]?.string == "completed")
    }

    @Test func aDrainUnderLoadHandsEverySessionToTheOtherNode() throws {
        let cluster = try cluster()
        let count = 50
        let sessions = try (0..<count).map { _ in try Session(port: cluster.proxy.port) }
        for session in sessions { try session.ask("first") }
        for session in sessions { _ = try session.read(until: "response.done") }
        // Mid-conversation: every session's second reply in flight.
        for session in sessions { try session.ask("second") }
        for session in sessions { _ = try session.read(until: "response.output_text.delta") }
        let open = cluster.nodes.map { $0.metric("parley_sessions_open") ?? 0 }
        #expect(open.reduce(0, +) == Double(count) && open.allSatisfy { $0 > 0 }, "sessions per node: \(open)")
        let drainedIndex = open[0] >= open[1] ? 0 : 1
        let drained = cluster.nodes[drainedIndex], other = cluster.nodes[1 - drainedIndex]
        let onDrained = Int(open[drainedIndex])

        drained.signal(SIGTERM)
        // Every reply finishes; the drained node's sessions then get their goodbye, and once it has
        // exited (every session closed) each of those is waiting in its client's socket.
        for session in sessions {
            let events = try session.read(until: "response.done")
            #expect(events.last?["response"]?["status"]?.string == "completed")
        }
        #expect(drained.waitForExit(seconds: 10) == 0)
        usleep(300_000)
        var moved: [Session] = []
        for session in sessions where readable(session.client) {
            _ = try session.readDrain()
            moved.append(session)
        }
        #expect(moved.count == onDrained)

        var refused: [String] = []
        for session in moved {
            let resumed = try session.resume(port: cluster.proxy.port)
            if resumed["type"]?.string != "session.resumed" { refused.append(resumed["error"]?["code"]?.string ?? "\(resumed)") }
        }
        #expect(refused.isEmpty, "\(refused)")
        for session in moved { try session.ask("third") }
        for session in moved {
            let done = try session.read(until: "response.done").last
            #expect(done?["response"]?["status"]?.string == "completed")
        }
        #expect(other.metric(Self.storeResumes) == Double(onDrained))
    }

    /// Whether something (a frame, an end) is waiting to be read.
    func readable(_ client: TestClient) -> Bool {
        var ready = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
        return poll(&ready, 1, 0) > 0
    }

    @Test func anUnreachableRedisLeavesSessionsWorkingWithoutResume() throws {
        let nothing = try RedisServer.freePort()
        let model = try ServerProcess(command: "mock-llm", arguments: "--first-token-ms 5 --tokens-per-second 200 --reply-tokens 10")
        let server = try node(model, store: "redis://127.0.0.1:\(nothing)")
        let client = try TestClient(port: server.port)
        #expect(try client.upgrade(path: "/v1/realtime?resume=1").status == 101)
        #expect(try client.readEvent()["type"]?.string == "session.created")
        try client.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}}"#.utf8)))
        try client.send(TestClient.frame(0x1, Array(#"{"type":"response.create","response":{"output_modalities":["text"]}}"#.utf8)))
        let events = try client.readEvents(until: "response.done").events
        #expect(events.last?["response"]?["status"]?.string == "completed")
        let unavailable = events.filter { $0["type"]?.string == "error" && $0["error"]?["code"]?.string == "resume_unavailable" }
        #expect(unavailable.count == 1, "\(events.map { $0["type"]?.string ?? "" })")
        #expect(!events.contains { $0["type"]?.string == "session.resume_token" })
        #expect(server.metric("parley_redis_up") == 0)

        server.signal(SIGTERM)
        #expect(server.waitForExit(seconds: 10) == 0)
        // Each loop opens the store as it starts, before the server says it is listening: the
        // warning is among the start-up lines, or after them.
        let log = (server.startupLines + [server.remainingOutput()]).joined(separator: "\n")
        let warning = log.split(separator: "\n").first { $0.contains("redis is unreachable") }
        #expect(warning?.contains("warning") == true && warning?.contains("127.0.0.1:\(nothing)") == true, "\(log)")
    }

    @Test func aNodeKilledMidReplyIsAnsweredForByTheOtherNode() throws {
        let cluster = try cluster()
        let session = try Session(port: cluster.proxy.port)
        try session.ask("remember the word lantern")
        _ = try session.read(until: "response.done")
        try session.ask("now a long answer")
        _ = try session.read(until: "response.output_text.delta")
        let (killed, other) = try #require(cluster.nodeHolding(1), "one node holds the session")

        killed.signal(SIGKILL)
        _ = killed.waitForExit(seconds: 5)
        let resumed = try session.resume(port: cluster.proxy.port)
        #expect(resumed["type"]?.string == "session.resumed", "\(resumed)")
        // The turn the killed node was answering is answered here, whole.
        let answer = try session.read(until: "response.done")
        #expect(answer.last?["response"]?["status"]?.string == "completed", "\(answer.map { $0["type"]?.string ?? "" })")
        #expect(other.metric(Self.storeResumes) == 1)
        try session.ask("and again")
        #expect(try session.read(until: "response.done").last?["response"]?["status"]?.string == "completed")
    }

    /// Frames that reach the client within `seconds`, until none does.
    func framesArriving(_ session: Session, within seconds: Double) throws -> [JSON] {
        var events: [JSON] = []
        let end = MonotonicClock.nanoseconds() + MonotonicClock.nanoseconds(seconds)
        while MonotonicClock.nanoseconds() < end {
            guard readable(session.client) else {
                usleep(20_000)
                continue
            }
            let event = try session.client.readEvent()
            if let n = event["seq"]?.int { session.seq = n }
            events.append(event)
        }
        return events
    }

    /// The client hears an item is done only once Redis holds it (`KeptBeforeTold`): with Redis
    /// stopped (SIGSTOP: connected, answering nothing) the turn's `conversation.item.done` and
    /// everything after it wait; once it answers they come, and a kill -9 of the node right then
    /// loses none of them to the node that resumes the session.
    @Test func anItemIsToldDoneOnlyOnceRedisHoldsItAndOutlivesTheNode() throws {
        let redis = try RedisServer()
        let model = try ServerProcess(command: "mock-llm", arguments: "--first-token-ms 5 --tokens-per-second 200 --reply-tokens 10")
        let store = "redis://127.0.0.1:\(redis.port)"
        let first = try node(model, store: store)
        let session = try Session(port: first.port)
        redis.pause()
        defer { redis.carryOn() }
        try session.ask("remember the word lantern")
        let whileStopped = try framesArriving(session, within: 1.5)
        #expect(!whileStopped.contains { $0["type"]?.string == "conversation.item.done" || $0["type"]?.string == "response.done" },
                "\(whileStopped.map { $0["type"]?.string ?? "" })")
        redis.carryOn()
        var events = whileStopped
        events += try session.read(until: "response.done")
        #expect(events.last?["response"]?["status"]?.string == "completed")
        let done = events.compactMap { $0["type"]?.string == "conversation.item.done" ? $0["item"]?["id"]?.string : nil }
        #expect(done.count == 2, "the user's item and the reply: \(events.map { $0["type"]?.string ?? "" })")

        first.signal(SIGKILL)
        _ = first.waitForExit(seconds: 5)
        let second = try node(model, store: store)
        let resumed = try session.resume(port: second.port)
        #expect(resumed["type"]?.string == "session.resumed", "\(resumed)")
        for id in done {
            try session.client.send(TestClient.frame(0x1, Array(#"{"type":"conversation.item.retrieve","item_id":"\#(id)"}"#.utf8)))
            let answer = try session.read(until: "conversation.item.retrieved").last
            #expect(answer?["item"]?["id"]?.string == id)
        }
    }

    /// Past `--resume-store-wait-seconds` a session stops waiting for a store that does not
    /// answer: its client is told, and the metric says so.
    @Test func aStoreThatDoesNotAnswerHoldsTheClientOnlyUpToTheWait() throws {
        let redis = try RedisServer()
        let model = try ServerProcess(command: "mock-llm", arguments: "--first-token-ms 5 --tokens-per-second 200 --reply-tokens 10")
        let server = try node(model, store: "redis://127.0.0.1:\(redis.port)", "--resume-store-wait-seconds 1")
        let session = try Session(port: server.port)
        redis.pause()
        defer { redis.carryOn() }
        try session.ask("hello")
        let events = try session.read(until: "response.done")
        #expect(events.last?["response"]?["status"]?.string == "completed")
        #expect((server.metric("parley_resume_store_waits_given_up_total") ?? 0) >= 1)
    }
}
