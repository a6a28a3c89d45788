import Loop
import Store
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The tenants' count shared by every process on one Redis (`--store redis://`): every node, and
/// every worker of each. One script at a session's open and one at its close, none per frame,
/// plus a heartbeat from each process every `heartbeatSeconds`.
///
/// Keys: `parley:tenant:<t>:open`, a hash of sessions open by process; `parley:tenant:<t>:rate`,
/// the tenant's bucket; `parley:node:<process>`, which expires unless its process keeps it alive,
/// so that a process that dies (a node lost, a pod evicted) stops counting once its key has
/// gone: the next admission drops its field. `parley:lease:<session>` names the process holding a
/// resumable session's place, so that the session's place moves with it when it resumes on
/// another process instead of being counted twice, and its old holder's close gives nothing back.
public final class RedisTenantCount: SharedTenantCount {
    public static let heartbeatSeconds = 10.0
    /// A process whose key is this old has stopped counting.
    static let processSeconds = 30
    /// What an admission waits for Redis before the process decides alone.
    public static let answerSeconds = 0.5
    /// A resumable session's lease outlives a process that died holding it by at most this.
    static let leaseSeconds = 7 * 86_400

    public let scope = "redis"
    let host: String
    let port: Int
    /// This process, unique across restarts and hosts (a container's pid is often 1).
    let me: String
    private let openCounts: @Sendable () -> [(tenant: String, open: Int)]

    /// `openCounts`: the sessions this process holds by tenant, published again after Redis
    /// forgot the process (restarted, or unreachable past `processSeconds`).
    public init(host: String, port: Int, openCounts: @escaping @Sendable () -> [(tenant: String, open: Int)]) {
        self.host = host
        self.port = port
        self.openCounts = openCounts
        me = "\(Sys.hostName()):\(getpid()):\(String(UInt32.random(in: .min ... .max), radix: 16))"
    }

    static func openKey(_ tenant: String) -> String { "parley:tenant:\(tenant):open" }
    static func rateKey(_ tenant: String) -> String { "parley:tenant:\(tenant):rate" }
    static func processKey(_ process: String) -> String { "parley:node:\(process)" }
    static func tokensKey(_ tenant: String) -> String { "parley:tenant:\(tenant):tokens" }

    public func admit(_ ask: TenantAsk, on loop: EventLoop, _ done: @escaping (SharedVerdict) -> Void) {
        let local = local(loop)
        var answered = false
        let timeout = loop.schedule(after: Self.answerSeconds) {
            guard !answered else { return }
            answered = true
            done(.unavailable("redis did not answer within \(Self.answerSeconds) s"))
        }
        let keys = [Self.openKey(ask.tenant), Self.rateKey(ask.tenant), Self.processKey(me), Self.tokensKey(ask.tenant)]
        let arguments = [me, String(ask.limits.maxSessions ?? 0), String(ask.limits.sessionsPerMinute ?? 0), ask.session ?? "",
                         ask.resuming ?? "", String(Self.processSeconds), String(Self.leaseSeconds), RedisKeys.token(""),
                         String(ask.limits.tokensPerMinute ?? 0)]
        local.client.send(["EVAL", Self.admitScript, String(keys.count)] + keys + arguments) { [self] result in
            timeout.cancel()
            let verdict = verdict(result, tenant: ask.tenant, local: local, home: loop.handle)
            guard !answered else {
                // Decided without Redis already: a place it granted since is given straight back.
                if case .admitted(let place) = verdict { place.release() }
                return
            }
            answered = true
            done(verdict)
        }
    }

    private func verdict(_ result: Result<RedisReply, RedisError>, tenant: String, local: RedisTenantLoop, home: LoopHandle) -> SharedVerdict {
        let reply: [RedisReply]
        switch result {
        case .failure(let error): return .unavailable("redis: \(error)")
        case .success(.array(let parts)): reply = parts
        case .success(let other): return .unavailable("redis answered the admission with \(other)")
        }
        let words = reply.map { $0.text ?? "" }
        switch words.first {
        case "admitted", "moved":
            let session = words.count > 1 ? words[1] : ""
            let release = Self.releaseCommand(tenant: tenant, process: me, session: session)
            return .admitted(SharedPlace {
                home.execute { local.client.send(release) { _ in } }
            })
        case "held":
            // This process holds the session's place already (its parked copy's lease).
            return .admitted(SharedPlace {})
        case "sessions", "rate", "tokens":
            let retry = words.count > 1 ? Int(words[1]) ?? 1 : 1
            let reason: TenantLedger.Refusal = words[0] == "sessions" ? .sessions : words[0] == "rate" ? .rate : .tokens
            return .refused(TenantRefusal(reason: reason, retryAfterSeconds: max(1, retry)))
        default:
            return .unavailable("redis answered the admission with \(words)")
        }
    }

