import JSON
import Loop
import Metrics
import Synchronization
import Logging

let accessLog = Logger(label: "parley.access")

/// A tenant: whom a session's credentials name. A JWT's `sub`; an API key's name in the keys file
/// (or `key-` and the start of its digest); for a client secret, the tenant of the credential that
/// minted it. Sessions on a server without auth have none.
public enum Tenant {
    public static let maxNameBytes = 128
}

/// What a tenant may open, and what each of its sessions may spend. Server-wide defaults
/// (`--tenant-max-sessions`, `--tenant-sessions-per-minute`) that a JWT's `parley_*` claims replace
/// for its tenant; the per-session ceilings can only tighten the server's own.
public struct TenantLimits: Sendable, Equatable {
    /// Sessions open at once.
    public var maxSessions: Int?
    /// Sessions opened a minute (a bucket of that many, refilled evenly).
    public var sessionsPerMinute: Int?
    /// Longest session in seconds.
    public var maxSessionSeconds: Double?
    /// Model tokens (input and output, as `response.done` reports them) a session may spend.
    public var maxSessionTokens: Int?
    /// Model tokens the tenant's sessions may spend a minute, together (a bucket of that many,
    /// refilled evenly): while it is empty, new sessions get 429 and new replies fail.
    public var tokensPerMinute: Int?

    public init(maxSessions: Int? = nil, sessionsPerMinute: Int? = nil, maxSessionSeconds: Double? = nil, maxSessionTokens: Int? = nil,
                tokensPerMinute: Int? = nil) {
        self.maxSessions = maxSessions
        self.sessionsPerMinute = sessionsPerMinute
        self.maxSessionSeconds = maxSessionSeconds
        self.maxSessionTokens = maxSessionTokens
        self.tokensPerMinute = tokensPerMinute
    }

    /// The claims a token may carry, each a positive number.
    static let claimNames = ["parley_max_sessions", "parley_sessions_per_minute", "parley_max_session_minutes", "parley_max_session_tokens",
                             "parley_tokens_per_minute"]

    static func parse(claims: JSON) -> Result<TenantLimits, JWTRefusal> {
        var limits = TenantLimits()
        for name in Self.claimNames {
            guard let value = claims[name] else { continue }
            guard let number = value.double, number > 0, number <= 1e9 else { return .failure(.invalidClaim("\(name) must be a positive number")) }
            switch name {
            case "parley_max_sessions": limits.maxSessions = Int(number)
            case "parley_sessions_per_minute": limits.sessionsPerMinute = Int(number)
            case "parley_max_session_minutes": limits.maxSessionSeconds = number * 60
            case "parley_tokens_per_minute": limits.tokensPerMinute = Int(number)
            default: limits.maxSessionTokens = Int(number)
            }
        }
        return .success(limits)
    }

    /// These limits where set, `defaults` elsewhere.
    func over(_ defaults: TenantLimits) -> TenantLimits {
        TenantLimits(maxSessions: maxSessions ?? defaults.maxSessions, sessionsPerMinute: sessionsPerMinute ?? defaults.sessionsPerMinute,
                     maxSessionSeconds: maxSessionSeconds ?? defaults.maxSessionSeconds, maxSessionTokens: maxSessionTokens ?? defaults.maxSessionTokens,
                     tokensPerMinute: tokensPerMinute ?? defaults.tokensPerMinute)
    }

    /// As a token's claims, and in a client secret's payload, so that a session opened with it
    /// keeps its minter's limits.
    public var claims: [(String, JSON)] {
        var members: [(String, JSON)] = []
        if let maxSessions { members.append(("parley_max_sessions", .int(maxSessions))) }
        if let sessionsPerMinute { members.append(("parley_sessions_per_minute", .int(sessionsPerMinute))) }
        if let maxSessionSeconds { members.append(("parley_max_session_minutes", .number(maxSessionSeconds / 60))) }
        if let maxSessionTokens { members.append(("parley_max_session_tokens", .int(maxSessionTokens))) }
        if let tokensPerMinute { members.append(("parley_tokens_per_minute", .int(tokensPerMinute))) }
        return members
    }
}

/// The process's account of each tenant: sessions open and the bucket of its session rate. Shared
/// by every loop behind one lock, taken once per upgrade and once per close: an upgrade costs tens
/// of microseconds, the lock well under one.
///
/// With `--workers`, each worker process keeps its own account, so a tenant's limits hold per
/// worker. Metrics name at most `metricsTenants` tenants (the first seen); the rest add up under
/// `tenant="_other"`, so a deployment with many tenants does not grow the scrape without bound.
public final class TenantLedger: Sendable {
    public static let shared = TenantLedger(registry: .process)

