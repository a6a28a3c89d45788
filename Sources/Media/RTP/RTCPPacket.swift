/// A reception report block (RFC 3550 section 6.4.1): what one receiver says of one source.
package struct RTCPReportBlock: Sendable, Equatable {
    package var ssrc: UInt32
    /// Packets lost since the last report, as a fraction of those expected, in 1/256ths.
    package var fractionLost: UInt8
    /// Packets lost since reception began: 24 bits, signed (duplicates can make it negative).
    package var cumulativeLost: Int32
    /// Sequence-number cycles in the top 16 bits, the highest sequence number in the low 16.
    package var extendedHighestSequence: UInt32
    /// Interarrival jitter, in timestamp units (appendix A.8).
    package var jitter: UInt32
    /// The middle 32 bits of the last sender report's NTP timestamp; 0 if none was received.
    package var lastSenderReport: UInt32
    /// Time since that sender report arrived, in 1/65536 s; 0 if none was received.
    package var delaySinceLastSenderReport: UInt32

    package static let length = 24
    /// The 24-bit field's range.
    package static let cumulativeLostRange: ClosedRange<Int32> = -0x80_0000...0x7F_FFFF

    package init(
        ssrc: UInt32, fractionLost: UInt8 = 0, cumulativeLost: Int32 = 0, extendedHighestSequence: UInt32 = 0,
        jitter: UInt32 = 0, lastSenderReport: UInt32 = 0, delaySinceLastSenderReport: UInt32 = 0
    ) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.extendedHighestSequence = extendedHighestSequence
        self.jitter = jitter
        self.lastSenderReport = lastSenderReport
        self.delaySinceLastSenderReport = delaySinceLastSenderReport
    }

    /// The round trip this block measures when it answers one of our sender reports and arrives
    /// at `arrival` (section 6.4.1's A - LSR - DLSR, in 1/65536 s); nil if it answers none.
    package func roundTrip(arrival: NTPTimestamp) -> Duration? {
        guard lastSenderReport != 0 else { return nil }
        let units = arrival.middle32 &- lastSenderReport &- delaySinceLastSenderReport
        // A negative round trip (clocks stepped, a forged block) reads as a huge one: refuse it.
        guard Int32(bitPattern: units) >= 0 else { return nil }
        return .nanoseconds(Int64(units) * 1_000_000_000 / 65536)
    }
}

/// The sender information a sender report carries (RFC 3550 section 6.4.1): a wall-clock time and
/// the RTP timestamp of the same instant, and what was sent so far.
package struct RTCPSenderInfo: Sendable, Equatable {
    package var ntp: NTPTimestamp
    package var rtpTimestamp: UInt32
    package var packetCount: UInt32
    package var octetCount: UInt32

    package init(ntp: NTPTimestamp, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32) {
        self.ntp = ntp
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
    }
}

package struct RTCPSenderReport: Sendable, Equatable {
    package var ssrc: UInt32
    package var info: RTCPSenderInfo
    /// At most 31 (the five-bit count).
    package var reports: [RTCPReportBlock]

    package init(ssrc: UInt32, info: RTCPSenderInfo, reports: [RTCPReportBlock] = []) {
        self.ssrc = ssrc
        self.info = info
        self.reports = reports
    }
}

package struct RTCPReceiverReport: Sendable, Equatable {
    package var ssrc: UInt32
    /// At most 31.
    package var reports: [RTCPReportBlock]

    package init(ssrc: UInt32, reports: [RTCPReportBlock] = []) {
        self.ssrc = ssrc
        self.reports = reports
    }
}

/// One SDES chunk (RFC 3550 section 6.5) with its CNAME, the only item kept: it binds a source's
/// SSRCs together; the others (NAME, EMAIL, TOOL...) are for people and are skipped.
package struct RTCPSourceDescription: Sendable, Equatable {
    package var ssrc: UInt32
    /// The CNAME's octets (UTF-8 by section 6.5, not checked here), at most 255; nil if the chunk
    /// has none.
    package var cname: [UInt8]?

    package init(ssrc: UInt32, cname: [UInt8]?) {
        self.ssrc = ssrc
        self.cname = cname
    }
}

package struct RTCPBye: Sendable, Equatable {
    /// At most 31.
    package var ssrcs: [UInt32]
    /// The reason's octets (at most 255), nil if the packet gives none.
    package var reason: [UInt8]?

    package init(ssrcs: [UInt32], reason: [UInt8]? = nil) {
        self.ssrcs = ssrcs
        self.reason = reason
    }
}

