/// The events a resumable session sent that its client has not yet acknowledged, for replay after
/// a reconnect: each JSON event gets the next sequence number (`"seq": N`, from 1), and is kept
/// until the client acknowledges it (`session.ack`, or the `last_seq` it resumes with).
///
/// Bounded: past `maxBytes` (1 MiB by default, about 20 s of a pcm16 reply at 24 kHz in base64)
/// the oldest events go, and a resume from before them is refused as out of range rather than
/// given a conversation with a hole in it. An acknowledging client keeps the log near empty.
struct ResumeLog: Sendable {
    struct Entry: Sendable {
        let seq: Int
        let text: String
    }

    let maxBytes: Int
    private(set) var entries: [Entry] = []
    private(set) var bytes = 0
    /// The sequence number of the last event stamped.
    private(set) var lastSeq: Int
    /// Every event up to this number has been acknowledged or dropped.
    private(set) var floor: Int

    init(lastSeq: Int = 0, maxBytes: Int = 1 << 20) {
        self.lastSeq = lastSeq
        floor = lastSeq
        self.maxBytes = maxBytes
    }

    /// A log rebuilt from a store after its process went: only the events that were kept there
    /// (those that completed something), and any `last_seq` up to `lastSeq` may resume from it,
    /// since the deltas between them are gone and are not needed (the completions carry it all).
    init(restoring kept: [Entry], lastSeq: Int, maxBytes: Int = 1 << 20) {
        self.maxBytes = maxBytes
        self.lastSeq = max(lastSeq, kept.last?.seq ?? 0)
        floor = 0
        entries = kept.sorted { $0.seq < $1.seq }
        bytes = entries.reduce(0) { $0 + $1.text.utf8.count }
        while bytes > maxBytes, !entries.isEmpty { dropFirst() }
    }

    /// `text` (a JSON object) with `"seq":N` added as its last member, kept for replay.
    mutating func stamp(_ text: String) -> String {
        lastSeq += 1
        guard text.utf8.last == UInt8(ascii: "}") else { return text }
        let stamped = String(text.dropLast()) + #","seq":"# + String(lastSeq) + "}"
        entries.append(Entry(seq: lastSeq, text: stamped))
        bytes += stamped.utf8.count
        while bytes > maxBytes, !entries.isEmpty { dropFirst() }
        return stamped
    }

    /// The client has every event up to `seq`.
    mutating func acknowledge(_ seq: Int) {
        while let first = entries.first, first.seq <= seq { dropFirst() }
        floor = max(floor, min(seq, lastSeq))
    }

    enum Refusal: Error, Equatable {
        /// Past the last event sent, or before the oldest still kept.
        case outOfRange(lastSeq: Int, oldest: Int)
    }

    /// The events after `seq`, in order; acknowledges up to `seq`.
    mutating func replay(after seq: Int) -> Result<[String], Refusal> {
        guard seq >= floor, seq <= lastSeq else { return .failure(.outOfRange(lastSeq: lastSeq, oldest: floor)) }
        acknowledge(seq)
        return .success(entries.map(\.text))
    }

    private mutating func dropFirst() {
        let first = entries.removeFirst()
        bytes -= first.text.utf8.count
        floor = first.seq
    }
}
