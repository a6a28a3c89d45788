import Synchronization

/// One trunk's limits on calls out (`max_calls`, `calls_per_second` in its configuration): the
/// calls it carries at once, and a token bucket of call attempts a second (a burst of one
/// second's worth), as providers limit a trunk's channels and its CPS. A value: the clock is an
/// input.
struct SIPTrunkLimiter: Equatable {
    enum Refusal: Equatable, Error {
        /// The trunk carries its most calls at once.
        case busy(max: Int)
        /// The trunk's calls a second are spent; one more is allowed after `retryAfterSeconds`.
        case rate(perSecond: Double, retryAfterSeconds: Int)

        /// Its code in the 429 and its label in /metrics.
        var label: SIPDialRefusal {
            switch self {
            case .busy: .trunkBusy
            case .rate: .trunkRateLimited
            }
        }
    }

    let maxCalls: Int?
    let callsPerSecond: Double?
    private(set) var open = 0
    private var tokens: Double
    private var refilledAt: UInt64?

    init(maxCalls: Int?, callsPerSecond: Double?) {
        self.maxCalls = maxCalls
        self.callsPerSecond = callsPerSecond
        tokens = max(1, callsPerSecond ?? 1)
    }

    /// A call placed at `now`, or why not (nothing is taken then).
    mutating func admit(now: UInt64) throws(Refusal) {
        if let maxCalls, open >= maxCalls { throw .busy(max: maxCalls) }
        if let rate = callsPerSecond {
            let burst = max(1, rate)
            if let refilledAt { tokens = min(burst, tokens + Double(now &- refilledAt) / 1e9 * rate) }
            refilledAt = now
            guard tokens >= 1 else { throw .rate(perSecond: rate, retryAfterSeconds: max(1, Int(((1 - tokens) / rate).rounded(.up)))) }
            tokens -= 1
        }
        open += 1
    }

    /// A call it carried ended (or was never answered).
    mutating func release() { open = max(0, open - 1) }
}

/// The trunks' limiters, shared by every loop that places calls (one lock, held for a few
/// arithmetic steps per call placed and ended).
final class SIPTrunkLimits: Sendable {
    private let limiters: Mutex<[String: SIPTrunkLimiter]>

    init(_ trunks: [String: SIPOutboundTrunk]) {
        limiters = Mutex(trunks.mapValues { SIPTrunkLimiter(maxCalls: $0.maxCalls, callsPerSecond: $0.callsPerSecond) })
    }

    /// A place on `trunk` for one call, given back when the place goes; or the refusal.
    func admit(_ trunk: String, now: UInt64) throws(SIPTrunkLimiter.Refusal) -> SIPTrunkPlace {
        let refusal: SIPTrunkLimiter.Refusal? = limiters.withLock { table in
            guard var limiter = table[trunk] else { return nil }
            do throws(SIPTrunkLimiter.Refusal) { try limiter.admit(now: now) } catch { return error }
            table[trunk] = limiter
            return nil
        }
        if let refusal { throw refusal }
        return SIPTrunkPlace(trunk: trunk, limits: self)
    }

    fileprivate func release(_ trunk: String) {
        limiters.withLock { $0[trunk]?.release() }
    }

    /// Calls each trunk carries now, for /metrics.
    func open() -> [String: Int] { limiters.withLock { $0.mapValues(\.open) } }
}

/// A call's place on its trunk, held by the call while it rings and talks; given back when it
/// goes (as a tenant's `TenantLease` is).
final class SIPTrunkPlace {
    let trunk: String
    private let limits: SIPTrunkLimits

    fileprivate init(trunk: String, limits: SIPTrunkLimits) {
        self.trunk = trunk
        self.limits = limits
    }

    deinit { limits.release(trunk) }
}
