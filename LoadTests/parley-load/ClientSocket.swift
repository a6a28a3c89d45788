import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// The system calls a client socket needs, each returning a value rather than leaving errno about.
/// Every socket is non-blocking and close-on-exec: workers are spawned from this process, and a
/// socket leaked into a child would keep a connection open after the parent let it go.
enum ClientSocket {
    /// From <linux/in.h>, which Glibc does not export. Asks bind(2) not to reserve a port: the
    /// kernel picks one at connect(2), unique for the whole 4-tuple rather than per source address,
    /// so tens of thousands of connections can share a few source addresses.
    private static let ipBindAddressNoPort: Int32 = 24

    struct Failure: Error, CustomStringConvertible {
        let call: String
        let errno: Int32
        var name: String { ErrnoName.of(errno) }
        var description: String { "\(call): \(String(cString: strerror(errno))) (\(name))" }
    }

    enum IOResult {
        case transferred(Int)
        case wouldBlock
        case endOfFile
        case failed(Int32)
        /// A TLS session failed (only from `ClientTransport`).
        case tlsFailed(String)
    }

    /// Starts a non-blocking connect to `remote`, from `source` when given. Returns the descriptor;
    /// the connect completes (or fails) when the socket becomes writable.
    static func connect(to remote: SocketAddress, from source: SocketAddress?) -> Result<Int32, Failure> {
        let fd = socket(remote.family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(Failure(call: "socket", errno: errno)) }
        func fail(_ call: String) -> Result<Int32, Failure> {
            let failure = Failure(call: call, errno: errno)
            Glibc.close(fd)
            return .failure(failure)
        }
        if let source {
            var one: Int32 = 1
            guard setsockopt(fd, Int32(IPPROTO_IP), ipBindAddressNoPort, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
                return fail("setsockopt(IP_BIND_ADDRESS_NO_PORT)")
            }
            guard source.withSockaddr({ bind(fd, $0, $1) }) == 0 else { return fail("bind") }
        }
        var one: Int32 = 1
        // Small frames must not wait for Nagle: the echo test measures latency.
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        while remote.withSockaddr({ Glibc.connect(fd, $0, $1) }) != 0 {
            if errno == EINTR { continue }
            if errno == EINPROGRESS { break }
            return fail("connect")
        }
        return .success(fd)
    }

    /// The outcome of a non-blocking connect, once the socket reports writable: 0 when connected.
    static func pendingError(_ fd: Int32) -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return errno }
        return error
    }

    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n > 0 { return .transferred(n) }
            if n == 0 { return .endOfFile }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
            return .failed(errno)
        }
    }

    static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> IOResult {
        while true {
            // MSG_NOSIGNAL: a peer that reset must give EPIPE here, not kill the process.
            let n = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if n >= 0 { return .transferred(n) }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
            return .failed(errno)
        }
    }

    static func close(_ fd: Int32) {
        // Linux frees the descriptor even when close(2) reports EINTR: never retry.
        _ = Glibc.close(fd)
    }
}
