import Loop
#if canImport(Glibc)
import Glibc
#endif

/// The tenants' count shared by the workers of one box without Redis: a table in a file every
/// worker maps (`SharedRegion`, made by the supervisor in its directory), one lock for all of it.
/// An admission takes the lock once (a probe of a few slots), as a close does; both are rare next
/// to frames, so one lock is enough.
///
/// Each slot counts a tenant's open sessions per worker, so that a worker that dies gives its
/// sessions back: the supervisor clears that worker's column when it reaps it. Tenants are known
/// by a 64-bit hash of their name; a slot whose tenant has nothing open and has been quiet for a
/// minute is taken over by the next new tenant that probes past it (slots are never emptied, so
/// no probe chain breaks).
public final class WorkerTenantTable: SharedTenantCount {
    public static let defaultSlots = 8192
    /// Probes before a new tenant is counted by its process alone (the table is that full).
    static let maxProbes = 64
    static let idleReuseNanoseconds: UInt64 = 60_000_000_000
    private static let magic: UInt64 = 0x504C_5954_4E54_3031  // "PLYTNT01"
    private static let headerBytes = 64

    private let region: SharedRegion
    private let slots: Int
    private let workers: Int
    /// This process's column; nil for the supervisor, which only clears.
    private let worker: Int?
    private let stride: Int

    public let scope = "workers"

    /// Bytes the file holds for `slots` tenants and `workers` workers (less the lock's room).
    static func bytes(slots: Int, workers: Int) -> Int { headerBytes + slots * stride(workers: workers) }
    private static func stride(workers: Int) -> Int { (openOffset + 4 * workers + 7) / 8 * 8 }
    /// A slot: its key (+0), the session bucket (+8 tokens, +16 refilled at), last used (+24), the
    /// model-token bucket (+32, +40), then each worker's open sessions (Int32 each).
    private static let openOffset = 48

    /// The supervisor's: makes the table at `path`.
    public static func create(_ path: String, workers: Int, slots: Int = defaultSlots) throws(SystemError) -> WorkerTenantTable {
        let region = try SharedRegion.create(path, count: bytes(slots: slots, workers: workers))
        region.withLock { memory in
            memory.storeBytes(of: UInt64(slots), toByteOffset: 8, as: UInt64.self)
            memory.storeBytes(of: UInt64(workers), toByteOffset: 16, as: UInt64.self)
            memory.storeBytes(of: magic, toByteOffset: 0, as: UInt64.self)
        }
        return WorkerTenantTable(region: region, slots: slots, workers: workers, worker: nil)
    }

    /// A worker's: maps the supervisor's table, counting in column `worker`.
    public static func open(_ path: String, workers: Int, worker: Int, slots: Int = defaultSlots) throws(SystemError) -> WorkerTenantTable {
        let region = try SharedRegion.open(path, count: bytes(slots: slots, workers: workers))
        let header = region.withLock { ($0.load(as: UInt64.self), $0.load(fromByteOffset: 8, as: UInt64.self), $0.load(fromByteOffset: 16, as: UInt64.self)) }
        guard header == (magic, UInt64(slots), UInt64(workers)), (0..<workers).contains(worker) else {
            throw SystemError("\(path) is not a tenant table for \(workers) workers", errno: EINVAL)
        }
        return WorkerTenantTable(region: region, slots: slots, workers: workers, worker: worker)
    }

    private init(region: SharedRegion, slots: Int, workers: Int, worker: Int?) {
        self.region = region
        self.slots = slots
        self.workers = workers
        self.worker = worker
        stride = Self.stride(workers: workers)
    }

    public func admit(_ ask: TenantAsk, on loop: EventLoop, _ done: @escaping (SharedVerdict) -> Void) {
        done(admit(ask.tenant, limits: ask.limits, now: MonotonicClock.nanoseconds()))
    }

    func admit(_ tenant: String, limits: TenantLimits, now: UInt64) -> SharedVerdict {
        guard let worker else { return .unavailable("the supervisor admits no sessions") }
        let key = Self.key(tenant)
        let verdict: Result<Void, TenantRefusal>? = region.withLock { memory in
            guard let slot = find(key, in: memory, now: now, making: true) else { return nil }
            var open = 0
            for column in 0..<workers { open += Int(memory.load(fromByteOffset: slot + Self.openOffset + 4 * column, as: Int32.self)) }
            if let maxSessions = limits.maxSessions, open >= maxSessions {
                return .failure(TenantRefusal(reason: .sessions, retryAfterSeconds: 1))
            }
            if let perMinute = limits.tokensPerMinute,
               let retry = Self.withBucket(at: slot + 32, memory, { $0.waitNow(perMinute: perMinute, now: now) }) {
                return .failure(TenantRefusal(reason: .tokens, retryAfterSeconds: retry))
            }
            if let perMinute = limits.sessionsPerMinute,
               let retry = Self.withBucket(at: slot + 8, memory, { $0.take(perMinute: perMinute, now: now) }) {
                return .failure(TenantRefusal(reason: .rate, retryAfterSeconds: retry))
            }
            let mine = slot + Self.openOffset + 4 * worker
            memory.storeBytes(of: memory.load(fromByteOffset: mine, as: Int32.self) + 1, toByteOffset: mine, as: Int32.self)
            memory.storeBytes(of: now, toByteOffset: slot + 24, as: UInt64.self)
            return .success(())
        }
        switch verdict {
        case nil: return .unavailable("the workers' tenant table is full")
        case .failure(let refusal)?: return .refused(refusal)
        case .success?: return .admitted(SharedPlace { [self] in release(key) })
        }
    }

