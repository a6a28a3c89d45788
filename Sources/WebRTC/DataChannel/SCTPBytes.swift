/// Big-endian reads and writes for SCTP's wire format (RFC 9260 section 3: network byte order).
/// Reads are over a bounded window of an array; every read checks its bounds and throws instead of
/// trapping, since every byte read here comes from the peer.
struct SCTPReader {
    let bytes: [UInt8]
    private(set) var offset: Int
    let end: Int

    init(_ bytes: [UInt8], from start: Int = 0, to end: Int? = nil) {
        self.bytes = bytes
        offset = start
        self.end = min(end ?? bytes.count, bytes.count)
    }

    var remaining: Int { max(0, end - offset) }
    var isAtEnd: Bool { offset >= end }

    mutating func u8() throws(SCTPPacketError) -> UInt8 {
        guard remaining >= 1 else { throw .truncated }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16() throws(SCTPPacketError) -> UInt16 {
        guard remaining >= 2 else { throw .truncated }
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    mutating func u32() throws(SCTPPacketError) -> UInt32 {
        guard remaining >= 4 else { throw .truncated }
        defer { offset += 4 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16
            | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    mutating func u64() throws(SCTPPacketError) -> UInt64 {
        let high = try u32(), low = try u32()
        return UInt64(high) << 32 | UInt64(low)
    }

    mutating func take(_ count: Int) throws(SCTPPacketError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw .truncated }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func rest() -> [UInt8] {
        guard offset < end else { return [] }
        defer { offset = end }
        return Array(bytes[offset..<end])
    }

    mutating func skip(_ count: Int) {
        offset = min(end, offset + max(0, count))
    }

    /// Reads type-length-value items (chunks' parameters, error causes: RFC 9260 section 3.2.1),
    /// each padded to four bytes, until the window ends. A length under 4 or past the window is
    /// malformed; the last item's padding may be missing.
    mutating func tlvs() throws(SCTPPacketError) -> [(type: UInt16, value: [UInt8])] {
        var items: [(type: UInt16, value: [UInt8])] = []
        while remaining >= 4 {
            let type = try u16()
            let length = Int(try u16())
            guard length >= 4 else { throw .badParameterLength }
            guard length - 4 <= remaining else { throw .parameterPastChunk }
            items.append((type, try take(length - 4)))
            skip(SCTPWriter.padding(length))
        }
        guard isAtEnd else { throw .truncated }
        return items
    }
}

/// Appends big-endian fields to a growing packet.
struct SCTPWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    static func padding(_ length: Int) -> Int { (4 - length % 4) % 4 }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u16(_ value: UInt16) { bytes.append(UInt8(value >> 8)); bytes.append(UInt8(truncatingIfNeeded: value)) }
    mutating func u32(_ value: UInt32) {
        bytes.append(UInt8(value >> 24)); bytes.append(UInt8(truncatingIfNeeded: value >> 16))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8)); bytes.append(UInt8(truncatingIfNeeded: value))
    }
    mutating func u64(_ value: UInt64) { u32(UInt32(value >> 32)); u32(UInt32(truncatingIfNeeded: value)) }
    mutating func append(_ value: some Collection<UInt8>) { bytes.append(contentsOf: value) }
    mutating func pad() { bytes.append(contentsOf: repeatElement(0, count: Self.padding(bytes.count))) }

    /// Writes a type-length-value item and its padding (RFC 9260 section 3.2.1). Values longer
    /// than a 16-bit length can carry are cut, so a caller's mistake cannot produce a lying length.
    mutating func tlv(_ type: UInt16, _ value: some Collection<UInt8>) {
        let count = min(value.count, Int(UInt16.max) - 4)
        u16(type)
        u16(UInt16(count + 4))
        bytes.append(contentsOf: value.prefix(count))
        pad()
    }

    /// Patches a 16-bit length written earlier at `index`.
    mutating func setU16(_ value: UInt16, at index: Int) {
        bytes[index] = UInt8(value >> 8)
        bytes[index + 1] = UInt8(truncatingIfNeeded: value)
    }
}

/// TSNs and SSNs compare in serial number arithmetic (RFC 9260 section 1.6, RFC 1982): they wrap.
enum Serial {
    static func less(_ a: UInt32, _ b: UInt32) -> Bool { a != b && Int32(bitPattern: a &- b) < 0 }
    static func lessOrEqual(_ a: UInt32, _ b: UInt32) -> Bool { a == b || less(a, b) }
    static func less(_ a: UInt16, _ b: UInt16) -> Bool { a != b && Int16(bitPattern: a &- b) < 0 }
}
