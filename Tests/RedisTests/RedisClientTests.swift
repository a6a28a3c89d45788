import Glibc
import Synchronization
import Loop
@testable import Store
import Testing
import TestSupport

/// The client against a real redis-server, on a real event loop: replies come back on the loop,
/// in order, however many commands are in flight; a port that is closed or speaks something else
/// fails commands with an error, never a crash.
@Suite struct RedisClientTests {
    @Test func commandsGetTheirRepliesOnTheLoop() throws {
        let server = try RedisServer()
        var replies: [Result<RedisReply, RedisError>] = []
        let finished = try runLoop { loop, finish in
            let client = RedisClient(host: "127.0.0.1", port: server.port, loop: loop)
            client.send(["SET", "greeting", "hello"]) { replies.append($0) }
            client.send(["GET", "greeting"]) { replies.append($0) }
            client.send(["GET", "missing"]) { replies.append($0) }
            client.send(["INCR", "greeting"]) { replies.append($0) }
            client.send(bytes: [Array("SET".utf8), Array("binary".utf8), [0, 255, 13, 10, 0]]) { replies.append($0) }
            client.send(bytes: [Array("GET".utf8), Array("binary".utf8)]) { replies.append($0) }
            client.send(["MGET", "greeting", "missing"]) {
                replies.append($0)
                // Up once its PING (sent after these, at the connect) says the dataset is loaded.
                poll(loop, until: { client.isUp }) { finish() }
            }
        }
        #expect(finished)
        try #require(replies.count == 7)
        #expect(replies[0] == .success(.status("OK")))
        #expect(replies[1] == .success(.string(Array("hello".utf8))))
        #expect(replies[2] == .success(.null))
        guard case .success(.error(let message)) = replies[3] else { Issue.record("\(replies[3])"); return }
        #expect(message.hasPrefix("ERR"))
        #expect(replies[5] == .success(.string([0, 255, 13, 10, 0])))
        #expect(replies[6] == .success(.array([.string(Array("hello".utf8)), .null])))
    }

    @Test func pipelinedCommandsAreAnsweredInOrder() throws {
        let server = try RedisServer()
        var counts: [Int] = []
        var client: RedisClient?
        let finished = try runLoop { loop, finish in
            client = RedisClient(host: "127.0.0.1", port: server.port, loop: loop)
            // All sent before the first reply can be read: the loop has not run yet.
            for i in 1...2000 {
                client?.send(["INCR", "counter"]) { result in
                    if case .success(.integer(let n)) = result { counts.append(n) }
                    if i == 2000 { finish() }
                }
            }
        }
        #expect(finished)
        let inOrder = counts == Array(1...2000)
        #expect(inOrder, "\(counts.count) replies, starting \(counts.prefix(5))")
    }

    @Test func aTransactionsRepliesComeFromExec() throws {
        let server = try RedisServer()
        var result: Result<[RedisReply], RedisError>?
        var client: RedisClient?
        let finished = try runLoop { loop, finish in
            client = RedisClient(host: "127.0.0.1", port: server.port, loop: loop)
            client?.transaction([["SET", "a", "1"], ["INCR", "a"], ["GET", "a"]]) {
                result = $0
                finish()
            }
        }
        #expect(finished)
        #expect(result == .success([.status("OK"), .integer(2), .string(Array("2".utf8))]))
    }

    @Test func nothingListeningMeansDownAndCommandsFailAtOnce() throws {
        let port = try RedisServer.freePort()
        var queued: Result<RedisReply, RedisError>?
        var immediate: Result<RedisReply, RedisError>?
        var events: [RedisClient.Event] = []
        var kept: RedisClient?
        let finished = try runLoop { loop, finish in
            let client = RedisClient(host: "127.0.0.1", port: port, loop: loop) { events.append($0) }
            kept = client
            // Taken while the first connect is under way, failed when it fails.
            client.send(["PING"]) { queued = $0 }
            poll(loop, until: { client.state == .down }) {
                client.send(["PING"]) { immediate = $0 }
                #expect(immediate == .failure(.down), "failed before send returned")
                finish()
            }
        }
        #expect(finished)
        #expect(kept?.state == .down)
        guard case .failure(.connectionLost)? = queued else { Issue.record("\(String(describing: queued))"); return }
        guard case .down(.connectFailed)? = events.first else { Issue.record("\(events)"); return }
    }

    /// Redis restarted from its append-only file answers `-LOADING` until its data is in memory:
    /// the client is up (and a store writes what it held) only once PING says PONG.
    @Test func aRedisStillLoadingItsDataIsNotUpUntilItAnswersPong() throws {
        let server = try LoadingRedis(loadingAnswers: 3)
        var pingsWhenUp: Int?
        let finished = try runLoop(seconds: 10) { loop, finish in
            var client: RedisClient?
            client = RedisClient(host: "127.0.0.1", port: server.port, loop: loop) { event in
                guard event == .up else { return }
                pingsWhenUp = server.pings
                withExtendedLifetime(client) { finish() }
            }
        }
        #expect(finished)
        #expect(pingsWhenUp == 4, "three answered LOADING, the fourth PONG")
    }

