import Models

/// What a loop's connection knows of one stream open at the helper: its rate, the socket it was
/// opened on (a new socket is a new helper, which has never heard of it), how many samples it has
/// been sent, and its last half second, by which a verdict's audio is recognised as this stream's
/// (`holds`) and sent as the stream's name instead of 256 KB again. The audio itself is at the helper.
struct SpeechHelperStream {
    let rate: Int
    let socket: ObjectIdentifier
    let failed: (ModelError) -> Void
    private(set) var count = 0
    private var tail: [Int16] = []

    /// Half a second: a verdict is asked after a few hundred ms of quiet, so its last half second
    /// still holds the end of the words, which no other stream has.
    static let tailSamples = 8_000

    init(rate: Int, socket: ObjectIdentifier, failed: @escaping (ModelError) -> Void) {
        self.rate = rate
        self.socket = socket
        self.failed = failed
    }

    mutating func appended(_ samples: [Int16]) {
        count += samples.count
        tail += samples.suffix(Self.tailSamples)
        if tail.count > Self.tailSamples { tail.removeFirst(tail.count - Self.tailSamples) }
    }

    /// Whether `samples` end as this stream does: the same rate, no more samples than it holds,
    /// and the same last half second (or all of `samples`, if shorter), not all zeros (digital
    /// silence would match any stream's).
    func holds(_ samples: ArraySlice<Int16>, rate: Int) -> Bool {
        guard rate == self.rate, !samples.isEmpty, samples.count <= count else { return false }
        let compared = min(samples.count, Self.tailSamples)
        guard compared <= tail.count, samples.count == count || compared == Self.tailSamples else { return false }
        let theirs = samples.suffix(compared)
        return theirs.contains { $0 != 0 } && theirs.elementsEqual(tail.suffix(compared))
    }
}
