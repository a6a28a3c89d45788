/// A tenant's session rate: a bucket of `perMinute` sessions, refilled evenly, one taken per
/// session admitted. A value, so the process's ledger and the workers' shared table keep it alike.
struct TokenBucket: Equatable {
    /// Negative until first used: then it starts full.
    var tokens = -1.0
    /// Monotonic nanoseconds of the last refill.
    var refilledAt: UInt64 = 0

    /// Takes one session at `now`: nil when taken, else the seconds until one will be there.
    mutating func take(perMinute: Int, now: UInt64) -> Int? {
        let rate = Double(perMinute) / 60
        tokens = tokens < 0 ? Double(perMinute) : min(Double(perMinute), tokens + Double(now &- refilledAt) / 1e9 * rate)
        refilledAt = now
        guard tokens < 1 else {
            tokens -= 1
            return nil
        }
        return Int(((1 - tokens) / rate).rounded(.up))
    }
}