    public func spend(_ tokens: Int, of tenant: String, perMinute: Int, on loop: EventLoop, _ done: @escaping (SpendVerdict) -> Void) {
        local(loop).client.send(["EVAL", Self.spendScript, "1", Self.tokensKey(tenant), String(tokens), String(perMinute)]) { result in
            guard case .success(.integer(let wait)) = result else { return done(.unavailable) }
            done(.spent(waitSeconds: wait > 0 ? wait : nil))
        }
    }

    static func releaseCommand(tenant: String, process: String, session: String) -> [String] {
        ["EVAL", releaseScript, "1", openKey(tenant), process, session]
    }

    // MARK: Per loop

    private func local(_ loop: EventLoop) -> RedisTenantLoop {
        let all = loop.local { RedisTenantLoops() }
        let key = ObjectIdentifier(self)
        if let existing = all.byCount[key] { return existing }
        let made = RedisTenantLoop(client: RedisClient(host: host, port: port, loop: loop))
        all.byCount[key] = made
        // One loop of the process keeps its key alive; every admission refreshes it too.
        if all.byCount.count == 1, heartbeatLoop.withLock({ claimed in defer { claimed = true }; return !claimed }) {
            heartbeat(made, on: loop)
        }
        return made
    }

    private let heartbeatLoop = Mutex(false)

    private func heartbeat(_ local: RedisTenantLoop, on loop: EventLoop) {
        beat(local)
        _ = loop.schedule(after: Self.heartbeatSeconds) { [weak self] in self?.heartbeat(local, on: loop) }
    }

    /// Keeps this process's key alive; `done` says whether Redis had forgotten the process.
    func beat(on loop: EventLoop, _ done: @escaping (Bool) -> Void = { _ in }) { beat(local(loop), done) }

    private func beat(_ local: RedisTenantLoop, _ done: @escaping (Bool) -> Void = { _ in }) {
        local.client.send(["SET", Self.processKey(me), "1", "EX", String(Self.processSeconds), "GET"]) { [self] result in
            // Redis had forgotten this process (restarted, or lost it past its expiry): what the
            // process holds is counted again.
            guard case .success(.null) = result else { return done(false) }
            for (tenant, open) in openCounts() where open > 0 {
                local.client.send(["HSET", Self.openKey(tenant), me, String(open)]) { _ in }
            }
            done(true)
        }
    }

    // MARK: Scripts

