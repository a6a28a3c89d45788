import Testing
@testable import WebRTC

struct SCTPPacketTests {
    static let chunks: [SCTPChunk] = [
        .data(SCTPDataChunk(tsn: 0xFFFF_FFFF, stream: 2, ssn: 7, ppid: 51, unordered: false, beginning: true, ending: true, userData: Array("{\"type\":\"x\"}".utf8))),
        .data(SCTPDataChunk(tsn: 5, stream: 0, ssn: 0, ppid: 53, unordered: true, beginning: false, ending: true, immediate: true, userData: [1, 2, 3])),
        .initiate(SCTPInitChunk(initiateTag: 0x1234_5678, advertisedWindow: 131_072, outboundStreams: 1024, inboundStreams: 65535, initialTSN: 99, parameters: [
            SCTPParameter(type: SCTPParameter.supportedExtensions, value: [130, 192]),
            SCTPParameter(type: SCTPParameter.forwardTSNSupported, value: []),
        ])),
        .initiateAck(SCTPInitChunk(initiateTag: 1, advertisedWindow: 1500, outboundStreams: 1, inboundStreams: 1, initialTSN: 0, parameters: [
            SCTPParameter(type: SCTPParameter.stateCookie, value: Array(0..<65)),
            SCTPParameter(type: SCTPParameter.unrecognizedParameter, value: [0xC0, 0x99, 0, 5, 1, 0, 0, 0]),
        ])),
        .sack(SCTPSackChunk(cumulativeTSN: 10, advertisedWindow: 65536, gapBlocks: [.init(start: 2, end: 3), .init(start: 5, end: 9)], duplicateTSNs: [4, 8])),
        .sack(SCTPSackChunk(cumulativeTSN: 0, advertisedWindow: 0)),
        .heartbeat(info: [9, 8, 7, 6, 5]),
        .heartbeatAck(info: Array(0..<16)),
        .abort(reflected: true, causes: [SCTPErrorCause(code: SCTPErrorCause.protocolViolation, info: Array("bad".utf8))]),
        .abort(reflected: false, causes: []),
        .shutdown(cumulativeTSN: 0x8000_0001),
        .shutdownAck,
        .shutdownComplete(reflected: true),
        .error(causes: [SCTPErrorCause(code: SCTPErrorCause.invalidStreamIdentifier, info: [0, 9, 0, 0]), SCTPErrorCause(code: 3, info: [0, 0, 1, 0])]),
        .cookieEcho(cookie: Array(repeating: 0xAB, count: 66)),
        .cookieAck,
        .forwardTSN(SCTPForwardTSNChunk(newCumulativeTSN: 77, skipped: [.init(stream: 1, ssn: 3), .init(stream: 4, ssn: 0)])),
        .reconfig([.outgoingReset(requestSequence: 1, responseSequence: 2, lastAssignedTSN: 3, streams: [1, 3, 5])]),
        .reconfig([.response(responseSequence: 9, result: 1, senderNextTSN: nil, receiverNextTSN: nil)]),
        .reconfig([.response(responseSequence: 9, result: 6, senderNextTSN: 100, receiverNextTSN: 200), .incomingReset(requestSequence: 4, streams: [])]),
        .unknown(type: 0xC1, flags: 0x5A, value: [1, 2, 3, 4, 5]),
    ]

