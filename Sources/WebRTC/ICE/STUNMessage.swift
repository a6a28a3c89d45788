import Media
/// A STUN message (RFC 8489): method, class, transaction id and attributes in order. Parsed from
/// untrusted datagrams without trapping and within `STUNWire.maxDatagramBytes`; what parses writes
/// back (`encoded()`) to bytes that parse to the same value. Checking MESSAGE-INTEGRITY and
/// FINGERPRINT needs the bytes as they came, so it is done on the datagram (STUNIntegrity.swift).
package struct STUNMessage: Equatable, Sendable {
    /// RFC 8489 section 5: the two class bits.
    package enum Class: UInt8, Sendable {
        case request = 0
        case indication = 1
        case successResponse = 2
        case errorResponse = 3
    }

    /// The one method ICE uses (RFC 8489 section 18.2).
    package static let binding: UInt16 = 0x001

    /// Twelve bits; higher bits are dropped when the message is written.
    package var method: UInt16
    package var messageClass: Class
    package var transactionID: STUNTransactionID
    package var attributes: [STUNAttribute]

    package init(method: UInt16, messageClass: Class, transactionID: STUNTransactionID, attributes: [STUNAttribute] = []) {
        self.method = method
        self.messageClass = messageClass
        self.transactionID = transactionID
        self.attributes = attributes
    }

    init(parsing bytes: [UInt8]) throws(STUNParseError) {
        // withUnsafeBytes rethrows untyped errors, so the typed one comes out through a Result.
        let result = bytes.withUnsafeBytes { datagram in Result { () throws(STUNParseError) in try STUNMessage(parsing: datagram) } }
        self = try result.get()
    }

    package init(parsing datagram: UnsafeRawBufferPointer) throws(STUNParseError) {
        let header = try STUNWire.header(datagram)
        (method, messageClass) = Self.split(type: header.type)
        transactionID = header.transactionID
        var attributes: [STUNAttribute] = []
        var afterIntegrity = false, afterFingerprint = false
        try STUNWire.walkAttributes(datagram) { (type, _, range) throws(STUNParseError) in
            guard !afterFingerprint else { throw .fingerprintNotLast }
            // RFC 8489 section 14.5: what follows MESSAGE-INTEGRITY, bar FINGERPRINT, is ignored.
            if afterIntegrity && type != STUNAttribute.Code.fingerprint { return true }
            let value = UnsafeRawBufferPointer(rebasing: datagram[range])
            attributes.append(try STUNAttribute.decode(type: type, value: value, transactionID: header.transactionID))
            if type == STUNAttribute.Code.messageIntegrity { afterIntegrity = true }
            if type == STUNAttribute.Code.fingerprint { afterFingerprint = true }
            return true
        }
        self.attributes = attributes
    }

    /// The message's bytes: the header with its length, then each attribute padded with zeros.
    /// Attributes are written as held, MESSAGE-INTEGRITY and FINGERPRINT included; `signed` computes them.
    func encoded() -> [UInt8] {
        var bytes = header()
        for attribute in attributes { attribute.append(to: &bytes, transactionID: transactionID) }
        STUNWire.setLength(bytes.count - STUNWire.headerBytes, in: &bytes)
        return bytes
    }

    /// The header with a zero length, room reserved for a small message.
    func header() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128)
        STUNWire.append(Self.type(method: method, messageClass: messageClass), to: &bytes)
        STUNWire.append(UInt16(0), to: &bytes)
        STUNWire.append(STUNWire.magicCookie, to: &bytes)
        STUNWire.append(transactionID.high, to: &bytes)
        STUNWire.append(transactionID.low, to: &bytes)
        return bytes
    }

    /// RFC 8489 section 5: the method's twelve bits are split around the class's two
    /// (M11–M7, C1, M6–M4, C0, M3–M0).
    static func type(method: UInt16, messageClass: Class) -> UInt16 {
        let m = method & 0x0FFF, c = UInt16(messageClass.rawValue)
        return (m & 0x000F) | (m & 0x0070) << 1 | (m & 0x0F80) << 2 | (c & 1) << 4 | (c & 2) << 7
    }

    static func split(type: UInt16) -> (method: UInt16, messageClass: Class) {
        let method = (type & 0x000F) | (type & 0x00E0) >> 1 | (type & 0x3E00) >> 2
        let bits = UInt8(truncatingIfNeeded: (type >> 4) & 1 | (type >> 7) & 2)
        return (method, Class(rawValue: bits) ?? .request)
    }

    // The first occurrence of each attribute is the one that counts (RFC 8489 section 14).

    var username: [UInt8]? {
        for case .username(let value) in attributes { return value }
        return nil
    }

    var messageIntegrity: [UInt8]? {
        for case .messageIntegrity(let value) in attributes { return value }
        return nil
    }

    var fingerprint: UInt32? {
        for case .fingerprint(let value) in attributes { return value }
        return nil
    }

    package var xorMappedAddress: TransportAddress? {
        for case .xorMappedAddress(let value) in attributes { return value }
        return nil
    }

    var errorCode: STUNErrorCode? {
        for case .errorCode(let value) in attributes { return value }
        return nil
    }

    var priority: UInt32? {
        for case .priority(let value) in attributes { return value }
        return nil
    }

    var useCandidate: Bool { attributes.contains(.useCandidate) }

    var iceControlled: UInt64? {
        for case .iceControlled(let value) in attributes { return value }
        return nil
    }

    var iceControlling: UInt64? {
        for case .iceControlling(let value) in attributes { return value }
        return nil
    }

    /// The comprehension-required attributes this parser does not know, each once, in order: what
    /// a 420 response lists in UNKNOWN-ATTRIBUTES (RFC 8489 section 6.3.1).
    var unknownComprehensionRequired: [UInt16] {
        var types: [UInt16] = []
        for case .other(let type, _) in attributes where STUNAttribute.isComprehensionRequired(type) && !types.contains(type) {
            types.append(type)
        }
        return types
    }
}
