@testable import Media

/// The jitter buffer driven by a script: the input's first byte picks Opus's clock or G.711's;
/// each later byte is an operation. Its high four bits move the clock on by 0...75 ms; an even
/// byte is a playout tick (`pop`); an odd byte inserts a packet, reading two more bytes as signed
/// steps of the sequence number and of the timestamp (in frames), its bit 1 putting the timestamp
/// off the frame grid and bits 2 and 3 together jumping it a quarter of its range (a new source),
/// bits 1...3 also giving the payload's length.
///
/// Checks after every operation that every packet received is accounted for (played, late,
/// duplicate, overflow, discarded or still buffered), that the ring never holds more than its
/// capacity and holds what the count says, that ticks returned as frames and holes are the ones
/// counted, and that the delay stays within its bounds.
enum JitterFuzz {
    static func run(_ input: UnsafeRawBufferPointer) {
        guard let first = input.first else { return }
        var buffer = JitterBuffer(settings: first & 1 == 0 ? .opus : .g711)
        let samples = Int32(buffer.settings.samplesPerFrame)
        var now: UInt64 = 1_000_000_000
        var sequence: UInt16 = 0
        var timestamp: UInt32 = 0
        var frames = 0
        var holes = 0
        var i = 1
        while i < input.count {
            let op = input[i]
            i += 1
            now += UInt64(op >> 4) * 5_000_000
            if op & 1 == 0 {
                switch buffer.pop(now: now) {
                case .frame: frames += 1
                case .missing: holes += 1
                case .waiting: break
                }
            } else {
                guard i + 2 <= input.count else { break }
                sequence &+= UInt16(bitPattern: Int16(Int8(bitPattern: input[i])))
                timestamp &+= UInt32(bitPattern: Int32(Int8(bitPattern: input[i + 1])) * samples)
                i += 2
                if op & 2 != 0 { timestamp &+= 37 }
                if op & 12 == 12 { timestamp &+= 0x4000_0000 }
                let payload = [UInt8](repeating: op, count: Int(op >> 1 & 7))
                buffer.insert(payload: payload, sequenceNumber: sequence, timestamp: timestamp, now: now)
            }
            let c = buffer.counters
            precondition(c.received == c.played + c.late + c.duplicate + c.overflow + c.discarded + buffer.buffered, "\(c), \(buffer.buffered) buffered")
            precondition(buffer.buffered <= buffer.settings.capacity && buffer.buffered == buffer.occupiedSlots, "\(buffer.buffered) buffered")
            precondition(frames == c.played && holes == c.concealed, "\(frames) frames and \(holes) holes for \(c)")
            precondition((buffer.settings.initialDelayFrames...buffer.settings.maxDelayFrames).contains(buffer.delayFrames), "delay \(buffer.delayFrames)")
        }
    }
}
