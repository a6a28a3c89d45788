import Loop

/// The sending half of an association: messages cut into DATA chunks, the chunks held until the
/// peer acknowledges them, and which to send next under the congestion and receiver windows
/// (RFC 9260 sections 6.1, 6.2.1, 6.3.3, 7.2).
///
/// Sizes in the windows are user-data bytes, as the RFC counts them. What is held is bounded by
/// `capacity`: `enqueue` refuses a message that does not fit, so a peer that never
/// acknowledges costs at most that much.
struct SCTPSender {
    struct Held {
        var chunk: SCTPDataChunk
        var transmissions = 0
        var sentAt: UInt64 = 0
        var misses = 0
        /// Reported in a gap block. Never undone: this endpoint does not expect the peer to
        /// renege (section 6.2), which WebRTC's stacks do not do.
        var gapAcked = false
        var retransmit = false
        var fastRetransmit = false
        /// Fast retransmitted already: section 7.2.4 does it once per chunk; T3 does the rest.
        var wasFastRetransmitted = false
        var inFlight: Bool { transmissions > 0 && !gapAcked && !retransmit }
    }

    struct SackOutcome {
        /// The cumulative TSN moved on: the earliest outstanding chunk was acknowledged.
        var cumulativeAdvanced = false
        var fastRetransmit = false
    }

    let mtu: Int
    let capacity: Int
    let maxFragment: Int
    private(set) var nextTSN: UInt32
    /// The peer's cumulative TSN ack point.
    private(set) var acknowledgedTSN: UInt32
    private(set) var held: [Held] = []
    private var firstUnsent = 0
    private var nextSSN: [UInt16: UInt16] = [:]
    private(set) var bufferedBytes = 0
    private(set) var congestionWindow: Int
    private(set) var slowStartThreshold: Int
    private var partialBytesAcked = 0
    /// The peer's last advertised receiver window (a_rwnd).
    private(set) var peerWindow: Int
    private var fastRecoveryExit: UInt32?
    /// Karn's rule: one chunk at a time is timed, and only if it is never retransmitted.
    private var timed: (tsn: UInt32, sentAt: UInt64)?

    init(initialTSN: UInt32, peerWindow: UInt32, mtu: Int, capacity: Int) {
        nextTSN = initialTSN
        acknowledgedTSN = initialTSN &- 1
        self.mtu = mtu
        self.capacity = capacity
        // The packet's common header and the DATA chunk's header, rounded down to 4 bytes.
        maxFragment = max(4, (mtu - SCTPPacket.headerBytes - SCTPDataChunk.headerBytes) & ~3)
        // Section 7.2.1: cwnd starts at min(4 MTU, max(2 MTU, 4380)); ssthresh at the peer's window.
        congestionWindow = min(4 * mtu, max(2 * mtu, 4380))
        slowStartThreshold = Int(peerWindow)
        self.peerWindow = Int(peerWindow)
    }

    var isIdle: Bool { held.isEmpty }
    /// The chunks held until acknowledged: their slots and their user data.
    var heapBytes: Int { HeapSize.of(held) + bufferedBytes }
    var hasUnsent: Bool { firstUnsent < held.count || held.contains { $0.retransmit } }
    var lastAssignedTSN: UInt32 { nextTSN &- 1 }
    var flightSize: Int { held.reduce(0) { $0 + ($1.inFlight ? $1.chunk.userData.count : 0) } }
    /// Chunks sent and neither acknowledged nor given up for retransmission: what T3 guards.
    var hasOutstanding: Bool { held.contains { $0.transmissions > 0 && !$0.gapAcked } }

    /// Cuts a message into DATA chunks and queues them (section 6.9). An empty message cannot be
    /// sent as DATA (section 6.2: no user data); WebRTC sends a one-byte placeholder (RFC 8831
    /// section 6.6), which is the caller's.
    mutating func enqueue(_ message: [UInt8], stream: UInt16, ppid: UInt32, ordered: Bool) throws(SCTPSendError) {
        guard !message.isEmpty else { throw .emptyMessage }
        let cost = message.count
        guard bufferedBytes + cost <= capacity else { throw .bufferFull }
        let ssn = ordered ? nextSSN[stream, default: 0] : 0
        if ordered { nextSSN[stream] = ssn &+ 1 }
        var start = 0
        while start < message.count {
            let end = min(message.count, start + maxFragment)
            let chunk = SCTPDataChunk(
                tsn: nextTSN, stream: stream, ssn: ssn, ppid: ppid, unordered: !ordered,
                beginning: start == 0, ending: end == message.count, userData: Array(message[start..<end]))
            held.append(Held(chunk: chunk))
            nextTSN &+= 1
            start = end
        }
        bufferedBytes += cost
    }

