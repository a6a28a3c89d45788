import Logging
import Loop
import Metrics
import Synchronization

/// The store's log: outages at warning, once each, naming Redis by host and port only.
let redisStoreLog = Logger(label: "parley.store")

/// Conversations in Redis, so that a session can resume on any node. Each loop has its own
/// connection (hiredis's async client on the loop, `RedisClient`); writes are pipelined
/// MULTI/EXEC transactions sent before the call returns, never waited for.
///
/// Keys, for session `{id}`:
/// - `parley:session:{id}`: hash of tenant, token_hash, settings, last_seq, expires_at.
/// - `parley:token:{hash}`: the session id its current token belongs to. A rotation deletes the
///   old key and sets the new one in one transaction, so a token leads to one session at a time.
/// - `parley:items:{id}`: sorted set of item ids scored by the seq of their `conversation.item.done`.
/// - `parley:item:{id}` and `parley:event:{id}`: hashes of item id to the item's JSON and to the
///   whole event's. An item completed again under the same id overwrites its member (a new score)
///   and its two fields, so it replaces the older entry with plain commands, no Lua.
/// Every write refreshes a 24-hour TTL on all of them, so an abandoned session goes by itself.
///
/// While Redis cannot be reached from a loop, that loop's session writes are held (up to
/// `maxBacklogCommands`) and made first when it is back; `isAvailable(on:)` is false, and the
/// outage is logged once. A completed item's `kept` runs when Redis has answered its write.
public final class RedisConversationStore: ConversationStore {
    public var kind: String { "redis" }
    public let host: String
    public let port: Int
    public let metrics = RedisStoreMetrics()
    /// How long a session's keys outlive its last write.
    public static let ttlSeconds = 24 * 60 * 60
    private let health = Mutex(Health())

    /// `host` is an address or a name; a name is resolved off the loops before each connect
    /// (`RedisClient`). Nothing connects until a loop first uses the store.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// The store's series (`parley_store_*{store="redis"}`, `parley_redis_*`) for /metrics.
    public var metricsRegistry: MetricsRegistry { metrics.registry }

    /// Makes `loop`'s connection now rather than at its first use (a server's start-up).
    public func connect(on loop: EventLoop) { _ = local(loop) }
    public func prepare(on loop: EventLoop) { connect(on: loop) }

    // MARK: Writes

    public func sessionStarted(_ session: StoredSession, on loop: EventLoop) {
        let local = local(loop)
        let id = session.sessionID
        var commands: [[String]] = []
        // A session resumed here holds the token it was loaded with until this new one replaces it.
        if let old = local.tokens[id], old != session.tokenHash { commands.append(["DEL", RedisKeys.token(old)]) }
        commands.append(["HSET", RedisKeys.session(id), "tenant", session.tenant, "token_hash", session.tokenHash,
                         "settings", session.settings, "last_seq", String(session.lastSeq), "expires_at", String(session.expiresAt)])
        commands.append(["SET", RedisKeys.token(session.tokenHash), id])
        local.tokens[id] = session.tokenHash
        write(commands, sessionID: id, local)
    }

    public func settingsChanged(sessionID: String, settings: String, on loop: EventLoop) {
        write([["HSET", RedisKeys.session(sessionID), "settings", settings]], sessionID: sessionID, local(loop))
    }

    public func itemCompleted(sessionID: String, seq: Int, itemID: String, item: String, event: String, on loop: EventLoop,
                              _ kept: @escaping (Bool) -> Void) {
        write([["ZADD", RedisKeys.items(sessionID), String(seq), itemID],
               ["HSET", RedisKeys.item(sessionID), itemID, item],
               ["HSET", RedisKeys.event(sessionID), itemID, event]], sessionID: sessionID, local(loop), kept)
    }

    public func itemChanged(sessionID: String, itemID: String, item: String, on loop: EventLoop, _ kept: @escaping (Bool) -> Void) {
        write([["HSET", RedisKeys.item(sessionID), itemID, item]], sessionID: sessionID, local(loop), kept)
    }