    @Test(arguments: chunks)
    func eachChunkTypeRoundTrips(_ chunk: SCTPChunk) throws {
        let packet = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: 0xDEAD_BEEF, chunks: [chunk])
        let bytes = packet.encoded()
        #expect(bytes.count % 4 == 0)
        #expect(try SCTPPacket(parsing: bytes) == packet)
    }

    @Test func bundledChunksRoundTripInOrder() throws {
        let packet = SCTPPacket(sourcePort: 5000, destinationPort: 5001, verificationTag: 7, chunks: Self.chunks)
        #expect(try SCTPPacket(parsing: packet.encoded()) == packet)
    }

    /// Pion's header-only packet: the CRC-32C is stored least significant byte first.
    @Test func theChecksumIsStoredAsAReflectedCRCIs() {
        let header: [UInt8] = [0x13, 0x88, 0x13, 0x88, 0, 0, 0, 0, 0x06, 0xA9, 0x00, 0xE1]
        var bytes = header
        SCTPPacket.setChecksum(&bytes)
        #expect(bytes == header)
    }

    @Test func aBadChecksumIsRejected() {
        var bytes = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: 1, chunks: [.cookieAck]).encoded()
        bytes[13] ^= 0x01
        #expect(throws: SCTPPacketError.badChecksum) { try SCTPPacket(parsing: bytes) }
    }

    @Test func aChunkLengthPastThePacketIsRejected() {
        var bytes = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: 1, chunks: [.shutdown(cumulativeTSN: 1)]).encoded()
        bytes[15] = 12
        SCTPPacket.setChecksum(&bytes)
        #expect(throws: SCTPPacketError.chunkPastPacket(type: 7)) { try SCTPPacket(parsing: bytes) }
    }

    @Test func aZeroLengthChunkIsRejected() {
        var bytes = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: 1, chunks: [.cookieAck]).encoded()
        bytes[15] = 0
        SCTPPacket.setChecksum(&bytes)
        #expect(throws: SCTPPacketError.badChunkLength(type: 11)) { try SCTPPacket(parsing: bytes) }
    }

    @Test func aPacketWithoutChunksOrTooShortIsRejected() {
        var header: [UInt8] = [0x13, 0x88, 0x13, 0x88, 0, 0, 0, 0, 0, 0, 0, 0]
        SCTPPacket.setChecksum(&header)
        #expect(throws: SCTPPacketError.truncated) { try SCTPPacket(parsing: header) }
        #expect(throws: SCTPPacketError.tooLong(70_000)) { try SCTPPacket(parsing: [UInt8](repeating: 0, count: 70_000)) }
    }

    @Test func aSackWhoseCountsDisagreeWithItsLengthIsRejected() {
        var bytes = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: 1, chunks: [
            .sack(SCTPSackChunk(cumulativeTSN: 1, advertisedWindow: 1, gapBlocks: [.init(start: 2, end: 2)])),
        ]).encoded()
        bytes[12 + 4 + 8 + 1] = 200  // 200 gap blocks claimed, one present
        SCTPPacket.setChecksum(&bytes)
        #expect(throws: SCTPPacketError.malformedChunk(type: 3)) { try SCTPPacket(parsing: bytes) }
    }

    @Test func aParameterLengthUnderFourIsRejected() {
        var bytes = SCTPPacket(sourcePort: 5000, destinationPort: 5000, verificationTag: 0, chunks: [.initiate(SCTPInitChunk(
            initiateTag: 1, advertisedWindow: 1500, outboundStreams: 1, inboundStreams: 1, initialTSN: 1,
            parameters: [SCTPParameter(type: SCTPParameter.forwardTSNSupported, value: [])]))]).encoded()
        bytes[12 + 20 + 3] = 2
        SCTPPacket.setChecksum(&bytes)
        #expect(throws: SCTPPacketError.badParameterLength) { try SCTPPacket(parsing: bytes) }
    }

    /// Section 3.2.1: 0x0xxx stops without a report, 0x4xxx stops with one, 0x8xxx skips,
    /// 0xCxxx skips and reports.
    @Test func unrecognizedParametersAreReportedByTheirUpperBits() {
        func report(_ types: [UInt16]) -> [UInt16] {
            SCTPInitChunk(initiateTag: 1, advertisedWindow: 1500, outboundStreams: 1, inboundStreams: 1, initialTSN: 1,
                          parameters: types.map { SCTPParameter(type: $0, value: []) }).unrecognizedParametersToReport().map(\.type)
        }
        #expect(report([0x8001, 0xC101, 0x8008, 0xC102]) == [0xC101, 0xC102])
        #expect(report([0xC101, 0x4101, 0xC102]) == [0xC101, 0x4101])
        #expect(report([0xC101, 0x0101, 0xC102]) == [0xC101])
    }

    @Test func serialNumbersCompareAcrossTheWrap() {
        #expect(Serial.less(UInt32.max, 0))
        #expect(!Serial.less(UInt32(0), UInt32.max))
        #expect(Serial.lessOrEqual(UInt32(5), 5))
        #expect(Serial.less(UInt16.max, 1))
    }
}
