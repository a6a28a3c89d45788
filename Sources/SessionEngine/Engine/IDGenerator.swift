/// Ids for sessions, events, items and responses: `event_<tag><n>`, where the tag is the session's
/// seed in base 36 (fixed width, so tag and counter never run together) and n counts up. Unique
/// within a session by construction and across sessions as far as the caller's seeds are random;
/// deterministic for a given seed, so tests can name them.
package struct IDGenerator: Sendable {
    /// 13 characters: inline in the String, no heap.
    package let tag: String
    private var counter: UInt64 = 0

    package init(seed: UInt64) {
        let digits = String(seed, radix: 36)
        tag = String(repeating: "0", count: 13 - digits.count) + digits
    }

    package mutating func make(_ prefix: String) -> String {
        counter += 1
        return "\(prefix)_\(tag)\(String(counter, radix: 36))"
    }
}
