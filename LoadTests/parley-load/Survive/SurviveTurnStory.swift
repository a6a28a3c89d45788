/// What happened to one turn, as its client saw it: the events about it and the connection's ends,
/// each with the milliseconds since the turn was sent. A turn counted unanswered carries its story
/// into the report, so a failure seen once (a chaos run in CI) can be traced from its output alone.
struct SurviveTurnStory: Sendable {
    /// The first entries and the last ones are what tell: bounded, the middle dropped.
    static let limit = 24
    private(set) var entries: [String] = []
    private var dropped = 0
    private var sentAt: UInt64 = 0

    mutating func begin(_ what: String, at now: UInt64) {
        entries = []
        dropped = 0
        sentAt = now
        note(what, at: now)
    }

    mutating func note(_ what: String, at now: UInt64) {
        guard sentAt != 0 else { return }
        let entry = "+\((now &- sentAt) / 1_000_000) ms \(what)"
        if entries.count < Self.limit {
            entries.append(entry)
        } else {
            // Keep the first half; the rest is the latest.
            entries.remove(at: Self.limit / 2)
            entries.append(entry)
            dropped += 1
        }
    }

    var text: String {
        guard dropped > 0 else { return entries.joined(separator: ", ") }
        var shown = entries
        shown.insert("(\(dropped) more)", at: Self.limit / 2)
        return shown.joined(separator: ", ")
    }
}