/// One packet of a compound RTCP packet.
package enum RTCPPacket: Sendable, Equatable {
    case senderReport(RTCPSenderReport)
    case receiverReport(RTCPReceiverReport)
    case sourceDescription([RTCPSourceDescription])
    case bye(RTCPBye)
    /// APP (204), RTPFB (205, RFC 4585), PSFB (206), XR (207, RFC 3611) or any other type: skipped,
    /// with its type and the header's five-bit count (a feedback packet's FMT).
    case other(type: UInt8, count: UInt8)

    package static let senderReportType: UInt8 = 200
    package static let receiverReportType: UInt8 = 201
    package static let sourceDescriptionType: UInt8 = 202
    package static let byeType: UInt8 = 203
    static let cnameItem: UInt8 = 1
    static let headerLength = 4

    /// Reads a compound RTCP packet (RFC 3550 section 6.1) into its packets, in order. Each one's
    /// length field must fit what remains, and together they must fill the datagram exactly
    /// (appendix A.2). The first need not be SR or RR: reduced-size RTCP (RFC 5506) sends
    /// feedback alone. Allocation is bounded by the datagram's size.
    package static func parseCompound(_ bytes: UnsafeRawBufferPointer) throws(RTCPPacketError) -> [RTCPPacket] {
        guard !bytes.isEmpty else { throw .empty }
        var packets: [RTCPPacket] = []
        var offset = 0
        while offset < bytes.count {
            let remaining = bytes.count - offset
            guard remaining >= headerLength else { throw .truncatedHeader(offset: offset, available: remaining) }
            let b0 = bytes[offset]
            guard b0 >> 6 == 2 else { throw .unsupportedVersion(b0 >> 6, offset: offset) }
            // The length field counts 32-bit words minus one, header included (section 6.4.1).
            let length = 4 * (Int(bytes.rtpUInt16(at: offset + 2)) + 1)
            guard length <= remaining else { throw .truncatedPacket(offset: offset, declared: length, available: remaining) }
            var end = offset + length
            if b0 & 0x20 != 0 {
                let padding = Int(bytes[end - 1])
                guard padding >= 1, padding <= length - headerLength else {
                    throw .badPadding(offset: offset, count: padding)
                }
                end -= padding
            }
            let body = UnsafeRawBufferPointer(rebasing: bytes[(offset + headerLength)..<end])
            packets.append(try parse(type: bytes[offset + 1], count: Int(b0 & 0x1F), body: body, offset: offset))
            offset += length
        }
        return packets
    }

    package static func parseCompound(_ bytes: [UInt8]) throws(RTCPPacketError) -> [RTCPPacket] {
        let result = bytes.withUnsafeBytes { raw in Result { () throws(RTCPPacketError) in try parseCompound(raw) } }
        return try result.get()
    }

    /// One packet's body (after its four-byte header, without its padding). Octets past what the
    /// count calls for are SR's and RR's profile-specific extensions (section 6.4.1): skipped.
    private static func parse(type: UInt8, count: Int, body: UnsafeRawBufferPointer, offset: Int) throws(RTCPPacketError) -> RTCPPacket {
        switch type {
        case senderReportType:
            guard body.count >= 24 + count * RTCPReportBlock.length else { throw .truncatedBody(type: type, offset: offset) }
            let info = RTCPSenderInfo(
                ntp: NTPTimestamp(seconds: body.rtpUInt32(at: 4), fraction: body.rtpUInt32(at: 8)),
                rtpTimestamp: body.rtpUInt32(at: 12), packetCount: body.rtpUInt32(at: 16), octetCount: body.rtpUInt32(at: 20))
            return .senderReport(RTCPSenderReport(ssrc: body.rtpUInt32(at: 0), info: info, reports: reportBlocks(body, at: 24, count: count)))
        case receiverReportType:
            guard body.count >= 4 + count * RTCPReportBlock.length else { throw .truncatedBody(type: type, offset: offset) }
            return .receiverReport(RTCPReceiverReport(ssrc: body.rtpUInt32(at: 0), reports: reportBlocks(body, at: 4, count: count)))
        case sourceDescriptionType:
            return .sourceDescription(try chunks(body, count: count, offset: offset))
        case byeType:
            guard body.count >= 4 * count else { throw .truncatedBody(type: type, offset: offset) }
            var ssrcs: [UInt32] = []
            ssrcs.reserveCapacity(count)
            for i in 0..<count { ssrcs.append(body.rtpUInt32(at: 4 * i)) }
            var reason: [UInt8]?
            let rest = 4 * count
            if rest < body.count {
                let length = Int(body[rest])
                guard rest + 1 + length <= body.count else { throw .truncatedBody(type: type, offset: offset) }
                reason = Array(body[(rest + 1)..<(rest + 1 + length)])
            }
            return .bye(RTCPBye(ssrcs: ssrcs, reason: reason))
        default:
            return .other(type: type, count: UInt8(count))
        }
    }

    private static func reportBlocks(_ body: UnsafeRawBufferPointer, at start: Int, count: Int) -> [RTCPReportBlock] {
        var blocks: [RTCPReportBlock] = []
        blocks.reserveCapacity(count)
        for i in 0..<count {
            let at = start + i * RTCPReportBlock.length
            let lost = body.rtpUInt32(at: at + 4)
            blocks.append(RTCPReportBlock(
                ssrc: body.rtpUInt32(at: at), fractionLost: UInt8(truncatingIfNeeded: lost >> 24),
                // The 24-bit two's complement, sign-extended: shifted up to the top, then back down.
                cumulativeLost: Int32(bitPattern: lost << 8) >> 8,
                extendedHighestSequence: body.rtpUInt32(at: at + 8), jitter: body.rtpUInt32(at: at + 12),
                lastSenderReport: body.rtpUInt32(at: at + 16), delaySinceLastSenderReport: body.rtpUInt32(at: at + 20)))
        }
        return blocks
    }

    /// Section 6.5: each chunk is an SSRC, items (type, length, text) ended by a null octet, then
    /// null octets to the next 32-bit boundary. The body starts on one (after the 4-byte header).
    private static func chunks(_ body: UnsafeRawBufferPointer, count: Int, offset: Int) throws(RTCPPacketError) -> [RTCPSourceDescription] {
        var chunks: [RTCPSourceDescription] = []
        var at = 0
        for _ in 0..<count {
            guard at + 4 <= body.count else { throw .truncatedBody(type: sourceDescriptionType, offset: offset) }
            var chunk = RTCPSourceDescription(ssrc: body.rtpUInt32(at: at), cname: nil)
            at += 4
            while true {
                guard at < body.count else { throw .truncatedBody(type: sourceDescriptionType, offset: offset) }
                let item = body[at]
                if item == 0 { break }
                guard at + 2 <= body.count else { throw .truncatedBody(type: sourceDescriptionType, offset: offset) }
                let length = Int(body[at + 1])
                guard at + 2 + length <= body.count else { throw .truncatedBody(type: sourceDescriptionType, offset: offset) }
                if item == cnameItem && chunk.cname == nil { chunk.cname = Array(body[(at + 2)..<(at + 2 + length)]) }
                at += 2 + length
            }
            // Past the null octet, to the boundary (its padding may run to the body's end).
            at = min(body.count, (at + 4) & ~3)
            chunks.append(chunk)
        }
        return chunks
    }
}

package enum RTCPPacketError: Error, Equatable, CustomStringConvertible {
    case empty
    /// Fewer than four octets left for a packet's header.
    case truncatedHeader(offset: Int, available: Int)
    case unsupportedVersion(UInt8, offset: Int)
    /// A packet's length field runs past the datagram's end.
    case truncatedPacket(offset: Int, declared: Int, available: Int)
    /// The P bit is set and the last octet's count is 0 or reaches into the header.
    case badPadding(offset: Int, count: Int)
    /// An SR, RR, SDES or BYE shorter than its count and fields call for.
    case truncatedBody(type: UInt8, offset: Int)

    package var description: String {
        switch self {
        case .empty: "empty RTCP packet"
        case .truncatedHeader(let offset, let available): "RTCP header at \(offset) with \(available) bytes left"
        case .unsupportedVersion(let version, let offset): "RTCP version \(version) at \(offset), not 2"
        case .truncatedPacket(let offset, let declared, let available):
            "RTCP packet at \(offset) declares \(declared) bytes with \(available) left"
        case .badPadding(let offset, let count): "RTCP packet at \(offset) with a padding count of \(count)"
        case .truncatedBody(let type, let offset): "RTCP packet of type \(type) at \(offset) shorter than its fields"
        }
    }
}
