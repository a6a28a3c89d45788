/// Little-endian fields, as RIFF and Ogg both store them.
extension Array where Element == UInt8 {
    /// The integer stored little-endian at `offset`; the caller has checked that its bytes exist.
    package func littleEndian<T: FixedWidthInteger>(at offset: Int, as type: T.Type = T.self) -> T {
        var value: T = 0
        for i in 0..<MemoryLayout<T>.size { value |= T(truncatingIfNeeded: self[offset + i]) << (8 * i) }
        return value
    }

    package mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        for i in 0..<MemoryLayout<T>.size { append(UInt8(truncatingIfNeeded: value >> (8 * i))) }
    }

    /// True when the bytes at `offset` spell `ascii`; false when they run past the end.
    func matches(_ ascii: String, at offset: Int) -> Bool {
        let tag = ascii.utf8
        return offset >= 0 && offset + tag.count <= count && self[offset..<(offset + tag.count)].elementsEqual(tag)
    }
}