    public func tokenRotated(sessionID: String, from previous: String, to tokenHash: String, lastSeq: Int, on loop: EventLoop,
                             _ done: @escaping (TokenRotation) -> Void) {
        let local = local(loop)
        let ttl = String(Self.ttlSeconds)
        let keys = [RedisKeys.session(sessionID), RedisKeys.token(previous), RedisKeys.token(tokenHash),
                    RedisKeys.items(sessionID), RedisKeys.item(sessionID), RedisKeys.event(sessionID)]
        let command = ["EVAL", Self.rotateScript, String(keys.count)] + keys + [previous, tokenHash, String(lastSeq), sessionID, ttl]
        let bytes = command.reduce(0) { $0 + $1.utf8.count }
        local.client.send(command) { [metrics] result in
            switch result {
            case .success(.integer(1)):
                metrics.wrote(.ok, bytes: bytes)
                local.tokens[sessionID] = tokenHash
                done(.stored)
            case .success(.integer(0)):
                metrics.wrote(.ok, bytes: bytes)
                if local.tokens[sessionID] == previous { local.tokens[sessionID] = nil }
                done(.taken)
            case .success:
                metrics.wrote(.failed, bytes: 0)
                done(.unavailable)
            case .failure(.down), .failure(.busy):
                metrics.wrote(.dropped, bytes: 0)
                done(.unavailable)
            case .failure:
                metrics.wrote(.failed, bytes: 0)
                done(.unavailable)
            }
        }
    }

    /// The rotation's compare-and-set, run by Redis as one step (EVAL is atomic: no other command
    /// runs between its reads and writes): 1 if the session's token was still `previous` and is
    /// now the new one, 0 if another node had already rotated it. Every key it touches is named in
    /// KEYS, as Redis Cluster requires. KEYS: session, old token, new token, items, item, event;
    /// ARGV: previous hash, new hash, last seq, session id, TTL.
    static let rotateScript = """
        if redis.call('HGET', KEYS[1], 'token_hash') ~= ARGV[1] then return 0 end
        redis.call('HSET', KEYS[1], 'token_hash', ARGV[2], 'last_seq', ARGV[3])
        redis.call('DEL', KEYS[2])
        redis.call('SET', KEYS[3], ARGV[4], 'EX', ARGV[5])
        for i = 1, 6 do if i ~= 2 and i ~= 3 then redis.call('EXPIRE', KEYS[i], ARGV[5]) end end
        return 1
        """

    public func sessionEnded(sessionID: String, tokenHash: String, on loop: EventLoop) {
        let local = local(loop)
        local.tokens[sessionID] = nil
        let keys = [RedisKeys.session(sessionID), RedisKeys.token(tokenHash), RedisKeys.items(sessionID), RedisKeys.item(sessionID), RedisKeys.event(sessionID)]
        let command = ["EVAL", Self.endScript, String(keys.count)] + keys + [tokenHash]
        local.client.send(command) { [metrics] result in
            switch result {
            case .success(.integer): metrics.wrote(.ok, bytes: 0)
            case .success: metrics.wrote(.failed, bytes: 0)
            case .failure(.down), .failure(.busy): metrics.wrote(.dropped, bytes: 0)
            case .failure: metrics.wrote(.failed, bytes: 0)
            }
        }
    }

    /// The end's check and deletes as one step: every key of the session, only if its token is
    /// still the one ending it (1), else nothing (0: another node resumed it). KEYS: session,
    /// token, items, item, event; ARGV: the token's hash.
    static let endScript = """
        if redis.call('HGET', KEYS[1], 'token_hash') ~= ARGV[1] then return 0 end
        redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
        return 1
        """