    /// Redis killed with replies on their way: the reply's callback sends more, and the socket is
    /// already reset when those are written. hiredis 0.14 frees its context inside that write
    /// (its disconnect does not look whether a callback is running), so writing there, from within
    /// the reply's callback, freed the context under the reply loop: make chaos's node segfaulted
    /// at a Redis kill -9 (CI, 2026-11-28). The writes wait until hiredis has returned.
    @Test func commandsSentFromAReplyOnAConnectionJustResetFailWithoutACrash() throws {
        // As the server does (Server.swift): hiredis writes with write(2), and a reset peer is EPIPE.
        signal(SIGPIPE, SIG_IGN)
        let server = try AnswerThenCloseRedis()
        var followUps: [Result<RedisReply, RedisError>] = []
        var first: Result<RedisReply, RedisError>?
        var events: [RedisClient.Event] = []
        var client: RedisClient?
        let finished = try runLoop(seconds: 10) { loop, finish in
            client = RedisClient(host: "127.0.0.1", port: server.port, loop: loop) { event in
                events.append(event)
                guard event == .up else { return }
                client?.send(["SET", "a", "1"]) { result in
                    first = result
                    // The first of these meets the peer's FIN and draws its reset; the rest meet the reset.
                    for i in 0..<8 {
                        client?.send(["SET", "b\(i)", "2"]) { result in
                            followUps.append(result)
                            if followUps.count == 8 { loop.schedule(after: 0.05) { finish() } }
                        }
                    }
                }
            }
        }
        #expect(finished)
        #expect(first == .success(.status("OK")))
        #expect(followUps.count == 8)
        #expect(followUps.allSatisfy { if case .failure = $0 { true } else { false } }, "\(followUps)")
        #expect(events.contains { if case .down = $0 { true } else { false } }, "\(events)")
    }

    @Test func aPortThatSpeaksSomethingElseIsAnErrorNotACrash() throws {
        var result: Result<RedisReply, RedisError>?
        var client: RedisClient?
        let finished = try runLoop { loop, finish in
            let junk = try JunkServer(loop: loop)
            client = RedisClient(host: "127.0.0.1", port: junk.port, loop: loop)
            client?.send(["PING"]) { reply in
                result = reply
                // The loop goes on, and so does the client (reconnecting to the same junk).
                loop.schedule(after: 0.05) {
                    withExtendedLifetime(junk) { finish() }
                }
            }
        }
        #expect(finished)
        guard case .failure(.connectionLost(let why))? = result else { Issue.record("\(String(describing: result))"); return }
        #expect(why.lowercased().contains("protocol"), "\(why)")
    }
}

/// A TCP listener on the loop that answers every connection with an HTTP response: not RESP.
final class JunkServer: LoopRegistrant {
    let fd: Int32
    let port: Int
    private var accepted: [Int32] = []

    init(loop: EventLoop) throws {
        fd = try Sys.streamSocket(family: AF_INET)
        try Sys.listen(fd, on: .ipv4(127, 0, 0, 1, port: 0))
        port = try Sys.localAddress(fd).port
        super.init()
        _ = try loop.register(fd, [.readable]) { _ in self }
    }

    deinit {
        accepted.forEach(Sys.close)
        Sys.close(fd)
    }

    override func readable(hungUp: Bool) {
        while let client = try? Sys.accept(fd) {
            accepted.append(client)
            Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".utf8).withUnsafeBytes { Sys.sendOnce(client, $0) }
        }
    }
}

/// A Redis that is loading its dataset: answers its one client's first `loadingAnswers` commands
/// `-LOADING`, then `+PONG`; counts what it was asked. A blocking socket on a thread of its own.
final class LoadingRedis: Sendable {
    final class Count: Sendable { let value = Atomic<Int>(0) }
    let port: Int
    private let count = Count()
    private let fd: Int32
    var pings: Int { count.value.load(ordering: .relaxed) }

    init(loadingAnswers: Int) throws {
        fd = try Sys.streamSocket(family: AF_INET, .blocking)
        try Sys.listen(fd, on: .ipv4(127, 0, 0, 1, port: 0))
        port = try Sys.localAddress(fd).port
        try Thread.spawn(name: "loading-redis") { [fd, count] in
            let client = Glibc.accept(fd, nil, nil)
            guard client >= 0 else { return }
            defer { Glibc.close(client) }
            var buffer = [UInt8](repeating: 0, count: 512)
            // The client sends one PING and waits for its answer: a read is one command.
            while Glibc.read(client, &buffer, buffer.count) > 0 {
                let answered = count.value.add(1, ordering: .relaxed).newValue
                let reply = answered <= loadingAnswers ? "-LOADING Redis is loading the dataset in memory\r\n" : "+PONG\r\n"
                _ = Array(reply.utf8).withUnsafeBytes { Glibc.write(client, $0.baseAddress, $0.count) }
            }
        }
    }

    deinit { Glibc.close(fd) }
}

/// A Redis killed just after it answered: answers its one client's PING `+PONG`, the next
/// command `+OK`, then closes the connection. A blocking socket on a thread of its own.
final class AnswerThenCloseRedis: Sendable {
    let port: Int
    private let fd: Int32

    init() throws {
        fd = try Sys.streamSocket(family: AF_INET, .blocking)
        try Sys.listen(fd, on: .ipv4(127, 0, 0, 1, port: 0))
        port = try Sys.localAddress(fd).port
        try Thread.spawn(name: "closing-redis") { [fd] in
            let client = Glibc.accept(fd, nil, nil)
            guard client >= 0 else { return }
            var buffer = [UInt8](repeating: 0, count: 512)
            for reply in ["+PONG\r\n", "+OK\r\n"] {
                guard Glibc.read(client, &buffer, buffer.count) > 0 else { break }
                _ = Array(reply.utf8).withUnsafeBytes { Glibc.write(client, $0.baseAddress, $0.count) }
            }
            Glibc.close(client)
        }
    }

    deinit { Glibc.close(fd) }
}
