import Loop

/// The receiving half of an association (RFC 9260 section 6.2 and 6.5, 6.9): which TSNs have
/// arrived (the cumulative TSN and the gaps above it), the DATA chunks held until their message is
/// whole and, on an ordered stream, its turn, and the SACK that reports it all.
///
/// Memory is bounded by `capacity`: each held chunk is counted at its user data plus
/// `chunkOverhead`, so a peer sending tiny fragments fills the window no less than one sending
/// large ones, and the advertised window (a_rwnd) is what is left.
struct SCTPReceiver {
    struct Message: Equatable, Sendable {
        var stream: UInt16
        var ppid: UInt32
        var bytes: [UInt8]
    }

    enum Outcome: Equatable {
        case accepted
        /// Already received: reported in the next SACK (section 6.2).
        case duplicate
        /// No room, or too far ahead of the cumulative TSN to be reported by a 16-bit gap offset.
        case dropped
        /// The message the chunk belongs to is over the bound (or in too many fragments).
        case messageTooLarge
    }

    static let chunkOverhead = 32
    /// Fragments per message: a 256 KiB message in 1,172-byte fragments needs about 224.
    static let maxFragments = 4_096
    static let maxDuplicatesReported = 32
    static let maxGapBlocksReported = 128

    let capacity: Int
    let maxMessageBytes: Int
    private(set) var cumulativeTSN: UInt32
    private var receivedAbove: Set<UInt32> = []
    private var held: [UInt32: SCTPDataChunk] = [:]
    /// Whole ordered messages waiting for an earlier sequence number, per stream.
    private var ready: [UInt16: [UInt16: Message]] = [:]
    private var nextSSN: [UInt16: UInt16] = [:]
    private(set) var bufferedBytes = 0
    /// The data held for reassembly or order (its bytes, and about 64 bytes a chunk or set entry).
    var heapBytes: Int { bufferedBytes + (held.count + receivedAbove.count) * 64 + HeapSize.of(duplicates) }
    private var duplicates: [UInt32] = []

    init(peerInitialTSN: UInt32, capacity: Int, maxMessageBytes: Int) {
        cumulativeTSN = peerInitialTSN &- 1
        self.capacity = capacity
        self.maxMessageBytes = maxMessageBytes
    }

    /// The window to advertise (a_rwnd).
    var window: UInt32 { UInt32(clamping: max(0, capacity - bufferedBytes)) }
    var hasGaps: Bool { !receivedAbove.isEmpty }
    var hasDuplicates: Bool { !duplicates.isEmpty }

    /// Takes a DATA chunk; messages it completes (with any that were waiting behind it) are
    /// appended to `deliveries` in the order they are to be delivered.
    /// A chunk that cannot be delivered (on a stream the peer may not use, section 6.5) is
    /// acknowledged but not held: `hold` false.
    mutating func receive(_ chunk: SCTPDataChunk, hold: Bool = true, into deliveries: inout [Message]) -> Outcome {
        let offset = chunk.tsn &- cumulativeTSN
        if offset == 0 || offset >= 0x8000_0000 || receivedAbove.contains(chunk.tsn) {
            if duplicates.count < Self.maxDuplicatesReported { duplicates.append(chunk.tsn) }
            return .duplicate
        }
        guard offset <= UInt32(UInt16.max) else { return .dropped }
        let cost = chunk.userData.count + Self.chunkOverhead
        // The next TSN in sequence is taken a little past the window: it is what frees the
        // window, and refusing it could leave a window full of chunks that wait for it.
        let limit = offset == 1 ? capacity + SCTPPacket.maxBytes : capacity
        guard bufferedBytes + cost <= limit else { return .dropped }

        receivedAbove.insert(chunk.tsn)
        while receivedAbove.remove(cumulativeTSN &+ 1) != nil { cumulativeTSN &+= 1 }
        guard hold else { return .accepted }
        held[chunk.tsn] = chunk
        bufferedBytes += cost
        return assemble(around: chunk.tsn, into: &deliveries)
    }

    /// Finds the run of held fragments around `tsn` (fragments of one message have consecutive
    /// TSNs, section 6.9) and, when it is a whole message, delivers or queues it.
    private mutating func assemble(around tsn: UInt32, into deliveries: inout [Message]) -> Outcome {
        guard let chunk = held[tsn] else { return .accepted }
        var first = tsn, last = tsn
        var bytes = chunk.userData.count, count = 1
        while let current = held[first], !current.beginning {
            guard let previous = held[first &- 1], !previous.ending, previous.stream == chunk.stream else { break }
            first &-= 1
            bytes += previous.userData.count
            count += 1
            if bytes > maxMessageBytes || count > Self.maxFragments { return .messageTooLarge }
        }
        while let current = held[last], !current.ending {
            guard let next = held[last &+ 1], !next.beginning, next.stream == chunk.stream else { break }
            last &+= 1
            bytes += next.userData.count
            count += 1
            if bytes > maxMessageBytes || count > Self.maxFragments { return .messageTooLarge }
        }
        guard let head = held[first], head.beginning, let tail = held[last], tail.ending else { return .accepted }

        var message = Message(stream: head.stream, ppid: head.ppid, bytes: [])
        message.bytes.reserveCapacity(bytes)
        var t = first
        while true {
            if let piece = held.removeValue(forKey: t) { message.bytes += piece.userData }
            if t == last { break }
            t &+= 1
        }
        let cost = bytes + count * Self.chunkOverhead
        if head.unordered {
            bufferedBytes -= cost
            deliveries.append(message)
            return .accepted
        }
        let expected = nextSSN[head.stream, default: 0]
        guard head.ssn == expected || Serial.less(expected, head.ssn) else {
            bufferedBytes -= cost  // a sequence number already passed: a FORWARD TSN skipped it
            return .accepted
        }
        // A second message with a waiting one's number is the peer's error; the first is replaced.
        bufferedBytes -= readyCost.updateValue(cost, forKey: Key(stream: head.stream, ssn: head.ssn)) ?? 0
        ready[head.stream, default: [:]][head.ssn] = message
        drain(stream: head.stream, into: &deliveries)
        return .accepted
    }

