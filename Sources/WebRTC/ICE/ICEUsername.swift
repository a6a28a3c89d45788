/// An ICE check's USERNAME, "ours:theirs" from the receiver's side (RFC 8445 section 7.2.2): the
/// receiver's ufrag, a colon, the sender's. The loop's shared UDP port finds the call by the first
/// half, before the message is parsed in full.
extension STUNMessage {
    /// Splits a USERNAME at its first colon; nil when it has none.
    static func splitUsername(_ username: [UInt8]) -> (ours: ArraySlice<UInt8>, theirs: ArraySlice<UInt8>)? {
        guard let colon = username.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        return (username[..<colon], username[(colon + 1)...])
    }

    /// The USERNAME's first half (our ufrag) from a datagram that passes STUN's header checks,
    /// found by hopping over attribute headers: no attribute is decoded and nothing is allocated.
    /// Nil when the datagram is not STUN, has no USERNAME before any structural fault, or the
    /// USERNAME has no colon.
    static func usernamePrefix(_ datagram: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard let range = usernamePrefixRange(datagram) else { return nil }
        return UnsafeRawBufferPointer(rebasing: datagram[range])
    }

    static func usernamePrefix(_ datagram: [UInt8]) -> ArraySlice<UInt8>? {
        guard let range = datagram.withUnsafeBytes({ usernamePrefixRange($0) }) else { return nil }
        return datagram[range]
    }

    private static func usernamePrefixRange(_ datagram: UnsafeRawBufferPointer) -> Range<Int>? {
        guard (try? STUNWire.header(datagram)) != nil else { return nil }
        var found: Range<Int>?
        try? STUNWire.walkAttributes(datagram) { type, _, value in
            guard type == STUNAttribute.Code.username else { return true }
            found = value
            return false
        }
        guard let value = found, let colon = datagram[value].firstIndex(of: UInt8(ascii: ":")) else { return nil }
        return value.lowerBound..<colon
    }
}
