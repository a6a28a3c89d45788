/// The fields of RTP's fixed header (RFC 3550 section 5.1) that a stream's sender sets and its
/// receiver reads: what `RTPSender` makes for each packet and what a parsed packet carries.
package struct RTPHeader: Sendable, Equatable {
    /// For audio, the first packet of a talk spurt (RFC 3551 section 4.1; RFC 7587 section 4.1).
    package var marker: Bool
    /// 0...127: seven bits on the wire.
    package var payloadType: UInt8
    package var sequenceNumber: UInt16
    package var timestamp: UInt32
    package var ssrc: UInt32

    package init(marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
    }
}

/// A header extension's place in a parsed packet (RFC 3550 section 5.3.1): its profile (0xBEDE for
/// RFC 8285's one-byte form, 0x100X for the two-byte form) and the range of its data, after the
/// extension's own four-byte header. `RTPHeaderExtensionElements` reads RFC 8285's elements.
package struct RTPHeaderExtension: Sendable, Equatable {
    package var profile: UInt16
    package var data: Range<Int>
}

/// One RTP packet read from a datagram (RFC 3550 section 5.1) without copying it: the header's
/// fields, and ranges into the caller's buffer for the CSRC list, the header extension and the
/// payload. The caller keeps the buffer while it uses the ranges.
package struct RTPPacket: Sendable, Equatable {
    package static let version: UInt8 = 2
    package static let fixedHeaderLength = 12

    package var header: RTPHeader
    /// The contributing sources' list, four bytes each (`csrc(_:in:)` reads one).
    package var csrcs: Range<Int>
    package var headerExtension: RTPHeaderExtension?
    package var payload: Range<Int>
    /// Octets of padding after the payload, the count octet included; 0 when the P bit is clear.
    package var paddingLength: Int

    package var csrcCount: Int { csrcs.count / 4 }

    /// Reads `bytes` as one RTP packet; every field is checked against the datagram's length
    /// before it is read, so a malformed datagram throws and never traps.
    package init(parsing bytes: UnsafeRawBufferPointer) throws(RTPPacketError) {
        let count = bytes.count
        guard count >= Self.fixedHeaderLength else { throw .tooShort(length: count) }
        let b0 = bytes[0], b1 = bytes[1]
        guard b0 >> 6 == Self.version else { throw .unsupportedVersion(b0 >> 6) }
        let hasPadding = b0 & 0x20 != 0
        let hasExtension = b0 & 0x10 != 0
        let csrcCount = Int(b0 & 0x0F)
        header = RTPHeader(
            marker: b1 & 0x80 != 0, payloadType: b1 & 0x7F, sequenceNumber: bytes.rtpUInt16(at: 2),
            timestamp: bytes.rtpUInt32(at: 4), ssrc: bytes.rtpUInt32(at: 8))

        var offset = Self.fixedHeaderLength
        let csrcEnd = offset + 4 * csrcCount
        guard csrcEnd <= count else { throw .truncatedCSRCList(csrcCount: csrcCount, length: count) }
        csrcs = offset..<csrcEnd
        offset = csrcEnd

        if hasExtension {
            // Section 5.3.1: a 16-bit profile, then the extension's length in 32-bit words, not
            // counting this four-byte header.
            guard offset + 4 <= count else { throw .truncatedHeaderExtension(declared: 4, available: count - offset) }
            let profile = bytes.rtpUInt16(at: offset)
            let length = 4 * Int(bytes.rtpUInt16(at: offset + 2))
            guard offset + 4 + length <= count else {
                throw .truncatedHeaderExtension(declared: 4 + length, available: count - offset)
            }
            headerExtension = RTPHeaderExtension(profile: profile, data: (offset + 4)..<(offset + 4 + length))
            offset += 4 + length
        } else {
            headerExtension = nil
        }

        var end = count
        if hasPadding {
            // Section 5.1: the last octet counts the padding, itself included, so it is at least 1
            // and cannot reach back into the header.
            let padding = Int(bytes[count - 1])
            guard padding >= 1, padding <= count - offset else {
                throw .badPadding(count: padding, available: count - offset)
            }
            end = count - padding
        }
        paddingLength = count - end
        payload = offset..<end
    }

    package init(parsing bytes: [UInt8]) throws(RTPPacketError) {
        // withUnsafeBytes rethrows untyped errors: the result carries the typed one out.
        let result = bytes.withUnsafeBytes { raw in Result { () throws(RTPPacketError) in try RTPPacket(parsing: raw) } }
        self = try result.get()
    }

    /// The `index`th contributing source, read from the buffer the packet was parsed from.
    package func csrc(_ index: Int, in bytes: UnsafeRawBufferPointer) -> UInt32 {
        precondition(index >= 0 && index < csrcCount, "CSRC \(index) of \(csrcCount)")
        return bytes.rtpUInt32(at: csrcs.lowerBound + 4 * index)
    }

    /// Whether a datagram on an rtcp-mux 5-tuple is RTCP rather than RTP (RFC 5761 section 4):
    /// its second octet is RTCP's packet type, 192...223, which RTP payload types 64...95 with the
    /// marker bit would also give, hence the profile's rule never to use those payload types.
    package static func isRTCP(_ datagram: UnsafeRawBufferPointer) -> Bool {
        datagram.count >= 2 && (192...223).contains(datagram[1])
    }

    package static func isRTCP(_ datagram: [UInt8]) -> Bool {
        datagram.count >= 2 && (192...223).contains(datagram[1])
    }
}