    public enum Refusal: String, Sendable, CaseIterable, MetricLabel {
        public static let labelName = "reason"
        case sessions = "tenant_sessions"
        case rate = "tenant_rate"
        case tokens = "tenant_tokens"

        var index: Int { Self.allCases.firstIndex(of: self) ?? 0 }
    }

    /// Tenants given their own series, by default; `configure` changes it before serving.
    public static let defaultMetricsTenants = 50
    /// Past this many tenants held, those with nothing open and a full bucket are forgotten.
    static let compactAbove = 10_000

    private struct Entry {
        var open = 0
        var bucket = TokenBucket()
        /// The bucket of the process's share of the rate, while the shared count cannot answer.
        var fallbackBucket = TokenBucket()
        /// The model tokens its sessions spent (`TenantLimits.tokensPerMinute`), counted here
        /// without a shared count, and while it cannot answer (then the process's share).
        var tokens = TokenBucket()
        /// When the shared token budget has tokens again, as the last spend was told (monotonic ns).
        var tokensBackAt: UInt64 = 0
        var series: Int
    }

    private struct Series {
        var open = 0
        var opened = 0
        var refused = [Int](repeating: 0, count: Refusal.allCases.count)
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// Whether the shared count (`SharedTenantCount`) answered last time: nil before it was
        /// first asked, and always without one.
        var sharedUp: Bool?
        var localAdmissions = 0
        /// The tenants with series of their own; `series` is `_other`'s, then theirs in this order.
        var names: [String] = []
        var series: [Series] = [Series()]
        var metricsTenants = TenantLedger.defaultMetricsTenants
    }

    private let state = Mutex(State())
    /// Where its series are declared.
    public let registry: MetricsRegistry

    public init(registry: MetricsRegistry = MetricsRegistry()) {
        self.registry = registry
        func byTenant(_ name: String, _ help: String, _ kind: PrometheusText.Kind, _ write: @escaping @Sendable (inout ComputedFamily.Samples, TenantLabel, Series) -> Void) {
            _ = ComputedFamily(name: name, help: help, kind: kind, registry: registry) { [weak self] samples in
                guard let (labels, series) = self?.snapshot() else { return }
                for (label, s) in zip(labels, series) { write(&samples, label, s) }
            }
        }
        byTenant("parley_tenant_sessions_open", "Sessions open by tenant (the first tenants seen by name, the rest as _other).", .gauge) { $0.add($1, $2.open) }
        byTenant("parley_tenant_sessions_total", "Sessions admitted by tenant.", .counter) { $0.add($1, $2.opened) }
        _ = ComputedFamily(name: "parley_tenant_shared_count_up", help: "1 while tenant limits are counted across processes (workers' table or Redis), 0 while this process counts its share alone; absent without a shared count.", kind: .gauge, registry: registry) { [weak self] samples in
            if let up = self?.state.withLock(\.sharedUp) { samples.add(up ? 1 : 0) }
        }
        _ = ComputedFamily(name: "parley_tenant_local_admissions_total", help: "Sessions this process admitted against its share of a tenant's limits because the shared count could not answer.", kind: .counter, registry: registry) { [weak self] samples in
            samples.add(self?.state.withLock(\.localAdmissions) ?? 0)
        }
        byTenant("parley_tenant_refusals_total", "Upgrades refused with 429 for a tenant's limit, by tenant and reason.", .counter) { samples, label, s in
            for (i, reason) in Refusal.allCases.enumerated() { samples.add(label, reason, s.refused[i]) }
        }
    }

    /// The shared count answered (`up`), or could not (`why`): a change is logged, once.
    func sharedCount(up: Bool, scope: String, why: String = "") {
        let was = state.withLock { state in
            defer { state.sharedUp = up; if !up { state.localAdmissions += 1 } }
            return state.sharedUp
        }
        guard was != up else { return }
        if up {
            accessLog.info("tenant limits are counted across processes again", metadata: ["scope": "\(scope)"])
        } else {
            accessLog.warning("tenant limits cannot be counted across processes; each process counts its share alone until they can",
                              metadata: ["scope": "\(scope)", "error": "\(why)"])
        }
    }

    public func configure(metricsTenants: Int) {
        state.withLock { $0.metricsTenants = max(0, metricsTenants) }
    }