    /// Sends `commands` as one transaction, followed (for a live session) by the TTL on all of its keys.
    /// `done` (if any) learns whether Redis took every command: at its answer, or, for a session's
    /// write made while Redis is away, when the write is made at its return.
    private func write(_ commands: [[String]], sessionID: String?, _ local: RedisStoreLoop, _ done: ((Bool) -> Void)? = nil) {
        var all = commands
        if let sessionID {
            var keys = [RedisKeys.session(sessionID), RedisKeys.items(sessionID), RedisKeys.item(sessionID), RedisKeys.event(sessionID)]
            if let token = local.tokens[sessionID] { keys.append(RedisKeys.token(token)) }
            let ttl = String(Self.ttlSeconds)
            for key in keys { all.append(["EXPIRE", key, ttl]) }
        }
        let held = RedisStoreLoop.HeldWrite(commands: all, done: done)
        local.client.transaction(all) { [self] result in
            // Only a session's writes are held: a kept document is written again by nobody.
            settle(result, [held], bytes: Self.bytes(all), local, holding: sessionID == nil ? .never : .withinBound)
        }
    }

    private enum Holding { case never, withinBound, always }

    /// What came of a transaction of `writes`: each learns whether Redis took it. A failure other
    /// than the client's own close holds them for Redis's return: dropped, the session would be
    /// resumable again with the items it completed meanwhile missing (make chaos lost 1,380 of
    /// 161,628 so, in three 3 s outages). That includes writes in flight when the connection
    /// dropped: Redis may or may not have made them, and making them again changes nothing (make
    /// chaos lost 5 items told done so, at Redis kills).
    private func settle(_ result: Result<[RedisReply], RedisError>, _ writes: [RedisStoreLoop.HeldWrite], bytes: Int,
                        _ local: RedisStoreLoop, holding: Holding) {
        switch result {
        case .success(let replies):
            let refused = replies.contains { if case .error = $0 { true } else { false } }
            metrics.wrote(refused ? .failed : .ok, bytes: bytes)
            for write in writes { write.done?(!refused) }
        case .failure(let error):
            let count = writes.reduce(0) { $0 + $1.commands.count }
            let holds = switch holding {
            case .never: false
            case .withinBound: local.backlogCommands + count <= Self.maxBacklogCommands
            case .always: true
            }
            guard error != .closed, holds else {
                metrics.wrote(.dropped, bytes: 0)
                return writes.forEach { $0.done?(false) }
            }
            for write in writes { local.hold(write) }
        }
    }

    private static func bytes(_ commands: [[String]]) -> Int {
        commands.reduce(0) { $0 + $1.reduce(0) { $0 + $1.utf8.count } }
    }

    /// Commands a loop holds for Redis's return, at most: about 100 bytes each, so 10 MB a loop,
    /// some 30,000 completed items (a minute's outage at 500 items a second). Past it, writes drop.
    static let maxBacklogCommands = 100_000

    /// Redis is back on this loop: what was held goes first, in order, before anything written
    /// after it (one connection, answered in order), about a thousand commands a transaction.
    private func writeBacklog(_ local: RedisStoreLoop) {
        var held = local.takeBacklog()[...]
        while !held.isEmpty {
            var chunk: [RedisStoreLoop.HeldWrite] = []
            var count = 0
            while let next = held.first, chunk.isEmpty || count + next.commands.count <= 1_000 {
                chunk.append(next)
                count += next.commands.count
                held = held.dropFirst()
            }
            let commands = chunk.flatMap(\.commands)
            // Gone again: held again, for the next return.
            local.client.transaction(commands) { [self] result in
                settle(result, chunk, bytes: Self.bytes(commands), local, holding: .always)
            }
        }
    }

    public func keep(_ kind: KeptKind, id: String, text: String, keepSeconds: Int, on loop: EventLoop) {
        write([["SET", RedisKeys.kept(kind, id), text, "EX", String(max(1, keepSeconds))]], sessionID: nil, local(loop))
    }

    // MARK: Reads