    /// KEYS: the tenant's open hash, its rate bucket, this process's key, its token bucket. ARGV:
    /// this process, the most sessions (0: none), sessions a minute (0: none), the session's id
    /// when resumable (or ""), the token hash of a resume (or ""), the process key's expiry, a
    /// lease's expiry, the store's token key prefix, and model tokens a minute (0: none). Answers admitted|moved|held with the session whose lease it
    /// holds, or sessions|rate|tokens with the seconds to wait; a resume (a token hash given) is
    /// never refused.
    static let admitScript = bucketFunctions + """
    local me = ARGV[1]
    redis.call('SET', KEYS[3], '1', 'EX', ARGV[6])
    local session = ARGV[4]
    if ARGV[5] ~= '' then
      local sid = redis.call('GET', ARGV[8] .. ARGV[5])
      if sid then
        local lease = 'parley:lease:' .. sid
        local holder = redis.call('GET', lease)
        if holder == me then return {'held', sid} end
        if holder and holder ~= 'ended' and redis.call('EXISTS', 'parley:node:' .. holder) == 1 then
          if redis.call('HINCRBY', KEYS[1], holder, -1) <= 0 then redis.call('HDEL', KEYS[1], holder) end
          redis.call('HINCRBY', KEYS[1], me, 1)
          redis.call('SET', lease, me, 'EX', ARGV[7])
          return {'moved', sid}
        end
        if holder ~= 'ended' then
          -- Its holder is gone, and its place with it: taken again here whatever the count, as
          -- the process's own ledger does (TenantLedger.admit); it was admitted when it opened.
          redis.call('HINCRBY', KEYS[1], me, 1)
          redis.call('SET', lease, me, 'EX', ARGV[7])
          return {'admitted', sid}
        end
        session = sid
      end
      -- A resume is never refused for the count, the rate or the tokens (TenantLedger.admit):
      -- its place was taken when it opened. Its token not found here (its record not yet
      -- written, or no such token) or its session ended, the resume fails to find the session
      -- and gives the place back; refused 429 instead, it was a resume lost for the count
      -- (make chaos, one run in four, when the capped tenant was in make test's short run).
      redis.call('HINCRBY', KEYS[1], me, 1)
      if session ~= '' then redis.call('SET', 'parley:lease:' .. session, me, 'EX', ARGV[7]) end
      return {'admitted', session}
    end
    local open = 0
    local fields = redis.call('HGETALL', KEYS[1])
    for i = 1, #fields, 2 do
      if fields[i] == me or redis.call('EXISTS', 'parley:node:' .. fields[i]) == 1 then
        open = open + tonumber(fields[i + 1])
      else
        redis.call('HDEL', KEYS[1], fields[i])
      end
    end
    local most = tonumber(ARGV[2])
    if most > 0 and open >= most then return {'sessions', '1'} end
    local budget = tonumber(ARGV[9])
    if budget > 0 then
      local tokens = refilled(KEYS[4], budget)
      if tokens < 1 then return {'tokens', tostring(wait(tokens, budget))} end
    end
    local perMinute = tonumber(ARGV[3])
    if perMinute > 0 then
      local tokens, now = refilled(KEYS[2], perMinute)
      local taken = tokens >= 1
      if taken then tokens = tokens - 1 end
      redis.call('HSET', KEYS[2], 'tokens', tostring(tokens), 'at', tostring(now))
      redis.call('EXPIRE', KEYS[2], 120)
      if not taken then return {'rate', tostring(wait(tokens, perMinute))} end
    end
    redis.call('HINCRBY', KEYS[1], me, 1)
    if session ~= '' then redis.call('SET', 'parley:lease:' .. session, me, 'EX', ARGV[7]) end
    return {'admitted', session}
    """

    /// KEYS: the tenant's token bucket. ARGV: the tokens a reply spent, the budget a minute.
    /// Answers the seconds until the bucket has a token again, 0 while it has.
    static let spendScript = bucketFunctions + """
    local budget = tonumber(ARGV[2])
    local tokens, now = refilled(KEYS[1], budget)
    tokens = tokens - tonumber(ARGV[1])
    redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
    redis.call('EXPIRE', KEYS[1], 3600)
    if tokens >= 1 then return 0 end
    return wait(tokens, budget)
    """

    /// The buckets' arithmetic, as `TokenBucket` does it, for both scripts: a hash of `tokens` and
    /// `at` (Redis's TIME, so every process refills alike), full when new, refilled evenly.
    static let bucketFunctions = """
    local function refilled(key, perMinute)
      local t = redis.call('TIME')
      local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
      local bucket = redis.call('HMGET', key, 'tokens', 'at')
      local tokens = tonumber(bucket[1]) or perMinute
      return math.min(perMinute, tokens + (now - (tonumber(bucket[2]) or now)) * perMinute / 60), now
    end
    local function wait(tokens, perMinute)
      return math.ceil((1 - tokens) * 60 / perMinute)
    end

    """

    /// KEYS: the tenant's open hash. ARGV: this process, the session whose lease it held (or "").
    /// A session that moved to another process took its place along: nothing to give back.
    static let releaseScript = """
    if ARGV[2] ~= '' then
      local lease = 'parley:lease:' .. ARGV[2]
      local holder = redis.call('GET', lease)
      if holder and holder ~= ARGV[1] then return 0 end
      redis.call('SET', lease, 'ended', 'EX', 600)
    end
    if redis.call('HINCRBY', KEYS[1], ARGV[1], -1) <= 0 then redis.call('HDEL', KEYS[1], ARGV[1]) end
    return 1
    """
}

/// The count's connection on one loop. Used only on that loop; a release from elsewhere is
/// posted there first.
final class RedisTenantLoop: @unchecked Sendable {
    let client: RedisClient

    init(client: RedisClient) {
        self.client = client
    }
}

/// Every Redis count's state on one loop (`EventLoop.local`).
final class RedisTenantLoops {
    var byCount: [ObjectIdentifier: RedisTenantLoop] = [:]
}
