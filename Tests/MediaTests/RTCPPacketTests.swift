import Testing
@testable import Media

/// Compound RTCP (RFC 3550 section 6): SR, RR, SDES's CNAME and BYE read and written; other types
/// skipped.
@Suite struct RTCPPacketTests {
    static let block = RTCPReportBlock(
        ssrc: 0x1111_2222, fractionLost: 25, cumulativeLost: -3, extendedHighestSequence: 0x0001_0005,
        jitter: 480, lastSenderReport: 0xB705_2000, delaySinceLastSenderReport: 0x0005_4000)

    static func written(_ packets: [RTCPPacket]) -> [UInt8] {
        var out: [UInt8] = []
        for packet in packets { packet.append(to: &out) }
        return out
    }

    @Test func everyWrittenKindReadsBackAsItWas() throws {
        let packets: [RTCPPacket] = [
            .senderReport(RTCPSenderReport(
                ssrc: 7, info: RTCPSenderInfo(ntp: NTPTimestamp(seconds: 0xE000_0001, fraction: 0x8000_0000), rtpTimestamp: 96000, packetCount: 100, octetCount: 16000),
                reports: [Self.block])),
            .receiverReport(RTCPReceiverReport(ssrc: 8, reports: [Self.block, RTCPReportBlock(ssrc: 9)])),
            .receiverReport(RTCPReceiverReport(ssrc: 8)),
            .sourceDescription([
                RTCPSourceDescription(ssrc: 7, cname: Array("parley@example".utf8)),
                RTCPSourceDescription(ssrc: 8, cname: Array("abc".utf8)),
                RTCPSourceDescription(ssrc: 9, cname: nil),
                RTCPSourceDescription(ssrc: 10, cname: []),
            ]),
            .bye(RTCPBye(ssrcs: [7, 8], reason: Array("hung up".utf8))),
            .bye(RTCPBye(ssrcs: [7])),
            .bye(RTCPBye(ssrcs: [], reason: [])),
        ]
        let bytes = Self.written(packets)
        #expect(bytes.count % 4 == 0)
        #expect(try RTCPPacket.parseCompound(bytes) == packets)
    }

    @Test func aSenderReportsLayoutIsSection6_4_1s() {
        let report = RTCPPacket.senderReport(RTCPSenderReport(
            ssrc: 0x0102_0304, info: RTCPSenderInfo(ntp: NTPTimestamp(seconds: 5, fraction: 6), rtpTimestamp: 7, packetCount: 8, octetCount: 9),
            reports: [Self.block]))
        let bytes = Self.written([report])
        // V=2 RC=1, PT=200, length 12 words - 1 (28 + 24 bytes).
        #expect(Array(bytes.prefix(8)) == [0x81, 200, 0, 12, 1, 2, 3, 4])
        #expect(bytes.count == 52)
        // The block's loss word: fraction 25, then -3 as 24 bits.
        #expect(Array(bytes[32..<36]) == [25, 0xFF, 0xFF, 0xFD])
    }

    @Test func aCompoundStartingWithAReportWritesAsSection6_1Asks() throws {
        var out: [UInt8] = []
        let packets: [RTCPPacket] = [
            .receiverReport(RTCPReceiverReport(ssrc: 1, reports: [Self.block])),
            .sourceDescription([RTCPSourceDescription(ssrc: 1, cname: Array("x".utf8))]),
        ]
        RTCPPacket.writeCompound(packets, into: &out)
        #expect(try RTCPPacket.parseCompound(out) == packets)
        #expect(out.capacity >= out.count + 16)
    }

    @Test func otherTypesAreSkippedWithTheirTypeAndCount() throws {
        var bytes = Self.written([.receiverReport(RTCPReceiverReport(ssrc: 1))])
        // A PLI (PSFB, FMT 1: RFC 4585 section 6.3.1) and a generic NACK (RTPFB, FMT 1), then an APP.
        bytes += [0x81, 206, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2]
        bytes += [0x81, 205, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0x12, 0x34, 0x00, 0x05]
        bytes += [0x80, 204, 0, 2, 0, 0, 0, 1, 0x6E, 0x61, 0x6D, 0x65]
        let packets = try RTCPPacket.parseCompound(bytes)
        #expect(packets.dropFirst() == [.other(type: 206, count: 1), .other(type: 205, count: 1), .other(type: 204, count: 0)])
    }

    @Test func sdesItemsOtherThanCNAMEAreSkipped() throws {
        // One chunk: NAME "ab", CNAME "c", then the null item and padding to the boundary.
        let chunk: [UInt8] = [0, 0, 0, 5, 2, 2, 0x61, 0x62, 1, 1, 0x63, 0]
        let packet: [UInt8] = [0x81, 202, 0, UInt8(chunk.count / 4)] + chunk
        #expect(try RTCPPacket.parseCompound(packet) == [.sourceDescription([RTCPSourceDescription(ssrc: 5, cname: [0x63])])])
    }

