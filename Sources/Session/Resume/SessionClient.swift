import Synchronization

/// Which connection a session belongs to now: its first, or a reconnect that resumed it. Frames,
/// closes and a store's late answers for any other are ignored. Numbered, never an object's
/// address: a reconnect's handler freed and the next one allocated at the same address had the
/// same `ObjectIdentifier`, and the store's answer to the first reconnect was taken for the
/// second's (ResumeUntoldTokenTests).
struct SessionClient: Hashable, Sendable {
    private let number: UInt64
    private static let last = Atomic<UInt64>(0)

    static func next() -> SessionClient { SessionClient(number: last.add(1, ordering: .relaxed).newValue) }
}