    /// Our outgoing stream reset took effect (RFC 6525 section 5.2.3): the streams number from 0.
    mutating func resetStreams(_ streams: [UInt16]) {
        if streams.isEmpty { nextSSN.removeAll() } else { for stream in streams { nextSSN[stream] = nil } }
    }

    /// The next chunk to send in a packet with `room` bytes left, or nil. Retransmissions come
    /// first; fast retransmissions go regardless of the congestion window (section 7.2.4),
    /// others only while the flight is under cwnd (which one packet may overrun, section 7.2.1)
    /// and the peer's window has room, or nothing is in flight (the zero-window probe, 6.1).
    mutating func next(room: Int, now: UInt64, flight: inout Int) -> SCTPDataChunk? {
        let needed = SCTPDataChunk.headerBytes
        if let index = held.firstIndex(where: { $0.retransmit }) {
            let size = held[index].chunk.userData.count
            guard (size + 3) & ~3 + needed <= room else { return nil }
            guard held[index].fastRetransmit || flight < congestionWindow else { return nil }
            held[index].retransmit = false
            held[index].fastRetransmit = false
            held[index].transmissions += 1
            held[index].sentAt = now
            held[index].misses = 0
            if timed?.tsn == held[index].chunk.tsn { timed = nil }
            flight += size
            return held[index].chunk
        }
        guard firstUnsent < held.count else { return nil }
        let size = held[firstUnsent].chunk.userData.count
        guard (size + 3) & ~3 + needed <= room, flight < congestionWindow else { return nil }
        guard size <= peerWindow - flight || flight == 0 else { return nil }
        held[firstUnsent].transmissions = 1
        held[firstUnsent].sentAt = now
        if timed == nil { timed = (held[firstUnsent].chunk.tsn, now) }
        flight += size
        defer { firstUnsent += 1 }
        return held[firstUnsent].chunk
    }