    /// Admits a session for `tenant` at `now` (monotonic ns), or says which limit it is over and
    /// in how many seconds to retry.
    /// `resuming`: the session was admitted once already (a resume with its token): counted, never
    /// refused for the sessions at once or a minute, since its place was taken when it opened.
    /// Refused, it would be lost to sessions opened while its node was going (make chaos: a
    /// capped tenant's resumes met 429 132 times in 3 minutes, their conversations unreachable).
    func admit(_ tenant: String, limits: TenantLimits, now: UInt64, resuming: Bool = false) -> Result<TenantLease, TenantRefusal> {
        state.withLock { state in
            var entry = state.entries[tenant] ?? Entry(series: Self.series(for: tenant, in: &state))
            var refusal: TenantRefusal?
            if resuming {
                // Counted below, never refused.
            } else if let maxSessions = limits.maxSessions, entry.open >= maxSessions {
                refusal = TenantRefusal(reason: .sessions, retryAfterSeconds: 1)
            } else if let retry = Self.tokensWait(&entry, limits, now: now) {
                refusal = TenantRefusal(reason: .tokens, retryAfterSeconds: retry)
            } else if let perMinute = limits.sessionsPerMinute, let retry = entry.bucket.take(perMinute: perMinute, now: now) {
                refusal = TenantRefusal(reason: .rate, retryAfterSeconds: retry)
            }
            if let refusal {
                state.series[entry.series].refused[refusal.reason.index] += 1
                state.entries[tenant] = entry
                return .failure(refusal)
            }
            entry.open += 1
            state.series[entry.series].open += 1
            state.series[entry.series].opened += 1
            state.entries[tenant] = entry
            if state.entries.count > Self.compactAbove { Self.compact(&state, now: now) }
            let lease = TenantLease(tenant: tenant, ledger: self)
            lease.limits = limits
            return .success(lease)
        }
    }

    fileprivate func release(_ tenant: String) {
        state.withLock { state in
            guard var entry = state.entries[tenant] else { return }
            entry.open -= 1
            state.series[entry.series].open -= 1
            state.entries[tenant] = entry
        }
    }

    /// Every tenant with sessions open in this process, and how many.
    public func openByTenant() -> [(tenant: String, open: Int)] {
        state.withLock { state in state.entries.compactMap { $0.value.open > 0 ? ($0.key, $0.value.open) : nil } }
    }

    /// Sessions open for `tenant` in this process.
    func openSessions(_ tenant: String) -> Int { state.withLock { $0.entries[tenant]?.open ?? 0 } }

    /// For a session this process admitted (it is counted in `open` already) while the shared
    /// count could not answer: the process's share of the limits, `limits` divided by `shares`
    /// (the workers), at least one session each. nil: within the share; else the refusal, counted.
    func withinShare(_ tenant: String, limits: TenantLimits, shares: Int, now: UInt64) -> TenantRefusal? {
        state.withLock { state in
            guard var entry = state.entries[tenant] else { return nil }
            var refusal: TenantRefusal?
            if let maxSessions = limits.maxSessions, entry.open > max(1, maxSessions / shares) {
                refusal = TenantRefusal(reason: .sessions, retryAfterSeconds: 1)
            } else if let perMinute = limits.sessionsPerMinute,
                      let retry = entry.fallbackBucket.take(perMinute: max(1, perMinute / shares), now: now) {
                refusal = TenantRefusal(reason: .rate, retryAfterSeconds: retry)
            }
            if let refusal { state.series[entry.series].refused[refusal.reason.index] += 1 }
            state.entries[tenant] = entry
            return refusal
        }
    }

    /// Seconds until the tenant's token budget has tokens again, as this process knows it; nil
    /// while it has (or without a budget).
    private static func tokensWait(_ entry: inout Entry, _ limits: TenantLimits, now: UInt64) -> Int? {
        guard let perMinute = limits.tokensPerMinute else { return nil }
        if entry.tokensBackAt > now { return Int((Double(entry.tokensBackAt - now) / 1e9).rounded(.up)) }
        return entry.tokens.waitNow(perMinute: perMinute, now: now)
    }

    /// Whether `tenant`'s token budget is spent: the seconds until it is not.
    func tokensWait(_ tenant: String, limits: TenantLimits, now: UInt64) -> Int? {
        state.withLock { state in
            guard var entry = state.entries[tenant] else { return nil }
            defer { state.entries[tenant] = entry }
            return Self.tokensWait(&entry, limits, now: now)
        }
    }

    /// A reply's tokens, spent from the bucket this process keeps (the tenant's whole budget
    /// without a shared count).
    func spend(_ tokens: Int, of tenant: String, perMinute: Int, now: UInt64) {
        state.withLock { state in
            guard var entry = state.entries[tenant] else { return }
            _ = entry.tokens.spend(tokens, perMinute: perMinute, now: now)
            state.entries[tenant] = entry
        }
    }