    public func spend(_ tokens: Int, of tenant: String, perMinute: Int, on loop: EventLoop, _ done: @escaping (SpendVerdict) -> Void) {
        let now = MonotonicClock.nanoseconds()
        done(region.withLock { memory in
            guard let slot = find(Self.key(tenant), in: memory, now: now, making: false) else { return .unavailable }
            return .spent(waitSeconds: Self.withBucket(at: slot + 32, memory) { $0.spend(tokens, perMinute: perMinute, now: now) })
        })
    }

    /// `body` on the bucket stored at `offset`, stored back after. Under the lock.
    private static func withBucket<T>(at offset: Int, _ memory: UnsafeMutableRawPointer, _ body: (inout TokenBucket) -> T) -> T {
        var bucket = TokenBucket(tokens: memory.load(fromByteOffset: offset, as: Double.self), refilledAt: memory.load(fromByteOffset: offset + 8, as: UInt64.self))
        let result = body(&bucket)
        memory.storeBytes(of: bucket.tokens, toByteOffset: offset, as: Double.self)
        memory.storeBytes(of: bucket.refilledAt, toByteOffset: offset + 8, as: UInt64.self)
        return result
    }

    private func release(_ key: UInt64) {
        guard let worker else { return }
        let now = MonotonicClock.nanoseconds()
        region.withLock { memory in
            guard let slot = find(key, in: memory, now: now, making: false) else { return }
            let mine = slot + Self.openOffset + 4 * worker
            let open = memory.load(fromByteOffset: mine, as: Int32.self)
            // Zero already: the supervisor cleared this column (this worker was taken for dead).
            if open > 0 { memory.storeBytes(of: open - 1, toByteOffset: mine, as: Int32.self) }
            memory.storeBytes(of: now, toByteOffset: slot + 24, as: UInt64.self)
        }
    }

    /// The supervisor's, for a worker it reaped: its sessions went with it.
    public func clear(worker column: Int) {
        guard (0..<workers).contains(column) else { return }
        region.withLock { memory in
            for index in 0..<slots {
                memory.storeBytes(of: 0, toByteOffset: Self.headerBytes + index * stride + Self.openOffset + 4 * column, as: Int32.self)
            }
        }
    }

    /// Sessions open for `tenant` on the box, for tests and the metrics' curious.
    func openSessions(_ tenant: String) -> Int {
        region.withLock { memory in
            guard let slot = find(Self.key(tenant), in: memory, now: 0, making: false) else { return 0 }
            return (0..<workers).reduce(0) { $0 + Int(memory.load(fromByteOffset: slot + Self.openOffset + 4 * $1, as: Int32.self)) }
        }
    }

    /// The byte offset of `key`'s slot: found, or (when `making`) a slot made for it, empty or
    /// taken over from an idle tenant; nil past `maxProbes`. Under the lock.
    private func find(_ key: UInt64, in memory: UnsafeMutableRawPointer, now: UInt64, making: Bool) -> Int? {
        var reusable: Int?
        let start = Int(key % UInt64(slots))
        for probe in 0..<min(slots, Self.maxProbes) {
            let slot = Self.headerBytes + (start + probe) % slots * stride
            let held = memory.load(fromByteOffset: slot, as: UInt64.self)
            if held == key { return slot }
            if held == 0 {
                guard making else { return nil }
                return claim(reusable ?? slot, for: key, in: memory, now: now)
            }
            if making, reusable == nil, idle(slot, memory, now: now) { reusable = slot }
        }
        return reusable.map { claim($0, for: key, in: memory, now: now) }
    }

    private func idle(_ slot: Int, _ memory: UnsafeMutableRawPointer, now: UInt64) -> Bool {
        let last = memory.load(fromByteOffset: slot + 24, as: UInt64.self)
        guard now &- last >= Self.idleReuseNanoseconds else { return false }
        return (0..<workers).allSatisfy { memory.load(fromByteOffset: slot + Self.openOffset + 4 * $0, as: Int32.self) == 0 }
    }

    private func claim(_ slot: Int, for key: UInt64, in memory: UnsafeMutableRawPointer, now: UInt64) -> Int {
        // Counts and bucket first, the key last: a worker killed half-way leaves a slot no one owns.
        for column in 0..<workers { memory.storeBytes(of: 0, toByteOffset: slot + Self.openOffset + 4 * column, as: Int32.self) }
        // Both buckets unused (refilled at zero): full on first use.
        for offset in [8, 16, 32, 40] { memory.storeBytes(of: 0, toByteOffset: slot + offset, as: UInt64.self) }
        memory.storeBytes(of: now, toByteOffset: slot + 24, as: UInt64.self)
        memory.storeBytes(of: key, toByteOffset: slot, as: UInt64.self)
        return slot
    }

    /// FNV-1a of the name, never 0 (an empty slot).
    static func key(_ tenant: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in tenant.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash == 0 ? 1 : hash
    }
}
