import Testing
@testable import Media

/// RFC 4733 keys: each told once, at its first packet, however often it is repeated or ended.
@Suite struct TelephoneEventsTests {
    func key(_ events: inout TelephoneEvents, _ event: UInt8, end: Bool = false, timestamp: UInt32) -> Character? {
        let payload: [UInt8] = [event, end ? 0x8A : 0x0A, 0x01, 0x40]
        return payload.withUnsafeBytes { events.received(payload: $0, timestamp: timestamp) }
    }

    @Test func aHeldKeyAndItsThreeEndsAreOneKey() {
        var events = TelephoneEvents()
        let first = key(&events, 9, timestamp: 1000)
        let repeats = (0..<3).map { _ in key(&events, 9, timestamp: 1000) } + (0..<3).map { _ in key(&events, 9, end: true, timestamp: 1000) }
        let next = key(&events, 11, timestamp: 2600)
        let star = key(&events, 10, end: true, timestamp: 4200)
        #expect(first == "9" && repeats.allSatisfy { $0 == nil } && next == "#" && star == "*")
    }

    @Test func eventsThatAreNotKeysAndShortPayloadsAreIgnored() {
        var events = TelephoneEvents()
        let flash = key(&events, 16, timestamp: 1)
        let short: [UInt8] = [1, 0]
        let cut = short.withUnsafeBytes { events.received(payload: $0, timestamp: 2) }
        let letter = key(&events, 15, timestamp: 3)
        #expect(flash == nil && cut == nil && letter == "D")
    }
}