    @Test func paddingOnTheLastPacketIsRemovedBeforeItsBodyIsRead() throws {
        // A BYE for SSRC 1 with four octets of padding (the P bit set, the count last).
        let bye: [UInt8] = [0xA1, 203, 0, 2, 0, 0, 0, 1, 0, 0, 0, 4]
        #expect(try RTCPPacket.parseCompound(bye) == [.bye(RTCPBye(ssrcs: [1]))])
    }

    @Test func eachMalformationIsRefusedWithItsOwnError() {
        let rr: [UInt8] = [0x80, 201, 0, 1, 0, 0, 0, 1]
        #expect(throws: RTCPPacketError.empty) { try RTCPPacket.parseCompound([]) }
        #expect(throws: RTCPPacketError.truncatedHeader(offset: 8, available: 3)) { try RTCPPacket.parseCompound(rr + [0x80, 201, 0]) }
        #expect(throws: RTCPPacketError.unsupportedVersion(3, offset: 0)) { try RTCPPacket.parseCompound([0xC0] + rr.dropFirst()) }
        #expect(throws: RTCPPacketError.truncatedPacket(offset: 0, declared: 12, available: 8)) {
            try RTCPPacket.parseCompound([0x80, 201, 0, 2, 0, 0, 0, 1])
        }
        #expect(throws: RTCPPacketError.badPadding(offset: 0, count: 0)) { try RTCPPacket.parseCompound([0xA0, 201, 0, 1, 0, 0, 0, 0]) }
        #expect(throws: RTCPPacketError.badPadding(offset: 0, count: 5)) { try RTCPPacket.parseCompound([0xA0, 201, 0, 1, 0, 0, 0, 5]) }
        // An RR counting one block with none there; an SR without its sender info.
        #expect(throws: RTCPPacketError.truncatedBody(type: 201, offset: 0)) { try RTCPPacket.parseCompound([0x81] + rr.dropFirst()) }
        #expect(throws: RTCPPacketError.truncatedBody(type: 200, offset: 0)) { try RTCPPacket.parseCompound([0x80, 200, 0, 1, 0, 0, 0, 1]) }
        // SDES: a chunk with no null item, an item longer than the packet, two chunks counted for one.
        #expect(throws: RTCPPacketError.truncatedBody(type: 202, offset: 0)) {
            try RTCPPacket.parseCompound([0x81, 202, 0, 2, 0, 0, 0, 1, 1, 2, 0x61, 0x62])
        }
        #expect(throws: RTCPPacketError.truncatedBody(type: 202, offset: 0)) {
            try RTCPPacket.parseCompound([0x81, 202, 0, 2, 0, 0, 0, 1, 1, 9, 0x61, 0x62])
        }
        #expect(throws: RTCPPacketError.truncatedBody(type: 202, offset: 0)) {
            try RTCPPacket.parseCompound([0x82, 202, 0, 2, 0, 0, 0, 1, 1, 1, 0x61, 0x00])
        }
        // BYE: more SSRCs counted than held; a reason longer than the packet.
        #expect(throws: RTCPPacketError.truncatedBody(type: 203, offset: 0)) { try RTCPPacket.parseCompound([0x82, 203, 0, 1, 0, 0, 0, 1]) }
        #expect(throws: RTCPPacketError.truncatedBody(type: 203, offset: 0)) {
            try RTCPPacket.parseCompound([0x81, 203, 0, 2, 0, 0, 0, 1, 9, 0x61, 0x62, 0x63])
        }
        #expect(!RTCPPacketError.truncatedBody(type: 203, offset: 0).description.isEmpty)
    }

    @Test func aReportBlockMeasuresTheRoundTripOfSection6_4_1sExample() {
        // Section 6.4.1: A = 0xb710:8000 (46864.500 s), LSR = 0xb705:2000 (46853.125 s),
        // DLSR = 0x0005:4000 (5.250 s): a round trip of 6.125 s.
        let arrival = NTPTimestamp(seconds: 0xB710, fraction: 0x8000_0000)
        #expect(arrival.middle32 == 0xB710_8000)
        #expect(Self.block.roundTrip(arrival: arrival) == .milliseconds(6125))
        #expect(RTCPReportBlock(ssrc: 1).roundTrip(arrival: arrival) == nil)
    }

    @Test func ntpTimeFromTheUnixClockCountsFrom1900() {
        // 2024-01-01T00:00:00.5Z: 1,704,067,200.5 s after 1970.
        let ntp = NTPTimestamp(unixNanoseconds: 1_704_067_200_500_000_000)
        #expect(UInt64(ntp.seconds) == 1_704_067_200 + NTPTimestamp.unixEpochOffset)
        #expect(ntp.fraction == 0x8000_0000)
        #expect(NTPTimestamp(raw: ntp.raw) == ntp)
    }
}
