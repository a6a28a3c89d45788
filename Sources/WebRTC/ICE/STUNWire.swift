/// STUN's wire layout (RFC 8489 sections 5 and 14): the 20-byte header's checks, the walk over
/// type-length-value attributes padded to four bytes, and the big-endian reads and writes they
/// need. Every read is bounds-checked by the walk before it happens, so no input can trap here.
enum STUNWire {
    static let headerBytes = 20
    /// RFC 8489 section 5: fixed, so STUN is told apart from the other protocols on the port.
    static let magicCookie: UInt32 = 0x2112_A442
    /// STUN over UDP stays under the path MTU (RFC 8489 section 6.2.1); an ICE check is about a
    /// hundred bytes, so anything longer is refused before it is read.
    static let maxDatagramBytes = 1500

    /// The header's fields once RFC 8489 section 6.3's checks pass: the top two bits zero, the
    /// magic cookie, a length that is a multiple of four and matches the datagram's.
    struct Header: Equatable, Sendable {
        var type: UInt16
        var transactionID: STUNTransactionID
    }

    static func header(_ datagram: UnsafeRawBufferPointer) throws(STUNParseError) -> Header {
        guard datagram.count >= headerBytes else { throw .tooShort(datagram.count) }
        guard datagram.count <= maxDatagramBytes else { throw .tooLong(datagram.count) }
        let type = uint16(datagram, 0)
        guard type & 0xC000 == 0, uint32(datagram, 4) == magicCookie else { throw .notSTUN }
        let length = Int(uint16(datagram, 2))
        guard length & 3 == 0 else { throw .unalignedLength(length) }
        guard headerBytes + length == datagram.count else { throw .lengthMismatch(declared: length, actual: datagram.count - headerBytes) }
        return Header(type: type, transactionID: STUNTransactionID(high: uint32(datagram, 8), low: uint64(datagram, 12)))
    }

    /// Calls `body` with each attribute's type, the offset of its header and the range of its
    /// value (padding excluded), until `body` returns false. The header must already be valid.
    static func walkAttributes(
        _ datagram: UnsafeRawBufferPointer,
        _ body: (_ type: UInt16, _ offset: Int, _ value: Range<Int>) throws(STUNParseError) -> Bool
    ) throws(STUNParseError) {
        var offset = headerBytes
        while offset < datagram.count {
            guard datagram.count - offset >= 4 else { throw .truncatedAttribute(offset: offset) }
            let type = uint16(datagram, offset)
            let length = Int(uint16(datagram, offset + 2))
            let padded = (length + 3) & ~3
            guard datagram.count - offset - 4 >= padded else { throw .truncatedAttribute(offset: offset) }
            guard try body(type, offset, (offset + 4)..<(offset + 4 + length)) else { return }
            offset += 4 + padded
        }
    }

    static func uint16(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt16 {
        UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
    }

    static func uint32(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt32 {
        UInt32(uint16(bytes, at)) << 16 | UInt32(uint16(bytes, at + 2))
    }

    static func uint64(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt64 {
        UInt64(uint32(bytes, at)) << 32 | UInt64(uint32(bytes, at + 4))
    }

    static func append(_ value: UInt16, to bytes: inout [UInt8]) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }

    static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        append(UInt16(truncatingIfNeeded: value >> 16), to: &bytes)
        append(UInt16(truncatingIfNeeded: value), to: &bytes)
    }

    static func append(_ value: UInt64, to bytes: inout [UInt8]) {
        append(UInt32(truncatingIfNeeded: value >> 32), to: &bytes)
        append(UInt32(truncatingIfNeeded: value), to: &bytes)
    }

    /// Overwrites the header's length field: the bytes after the header, as RFC 8489 section 5 counts.
    static func setLength(_ length: Int, in bytes: inout [UInt8]) {
        bytes[2] = UInt8(truncatingIfNeeded: length >> 8)
        bytes[3] = UInt8(truncatingIfNeeded: length)
    }
}

/// The 96-bit transaction id (RFC 8489 section 5), as two integers so it is compared and hashed
/// without a heap; `high` is the id's first four bytes.
package struct STUNTransactionID: Hashable, Sendable, CustomStringConvertible {
    var high: UInt32
    var low: UInt64

    package init(high: UInt32, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// From its twelve bytes in order; nil for any other count.
    init?(octets: [UInt8]) {
        guard octets.count == 12 else { return nil }
        let value = octets.withUnsafeBytes { (STUNWire.uint32($0, 0), STUNWire.uint64($0, 4)) }
        self.init(high: value.0, low: value.1)
    }

    var octets: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(12)
        STUNWire.append(high, to: &bytes)
        STUNWire.append(low, to: &bytes)
        return bytes
    }

    package var description: String { octets.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }
}