    /// Takes a SACK (section 6.2.1): frees what the cumulative TSN covers, marks what gap blocks
    /// cover, counts miss indications toward fast retransmit (7.2.4, after the "highest TSN
    /// newly acknowledged" rule), grows or keeps the congestion window (7.2.1, 7.2.2), and
    /// returns a round-trip measurement if the timed chunk was acknowledged.
    mutating func acknowledge(_ sack: SCTPSackChunk, now: UInt64) -> (SackOutcome, rtt: UInt64?) {
        var outcome = SackOutcome()
        // Section 6.2.1 D: a SACK older than the last one is dropped.
        guard Serial.lessOrEqual(acknowledgedTSN, sack.cumulativeTSN) else { return (outcome, nil) }
        // A cumulative ack past anything sent is a peer's error; it acknowledges no more than was sent.
        var highestSent = acknowledgedTSN
        for item in held where item.transmissions > 0 { highestSent = item.chunk.tsn }
        guard Serial.lessOrEqual(sack.cumulativeTSN, highestSent) else { return (outcome, nil) }

        let flightBefore = flightSize
        var bytesAcked = 0
        var rtt: UInt64?
        var highestNewlyAcked: UInt32?
        var removed = 0
        for item in held {
            guard Serial.lessOrEqual(item.chunk.tsn, sack.cumulativeTSN) else { break }
            if !item.gapAcked { bytesAcked += item.chunk.userData.count; highestNewlyAcked = item.chunk.tsn }
            bufferedBytes -= item.chunk.userData.count
            removed += 1
        }
        if removed > 0 {
            held.removeFirst(removed)
            firstUnsent = max(0, firstUnsent - removed)
            outcome.cumulativeAdvanced = sack.cumulativeTSN != acknowledgedTSN
        }
        acknowledgedTSN = sack.cumulativeTSN
        for block in sack.gapBlocks where block.start <= block.end {
            let low = sack.cumulativeTSN &+ UInt32(block.start), high = sack.cumulativeTSN &+ UInt32(block.end)
            for index in held.indices {
                let tsn = held[index].chunk.tsn
                guard Serial.lessOrEqual(tsn, high) else { break }
                guard Serial.lessOrEqual(low, tsn), held[index].transmissions > 0, !held[index].gapAcked else { continue }
                held[index].gapAcked = true
                held[index].retransmit = false
                held[index].fastRetransmit = false
                bytesAcked += held[index].chunk.userData.count
                if highestNewlyAcked.map({ Serial.less($0, tsn) }) ?? true { highestNewlyAcked = tsn }
            }
        }
        if let (tsn, sentAt) = timed, Serial.lessOrEqual(tsn, sack.cumulativeTSN) || held.contains(where: { $0.chunk.tsn == tsn && $0.gapAcked }) {
            rtt = now > sentAt ? now - sentAt : 0
            timed = nil
        }
        if let exit = fastRecoveryExit, Serial.lessOrEqual(exit, sack.cumulativeTSN) { fastRecoveryExit = nil }

        if let highest = highestNewlyAcked {
            for index in held.indices {
                guard Serial.less(held[index].chunk.tsn, highest) else { break }
                guard held[index].inFlight, !held[index].wasFastRetransmitted else { continue }
                held[index].misses += 1
                if held[index].misses == 3 {
                    held[index].retransmit = true
                    held[index].fastRetransmit = true
                    held[index].wasFastRetransmitted = true
                    outcome.fastRetransmit = true
                    if timed?.tsn == held[index].chunk.tsn { timed = nil }
                }
            }
        }
        if outcome.fastRetransmit && fastRecoveryExit == nil {
            // Section 7.2.3: one reduction per recovery, which ends when the highest TSN
            // outstanding now is acknowledged (7.2.4 step 2).
            slowStartThreshold = max(congestionWindow / 2, 4 * mtu)
            congestionWindow = slowStartThreshold
            partialBytesAcked = 0
            fastRecoveryExit = held.last(where: { $0.transmissions > 0 })?.chunk.tsn
        } else if outcome.cumulativeAdvanced && fastRecoveryExit == nil {
            let utilised = flightBefore + mtu > congestionWindow
            if congestionWindow <= slowStartThreshold {
                if utilised { congestionWindow += min(bytesAcked, mtu) }
            } else {
                partialBytesAcked += bytesAcked
                if partialBytesAcked >= congestionWindow && utilised {
                    partialBytesAcked -= congestionWindow
                    congestionWindow += mtu
                }
            }
        }
        if flightSize == 0 { partialBytesAcked = 0 }
        // Section 6.2.1: rwnd is a_rwnd less what is in flight, which `next` subtracts as it goes.
        peerWindow = Int(sack.advertisedWindow)
        return (outcome, rtt)
    }

    /// T3-rtx expired (section 6.3.3): every chunk in flight is to be sent again, the window
    /// collapses to one packet (7.2.3), and fast recovery ends.
    mutating func retransmissionTimerExpired() {
        slowStartThreshold = max(congestionWindow / 2, 4 * mtu)
        congestionWindow = mtu
        partialBytesAcked = 0
        fastRecoveryExit = nil
        timed = nil
        for index in held.indices where held[index].transmissions > 0 && !held[index].gapAcked {
            held[index].retransmit = true
            held[index].fastRetransmit = false
        }
    }
}

/// Why a message was not queued.
package enum SCTPSendError: Error, Equatable, CustomStringConvertible {
    case notEstablished
    case emptyMessage
    case messageTooLarge(Int)
    case bufferFull
    case streamResetting(UInt16)
    case noSuchChannel(UInt16)

    package var description: String {
        switch self {
        case .notEstablished: "the association is not established"
        case .emptyMessage: "an empty message cannot be sent as DATA"
        case .messageTooLarge(let count): "a \(count)-byte message is over the peer's maximum message size"
        case .bufferFull: "the send buffer is full: the peer is not acknowledging"
        case .streamResetting(let stream): "stream \(stream) is being reset"
        case .noSuchChannel(let stream): "no open data channel on stream \(stream)"
        }
    }
}
