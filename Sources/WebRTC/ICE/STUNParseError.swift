/// Why bytes are not a STUN message Parley will read. The first group fails RFC 8489 section 6.3's
/// header checks, so the datagram is not STUN at all and is dropped without an answer; the rest are
/// a STUN message with a malformed attribute, which a request is answered for with 400.
package enum STUNParseError: Error, Equatable, Sendable, CustomStringConvertible {
    // The header.
    case tooShort(Int)
    case tooLong(Int)
    /// The top two bits are set or the magic cookie is wrong.
    case notSTUN
    case unalignedLength(Int)
    case lengthMismatch(declared: Int, actual: Int)

    // The attributes.
    /// An attribute's header or padded value runs past the message's end.
    case truncatedAttribute(offset: Int)
    /// A known attribute whose value has a length its definition does not allow.
    case badAttributeLength(type: UInt16, length: Int)
    case unknownAddressFamily(UInt8)
    /// ERROR-CODE's class must be 3 to 6 and its number 0 to 99 (RFC 8489 section 14.8).
    case errorCodeOutOfRange(errorClass: UInt8, number: UInt8)
    /// FINGERPRINT is the last attribute when present (RFC 8489 section 14.7).
    case fingerprintNotLast

    /// True when the datagram failed the header checks: not STUN, so never answered.
    var isHeaderError: Bool {
        switch self {
        case .tooShort, .tooLong, .notSTUN, .unalignedLength, .lengthMismatch: true
        default: false
        }
    }

    package var description: String {
        switch self {
        case .tooShort(let count): "\(count) bytes is shorter than STUN's 20-byte header"
        case .tooLong(let count): "\(count) bytes is longer than \(STUNWire.maxDatagramBytes), the most STUN over UDP is read at"
        case .notSTUN: "not STUN: the top bits are set or the magic cookie is wrong"
        case .unalignedLength(let length): "message length \(length) is not a multiple of 4"
        case .lengthMismatch(let declared, let actual): "message length \(declared) but \(actual) bytes follow the header"
        case .truncatedAttribute(let offset): "the attribute at byte \(offset) runs past the message's end"
        case .badAttributeLength(let type, let length): "attribute 0x\(String(type, radix: 16)) cannot be \(length) bytes"
        case .unknownAddressFamily(let family): "address family \(family) is neither IPv4 (1) nor IPv6 (2)"
        case .errorCodeOutOfRange(let errorClass, let number): "error code class \(errorClass) number \(number) is outside 300-699"
        case .fingerprintNotLast: "FINGERPRINT is followed by another attribute"
        }
    }
}
