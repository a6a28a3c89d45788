#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 socket address, held by value so a worker can keep thousands of them cheaply.
struct SocketAddress {
    private var storage = sockaddr_storage()
    let length: socklen_t

    var isIPv6: Bool { storage.ss_family == sa_family_t(AF_INET6) }
    var family: Int32 { Int32(storage.ss_family) }

    /// 127.0.0.1:8080 is `ipv4(127, 0, 0, 1, port: 8080)`; port 0 lets the kernel choose.
    static func ipv4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, port: UInt16) -> SocketAddress {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        // s_addr is in network order: the first octet is the lowest-addressed byte.
        address.sin_addr.s_addr = (UInt32(a) | UInt32(b) << 8 | UInt32(c) << 16 | UInt32(d) << 24)
        return SocketAddress(copying: address)
    }

    static func ipv6Loopback(port: UInt16) -> SocketAddress {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        address.sin6_addr = in6addr_loopback
        return SocketAddress(copying: address)
    }

    private init<Address>(copying address: Address) {
        length = socklen_t(MemoryLayout<Address>.size)
        withUnsafeMutableBytes(of: &storage) { storageBytes in
            withUnsafeBytes(of: address) { storageBytes.copyMemory(from: $0) }
        }
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafePointer(to: storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
