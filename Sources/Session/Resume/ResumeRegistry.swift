import Loop
import Synchronization

/// The sessions of this process whose clients are gone but may come back: by the SHA-256 of their
/// current token, with their home loop and tenant. Shared by every loop, so a reconnect that lands
/// on another loop (SO_REUSEPORT spreads them) still finds its session.
///
/// Claiming takes the entry out under the lock: one token, one reconnect, even when two race.
final class ResumeRegistry: Sendable {
    static let shared = ResumeRegistry()

    struct Parked: Sendable {
        let session: Handoff<RealtimeSessionHandler>
        let home: LoopHandle
        let tenant: String
    }

    private let parked = Mutex<[String: Parked]>([:])

    func park(_ entry: Parked, tokenHash: String) {
        parked.withLock { $0[tokenHash] = entry }
    }

    /// The session parked under `tokenHash` for `tenant`, taken out; nil when there is none, or it
    /// is another tenant's (which keeps it, and learns nothing).
    func claim(tokenHash: String, tenant: String) -> Parked? {
        parked.withLock { table in
            guard let entry = table[tokenHash], entry.tenant == tenant else { return nil }
            table[tokenHash] = nil
            return entry
        }
    }

    /// Whether a session of `tenant` is parked under `tokenHash` (left where it is).
    func isParked(tokenHash: String, tenant: String) -> Bool {
        parked.withLock { $0[tokenHash]?.tenant == tenant }
    }

    /// Forgets `tokenHash` if it is still parked (its grace window ended); false if a reconnect
    /// claimed it first.
    func remove(tokenHash: String) -> Bool {
        parked.withLock { $0.removeValue(forKey: tokenHash) != nil }
    }
}
