import Testing
@testable import Media

/// RTP packets (RFC 3550 section 5.1) read in place and written into a caller's buffer.
@Suite struct RTPPacketTests {
    /// An Opus packet as a browser sends it: marker set (a talk spurt's first), payload type 111,
    /// and an RFC 8285 one-byte extension holding the audio level (id 1) and a transport-wide
    /// sequence number (id 3), then a three-byte payload.
    static let browserOpus: [UInt8] = [
        0x90, 0xEF, 0x12, 0x34, 0x00, 0x01, 0xE2, 0x40, 0xCA, 0xFE, 0xBA, 0xBE,
        0xBE, 0xDE, 0x00, 0x02, 0x10, 0xAA, 0x31, 0x00, 0x07, 0x00, 0x00, 0x00,
        0x78, 0x01, 0x02,
    ]

    @Test func aBrowsersOpusPacketReadsItsFieldsAndRanges() throws {
        let packet = try RTPPacket(parsing: Self.browserOpus)
        #expect(packet.header == RTPHeader(marker: true, payloadType: 111, sequenceNumber: 0x1234, timestamp: 123_456, ssrc: 0xCAFE_BABE))
        #expect(packet.csrcCount == 0)
        #expect(packet.headerExtension == RTPHeaderExtension(profile: 0xBEDE, data: 16..<24))
        #expect(packet.payload == 24..<27)
        #expect(Array(Self.browserOpus[packet.payload]) == [0x78, 0x01, 0x02])
        #expect(packet.paddingLength == 0)
    }

    @Test func theOneByteExtensionsElementsAreReadAndItsPaddingSkipped() throws {
        let packet = try RTPPacket(parsing: Self.browserOpus)
        let elements = Self.browserOpus.withUnsafeBytes { raw in
            Array(RTPHeaderExtensionElements(packet.headerExtension!, in: raw)).map { ($0.id, Array(Self.browserOpus[$0.data])) }
        }
        #expect(elements.count == 2)
        #expect(elements[0].0 == 1 && elements[0].1 == [0xAA])
        #expect(elements[1].0 == 3 && elements[1].1 == [0x00, 0x07])
    }

    @Test func theTwoByteFormAllowsEmptyElementsAndAForeignProfileGivesNone() {
        // Profile 0x1000: id 5 with no data, a padding octet, id 6 with two bytes.
        let bytes: [UInt8] = [0x05, 0x00, 0x00, 0x06, 0x02, 0xAB, 0xCD, 0x00]
        let two = bytes.withUnsafeBytes { raw in
            Array(RTPHeaderExtensionElements(RTPHeaderExtension(profile: 0x1000, data: 0..<8), in: raw))
        }
        #expect(two.map(\.id) == [5, 6])
        #expect(two.map(\.data) == [2..<2, 5..<7])
        let foreign = bytes.withUnsafeBytes { raw in
            Array(RTPHeaderExtensionElements(RTPHeaderExtension(profile: 0x1234, data: 0..<8), in: raw))
        }
        #expect(foreign.isEmpty)
    }

    @Test func oneByteIdentifierFifteenStopsTheElementsAndAnOverrunElementIsNotGiven() {
        let stop: [UInt8] = [0x10, 0x01, 0xF0, 0x20, 0x02]
        let stopped = stop.withUnsafeBytes { raw in
            Array(RTPHeaderExtensionElements(RTPHeaderExtension(profile: 0xBEDE, data: 0..<5), in: raw)).map(\.id)
        }
        #expect(stopped == [1])
        let overrun: [UInt8] = [0x10, 0x01, 0x23, 0x00]
        let cut = overrun.withUnsafeBytes { raw in
            Array(RTPHeaderExtensionElements(RTPHeaderExtension(profile: 0xBEDE, data: 0..<4), in: raw)).map(\.id)
        }
        #expect(cut == [1])
    }

    @Test func csrcsAndPaddingAreReadAndThePayloadStopsBeforeThePadding() throws {
        var bytes: [UInt8] = [0xA2, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01]
        bytes += [0, 0, 0, 7, 0, 0, 0, 9]  // CSRCs 7 and 9
        bytes += [0x55, 0x66]  // payload
        bytes += [0, 0, 3]  // three octets of padding, the count last
        let packet = try RTPPacket(parsing: bytes)
        #expect(packet.csrcCount == 2)
        bytes.withUnsafeBytes { raw in
            #expect(packet.csrc(0, in: raw) == 7)
            #expect(packet.csrc(1, in: raw) == 9)
        }
        #expect(packet.header.sequenceNumber == 65535 && packet.header.timestamp == .max && !packet.header.marker)
        #expect(packet.payload == 20..<22)
        #expect(packet.paddingLength == 3)
    }

