/// Keys pressed on a phone, from RFC 4733 telephone-event packets: each key once, however many
/// packets carry it. A sender repeats an event's packet every 50 ms or so while the key is held,
/// all with the event's one RTP timestamp, and sends its end (the E bit) three times (RFC 4733
/// section 2.5.1.4); a key is told when its first packet comes (the caller is still pressing it:
/// waiting for the end would lose the keys whose end packets were all lost), and never again for
/// that timestamp. A value, unit-tested in `TelephoneEventsTests`.
package struct TelephoneEvents: Sendable, Equatable {
    /// The events already told, by RTP timestamp; a few suffice, since events come one at a time.
    private var told: [UInt32] = []
    static let remembered = 8

    package init() {}

    /// The key a telephone-event payload (`timestamp` from its RTP header) says was pressed, the
    /// first time it says it; nil for a repeat, an event that is not a key, or a malformed payload.
    package mutating func received(payload: UnsafeRawBufferPointer, timestamp: UInt32) -> Character? {
        // Section 2.3: event (8 bits), E R volume (8 bits), duration (16 bits).
        guard payload.count >= 4, let key = Self.key(payload[0]) else { return nil }
        guard !told.contains(timestamp) else { return nil }
        if told.count >= Self.remembered { told.removeFirst() }
        told.append(timestamp)
        return key
    }

    /// RFC 4733 section 3.2: events 0-9 are the digits, 10 `*`, 11 `#`, 12-15 A to D.
    static func key(_ event: UInt8) -> Character? {
        switch event {
        case 0...9: Character(Unicode.Scalar(UInt8(ascii: "0") + event))
        case 10: "*"
        case 11: "#"
        case 12...15: Character(Unicode.Scalar(UInt8(ascii: "A") + event - 12))
        default: nil
        }
    }
}
