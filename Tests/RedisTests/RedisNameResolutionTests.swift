import Glibc
import Loop
@testable import Store
import Synchronization
import Testing
import TestSupport

/// A Redis named by host name (`redis://redis.default.svc:6379`, Kubernetes' spelling): the name is
/// resolved off the loop, so a DNS answer that takes its time stalls nothing else the loop serves,
/// and resolved again at every reconnect, since a Service's address can change (issue 27).
@Suite struct RedisNameResolutionTests {
    /// A resolver whose answers wait until the test lets them go, and count the lookups.
    final class HeldDNS: Sendable {
        final class State: Sendable {
            let released = Atomic<Bool>(false)
            let lookups = Atomic<Int>(0)
            let names = Mutex<[String]>([])
        }
        let state = State()
        let resolver: Resolver
        var released: Bool {
            get { state.released.load(ordering: .acquiring) }
        }
        func release() { state.released.store(true, ordering: .releasing) }
        var lookups: Int { state.lookups.load(ordering: .relaxed) }
        var names: [String] { state.names.withLock { $0 } }

        init(answering port: Int) throws {
            let state = state
            resolver = try Resolver(threads: 1) { host, _ throws(SystemError) in
                state.lookups.add(1, ordering: .relaxed)
                state.names.withLock { $0.append(host) }
                while !state.released.load(ordering: .acquiring) { usleep(1_000) }
                return [SocketAddress.ipv4(127, 0, 0, 1, port: UInt16(port))]
            }
        }
    }

    @Test func aHeldResolutionStallsNothingElseOnTheLoopAndTheClientConnectsOnceItAnswers() throws {
        let server = try RedisServer()
        let dns = try HeldDNS(answering: server.port)
        var ticksWhileHeld = 0
        var upWhileHeld = true
        var reply: Result<RedisReply, RedisError>?
        let finished = try runLoop(seconds: 20) { loop, finish in
            let client = RedisClient(host: "redis.parley-test.svc", port: server.port, loop: loop, connectTimeout: 10, resolver: dns.resolver)
            // The loop's other work, every 10 ms, while the name is held for half a second.
            var ticks = 0
            func tick() {
                ticks += 1
                if ticks == 50 {
                    ticksWhileHeld = ticks
                    upWhileHeld = client.isUp
                    dns.release()
                    poll(loop, until: { client.isUp }) {
                        client.send(["PING"]) { reply = $0; withExtendedLifetime(client) { finish() } }
                    }
                    return
                }
                loop.schedule(after: 0.01) { tick() }
            }
            tick()
        }
        #expect(finished)
        #expect(ticksWhileHeld == 50, "the loop served its timers while the name was held")
        #expect(!upWhileHeld, "not connected before the name was answered")
        #expect(reply == .success(.status("PONG")))
        #expect(dns.names == ["redis.parley-test.svc"])
    }

    @Test func theNameIsResolvedAgainAtEveryReconnect() throws {
        let first = try RedisServer()
        let port = first.port
        let dns = try HeldDNS(answering: port)
        dns.release()
        var second: RedisServer?
        var reply: Result<RedisReply, RedisError>?
        let finished = try runLoop(seconds: 20) { loop, finish in
            let client = RedisClient(host: "redis.parley-test.svc", port: port, loop: loop, resolver: dns.resolver)
            poll(loop, until: { client.isUp }) {
                first.kill()
                poll(loop, until: { !client.isUp }) {
                    second = try? RedisServer(port: port)
                    poll(loop, until: { client.isUp }) {
                        client.send(["PING"]) { reply = $0; withExtendedLifetime(client) { finish() } }
                    }
                }
            }
        }
        #expect(finished && second != nil)
        #expect(reply == .success(.status("PONG")))
        #expect(dns.lookups >= 2, "looked up again to reconnect: \(dns.lookups)")
    }

    @Test func anAddressLiteralIsNotLookedUp() throws {
        let server = try RedisServer()
        let dns = try HeldDNS(answering: server.port)
        var reply: Result<RedisReply, RedisError>?
        let finished = try runLoop { loop, finish in
            let client = RedisClient(host: "127.0.0.1", port: server.port, loop: loop, resolver: dns.resolver)
            client.send(["PING"]) { reply = $0; withExtendedLifetime(client) { finish() } }
        }
        #expect(finished && reply == .success(.status("PONG")))
        #expect(dns.lookups == 0)
    }
}