    public func kept(_ kind: KeptKind, id: String, on loop: EventLoop, _ done: @escaping (Result<String?, StoreError>) -> Void) {
        local(loop).client.send(["GET", RedisKeys.kept(kind, id)]) { result in
            switch result {
            case .failure(let error): done(.failure(StoreError("redis: \(error)")))
            case .success(.null): done(.success(nil))
            case .success(let reply): done(.success(reply.text))
            }
        }
    }

    public func load(tokenHash: String, on loop: EventLoop, _ done: @escaping (Result<StoredConversation?, StoreError>) -> Void) {
        let local = local(loop)
        local.client.send(["GET", RedisKeys.token(tokenHash)]) { result in
            switch result {
            case .failure(let error): return done(.failure(StoreError("redis: \(error)")))
            case .success(.null): return done(.success(nil))
            case .success(let reply):
                guard let id = reply.text else { return done(.failure(StoreError("redis: \(RedisKeys.token("…")) holds \(reply)"))) }
                // One transaction: the session and its items as of one moment.
                local.client.transaction([["HGETALL", RedisKeys.session(id)],
                                          ["ZRANGE", RedisKeys.items(id), "0", "-1", "WITHSCORES"],
                                          ["HGETALL", RedisKeys.item(id)],
                                          ["HGETALL", RedisKeys.event(id)]]) { result in
                    switch result {
                    case .failure(let error): done(.failure(StoreError("redis: \(error)")))
                    case .success(let replies):
                        let loaded = Self.conversation(id: id, tokenHash: tokenHash, replies)
                        if loaded != nil { local.tokens[id] = tokenHash }
                        done(.success(loaded))
                    }
                }
            }
        }
    }

    /// The conversation from the load transaction's replies; nil when the session's hash is gone
    /// (expired, ended) or its token has moved on since the token key was read.
    static func conversation(id: String, tokenHash: String, _ replies: [RedisReply]) -> StoredConversation? {
        guard replies.count == 4 else { return nil }
        let fields = pairs(replies[0])
        guard let tenant = fields["tenant"], fields["token_hash"] == tokenHash else { return nil }
        let session = StoredSession(sessionID: id, tenant: tenant, tokenHash: tokenHash, settings: fields["settings"] ?? "",
                                    lastSeq: Int(fields["last_seq"] ?? "") ?? 0, expiresAt: Int(fields["expires_at"] ?? "") ?? 0)
        let items = pairs(replies[2])
        let events = pairs(replies[3])
        var conversation: [StoredConversation.Item] = []
        if case .array(let ranked) = replies[1] {
            var i = 0
            while i + 1 < ranked.count {
                if let itemID = ranked[i].text, let seq = ranked[i + 1].text.flatMap({ Int($0) }), let item = items[itemID] {
                    conversation.append(StoredConversation.Item(seq: seq, itemID: itemID, item: item, event: events[itemID] ?? ""))
                }
                i += 2
            }
        }
        return StoredConversation(session: session, items: conversation)
    }

    /// A HGETALL reply (field, value, field, value...) as a dictionary.
    private static func pairs(_ reply: RedisReply) -> [String: String] {
        guard case .array(let elements) = reply else { return [:] }
        var result: [String: String] = [:]
        var i = 0
        while i + 1 < elements.count {
            if let key = elements[i].text, let value = elements[i + 1].text { result[key] = value }
            i += 2
        }
        return result
    }

    public func isAvailable(on loop: EventLoop) -> Bool {
        local(loop).client.state != .down
    }

    // MARK: Per loop

    private func local(_ loop: EventLoop) -> RedisStoreLoop {
        let all = loop.local { RedisStoreLoops() }
        let key = ObjectIdentifier(self)
        if let existing = all.byStore[key] { return existing }
        let made = RedisStoreLoop()
        // The client's events come on this loop; `made` is its owner, so `unowned` cannot outlive it.
        made.client = RedisClient(host: host, port: port, loop: loop) { [weak self, unowned made] event in
            self?.observe(event, from: made)
        }
        all.byStore[key] = made
        return made
    }

