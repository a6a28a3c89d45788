/// A tenant's rate of something: sessions opened, or model tokens spent. A bucket of `perMinute`,
/// refilled evenly; a session takes one, a reply's tokens are spent after it (the bucket may go
/// below zero: a reply is delivered whole). A value, so the process's ledger and the workers'
/// shared table keep it alike.
struct TokenBucket: Equatable {
    /// Negative and `refilledAt` zero until first used: then it starts full.
    var tokens = 0.0
    /// Monotonic nanoseconds of the last refill; zero before the first.
    var refilledAt: UInt64 = 0

    mutating func refill(perMinute: Int, now: UInt64) {
        let full = Double(perMinute)
        tokens = refilledAt == 0 ? full : min(full, tokens + Double(now &- refilledAt) / 1e9 * full / 60)
        refilledAt = max(now, 1)
    }

    /// Takes one at `now`: nil when taken, else the seconds until one will be there.
    mutating func take(perMinute: Int, now: UInt64) -> Int? {
        refill(perMinute: perMinute, now: now)
        guard tokens < 1 else {
            tokens -= 1
            return nil
        }
        return wait(perMinute: perMinute)
    }

    /// Spends `amount` at `now`; says, as `wait` does, whether any is left.
    mutating func spend(_ amount: Int, perMinute: Int, now: UInt64) -> Int? {
        refill(perMinute: perMinute, now: now)
        tokens -= Double(amount)
        return wait(perMinute: perMinute)
    }

    /// Whether one is there at `now` (nil), else the seconds until one will be.
    mutating func waitNow(perMinute: Int, now: UInt64) -> Int? {
        refill(perMinute: perMinute, now: now)
        return wait(perMinute: perMinute)
    }

    private func wait(perMinute: Int) -> Int? {
        tokens >= 1 ? nil : Int(((1 - tokens) * 60 / Double(perMinute)).rounded(.up))
    }
}
