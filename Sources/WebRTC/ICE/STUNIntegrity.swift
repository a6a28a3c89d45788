import TLS

/// MESSAGE-INTEGRITY (RFC 8489 section 14.5) and FINGERPRINT (section 14.7): written by `signed`,
/// checked on the datagram as it came, since both cover the bytes before them (padding included)
/// with the header's length as it stood when each was added.
///
/// ICE uses short-term credentials (RFC 8445 section 7.2.2): the key is the password itself. ICE
/// passwords are ice-chars (RFC 8839 section 5.4), which OpaqueString leaves as they are, so no
/// SASLprep step is needed.
extension STUNMessage {
    static let fingerprintXOR: UInt32 = 0x5354_554E
    private static let integrityAttributeBytes = 24
    private static let fingerprintAttributeBytes = 8

    /// The message's bytes with any MESSAGE-INTEGRITY and FINGERPRINT it holds left out, then
    /// MESSAGE-INTEGRITY under `integrityKey` (when given) and FINGERPRINT (when asked) appended.
    package func signed(integrityKey: [UInt8]?, fingerprint: Bool = true) -> [UInt8] {
        var bytes = header()
        for attribute in attributes {
            switch attribute {
            case .messageIntegrity, .fingerprint: continue
            default: attribute.append(to: &bytes, transactionID: transactionID)
            }
        }
        if let integrityKey {
            // The length counts the attribute being added, though its value is not yet there.
            STUNWire.setLength(bytes.count - STUNWire.headerBytes + Self.integrityAttributeBytes, in: &bytes)
            let mac = OpenSSL.hmacSHA1(key: integrityKey, bytes)
            STUNAttribute.messageIntegrity(mac).append(to: &bytes, transactionID: transactionID)
        }
        if fingerprint {
            STUNWire.setLength(bytes.count - STUNWire.headerBytes + Self.fingerprintAttributeBytes, in: &bytes)
            let crc = CRC32.ieee.checksum(bytes) ^ Self.fingerprintXOR
            STUNAttribute.fingerprint(crc).append(to: &bytes, transactionID: transactionID)
        }
        STUNWire.setLength(bytes.count - STUNWire.headerBytes, in: &bytes)
        return bytes
    }

    /// True when the datagram's first MESSAGE-INTEGRITY is the HMAC-SHA1 under `key` of the bytes
    /// before it, with the header's length cut to end with it. False when there is none, or the
    /// datagram is not structurally STUN. The comparison takes the same time however many bytes match.
    static func integrityIsValid(_ datagram: UnsafeRawBufferPointer, key: [UInt8]) -> Bool {
        guard (try? STUNWire.header(datagram)) != nil else { return false }
        var found: (offset: Int, value: Range<Int>)?
        try? STUNWire.walkAttributes(datagram) { type, offset, value in
            guard type == STUNAttribute.Code.messageIntegrity else { return true }
            found = (offset, value)
            return false
        }
        guard let found, found.value.count == 20 else { return false }
        var covered = Array(datagram[..<found.offset])
        STUNWire.setLength(found.offset - STUNWire.headerBytes + integrityAttributeBytes, in: &covered)
        return OpenSSL.constantTimeEqual(OpenSSL.hmacSHA1(key: key, covered), Array(datagram[found.value]))
    }

    static func integrityIsValid(_ datagram: [UInt8], key: [UInt8]) -> Bool {
        datagram.withUnsafeBytes { integrityIsValid($0, key: key) }
    }

    /// True when the datagram ends in a FINGERPRINT that is the CRC-32 of everything before it,
    /// XORed with 0x5354554e; false when it does not end in one or the value is wrong.
    static func fingerprintIsValid(_ datagram: UnsafeRawBufferPointer) -> Bool {
        guard (try? STUNWire.header(datagram)) != nil, datagram.count >= STUNWire.headerBytes + fingerprintAttributeBytes else { return false }
        let at = datagram.count - fingerprintAttributeBytes
        guard STUNWire.uint16(datagram, at) == STUNAttribute.Code.fingerprint, STUNWire.uint16(datagram, at + 2) == 4 else { return false }
        let crc = CRC32.ieee.checksum(UnsafeRawBufferPointer(rebasing: datagram[..<at])) ^ fingerprintXOR
        return crc == STUNWire.uint32(datagram, at + 4)
    }

    static func fingerprintIsValid(_ datagram: [UInt8]) -> Bool {
        datagram.withUnsafeBytes { fingerprintIsValid($0) }
    }
}
