/// The elements of an RFC 8285 header extension, read in place: each its local identifier and the
/// range of its data in the packet's buffer. A profile that is neither of RFC 8285's forms gives
/// no elements (the extension is someone else's and is skipped whole).
///
/// Reading stops, without an error, at the first element that would run past the extension's
/// end, and at identifier 15 in the one-byte form (section 4.2: "processing of the entire
/// extension MUST terminate"); padding octets (identifier 0) are skipped (sections 4.2 and 4.3).
package struct RTPHeaderExtensionElements: Sequence, IteratorProtocol {
    package static let oneByteProfile: UInt16 = 0xBEDE
    /// Section 4.3: 0x100 in the top twelve bits, the low four ("appbits") the application's.
    package static func isTwoByteProfile(_ profile: UInt16) -> Bool { profile & 0xFFF0 == 0x1000 }

    package struct Element: Sendable, Equatable {
        package var id: UInt8
        package var data: Range<Int>
    }

    private let bytes: UnsafeRawBufferPointer
    private let twoByte: Bool
    private var offset: Int
    private var end: Int

    /// `bytes` is the buffer the packet was parsed from; `headerExtension` the packet's.
    package init(_ headerExtension: RTPHeaderExtension, in bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        twoByte = Self.isTwoByteProfile(headerExtension.profile)
        offset = headerExtension.data.lowerBound
        end = Swift.min(headerExtension.data.upperBound, bytes.count)
        if !twoByte && headerExtension.profile != Self.oneByteProfile { offset = end }
    }

    package mutating func next() -> Element? {
        while offset < end {
            let id = twoByte ? bytes[offset] : bytes[offset] >> 4
            if id == 0 {
                offset += 1
                continue
            }
            if !twoByte && id == 15 { break }
            let headerLength = twoByte ? 2 : 1
            guard offset + headerLength <= end else { break }
            // One-byte form: the low four bits hold the length minus one (1...16 bytes). Two-byte
            // form: the second octet holds the length itself (0...255).
            let length = twoByte ? Int(bytes[offset + 1]) : Int(bytes[offset] & 0x0F) + 1
            let start = offset + headerLength
            guard start + length <= end else { break }
            offset = start + length
            return Element(id: id, data: start..<(start + length))
        }
        offset = end
        return nil
    }

    /// An RFC 8285 one-byte-form extension's data holding `elements` (identifiers 1...14, 1...16
    /// bytes of data each), zero-padded to whole 32-bit words: what `RTPHeader.write` takes with
    /// `oneByteProfile`.
    package static func oneByteData(_ elements: [(id: UInt8, data: [UInt8])]) -> [UInt8] {
        var out: [UInt8] = []
        for element in elements {
            precondition((1...14).contains(element.id), "one-byte extension id \(element.id)")
            precondition((1...16).contains(element.data.count), "one-byte extension element of \(element.data.count) bytes")
            out.append(element.id << 4 | UInt8(element.data.count - 1))
            out.append(contentsOf: element.data)
        }
        out.append(contentsOf: repeatElement(0, count: (4 - out.count % 4) % 4))
        return out
    }
}
