import Media
/// The STUN attributes an ICE-lite agent reads or writes (RFC 8489 section 14, RFC 8445 section
/// 16.1), and any other kept as its type and bytes, so a message parses and writes back whole.
package enum STUNAttribute: Equatable, Sendable {
    /// "ours:theirs" in an ICE check (RFC 8445 section 7.2.2); bytes, not a String, so the hot path
    /// builds none.
    case username([UInt8])
    /// HMAC-SHA1 over the message before it (RFC 8489 section 14.5): 20 bytes.
    case messageIntegrity([UInt8])
    /// CRC-32 of the message before it, XORed with 0x5354554e (RFC 8489 section 14.7).
    case fingerprint(UInt32)
    case xorMappedAddress(TransportAddress)
    case errorCode(STUNErrorCode)
    /// The comprehension-required attributes a 420 response refuses (RFC 8489 section 14.9).
    case unknownAttributes([UInt16])
    case priority(UInt32)
    case useCandidate
    case iceControlled(tieBreaker: UInt64)
    case iceControlling(tieBreaker: UInt64)
    /// An attribute Parley does not read (SOFTWARE, say), kept as it came.
    case other(type: UInt16, value: [UInt8])

    enum Code {
        static let username: UInt16 = 0x0006
        static let messageIntegrity: UInt16 = 0x0008
        static let errorCode: UInt16 = 0x0009
        static let unknownAttributes: UInt16 = 0x000A
        static let xorMappedAddress: UInt16 = 0x0020
        static let priority: UInt16 = 0x0024
        static let useCandidate: UInt16 = 0x0025
        static let fingerprint: UInt16 = 0x8028
        static let iceControlled: UInt16 = 0x8029
        static let iceControlling: UInt16 = 0x802A
    }

    /// RFC 8489 section 14.3: USERNAME holds fewer than 509 bytes.
    static let maxUsernameBytes = 508
    /// RFC 8489 section 14.8: the reason phrase is under 128 characters, at most 763 bytes.
    static let maxReasonBytes = 763

    var type: UInt16 {
        switch self {
        case .username: Code.username
        case .messageIntegrity: Code.messageIntegrity
        case .fingerprint: Code.fingerprint
        case .xorMappedAddress: Code.xorMappedAddress
        case .errorCode: Code.errorCode
        case .unknownAttributes: Code.unknownAttributes
        case .priority: Code.priority
        case .useCandidate: Code.useCandidate
        case .iceControlled: Code.iceControlled
        case .iceControlling: Code.iceControlling
        case .other(let type, _): type
        }
    }

    /// RFC 8489 section 14: types below 0x8000 must be understood by whoever receives them.
    static func isComprehensionRequired(_ type: UInt16) -> Bool { type < 0x8000 }

    /// Reads one attribute's value; XOR-MAPPED-ADDRESS needs the message's transaction id.
    static func decode(type: UInt16, value: UnsafeRawBufferPointer, transactionID: STUNTransactionID) throws(STUNParseError) -> STUNAttribute {
        let count = value.count
        func require(_ valid: Bool) throws(STUNParseError) {
            guard valid else { throw .badAttributeLength(type: type, length: count) }
        }
        switch type {
        case Code.username:
            try require(count <= maxUsernameBytes)
            return .username(Array(value))
        case Code.messageIntegrity:
            try require(count == 20)
            return .messageIntegrity(Array(value))
        case Code.fingerprint:
            try require(count == 4)
            return .fingerprint(STUNWire.uint32(value, 0))
        case Code.xorMappedAddress:
            return .xorMappedAddress(try decodeXORAddress(value, transactionID: transactionID))
        case Code.errorCode:
            try require(count >= 4 && count - 4 <= maxReasonBytes)
            // The top 21 bits are reserved (sent as zero, ignored on receipt).
            let errorClass = value[2] & 0x07, number = value[3]
            guard (3...6).contains(errorClass), number < 100 else { throw .errorCodeOutOfRange(errorClass: errorClass, number: number) }
            return .errorCode(STUNErrorCode(code: Int(errorClass) * 100 + Int(number), reason: Array(value[4...])))
        case Code.unknownAttributes:
            try require(count % 2 == 0)
            return .unknownAttributes(stride(from: 0, to: count, by: 2).map { STUNWire.uint16(value, $0) })
        case Code.priority:
            try require(count == 4)
            return .priority(STUNWire.uint32(value, 0))
        case Code.useCandidate:
            try require(count == 0)
            return .useCandidate
        case Code.iceControlled:
            try require(count == 8)
            return .iceControlled(tieBreaker: STUNWire.uint64(value, 0))
        case Code.iceControlling:
            try require(count == 8)
            return .iceControlling(tieBreaker: STUNWire.uint64(value, 0))
        default:
            return .other(type: type, value: Array(value))
        }
    }

    /// RFC 8489 section 14.2: the port XORed with the cookie's top half, the address with the cookie
    /// (IPv4) or the cookie and the transaction id (IPv6), so NATs that rewrite addresses they find
    /// in payloads leave it alone.
    private static func decodeXORAddress(_ value: UnsafeRawBufferPointer, transactionID: STUNTransactionID) throws(STUNParseError) -> TransportAddress {
        guard value.count >= 4 else { throw .badAttributeLength(type: Code.xorMappedAddress, length: value.count) }
        let port = STUNWire.uint16(value, 2) ^ UInt16(truncatingIfNeeded: STUNWire.magicCookie >> 16)
        switch value[1] {
        case 1:
            guard value.count == 8 else { throw .badAttributeLength(type: Code.xorMappedAddress, length: value.count) }
            return TransportAddress(ip: .v4(STUNWire.uint32(value, 4) ^ STUNWire.magicCookie), port: port)
        case 2:
            guard value.count == 20 else { throw .badAttributeLength(type: Code.xorMappedAddress, length: value.count) }
            let mask = xorMask(transactionID)
            return TransportAddress(ip: .v6(high: STUNWire.uint64(value, 4) ^ mask.high, low: STUNWire.uint64(value, 12) ^ mask.low), port: port)
        default:
            throw .unknownAddressFamily(value[1])
        }
    }

    /// The magic cookie followed by the transaction id: what an IPv6 address is XORed with.
    private static func xorMask(_ id: STUNTransactionID) -> (high: UInt64, low: UInt64) {
        (UInt64(STUNWire.magicCookie) << 32 | UInt64(id.high), id.low)
    }

    /// Appends the attribute: type, length, value and zero padding to a multiple of four.
    func append(to bytes: inout [UInt8], transactionID: STUNTransactionID) {
        STUNWire.append(type, to: &bytes)
        let lengthAt = bytes.count
        STUNWire.append(UInt16(0), to: &bytes)
        let start = bytes.count
        switch self {
        case .username(let value), .messageIntegrity(let value), .other(_, let value):
            bytes.append(contentsOf: value)
        case .fingerprint(let value), .priority(let value):
            STUNWire.append(value, to: &bytes)
        case .xorMappedAddress(let address):
            let port = address.port ^ UInt16(truncatingIfNeeded: STUNWire.magicCookie >> 16)
            switch address.ip {
            case .v4(let ip):
                bytes += [0, 1]
                STUNWire.append(port, to: &bytes)
                STUNWire.append(ip ^ STUNWire.magicCookie, to: &bytes)
            case .v6(let high, let low):
                let mask = Self.xorMask(transactionID)
                bytes += [0, 2]
                STUNWire.append(port, to: &bytes)
                STUNWire.append(high ^ mask.high, to: &bytes)
                STUNWire.append(low ^ mask.low, to: &bytes)
            }
        case .errorCode(let error):
            bytes += [0, 0, UInt8(truncatingIfNeeded: error.code / 100), UInt8(truncatingIfNeeded: error.code % 100)]
            bytes.append(contentsOf: error.reason)
        case .unknownAttributes(let types):
            for type in types { STUNWire.append(type, to: &bytes) }
        case .useCandidate:
            break
        case .iceControlled(let tieBreaker), .iceControlling(let tieBreaker):
            STUNWire.append(tieBreaker, to: &bytes)
        }
        let length = bytes.count - start
        bytes[lengthAt] = UInt8(truncatingIfNeeded: length >> 8)
        bytes[lengthAt + 1] = UInt8(truncatingIfNeeded: length)
        bytes.append(contentsOf: repeatElement(0, count: (4 - (length & 3)) & 3))
    }
}

/// ERROR-CODE's value (RFC 8489 section 14.8): a code from 300 to 699 and its reason phrase's
/// UTF-8 bytes, kept as bytes so a reason that is not valid UTF-8 still writes back as it came.
package struct STUNErrorCode: Equatable, Sendable, CustomStringConvertible {
    var code: Int
    var reason: [UInt8]

    init(code: Int, reason: [UInt8]) {
        self.code = code
        self.reason = reason
    }

    init(code: Int, reason: String) {
        self.init(code: code, reason: Array(reason.utf8))
    }

    // The codes an ICE-lite agent answers with (RFC 8489 section 14.8, RFC 8445 section 7.3.1.1).
    static let badRequest = STUNErrorCode(code: 400, reason: "Bad Request")
    static let unauthorized = STUNErrorCode(code: 401, reason: "Unauthorized")
    static let unknownAttribute = STUNErrorCode(code: 420, reason: "Unknown Attribute")
    static let roleConflict = STUNErrorCode(code: 487, reason: "Role Conflict")

    package var description: String { "\(code) \(String(decoding: reason, as: UTF8.self))" }
}
