/// How one RTP stream's packets arrive against their own schedule, from the kernel's receive times
/// (SO_TIMESTAMPNS, so what the receiving thread was busy with does not count). A packet's place
/// in the schedule is its RTP timestamp (8 kHz: 160 samples, 20 ms, a frame); the schedule's
/// start is fixed by the earliest packet yet, as the server's `AudioStreamClock` places input
/// frames: a packet's lag is its arrival less its timestamp's time, less the least such
/// difference seen on the stream. So a sender that is always 3 ms into its tick shows 0; one that
/// is sometimes 3 ms later than that shows 3 ms for those packets.
///
/// A sender stalled for longer than it catches up on (Parley sends at most 10 frames late, 200 ms,
/// then starts again on its clock, its timestamps running on from the last packet's) would shift
/// every later packet by the frames it left out; so after a silence over `resyncNanoseconds` the
/// packet that ends it is timed against the old schedule, and the schedule starts again from the
/// packets after it, as a receiver's jitter buffer does.
struct RTPArrivalTiming {
    static let resyncNanoseconds: UInt64 = 200_000_000

    /// What one packet's arrival says.
    struct Arrival {
        /// Behind the schedule (0 for the earliest packet yet).
        let lag: UInt64
        /// Ahead of the schedule the packets before it had set, when it moved the start earlier.
        let earlierBy: UInt64
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
    private var start: Int64 = .max
    private(set) var packets = 0
    /// Silences over `resyncNanoseconds`, after each of which the schedule started again.
    private(set) var resyncs = 0
    /// Packets after a resync still placing the new schedule (a catch-up burst, each earlier than the last).
    private var settling = 0

    init(clockRate: Int64 = 8000) { nanosecondsPerSample = 1_000_000_000 / clockRate }

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
        let offset = at - samples * nanosecondsPerSample
        var earlierBy: UInt64 = 0
        if offset < start {
            if start != .max && settling == 0 { earlierBy = UInt64(start - offset) }
            start = offset
        }
        let lag = UInt64(offset - start)
        if settling > 0 { settling -= 1 }
        if interval > Self.resyncNanoseconds {
            resyncs += 1
            start = .max
            settling = 10
        }
        return Arrival(lag: lag, earlierBy: earlierBy, missing: missing, interval: interval)
    }
}