package enum RTPPacketError: Error, Equatable, CustomStringConvertible {
    /// Fewer octets than the twelve of the fixed header.
    case tooShort(length: Int)
    /// The version bits are not 2 (RFC 3550's).
    case unsupportedVersion(UInt8)
    /// The CC field counts more CSRCs than the datagram holds.
    case truncatedCSRCList(csrcCount: Int, length: Int)
    /// The header extension (its four-byte header included) runs past the datagram's end.
    case truncatedHeaderExtension(declared: Int, available: Int)
    /// The P bit is set and the last octet's padding count is 0 or reaches into the header.
    case badPadding(count: Int, available: Int)

    package var description: String {
        switch self {
        case .tooShort(let length): "RTP packet of \(length) bytes, shorter than the 12-byte header"
        case .unsupportedVersion(let version): "RTP version \(version), not 2"
        case .truncatedCSRCList(let csrcs, let length): "RTP packet of \(length) bytes cannot hold its \(csrcs) CSRCs"
        case .truncatedHeaderExtension(let declared, let available):
            "RTP header extension of \(declared) bytes with \(available) left"
        case .badPadding(let count, let available): "RTP padding count \(count) with \(available) bytes after the header"
        }
    }
}

extension RTPHeader {
    /// Writes this header, then `payload`, into `out` (emptied first, its capacity kept), as one RTP
    /// packet: `csrcs` as its CSRC list (at most 15), `headerExtension` (profile and data, zero-padded
    /// to whole 32-bit words) if given, and `padding` octets (0, or 1...255) after the payload.
    /// Capacity for `trailerCapacity` more bytes is reserved: SRTP protects the packet in place and
    /// appends its 10- or 16-byte authentication tag (RFC 3711 section 3.1; AEAD's, RFC 7714).
    package func write(
        payload: UnsafeRawBufferPointer, into out: inout [UInt8], csrcs: [UInt32] = [],
        headerExtension: (profile: UInt16, data: UnsafeRawBufferPointer)? = nil,
        padding: Int = 0, trailerCapacity: Int = 16
    ) {
        precondition(csrcs.count <= 15, "\(csrcs.count) CSRCs")
        precondition(payloadType <= 127, "payload type \(payloadType)")
        precondition((0...255).contains(padding), "padding \(padding)")
        let extensionWords = headerExtension.map { ($0.data.count + 3) / 4 } ?? 0
        precondition(extensionWords <= Int(UInt16.max), "header extension of \(extensionWords) words")
        let headerExtensionLength = headerExtension == nil ? 0 : 4 + 4 * extensionWords
        let length = RTPPacket.fixedHeaderLength + 4 * csrcs.count + headerExtensionLength + payload.count + padding

        out.removeAll(keepingCapacity: true)
        out.reserveCapacity(length + trailerCapacity)
        out.append(RTPPacket.version << 6 | (padding > 0 ? 0x20 : 0) | (headerExtension != nil ? 0x10 : 0) | UInt8(csrcs.count))
        out.append((marker ? 0x80 : 0) | payloadType)
        out.appendRTP(sequenceNumber)
        out.appendRTP(timestamp)
        out.appendRTP(ssrc)
        for csrc in csrcs { out.appendRTP(csrc) }
        if let headerExtension {
            out.appendRTP(headerExtension.profile)
            out.appendRTP(UInt16(extensionWords))
            out.append(contentsOf: headerExtension.data)
            out.append(contentsOf: repeatElement(0, count: 4 * extensionWords - headerExtension.data.count))
        }
        out.append(contentsOf: payload)
        if padding > 0 {
            out.append(contentsOf: repeatElement(0, count: padding - 1))
            out.append(UInt8(padding))
        }
    }

    /// `write(payload:into:...)` for a payload held in an array.
    package func write(
        payload: [UInt8], into out: inout [UInt8], csrcs: [UInt32] = [], padding: Int = 0, trailerCapacity: Int = 16
    ) {
        payload.withUnsafeBytes { raw in
            write(payload: raw, into: &out, csrcs: csrcs, padding: padding, trailerCapacity: trailerCapacity)
        }
    }
}
