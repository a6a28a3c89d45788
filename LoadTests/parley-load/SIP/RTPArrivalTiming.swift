/// How one RTP stream's packets arrive against their own schedule over a measured window, from
/// the kernel's receive times (SO_TIMESTAMPNS, so what the receiving thread was busy with does not
/// count). A packet's place in the schedule is its RTP timestamp (8 kHz: 160 samples, 20 ms, a
/// frame); the schedule's start is fixed by the earliest packet of the window, as the server's
/// `AudioStreamClock` places input frames: a packet's lag is its arrival less its timestamp's
/// time, less the least such difference in the window. So a sender that is always 3 ms into its
/// tick shows 0; one that is sometimes 3 ms later than that shows 3 ms for those packets. The
/// window's offsets are kept (4 bytes a packet) and the lags worked out at its end: placing the
/// schedule by the warm-up instead would charge the whole window with any shift before it.
///
/// A sender stalled for longer than it catches up on (Parley sends at most 10 frames late, 200 ms,
/// then starts again on its clock, its timestamps running on from the last packet's) would shift
/// every later packet by the frames it left out; so after a silence over `resyncNanoseconds` the
/// packet that ends it closes a segment, and the schedule starts again from the packets after it,
/// as a receiver's jitter buffer does.
struct RTPArrivalTiming {
    static let resyncNanoseconds: UInt64 = 200_000_000

    /// What one packet's arrival says at once.
    struct Arrival {
        /// Sequence numbers skipped just before it: packets lost (or not sent).
        let missing: Int
        /// Since the packet before it.
        let interval: UInt64
    }

    let nanosecondsPerSample: Int64
    private var samples: Int64 = 0
    private var lastTimestamp: UInt32?
    private var lastSequence: UInt16 = 0
    private var lastArrival: Int64 = 0
    private(set) var packets = 0
    /// The window's offsets in µs from its first, in segments split at each silence over
    /// `resyncNanoseconds` (a stall the sender did not catch up on).
    private var measuring = false
    private var origin: Int64 = 0
    private var offsets: [Int32] = []
    private var segmentStarts: [Int] = []

    init(clockRate: Int64 = 8000) { nanosecondsPerSample = 1_000_000_000 / clockRate }

    /// Offsets are kept from now; `expected` packets are reserved for.
    mutating func beginWindow(expected: Int) {
        measuring = true
        offsets.removeAll()
        offsets.reserveCapacity(expected)
        segmentStarts = []
    }

    /// A packet with `sequence` and `timestamp` that the kernel took in at `at` (nanoseconds on
    /// any clock that does not jump); nil for a repeated or reordered packet.
    mutating func arrived(sequence: UInt16, timestamp: UInt32, at: Int64) -> Arrival? {
        var missing = 0
        if let last = lastTimestamp {
            let step = Int16(bitPattern: sequence &- lastSequence)
            guard step > 0 else { return nil }
            missing = Int(step) - 1
            samples += Int64(Int32(bitPattern: timestamp &- last))
        }
        let interval = lastTimestamp == nil ? 0 : UInt64(max(0, at - lastArrival))
        lastTimestamp = timestamp
        lastSequence = sequence
        lastArrival = at
        packets += 1
        if measuring {
            let offset = at - samples * nanosecondsPerSample
            if offsets.isEmpty { origin = offset }
            // The packet that ends a long silence is still timed against the schedule before it.
            if interval > Self.resyncNanoseconds, !offsets.isEmpty { segmentStarts.append(offsets.count + 1) }
            offsets.append(Int32(clamping: (offset - origin) / 1000))
        }
        return Arrival(missing: missing, interval: interval)
    }

    /// Ends the window: each packet's lag into `lags` (nanoseconds).
    mutating func endWindow(into lags: inout LatencyRecorder) {
        measuring = false
        var start = 0
        for end in segmentStarts.filter({ $0 < offsets.count }) + [offsets.count] where end > start {
            let segment = offsets[start..<end]
            let least = segment.min() ?? 0
            for offset in segment { lags.record(UInt64(Int64(offset) - Int64(least)) * 1000) }
            start = end
        }
        offsets = []
        segmentStarts = []
    }
}
