import Loop

/// The keys a caller presses, gathered into one entry for the conversation, as a user's turn:
/// "The caller pressed 1 2 3 # on the keypad." Keys within `pause` of each other are one entry;
/// `#`, or a 32nd key, ends it at once. Twilio's and SIP's calls both take keys so.
///
/// A value: keys and the time (monotonic nanoseconds) in, the entry's sentence out when it is
/// complete; `deadline` is when its pause would end it.
struct KeypadEntry: Equatable {
    /// 1.5 s: long enough between the keys of one number, short enough that the answer follows.
    static let pause: UInt64 = 1_500_000_000
    static let longest = 32

    private var keys: [Character] = []
    private(set) var deadline: UInt64?
    var heapBytes: Int { HeapSize.of(keys) }

    /// A key at `now`: the entry's sentence if this key ended it.
    mutating func pressed(_ key: Character, now: UInt64) -> String? {
        keys.append(key)
        guard key != "#", keys.count < Self.longest else { return finish() }
        deadline = now &+ Self.pause
        return nil
    }

    /// The time is `now`: the entry's sentence if its pause is over.
    mutating func fire(now: UInt64) -> String? {
        guard let deadline, deadline <= now else { return nil }
        return finish()
    }

    private mutating func finish() -> String? {
        deadline = nil
        guard !keys.isEmpty else { return nil }
        defer { keys = [] }
        return "The caller pressed \(keys.map(String.init).joined(separator: " ")) on the keypad."
    }
}