    /// Adds one loop's connection event to the store-wide picture: the gauge, the reconnect
    /// counter and the one warning per outage (an outage: from the first loop that loses Redis to
    /// every loop having it again).
    private func observe(_ event: RedisClient.Event, from loop: RedisStoreLoop) {
        let now: RedisStoreLoop.Status
        switch event {
        case .reconnecting:
            metrics.reconnects.add(1)
            return
        case .up:
            now = .up
            writeBacklog(loop)
        case .down: now = .down
        }
        let before = loop.status
        loop.status = now
        guard before != now else { return }
        let change = health.withLock { health in health.record(from: before, to: now) }
        if let gauge = change.gauge { metrics.up.add(gauge ? 1 : -1) }
        let redis = "\(host):\(port)"
        switch change.outage {
        case true?:
            let why = if case .down(let error) = event { error.description } else { "" }
            redisStoreLog.warning("redis is unreachable; sessions go on without resume until it is back",
                                  metadata: ["redis": "\(redis)", "error": "\(why)"])
        case false?:
            redisStoreLog.info("redis is reachable again", metadata: ["redis": "\(redis)"])
        case nil: break
        }
    }

    /// How many loops' connections are up and down, and what was last reported.
    struct Health {
        var up = 0
        var down = 0
        var healthy = false
        var inOutage = false

        /// Counts one loop's change; says whether the gauge flipped (to up: true) and whether an
        /// outage began (true) or ended (false).
        mutating func record(from before: RedisStoreLoop.Status, to now: RedisStoreLoop.Status) -> (gauge: Bool?, outage: Bool?) {
            switch before {
            case .up: up -= 1
            case .down: down -= 1
            case .unknown: break
            }
            switch now {
            case .up: up += 1
            case .down: down += 1
            case .unknown: break
            }
            let nowHealthy = up > 0 && down == 0
            let gauge: Bool? = nowHealthy == healthy ? nil : nowHealthy
            healthy = nowHealthy
            var outage: Bool?
            if down > 0 && !inOutage {
                inOutage = true
                outage = true
            } else if down == 0 && inOutage {
                inOutage = false
                outage = false
            }
            return (gauge, outage)
        }
    }
}

/// The key names (see `RedisConversationStore`).
public enum RedisKeys {
    static func session(_ id: String) -> String { "parley:session:\(id)" }
    public static func token(_ hash: String) -> String { "parley:token:\(hash)" }
    static func items(_ id: String) -> String { "parley:items:\(id)" }
    static func item(_ id: String) -> String { "parley:item:\(id)" }
    static func event(_ id: String) -> String { "parley:event:\(id)" }
    /// `parley:report:{id}`, `parley:live_session:{id}`.
    static func kept(_ kind: KeptKind, _ id: String) -> String { "parley:\(kind.rawValue):\(id)" }
}

/// The store's state on one loop: the loop's connection and the current token hash of each
/// session on it (to delete a token's key when it is replaced, without asking Redis first).
final class RedisStoreLoop {
    enum Status { case unknown, up, down }
    var client: RedisClient!
    var tokens: [String: String] = [:]
    /// A session's write made while Redis was away, with whoever waits for it to be made.
    struct HeldWrite {
        var commands: [[String]]
        var done: ((Bool) -> Void)?
    }
    /// Session writes made while Redis was away, to be written when it is back.
    private(set) var backlog: [HeldWrite] = []
    private(set) var backlogCommands = 0

    func hold(_ write: HeldWrite) {
        backlog.append(write)
        backlogCommands += write.commands.count
    }

    func takeBacklog() -> [HeldWrite] {
        defer {
            backlog = []
            backlogCommands = 0
        }
        return backlog
    }
    /// What this loop last added to the store's `Health`.
    var status = Status.unknown
}

/// Every Redis store's state on one loop (`EventLoop.local`), by store.
final class RedisStoreLoops {
    var byStore: [ObjectIdentifier: RedisStoreLoop] = [:]
}
