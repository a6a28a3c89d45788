import Glibc
import Loop
import Store
import Synchronization
import Testing
import TestSupport
@testable import Access

/// Two processes counting one tenant on one real Redis (`RedisTenantCount`): one count for both,
/// one rate bucket, a process that stops answering dropped from the count once its key has gone,
/// its sessions published again when it comes back, and a Redis that cannot be reached said so.
@Suite(.serialized) struct RedisTenantCountTests {
    /// Runs `steps` in order on one loop, each handed the loop and a `next` to call when done.
    func run(_ steps: [(EventLoop, @escaping () -> Void) -> Void]) throws {
        var remaining = steps[...]
        let finished = try runLoop(seconds: 10) { loop, finish in
            func step() {
                guard let next = remaining.popFirst() else { return finish() }
                next(loop, step)
            }
            step()
        }
        #expect(finished, "the steps did not all finish")
    }

    final class Verdicts {
        var places: [SharedPlace] = []
        var refusals: [TenantRefusal] = []
        var unavailable: [String] = []
        func record(_ verdict: SharedVerdict) {
            switch verdict {
            case .admitted(let place): places.append(place)
            case .refused(let refusal): refusals.append(refusal)
            case .unavailable(let why): unavailable.append(why)
            }
        }
    }

    func admit(_ count: RedisTenantCount, _ limits: TenantLimits, into verdicts: Verdicts, session: String? = nil) -> (EventLoop, @escaping () -> Void) -> Void {
        { loop, next in count.admit(TenantAsk(tenant: "acme", limits: limits, session: session), on: loop) { verdicts.record($0); next() } }
    }

    func send(_ client: @escaping () -> RedisClient, _ command: [String], _ reply: @escaping (RedisReply?) -> Void = { _ in }) -> (EventLoop, @escaping () -> Void) -> Void {
        { _, next in client().send(command) { reply(try? $0.get()); next() } }
    }

    /// Asks until Redis counts `count` sessions open for `me` (what another connection wrote is
    /// seen once that connection has written it); the run's 10 s bound it.
    func untilOpen(_ client: @escaping () -> RedisClient, _ me: String, is count: String) -> (EventLoop, @escaping () -> Void) -> Void {
        { loop, next in
            func check() {
                client().send(["HGET", RedisTenantCount.openKey("acme"), me]) { reply in
                    if case .success(.string(let open)) = reply, String(decoding: open, as: UTF8.self) == count { return next() }
                    _ = loop.schedule(after: 0.01) { check() }
                }
            }
            check()
        }
    }

    @Test func twoProcessesShareOneCountAndADeadOnesSessionsStopCounting() throws {
        let redis = try RedisServer()
        let held = Mutex<[(tenant: String, open: Int)]>([])
        let first = RedisTenantCount(host: "127.0.0.1", port: redis.port) { held.withLock { $0 } }
        let second = RedisTenantCount(host: "127.0.0.1", port: redis.port) { [] }
        let limits = TenantLimits(maxSessions: 3)
        let a = Verdicts(), b = Verdicts()
        var client: RedisClient?
        var fields: RedisReply?
        var republished = false
        try run([
            { loop, next in client = RedisClient(host: "127.0.0.1", port: redis.port, loop: loop); next() },
            admit(first, limits, into: a), admit(first, limits, into: a), admit(second, limits, into: b), admit(second, limits, into: b),
            { _, next in
                #expect(a.places.count == 2 && b.places.count == 1)
                #expect(b.refusals == [TenantRefusal(reason: .sessions, retryAfterSeconds: 1)])
                next()
            },
            // A session closed on the first process makes room on the second.
            { _, next in a.places.removeLast().release(); next() },
            // The release goes by the loop it was admitted on: wait until Redis has it.
            untilOpen({ client! }, first.me, is: "1"),
            admit(second, limits, into: b),
            { _, next in #expect(b.places.count == 2, "\(b.refusals)"); next() },
            // The first process dies: its key expires (here, goes at once) and its session with it.
            send({ client! }, ["DEL", RedisTenantCount.processKey(first.me)]),
            admit(second, limits, into: b),
            send({ client! }, ["HGETALL", RedisTenantCount.openKey("acme")]) { fields = $0 },
            { _, next in
                #expect(b.places.count == 3, "\(b.refusals)")
                #expect(fields == .array([.string(Array(second.me.utf8)), .string(Array("3".utf8))]), "\(String(describing: fields))")
                next()
            },
            // It was only unreachable: its next heartbeat finds itself forgotten and counts its one session again.
            { _, next in held.withLock { $0 = [("acme", 1)] }; next() },
            { loop, next in first.beat(on: loop) { republished = $0; next() } },
            { _, next in #expect(republished); next() },
            // The count goes on the process's own connection, after the beat's answer.
            untilOpen({ client! }, first.me, is: "1"),
        ])
        withExtendedLifetime((a, b, client)) {}
    }

    @Test func theRateIsOneBucketAndAnUnreachableRedisIsSaid() throws {
        let redis = try RedisServer()
        let first = RedisTenantCount(host: "127.0.0.1", port: redis.port) { [] }
        let second = RedisTenantCount(host: "127.0.0.1", port: redis.port) { [] }
        let nowhere = RedisTenantCount(host: "127.0.0.1", port: try RedisServer.freePort()) { [] }
        let limits = TenantLimits(sessionsPerMinute: 2)
        let verdicts = Verdicts(), lost = Verdicts()
        try run([
            admit(first, limits, into: verdicts), admit(second, limits, into: verdicts), admit(first, limits, into: verdicts),
            { _, next in
                #expect(verdicts.places.count == 2)
                // Two a minute: the next in 30 s, whichever process asks.
                #expect(verdicts.refusals.count == 1 && verdicts.refusals.first?.reason == .rate
                        && (29...30).contains(verdicts.refusals.first?.retryAfterSeconds ?? 0), "\(verdicts.refusals)")
                next()
            },
            // Tokens spent through one process refuse a session on the other until they refill.
            { loop, next in
                first.spend(1_500, of: "acme", perMinute: 1_000, on: loop) { verdict in
                    guard case .spent(let wait?) = verdict else { Issue.record("\(verdict)"); return next() }
                    #expect((30...31).contains(wait), "\(wait)")
                    next()
                }
            },
            admit(second, TenantLimits(tokensPerMinute: 1_000), into: verdicts),
            { _, next in #expect(verdicts.refusals.last?.reason == .tokens, "\(verdicts.refusals)"); next() },
            admit(nowhere, limits, into: lost),
            { _, next in #expect(lost.unavailable.count == 1, "\(lost.places.count) \(lost.refusals)"); next() },
        ])
    }
}
