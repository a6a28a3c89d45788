import Testing
@testable import Media

/// Keys pressed on a call (RFC 4733), as packets a tick, read back by Parley's own receiver.
@Suite struct TelephoneEventSenderTests {
    @Test func aKeyIsAMarkedEventOfAHundredMillisecondsThenItsEndThreeTimesThenAGap() {
        var sender = TelephoneEventSender()
        #expect(sender.press("5") && sender.press("#") && !sender.press("x") && !sender.isIdle)
        var packets: [TelephoneEventSender.Packet?] = []
        var timestamp: UInt32 = 1_000
        for _ in 0..<24 {
            packets.append(sender.next(timestamp: timestamp))
            timestamp &+= 160
        }
        let five = packets[0..<8].compactMap { $0 }
        #expect(five.count == 8 && five.allSatisfy { $0.timestamp == 1_000 && $0.payload[0] == 5 })
        #expect(five.map(\.marker) == [true] + Array(repeating: false, count: 7))
        #expect(five.map { Int($0.payload[2]) << 8 | Int($0.payload[3]) } == [160, 320, 480, 640, 800, 800, 800, 800])
        #expect(five.map { $0.payload[1] & 0x80 != 0 } == [false, false, false, false, false, true, true, true])
        // 60 ms of audio, then the next key at the stream's timestamp then.
        #expect(packets[8..<11].allSatisfy { $0 == nil })
        #expect(packets[11]?.payload[0] == 11 && packets[11]?.timestamp == 1_000 + 11 * 160 && packets[11]?.marker == true)
        #expect(packets[19..<24].allSatisfy { $0 == nil } && sender.isIdle)

        // Parley's receiver hears each key once.
        var receiver = TelephoneEvents()
        let heard = packets.compactMap { $0 }.compactMap { packet in packet.payload.withUnsafeBytes { receiver.received(payload: $0, timestamp: packet.timestamp) } }
        #expect(heard == ["5", "#"])
    }

    @Test func everyDTMFKeyHasItsCode() {
        #expect("0123456789*#ABCD".map { TelephoneEventSender.event($0) } == (0...15).map { UInt8($0) })
        #expect(TelephoneEventSender.event("E") == nil && TelephoneEventSender.event("a") == nil)
    }
}
