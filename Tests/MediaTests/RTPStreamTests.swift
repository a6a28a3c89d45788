import Testing
@testable import Media

/// One call's RTP both ways (`RTPStream`, WebRTC's and SIP's): seeded once, its frames played in
/// order on the clock it is given, caught up after a late tick and started again after a stall,
/// keys told apart from audio coming in and sent in place of audio going out.
@Suite struct RTPStreamTests {
    static let seed: [UInt8] = [0x11, 0x22, 0x33, 0x44, 0x01, 0x02, 0x00, 0x00, 0x10, 0x00]
    static let ms: UInt64 = 1_000_000

    /// A G.711 stream (payload type 0, telephone-events on 101) playing from 0.
    func g711() -> RTPStream {
        var stream = RTPStream(payloadType: 0, jitter: .g711, eventPayloadType: 101, seed: Self.seed)
        stream.start(at: 0)
        return stream
    }

    /// Parses `packet` and hands it to `stream` as received at `now`.
    func receive(_ stream: inout RTPStream, _ packet: [UInt8], now: UInt64) -> RTPStream.Heard {
        packet.withUnsafeBytes { bytes in
            let parsed = try! RTPPacket(parsing: bytes)
            return stream.received(parsed, in: bytes, audioPayloadType: 0, now: now)
        }
    }

    func packet(type: UInt8, sequence: UInt16, timestamp: UInt32, payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        RTPHeader(payloadType: type, sequenceNumber: sequence, timestamp: timestamp, ssrc: 7).write(payload: payload, into: &bytes, trailerCapacity: 0)
        return bytes
    }

    @Test func theSenderIsSeededOnceAndACodecChangeKeepsItsNumbers() throws {
        var stream = g711()
        #expect(stream.sender.ssrc == 0x1122_3344)
        var bytes: [UInt8] = []
        stream.write([UInt8](repeating: 0xFF, count: 160), now: 0, into: &bytes, trailer: 0)
        stream.change(payloadType: 8)
        stream.write([UInt8](repeating: 0xD5, count: 160), now: 20 * Self.ms, into: &bytes, trailer: 0)
        let second = try bytes.withUnsafeBytes { try RTPPacket(parsing: $0) }
        #expect(second.header.payloadType == 8)
        #expect(second.header.sequenceNumber == 0x0103 && second.header.timestamp == 0x1000 + 160)
        #expect(stream.sentPackets == 2)
    }

    @Test func framesPlayInOrderOnTheirTicksAndALateTickCatchesUpAtMostTen() {
        var stream = g711()
        for n in 0..<40 {
            _ = receive(&stream, packet(type: 0, sequence: UInt16(n), timestamp: UInt32(n * 160), payload: [UInt8](repeating: UInt8(n), count: 160)),
                        now: UInt64(n) * 20 * Self.ms)
        }
        // On time: one frame a tick (after the jitter buffer's start-up delay, nothing or a frame).
        var played: [UInt8] = []
        func tick(_ now: UInt64, clockNext: UInt64) -> Int {
            var count = 0
            while let output = stream.nextFrame(dueBy: now) {
                count += 1
                if case .frame(let payload) = output { played.append(payload[0]) }
            }
            stream.tickPlayed(now: now, clockNext: clockNext)
            return count
        }
        #expect(tick(0, clockNext: 20 * Self.ms) == 1)
        #expect(tick(20 * Self.ms, clockNext: 40 * Self.ms) == 1)
        // 300 ms late: ten frames, not fifteen; the rest of the way is skipped to the next run.
        #expect(tick(340 * Self.ms, clockNext: 360 * Self.ms) == 10)
        #expect(tick(350 * Self.ms, clockNext: 360 * Self.ms) == 0)
        #expect(tick(360 * Self.ms, clockNext: 380 * Self.ms) == 1)
        #expect(played == played.sorted(), "\(played)")
    }

    @Test func aKeyIsToldOnceAndAnotherPayloadTypeIsForeign() {
        var stream = g711()
        let down: [UInt8] = [5, 0x0A, 0x00, 0xA0], end: [UInt8] = [5, 0x8A, 0x03, 0x20]
        let heard = [
            receive(&stream, packet(type: 101, sequence: 1, timestamp: 800, payload: down), now: 0),
            receive(&stream, packet(type: 101, sequence: 2, timestamp: 800, payload: end), now: 20 * Self.ms),
            receive(&stream, packet(type: 101, sequence: 3, timestamp: 800, payload: end), now: 40 * Self.ms),
            receive(&stream, packet(type: 13, sequence: 4, timestamp: 960, payload: [0]), now: 60 * Self.ms),
            receive(&stream, packet(type: 0, sequence: 5, timestamp: 960, payload: []), now: 80 * Self.ms),
        ]
        #expect(heard == [.key("5"), .nothing, .nothing, .foreign, .nothing])
    }

    @Test func aKeyPressedTakesTheTicksUntilItIsSentAndTheAudioWaits() throws {
        var stream = g711()
        let pressed = stream.press("7"), notAKey = stream.press("x")
        #expect(pressed && !notAKey)
        var bytes: [UInt8] = []
        var keyPackets = 0
        var tick = 0
        while stream.writeKey(now: UInt64(tick) * 20 * Self.ms, into: &bytes, trailer: 0) {
            let parsed = try bytes.withUnsafeBytes { try RTPPacket(parsing: $0) }
            #expect(parsed.header.payloadType == 101)
            keyPackets += 1
            tick += 1
            if tick > 100 { break }
        }
        #expect(keyPackets >= 3 && keyPackets < 100, "\(keyPackets) packets for one key")
        // A stream whose far end takes no telephone-events presses nothing.
        var plain = RTPStream(payloadType: 111, jitter: .opus, seed: Self.seed)
        let pressedOnPlain = plain.press("1"), keyOnPlain = plain.writeKey(now: 0, into: &bytes, trailer: 0)
        #expect(!pressedOnPlain && !keyOnPlain)
    }
}
