/// Keys Parley presses on a call (RFC 4733), one 20 ms tick at a time, in the call's own RTP
/// stream: each key an event of 100 ms, its packet every tick with the event's one timestamp and a
/// growing duration (section 2.5.1.2; the first marked), then its end (the E bit) three times
/// (section 2.5.1.4), then 60 ms of the stream's audio before the next key, so a receiver tells
/// two presses of one key apart. A value, unit-tested in `TelephoneEventSenderTests`.
package struct TelephoneEventSender: Sendable {
    /// What one tick sends instead of audio: the payload, whether the packet is marked, and the
    /// event's timestamp (the packet's, in place of the stream's own).
    package struct Packet: Sendable, Equatable {
        package var payload: [UInt8]
        package var marker: Bool
        package var timestamp: UInt32
    }

    static let eventTicks = 5
    static let endRepeats = 3
    static let gapTicks = 3
    /// Volume: -10 dBm0 (section 2.5.2.2 says a sender should use a level of this order).
    static let volume: UInt8 = 10

    private var keys: [UInt8] = []
    /// The event being sent: its code, timestamp, and ticks sent of it; then the gap after it.
    private var current: Event?
    private struct Event: Sendable {
        var event: UInt8
        var timestamp: UInt32
        var ticks: Int
    }
    private var gap = 0

    package init() {}

    /// RFC 4733 section 3.2's code of `key` (0-9, `*`, `#`, A-D); nil for anything else.
    package static func event(_ key: Character) -> UInt8? {
        guard let ascii = key.asciiValue else { return nil }
        switch ascii {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return ascii - UInt8(ascii: "0")
        case UInt8(ascii: "*"): return 10
        case UInt8(ascii: "#"): return 11
        case UInt8(ascii: "A")...UInt8(ascii: "D"): return ascii - UInt8(ascii: "A") + 12
        default: return nil
        }
    }

    /// Queues `key`; false if it is not a DTMF key, or 32 keys are already waiting.
    package mutating func press(_ key: Character) -> Bool {
        guard let event = Self.event(key), keys.count < 32 else { return false }
        keys.append(event)
        return true
    }

    package var isIdle: Bool { current == nil && keys.isEmpty && gap == 0 }

    /// This tick's event packet, or nil when the tick carries audio; `timestamp` is the stream's
    /// next one (an event starts at it).
    package mutating func next(timestamp: UInt32) -> Packet? {
        if gap > 0 {
            gap -= 1
            return nil
        }
        if current == nil {
            guard !keys.isEmpty else { return nil }
            current = Event(event: keys.removeFirst(), timestamp: timestamp, ticks: 0)
        }
        guard var event = current else { return nil }
        event.ticks += 1
        let ended = event.ticks > Self.eventTicks
        let duration = UInt16(min(event.ticks, Self.eventTicks) * 160)
        let payload = [event.event, (ended ? 0x80 : 0) | Self.volume, UInt8(duration >> 8), UInt8(duration & 0xFF)]
        if event.ticks >= Self.eventTicks + Self.endRepeats {
            current = nil
            gap = Self.gapTicks
        } else {
            current = event
        }
        return Packet(payload: payload, marker: event.ticks == 1, timestamp: event.timestamp)
    }
}
