#if canImport(Glibc)
import Glibc
#endif

/// An IPv4, IPv6 or Unix-domain socket address, held inline as a sockaddr_storage: what `Sys.resolve` returns
/// and `Sys.connect` and `Sys.listen` take. No heap, so the load client can keep one per source
/// address and an upstream pool one per host.
public struct SocketAddress: Sendable, CustomStringConvertible {
    private var storage = sockaddr_storage()
    private var length = socklen_t(MemoryLayout<sockaddr_storage>.size)

    public init() {}

    /// From the bytes of a sockaddr (as getaddrinfo gives them, or a sockaddr_in made by hand).
    public init(_ bytes: UnsafeRawBufferPointer) {
        length = socklen_t(min(bytes.count, MemoryLayout<sockaddr_storage>.size))
        withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[..<Int(length)])) }
    }

    /// 127.0.0.1:8080 is `ipv4(127, 0, 0, 1, port: 8080)`; port 0 lets the kernel choose.
    public static func ipv4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, port: UInt16) -> SocketAddress {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        // s_addr is in network order: the first octet is the lowest-addressed byte.
        address.sin_addr.s_addr = UInt32(a) | UInt32(b) << 8 | UInt32(c) << 16 | UInt32(d) << 24
        return withUnsafeBytes(of: address) { SocketAddress($0) }
    }

    public static func ipv6Loopback(port: UInt16) -> SocketAddress {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        address.sin6_addr = in6addr_loopback
        return withUnsafeBytes(of: address) { SocketAddress($0) }
    }

    /// A Unix-domain socket's path (a local helper's); nil when it does not fit sun_path's 108 bytes.
    public static func unix(path: String) -> SocketAddress? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity, !bytes.contains(0) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + 1
        return withUnsafeBytes(of: address) { SocketAddress(UnsafeRawBufferPointer(rebasing: $0[..<length])) }
    }

    public var isIPv6: Bool { family == AF_INET6 }

    /// The host part alone, as 16 bytes (an IPv4 address mapped into IPv6), for counting per
    /// client address.
    public var hostKey: HostKey {
        withUnsafeBytes(of: storage) { bytes in
            var key = HostKey()
            if family == AF_INET6 {
                key.high = bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
                key.low = bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self)
            } else {
                key.high = 0
                key.low = UInt64(0xFFFF) << 32 | UInt64(bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
            }
            return key
        }
    }

    /// AF_INET, AF_INET6 or AF_UNIX: what `Sys.streamSocket` needs.
    public var family: Int32 { Int32(storage.ss_family) }

    /// The port, from sin_port or sin6_port (the same offset, in network order).
    public var port: Int {
        withUnsafeBytes(of: storage) { Int(UInt16($0[2]) << 8 | UInt16($0[3])) }
    }

    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        withUnsafeBytes(of: storage) { body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self), length) }
    }

    mutating func withMutableSockaddr<T>(_ body: (UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) throws(SystemError) -> T) throws(SystemError) -> T {
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        defer { self.length = length }
        return try withUnsafeMutableBytes(of: &storage) { bytes throws(SystemError) in
            try body(bytes.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
        }
    }

    /// The same host with another port (sin_port and sin6_port sit at the same offset).
    public func withPort(_ port: UInt16) -> SocketAddress {
        var copy = self
        withUnsafeMutableBytes(of: &copy.storage) { bytes in
            bytes[2] = UInt8(port >> 8)
            bytes[3] = UInt8(port & 0xFF)
        }
        return copy
    }

    /// The host's address bytes, 4 (IPv4) or 16 (IPv6); empty for a Unix-domain address. STUN's
    /// XOR-MAPPED-ADDRESS carries them.
    public var hostBytes: [UInt8] { withHostBytes { Array($0) } }

    /// The host's address bytes as `hostBytes` gives them, lent rather than copied: for a media
    /// port reading who sent each datagram.
    public func withHostBytes<T>(_ body: (UnsafeRawBufferPointer) -> T) -> T {
        withUnsafeBytes(of: storage) { bytes in
            switch family {
            case AF_INET: body(UnsafeRawBufferPointer(rebasing: bytes[4..<8]))
            case AF_INET6: body(UnsafeRawBufferPointer(rebasing: bytes[8..<24]))
            default: body(UnsafeRawBufferPointer(start: nil, count: 0))
            }
        }
    }

    /// An IPv4 (4 bytes) or IPv6 (16 bytes) address and a port; nil for any other length.
    public static func ip(_ host: [UInt8], port: UInt16) -> SocketAddress? {
        switch host.count {
        case 4: return ipv4(host[0], host[1], host[2], host[3], port: port)
        case 16:
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: host) }
            return withUnsafeBytes(of: address) { SocketAddress($0) }
        default: return nil
        }
    }

    /// The numeric host (`127.0.0.1`, `::1`), without the port: what a C library that takes a host
    /// string is given so that it does not resolve it again.
    public var numericHost: String {
        var text = [UInt8](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        return withUnsafeBytes(of: storage) { bytes in
            let offset = family == AF_INET6 ? 8 : 4  // sin6_addr, sin_addr
            let ok = text.withUnsafeMutableBufferPointer { out in
                out.withMemoryRebound(to: CChar.self) { inet_ntop(family, bytes.baseAddress! + offset, $0.baseAddress, socklen_t($0.count)) != nil }
            }
            return ok ? String(decoding: text.prefix { $0 != 0 }, as: UTF8.self) : "?"
        }
    }

    public var description: String {
        if family == AF_UNIX {
            return withUnsafeBytes(of: storage) { bytes in
                "unix:" + String(decoding: bytes[2..<Int(length)].prefix { $0 != 0 }, as: UTF8.self)
            }
        }
        let shown = numericHost
        return family == AF_INET6 ? "[\(shown)]:\(port)" : "\(shown):\(port)"
    }
}

/// A client's address without its port: the unit per-address limits count in.
public struct HostKey: Hashable, Sendable {
    var high: UInt64 = 0
    var low: UInt64 = 0
}
