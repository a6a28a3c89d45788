import Loop

/// An IP address and UDP port: where a STUN request came from, what XOR-MAPPED-ADDRESS reports back,
/// and the selected pair's remote end, the one place media may go (RFC 8445 section 12). Held as
/// integers rather than bytes, so it is hashed and compared without a heap.
package struct TransportAddress: Hashable, Sendable, CustomStringConvertible {
    package enum IP: Hashable, Sendable {
        /// The four octets, the first in the top byte.
        case v4(UInt32)
        /// The sixteen octets as two big-endian halves.
        case v6(high: UInt64, low: UInt64)
    }

    package var ip: IP
    package var port: UInt16

    package init(ip: IP, port: UInt16) {
        self.ip = ip
        self.port = port
    }

    /// From an address's octets in network order: 4 for IPv4, 16 for IPv6; nil for any other count.
    package init?(octets: some Collection<UInt8>, port: UInt16) {
        switch octets.count {
        case 4:
            ip = .v4(octets.reduce(0) { $0 << 8 | UInt32($1) })
        case 16:
            let high = octets.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let low = octets.dropFirst(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            ip = .v6(high: high, low: low)
        default:
            return nil
        }
        self.port = port
    }

    package static func ipv4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, port: UInt16) -> TransportAddress {
        TransportAddress(ip: .v4(UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)), port: port)
    }

    /// The address's octets in network order (4 or 16).
    package var octets: [UInt8] {
        switch ip {
        case .v4(let value):
            return (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) }
        case .v6(let high, let low):
            return (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) }
                + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
        }
    }

    package var isIPv6: Bool {
        if case .v6 = ip { return true }
        return false
    }

    /// `192.0.2.1:32853` or `[2001:db8::1]:443`, IPv6 in RFC 5952's canonical text form.
    package var description: String {
        switch ip {
        case .v4:
            return octets.map(String.init).joined(separator: ".") + ":\(port)"
        case .v6(let high, let low):
            return "[\(Self.ipv6Text(high: high, low: low))]:\(port)"
        }
    }

    /// RFC 5952 section 4: lower-case hex without leading zeros, and the longest run of two or more
    /// zero groups (the first, on a tie) written as "::".
    private static func ipv6Text(high: UInt64, low: UInt64) -> String {
        let groups = (0..<8).map { index -> UInt16 in
            let half = index < 4 ? high : low
            return UInt16(truncatingIfNeeded: half >> (48 - 16 * (index % 4)))
        }
        var best = (start: -1, count: 0)
        var index = 0
        while index < 8 {
            guard groups[index] == 0 else { index += 1; continue }
            var end = index
            while end < 8 && groups[end] == 0 { end += 1 }
            if end - index > best.count { best = (index, end - index) }
            index = end
        }
        let hex = groups.map { String($0, radix: 16) }
        guard best.count >= 2 else { return hex.joined(separator: ":") }
        let head = hex[..<best.start].joined(separator: ":")
        let tail = hex[(best.start + best.count)...].joined(separator: ":")
        return head + "::" + tail
    }
}

extension TransportAddress {
    /// The socket address to send to; an IPv4 one without building its octets (every RTP packet
    /// out goes through here).
    package var socketAddress: SocketAddress? {
        switch ip {
        case .v4(let host):
            return .ipv4(UInt8(host >> 24), UInt8(host >> 16 & 0xFF), UInt8(host >> 8 & 0xFF), UInt8(host & 0xFF), port: port)
        case .v6:
            return SocketAddress.ip(octets, port: port)
        }
    }

    /// The sender of a datagram, as `Sys.receiveDatagram` gave it.
    package init?(_ sender: SocketAddress) {
        guard let made = sender.withHostBytes({ TransportAddress(octets: $0, port: UInt16(sender.port)) }) else { return nil }
        self = made
    }
}