    /// What the shared count said after a spend: the budget has tokens again in `seconds`.
    func tokensBack(_ tenant: String, inSeconds seconds: Int?, now: UInt64) {
        state.withLock { state in
            guard var entry = state.entries[tenant] else { return }
            entry.tokensBackAt = seconds.map { now + UInt64($0) * 1_000_000_000 } ?? 0
            state.entries[tenant] = entry
        }
    }

    /// A refusal the shared count gave, counted under the tenant as the process's own are.
    func countRefusal(_ tenant: String, _ refusal: TenantRefusal) {
        state.withLock { state in
            guard let entry = state.entries[tenant] else { return }
            state.series[entry.series].refused[refusal.reason.index] += 1
        }
    }

    /// The series a tenant counts in: its own, for the first `metricsTenants` seen; else `_other`,
    /// which is series 0, so that naming a new tenant never moves anyone else's.
    private static func series(for tenant: String, in state: inout State) -> Int {
        if let index = state.names.firstIndex(of: tenant) { return index + 1 }
        guard state.names.count < state.metricsTenants else { return 0 }
        state.names.append(tenant)
        state.series.append(Series())
        return state.series.count - 1
    }

    /// Forgets tenants with nothing open whose bucket would be full by now: they would be made
    /// afresh the same.
    private static func compact(_ state: inout State, now: UInt64) {
        state.entries = state.entries.filter {
            $0.value.open > 0 || $0.value.tokensBackAt > now
                || Double(now &- max($0.value.bucket.refilledAt, $0.value.fallbackBucket.refilledAt, $0.value.tokens.refilledAt)) < 60e9
        }
    }

    /// Each tenant's label and series, `_other` first, as a scrape reads them.
    private func snapshot() -> ([TenantLabel], [Series]) {
        let (names, series) = state.withLock { ($0.names, $0.series) }
        return ([TenantLabel.other] + names.map(TenantLabel.init(labelValue:)), series)
    }

    /// Its series alone, as a scrape shows them.
    public func render() -> String { registry.render() }
}

/// A tenant's name on the `parley_tenant_*` series (`_other` for those past `metricsTenants`).
struct TenantLabel: MetricLabel {
    static let labelName = "tenant"
    static let other = TenantLabel(labelValue: "_other")
    let labelValue: String
}

/// Why a tenant's session was refused, and when to try again (the 429's Retry-After).
public struct TenantRefusal: Error, Equatable, Sendable {
    public let reason: TenantLedger.Refusal
    public let retryAfterSeconds: Int

    public init(reason: TenantLedger.Refusal, retryAfterSeconds: Int) {
        self.reason = reason
        self.retryAfterSeconds = retryAfterSeconds
    }
}

/// One session's place in its tenant's count, given back when the session lets go of it (its
/// handler is freed), whether or not the upgrade ever completed: in this process's ledger, and
/// in the shared count when one granted it a place.
public final class TenantLease {
    public let tenant: String
    let ledger: TenantLedger
    /// The place the shared count granted, once it has.
    var shared: SharedPlace?

    fileprivate init(tenant: String, ledger: TenantLedger) {
        self.tenant = tenant
        self.ledger = ledger
    }

    /// Where the tenant's tokens are counted beyond the process, and the process's share.
    var count: (shared: (any SharedTenantCount)?, shares: Int) = (nil, 1)
    /// The tenant's limits, as admitted.
    var limits = TenantLimits()

    deinit {
        ledger.release(tenant)
        shared?.release()
    }

    /// A reply's tokens, spent from the tenant's budget (`TenantLimits.tokensPerMinute`): in the
    /// shared count when there is one (which says when the budget has tokens again), else here.
    public func spend(_ tokens: Int, on loop: EventLoop) {
        guard let perMinute = limits.tokensPerMinute, tokens > 0 else { return }
        let ledger = ledger, tenant = tenant, shares = count.shares
        // Counted here, a spend weighs `shares` times: the process's share of the budget is the
        // budget divided among the processes, at the same rate.
        let alone = { ledger.spend(tokens * shares, of: tenant, perMinute: perMinute, now: MonotonicClock.nanoseconds()) }
        guard let shared = count.shared, self.shared != nil else { return alone() }
        shared.spend(tokens, of: tenant, perMinute: perMinute, on: loop) { verdict in
            switch verdict {
            case .spent(let seconds): ledger.tokensBack(tenant, inSeconds: seconds, now: MonotonicClock.nanoseconds())
            case .unavailable: alone()
            }
        }
    }

    /// Seconds until the tenant may spend tokens again; nil while it may.
    public func tokensWait() -> Int? {
        ledger.tokensWait(tenant, limits: limits, now: MonotonicClock.nanoseconds())
    }
}