    private struct Key: Hashable {
        var stream: UInt16
        var ssn: UInt16
    }
    private var readyCost: [Key: Int] = [:]

    private mutating func drain(stream: UInt16, into deliveries: inout [Message]) {
        var next = nextSSN[stream, default: 0]
        while let message = ready[stream]?.removeValue(forKey: next) {
            bufferedBytes -= readyCost.removeValue(forKey: Key(stream: stream, ssn: next)) ?? 0
            deliveries.append(message)
            next &+= 1
        }
        nextSSN[stream] = next
        if ready[stream]?.isEmpty == true { ready[stream] = nil }
    }

    /// FORWARD TSN (RFC 3758 section 3.6): the sender abandoned everything up to the new
    /// cumulative TSN; fragments held from then are dropped, and on the listed streams the
    /// messages up to the given sequence numbers are skipped.
    mutating func forward(_ chunk: SCTPForwardTSNChunk, into deliveries: inout [Message]) {
        let target = chunk.newCumulativeTSN
        guard Serial.less(cumulativeTSN, target) else { return }
        for tsn in held.keys where Serial.lessOrEqual(tsn, target) {
            if let dropped = held.removeValue(forKey: tsn) { bufferedBytes -= dropped.userData.count + Self.chunkOverhead }
        }
        receivedAbove = receivedAbove.filter { !Serial.lessOrEqual($0, target) }
        cumulativeTSN = target
        while receivedAbove.remove(cumulativeTSN &+ 1) != nil { cumulativeTSN &+= 1 }
        for skipped in chunk.skipped {
            let next = nextSSN[skipped.stream, default: 0]
            guard next == skipped.ssn || Serial.less(next, skipped.ssn) else { continue }
            // Whole messages up to the skipped one are still delivered, in order; the waiting ones
            // are walked rather than the numbers, which may be thousands apart.
            let waiting = (ready[skipped.stream].map { Array($0.keys) } ?? [])
                .filter { $0 &- next <= skipped.ssn &- next }
                .sorted { $0 &- next < $1 &- next }
            for ssn in waiting {
                guard let message = ready[skipped.stream]?.removeValue(forKey: ssn) else { continue }
                bufferedBytes -= readyCost.removeValue(forKey: Key(stream: skipped.stream, ssn: ssn)) ?? 0
                deliveries.append(message)
            }
            nextSSN[skipped.stream] = skipped.ssn &+ 1
            drain(stream: skipped.stream, into: &deliveries)
        }
    }

    /// An incoming stream reset (RFC 6525 section 5.2.2): the streams' sequence numbers start
    /// again at 0. An empty list means every stream.
    mutating func resetStreams(_ streams: [UInt16]) {
        let affected = streams.isEmpty ? Array(nextSSN.keys) : streams
        for stream in affected {
            nextSSN[stream] = nil
            if let waiting = ready.removeValue(forKey: stream) {
                for ssn in waiting.keys { bufferedBytes -= readyCost.removeValue(forKey: Key(stream: stream, ssn: ssn)) ?? 0 }
            }
        }
    }

    /// The SACK for what has arrived (section 3.3.4); the duplicates reported are then forgotten.
    mutating func sack() -> SCTPSackChunk {
        var blocks: [SCTPSackChunk.GapBlock] = []
        if !receivedAbove.isEmpty {
            let offsets = receivedAbove.map { UInt16(truncatingIfNeeded: $0 &- cumulativeTSN) }.sorted()
            var start = offsets[0], end = offsets[0]
            for offset in offsets.dropFirst() {
                if offset == end &+ 1 {
                    end = offset
                } else {
                    blocks.append(.init(start: start, end: end))
                    start = offset
                    end = offset
                }
            }
            blocks.append(.init(start: start, end: end))
        }
        defer { duplicates.removeAll() }
        return SCTPSackChunk(
            cumulativeTSN: cumulativeTSN, advertisedWindow: window,
            gapBlocks: Array(blocks.prefix(Self.maxGapBlocksReported)), duplicateTSNs: duplicates)
    }
}
