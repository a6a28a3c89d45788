/// Writing RTCP: each packet appends itself, with its header and length field, to a buffer, so a
/// compound packet (RFC 3550 section 6.1) is the packets appended one after another.
extension RTCPPacket {
    /// Appends this packet to `out`. `.other` packets were skipped when read and have no body to
    /// write: appending one is a programming error.
    package func append(to out: inout [UInt8]) {
        switch self {
        case .senderReport(let report):
            let start = Self.appendHeader(count: report.reports.count, type: Self.senderReportType, to: &out)
            out.appendRTP(report.ssrc)
            out.appendRTP(report.info.ntp.seconds)
            out.appendRTP(report.info.ntp.fraction)
            out.appendRTP(report.info.rtpTimestamp)
            out.appendRTP(report.info.packetCount)
            out.appendRTP(report.info.octetCount)
            for block in report.reports { block.append(to: &out) }
            Self.finish(start, in: &out)
        case .receiverReport(let report):
            let start = Self.appendHeader(count: report.reports.count, type: Self.receiverReportType, to: &out)
            out.appendRTP(report.ssrc)
            for block in report.reports { block.append(to: &out) }
            Self.finish(start, in: &out)
        case .sourceDescription(let chunks):
            let start = Self.appendHeader(count: chunks.count, type: Self.sourceDescriptionType, to: &out)
            for chunk in chunks {
                out.appendRTP(chunk.ssrc)
                if let cname = chunk.cname {
                    precondition(cname.count <= 255, "CNAME of \(cname.count) bytes")
                    out.append(Self.cnameItem)
                    out.append(UInt8(cname.count))
                    out.append(contentsOf: cname)
                }
                // The null item that ends the chunk, then nulls to the 32-bit boundary (section 6.5).
                out.append(0)
                Self.padToWord(&out, from: start)
            }
            Self.finish(start, in: &out)
        case .bye(let bye):
            let start = Self.appendHeader(count: bye.ssrcs.count, type: Self.byeType, to: &out)
            for ssrc in bye.ssrcs { out.appendRTP(ssrc) }
            if let reason = bye.reason {
                precondition(reason.count <= 255, "BYE reason of \(reason.count) bytes")
                out.append(UInt8(reason.count))
                out.append(contentsOf: reason)
                Self.padToWord(&out, from: start)
            }
            Self.finish(start, in: &out)
        case .other(let type, _):
            preconditionFailure("RTCP packet type \(type) is read, never written")
        }
    }

    /// Writes a compound packet into `out` (emptied first, its capacity kept). Section 6.1: the
    /// first packet is an SR or RR (even with nothing to report), and an SDES with our CNAME
    /// follows in every compound packet; the caller lists them so.
    package static func writeCompound(_ packets: [RTCPPacket], into out: inout [UInt8], trailerCapacity: Int = 16) {
        switch packets.first {
        case .senderReport, .receiverReport: break
        default: preconditionFailure("a compound RTCP packet starts with an SR or RR (RFC 3550 section 6.1)")
        }
        out.removeAll(keepingCapacity: true)
        // SRTCP appends its index and tag (RFC 3711 section 3.4): 4 + 10 or 16 bytes.
        out.reserveCapacity(256 + trailerCapacity)
        for packet in packets { packet.append(to: &out) }
    }

    /// Version 2, no padding, the five-bit count and the type; the length is filled in by `finish`.
    private static func appendHeader(count: Int, type: UInt8, to out: inout [UInt8]) -> Int {
        precondition(count <= 31, "an RTCP count of \(count)")
        let start = out.count
        out.append(2 << 6 | UInt8(count))
        out.append(type)
        out.appendRTP(UInt16(0))
        return start
    }

    private static func finish(_ start: Int, in out: inout [UInt8]) {
        let words = (out.count - start) / 4 - 1
        precondition(words <= Int(UInt16.max), "an RTCP packet of \(words + 1) words")
        out.setRTP(UInt16(words), at: start + 2)
    }

    private static func padToWord(_ out: inout [UInt8], from start: Int) {
        while (out.count - start) % 4 != 0 { out.append(0) }
    }
}

extension RTCPReportBlock {
    func append(to out: inout [UInt8]) {
        out.appendRTP(ssrc)
        let lost = UInt32(bitPattern: cumulativeLost.clamped(to: Self.cumulativeLostRange)) & 0xFF_FFFF
        out.appendRTP(UInt32(fractionLost) << 24 | lost)
        out.appendRTP(extendedHighestSequence)
        out.appendRTP(jitter)
        out.appendRTP(lastSenderReport)
        out.appendRTP(delaySinceLastSenderReport)
    }
}

extension Comparable {
    fileprivate func clamped(to range: ClosedRange<Self>) -> Self { min(max(self, range.lowerBound), range.upperBound) }
}
