import Glibc
import Loop
@testable import Store
import Testing
import TestSupport

/// The store against a real redis-server: what a session writes comes back by its current token
/// only; an ended session leaves nothing; Redis going away makes the store unavailable and drops
/// writes, and its return makes it work again.
@Suite struct RedisConversationStoreTests {
    static let started = StoredSession(sessionID: "sess_1", tenant: "acme", tokenHash: "hash-a", settings: #"{"voice":"alloy"}"#, lastSeq: 3, expiresAt: 0)

    /// Starts a session, completes three items (the second completed again, later), and rotates the token.
    func writeConversation(_ store: RedisConversationStore, on loop: EventLoop) {
        store.sessionStarted(Self.started, on: loop)
        store.itemCompleted(sessionID: "sess_1", seq: 4, itemID: "item_a", item: #"{"id":"item_a"}"#, event: #"{"seq":4}"#, on: loop)
        store.itemCompleted(sessionID: "sess_1", seq: 6, itemID: "item_b", item: #"{"id":"item_b","v":1}"#, event: #"{"seq":6}"#, on: loop)
        store.itemCompleted(sessionID: "sess_1", seq: 8, itemID: "item_c", item: #"{"id":"item_c"}"#, event: #"{"seq":8}"#, on: loop)
        store.itemCompleted(sessionID: "sess_1", seq: 9, itemID: "item_b", item: #"{"id":"item_b","v":2}"#, event: #"{"seq":9}"#, on: loop)
        store.settingsChanged(sessionID: "sess_1", settings: #"{"voice":"echo"}"#, on: loop)
        store.tokenRotated(sessionID: "sess_1", from: "hash-a", to: "hash-b", lastSeq: 10, on: loop) { _ in }
    }

    @Test func aConversationComesBackByItsCurrentTokenOnlyAndEndingItLeavesNothing() throws {
        let server = try RedisServer()
        let store = RedisConversationStore(host: "127.0.0.1", port: server.port)
        var byNew: Result<StoredConversation?, StoreError>?
        var byOld: Result<StoredConversation?, StoreError>?
        var afterEnd: Result<StoredConversation?, StoreError>?
        var ttl: RedisReply?
        var keysLeft: RedisReply?
        var metrics = ""
        let finished = try runLoop { loop, finish in
            #expect(store.isAvailable(on: loop), "starting counts as available")
            writeConversation(store, on: loop)
            store.load(tokenHash: "hash-a", on: loop) { byOld = $0 }
            store.load(tokenHash: "hash-b", on: loop) { result in
                byNew = result
                let probe = RedisClient(host: "127.0.0.1", port: server.port, loop: loop)
                probe.send(["TTL", "parley:items:sess_1"]) {
                    ttl = try? $0.get()
                    metrics = store.renderMetrics()
                    store.sessionEnded(sessionID: "sess_1", tokenHash: "hash-b", on: loop)
                    store.load(tokenHash: "hash-b", on: loop) { result in
                        afterEnd = result
                        probe.send(["KEYS", "parley:*"]) {
                            keysLeft = try? $0.get()
                            withExtendedLifetime(probe) { finish() }
                        }
                    }
                }
            }
        }
        #expect(finished)
        #expect(byOld == .success(nil), "the old token is gone")
        let expected = StoredConversation(
            session: StoredSession(sessionID: "sess_1", tenant: "acme", tokenHash: "hash-b", settings: #"{"voice":"echo"}"#, lastSeq: 10, expiresAt: 0),
            items: [StoredConversation.Item(seq: 4, itemID: "item_a", item: #"{"id":"item_a"}"#, event: #"{"seq":4}"#),
                    StoredConversation.Item(seq: 8, itemID: "item_c", item: #"{"id":"item_c"}"#, event: #"{"seq":8}"#),
                    StoredConversation.Item(seq: 9, itemID: "item_b", item: #"{"id":"item_b","v":2}"#, event: #"{"seq":9}"#)])
        #expect(byNew == .success(expected))
        guard case .integer(let seconds)? = ttl else { Issue.record("TTL: \(String(describing: ttl))"); return }
        #expect(seconds > 0 && seconds <= RedisConversationStore.ttlSeconds)
        #expect(afterEnd == .success(nil))
        #expect(keysLeft == .array([]), "every key of the session is deleted")
        #expect(metric(metrics, #"parley_store_writes_total{store="redis",result="ok"}"#) == 7)
        #expect((metric(metrics, #"parley_store_bytes_written_total{store="redis"}"#) ?? 0) > 0)
        #expect(metric(metrics, "parley_redis_up") == 1)
    }

    /// Two nodes (two stores, two connections) rotating the same token at once, 100 rounds: each
    /// time exactly one rotation is stored and the other is told the session was taken, and the
    /// token keys never lead two ways (issue 27).
    @Test func ofTwoNodesRotatingOneTokenExactlyOneWinsEveryTime() throws {
        let server = try RedisServer()
        let nodeA = RedisConversationStore(host: "127.0.0.1", port: server.port)
        let nodeB = RedisConversationStore(host: "127.0.0.1", port: server.port)
        var outcomes: [(TokenRotation, TokenRotation)] = []
        var winnerLoads: [String?] = []
        var loserLoads: [String?] = []
        let finished = try runLoop(seconds: 60) { loop, finish in
            nodeA.sessionStarted(StoredSession(sessionID: "sess_r", tenant: "", tokenHash: "t0", settings: "{}", lastSeq: 0), on: loop)
            func round(_ n: Int, from used: String) {
                guard n <= 100 else { return finish() }
                var a: TokenRotation?, b: TokenRotation?
                func both() {
                    guard let a, let b else { return }
                    outcomes.append((a, b))
                    let won = a == .stored ? "a\(n)" : "b\(n)", lost = a == .stored ? "b\(n)" : "a\(n)"
                    nodeB.load(tokenHash: won, on: loop) { winner in
                        winnerLoads.append((try? winner.get())??.session.sessionID)
                        nodeA.load(tokenHash: lost, on: loop) { loser in
                            loserLoads.append((try? loser.get())??.session.sessionID)
                            round(n + 1, from: won)
                        }
                    }
                }
                nodeA.tokenRotated(sessionID: "sess_r", from: used, to: "a\(n)", lastSeq: n, on: loop) { a = $0; both() }
                nodeB.tokenRotated(sessionID: "sess_r", from: used, to: "b\(n)", lastSeq: n, on: loop) { b = $0; both() }
            }
            poll(loop, until: { nodeA.isAvailable(on: loop) && nodeB.isAvailable(on: loop) }) {
                // The session's row is in before the first round (its write is pipelined).
                nodeA.load(tokenHash: "t0", on: loop) { _ in round(1, from: "t0") }
            }
        }
        #expect(finished)
        #expect(outcomes.count == 100)
        for (i, (a, b)) in outcomes.enumerated() {
            #expect((a == .stored && b == .taken) || (a == .taken && b == .stored), "round \(i + 1): \(a), \(b)")
        }
        #expect(winnerLoads.allSatisfy { $0 == "sess_r" } && winnerLoads.count == 100)
        #expect(loserLoads.allSatisfy { $0 == nil } && loserLoads.count == 100)
    }

    @Test func redisKilledMidUseMakesTheStoreUnavailableAndWritesAreHeld() throws {
        let server = try RedisServer()
        let store = RedisConversationStore(host: "127.0.0.1", port: server.port)
        var loadWhileDown: Result<StoredConversation?, StoreError>?
        var metricsWhileDown = ""
        let finished = try runLoop { loop, finish in
            store.connect(on: loop)
            poll(loop, until: { store.metrics.up.render().contains("parley_redis_up 1") }) {
                writeConversation(store, on: loop)
                server.kill()
                poll(loop, until: { !store.isAvailable(on: loop) }) {
                    writeConversation(store, on: loop)
                    store.load(tokenHash: "hash-b", on: loop) { result in
                        loadWhileDown = result
                        metricsWhileDown = store.renderMetrics()
                        finish()
                    }
                }
            }
        }
        #expect(finished)
        guard case .failure? = loadWhileDown else { Issue.record("\(String(describing: loadWhileDown))"); return }
        #expect(metric(metricsWhileDown, "parley_redis_up") == 0)
        // The session's writes are held for Redis's return (the next test), not dropped; the
        // token's rotation is, and the session is told so (`.unavailable`: no new token).
        #expect(metric(metricsWhileDown, #"parley_store_writes_total{store="redis",result="dropped"}"#) == 1)
    }

    /// What a session completes while Redis is away is written when it is back, before anything
    /// after it: a resume elsewhere then loads the whole conversation (make chaos lost 1,380
    /// items when these writes were dropped).
    @Test func writesMadeWhileRedisIsAwayAreWrittenWhenItIsBack() throws {
        var server: RedisServer? = try RedisServer()
        let port = server!.port
        let store = RedisConversationStore(host: "127.0.0.1", port: port)
        var loaded: Result<StoredConversation?, StoreError>?
        var restartError: (any Error)?
        var kept: [String: Bool] = [:]
        var keptWhileAway: [String: Bool] = [:]
        let finished = try runLoop(seconds: 20) { loop, finish in
            store.connect(on: loop)
            poll(loop, until: { store.isAvailable(on: loop) && store.metrics.up.render().contains("parley_redis_up 1") }) {
                store.sessionStarted(Self.started, on: loop)
                store.itemCompleted(sessionID: "sess_1", seq: 4, itemID: "item_a", item: #"{"id":"item_a"}"#, event: #"{"seq":4}"#, on: loop) { kept["item_a"] = $0 }
                poll(loop, until: { kept["item_a"] != nil }) {
                    server?.kill()
                    poll(loop, until: { !store.isAvailable(on: loop) }) {
                        // Completed while Redis is away: kept (and the session told) only once it is back.
                        store.itemCompleted(sessionID: "sess_1", seq: 6, itemID: "item_b", item: #"{"id":"item_b"}"#, event: #"{"seq":6}"#, on: loop) { kept["item_b"] = $0 }
                        store.itemCompleted(sessionID: "sess_1", seq: 8, itemID: "item_c", item: #"{"id":"item_c"}"#, event: #"{"seq":8}"#, on: loop) { kept["item_c"] = $0 }
                        keptWhileAway = kept
                        do { server = try RedisServer(port: port) } catch { restartError = error; return finish() }
                        poll(loop, until: { store.isAvailable(on: loop) }) {
                            // This Redis has no persistence: what was written before the kill is gone,
                            // so the session's record is written again for the load to find it.
                            store.sessionStarted(Self.started, on: loop)
                            store.load(tokenHash: "hash-a", on: loop) { result in
                                loaded = result
                                finish()
                            }
                        }
                    }
                }
            }
        }
        #expect(finished)
        #expect(restartError == nil)
        #expect(keptWhileAway == ["item_a": true], "a write held for Redis's return is not yet kept")
        #expect(kept == ["item_a": true, "item_b": true, "item_c": true])
        guard case .success(let conversation?)? = loaded else { Issue.record("\(String(describing: loaded))"); return }
        #expect(conversation.items.map(\.itemID).contains("item_b") && conversation.items.map(\.itemID).contains("item_c"),
                "\(conversation.items.map(\.itemID))")
    }

    @Test func redisRestartedIsReconnectedToAndTheStoreWorksAgain() throws {
        var server: RedisServer? = try RedisServer()
        let port = server!.port
        let store = RedisConversationStore(host: "127.0.0.1", port: port)
        var loaded: Result<StoredConversation?, StoreError>?
        var restartError: (any Error)?
        var metrics = ""
        let finished = try runLoop(seconds: 20) { loop, finish in
            store.connect(on: loop)
            poll(loop, until: { store.isAvailable(on: loop) && store.metrics.up.render().contains("parley_redis_up 1") }) {
                server?.kill()
                poll(loop, until: { !store.isAvailable(on: loop) }) {
                    do { server = try RedisServer(port: port) } catch { restartError = error; return finish() }
                    poll(loop, until: { store.isAvailable(on: loop) }) {
                        writeConversation(store, on: loop)
                        store.load(tokenHash: "hash-b", on: loop) { result in
                            loaded = result
                            metrics = store.renderMetrics()
                            finish()
                        }
                    }
                }
            }
        }
        #expect(finished)
        #expect(restartError == nil)
        guard case .success(let conversation?)? = loaded else { Issue.record("\(String(describing: loaded))"); return }
        #expect(conversation.items.map(\.itemID) == ["item_a", "item_c", "item_b"])
        #expect(metric(metrics, "parley_redis_up") == 1)
        #expect((metric(metrics, "parley_redis_reconnects_total") ?? 0) >= 1)
    }
}
