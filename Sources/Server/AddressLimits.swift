import Loop
import Synchronization

/// Per client address: how many connections it holds and how fast it opens them, across every
/// loop of the process (`--max-connections-per-ip`, `--max-connects-per-second-per-ip`). Off
/// unless configured; then each accept costs one getpeername(2) and a lock held for a few
/// arithmetic steps. A worker process (`--workers`) counts its own connections.
final class AddressLimits: Sendable {
    enum Verdict: Equatable {
        case admitted
        /// Refused: too many open, or opening too fast; the client may retry after a second.
        case tooManyOpen, tooFast
    }

    private struct Entry {
        var open = 0
        var tokens: Double
        var refilledAt: UInt64
    }

    let maxOpen: Int?
    let perSecond: Int?
    /// Addresses tracked at most; past it a new address is let through uncounted rather than the
    /// table growing without bound (it forgets addresses with nothing open as it goes).
    static let maxAddresses = 100_000
    private let table = Mutex<[HostKey: Entry]>([:])

    init(maxOpen: Int?, perSecond: Int?) {
        self.maxOpen = maxOpen
        self.perSecond = perSecond
    }

    var isActive: Bool { maxOpen != nil || perSecond != nil }

    /// A connection from `host` at `now` (nanoseconds): admitted (and counted) or refused.
    func admit(_ host: HostKey, now: UInt64) -> Verdict {
        table.withLock { table in
            let rate = Double(perSecond ?? 0)
            var entry = table[host] ?? Entry(tokens: rate, refilledAt: now)
            if table[host] == nil && table.count >= Self.maxAddresses { return .admitted }
            if perSecond != nil {
                entry.tokens = min(rate, entry.tokens + Double(now &- entry.refilledAt) / 1e9 * rate)
                entry.refilledAt = now
                guard entry.tokens >= 1 else {
                    table[host] = entry
                    return .tooFast
                }
            }
            if let maxOpen, entry.open >= maxOpen {
                table[host] = entry
                return .tooManyOpen
            }
            if perSecond != nil { entry.tokens -= 1 }
            entry.open += 1
            table[host] = entry
            return .admitted
        }
    }

    /// A connection from `host` closed at `now`. An address with nothing open whose rate budget
    /// has refilled is forgotten, so the table holds only addresses that matter.
    func release(_ host: HostKey, now: UInt64) {
        table.withLock { table in
            guard var entry = table[host] else { return }
            entry.open -= 1
            let rate = Double(perSecond ?? 0)
            let refilled = entry.tokens + Double(now &- entry.refilledAt) / 1e9 * rate >= rate
            if entry.open <= 0 && refilled { table[host] = nil } else { table[host] = entry }
        }
    }
}