    @Test func eachMalformationIsRefusedWithItsOwnError() {
        let header: [UInt8] = [0x80, 0x00, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]
        #expect(throws: RTPPacketError.tooShort(length: 11)) { try RTPPacket(parsing: Array(header.prefix(11))) }
        #expect(throws: RTPPacketError.tooShort(length: 0)) { try RTPPacket(parsing: []) }
        #expect(throws: RTPPacketError.unsupportedVersion(1)) { try RTPPacket(parsing: [0x40] + header.dropFirst()) }
        #expect(throws: RTPPacketError.truncatedCSRCList(csrcCount: 2, length: 16)) {
            try RTPPacket(parsing: [0x82] + header.dropFirst() + [0, 0, 0, 1])
        }
        #expect(throws: RTPPacketError.truncatedHeaderExtension(declared: 4, available: 2)) {
            try RTPPacket(parsing: [0x90] + header.dropFirst() + [0xBE, 0xDE])
        }
        #expect(throws: RTPPacketError.truncatedHeaderExtension(declared: 8, available: 7)) {
            try RTPPacket(parsing: [0x90] + header.dropFirst() + [0xBE, 0xDE, 0, 1, 0x10, 0, 0])
        }
        #expect(throws: RTPPacketError.badPadding(count: 0, available: 2)) {
            try RTPPacket(parsing: [0xA0] + header.dropFirst() + [0x11, 0])
        }
        #expect(throws: RTPPacketError.badPadding(count: 3, available: 2)) {
            try RTPPacket(parsing: [0xA0] + header.dropFirst() + [0x11, 3])
        }
        #expect(!RTPPacketError.badPadding(count: 3, available: 2).description.isEmpty)
    }

    @Test func paddingMayFillEverythingAfterTheHeader() throws {
        let packet = try RTPPacket(parsing: [0xA0, 0x00, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4])
        #expect(packet.payload == 12..<12)
        #expect(packet.paddingLength == 4)
    }

    @Test func aWrittenPacketReadsBackWithEveryField() throws {
        let header = RTPHeader(marker: true, payloadType: 0, sequenceNumber: 65535, timestamp: 0xFFFF_FF00, ssrc: 42)
        let payload: [UInt8] = Array(0..<160)
        let extensionData = RTPHeaderExtensionElements.oneByteData([(id: 1, data: [0x80 | 30])])
        var out: [UInt8] = []
        payload.withUnsafeBytes { p in
            extensionData.withUnsafeBytes { e in
                header.write(payload: p, into: &out, csrcs: [5], headerExtension: (RTPHeaderExtensionElements.oneByteProfile, e), padding: 4)
            }
        }
        let packet = try RTPPacket(parsing: out)
        #expect(packet.header == header)
        #expect(packet.csrcCount == 1)
        #expect(packet.headerExtension?.profile == 0xBEDE)
        #expect(Array(out[packet.headerExtension!.data]) == extensionData)
        #expect(Array(out[packet.payload]) == payload)
        #expect(packet.paddingLength == 4)
        #expect(out.capacity >= out.count + 16)
    }

    @Test func writingReusesTheCallersBufferAndItsCapacity() throws {
        var out: [UInt8] = []
        let header = RTPHeader(payloadType: 111, sequenceNumber: 1, timestamp: 960, ssrc: 7)
        header.write(payload: [UInt8](repeating: 1, count: 100), into: &out)
        let capacity = out.capacity
        header.write(payload: [2, 3], into: &out)
        #expect(out.count == 14 && out.capacity == capacity)
        let packet = try RTPPacket(parsing: out)
        #expect(Array(out[packet.payload]) == [2, 3])
    }

    @Test func rtcpIsToldFromRTPByTheSecondOctetUnderRTCPMux() {
        // RFC 5761 section 4: packet types 192...223 (SR 200, RR 201, RTPFB 205) are RTCP.
        #expect(RTPPacket.isRTCP([0x80, 200, 0, 6]))
        #expect(RTPPacket.isRTCP([0x81, 205]))
        #expect(RTPPacket.isRTCP([0x80, 192]) && RTPPacket.isRTCP([0x80, 223]))
        // Opus (111), and 111 with the marker bit (239), and PCMU (0) with it (128) are RTP.
        #expect(!RTPPacket.isRTCP(Self.browserOpus))
        #expect(!RTPPacket.isRTCP([0x80, 111]) && !RTPPacket.isRTCP([0x80, 128]) && !RTPPacket.isRTCP([0x80, 224]))
        #expect(!RTPPacket.isRTCP([0x80]))
    }
}
