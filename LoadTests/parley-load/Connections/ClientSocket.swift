import CLinux
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// The system calls a client socket needs, each returning a value rather than leaving errno about.
/// Every socket is non-blocking and close-on-exec: workers are spawned from this process, and a
/// socket leaked into a child would keep a connection open after the parent let it go.
enum ClientSocket {
    struct Failure: Error, CustomStringConvertible {
        let call: String
        let errno: Int32
        var name: String { ErrnoName.of(errno) }
        var description: String { "\(call): \(SystemError.reason(errno)) (\(name))" }

        init(call: String, errno: Int32) {
            self.call = call
            self.errno = errno
        }

        init(_ error: SystemError) {
            self.init(call: error.call.prefix { $0 != "(" }.description, errno: error.errno)
        }
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
        let fd: Int32
        do { fd = try Sys.streamSocket(family: remote.family) } catch { return .failure(Failure(error)) }
        do {
            if let source { try Sys.bind(fd, to: source, reservePort: false) }
            // Small frames must not wait for Nagle: the echo test measures latency.
            Sys.setNoDelay(fd)
            _ = try Sys.connect(fd, to: remote)
        } catch {
            Sys.close(fd)
            return .failure(Failure(error))
        }
        return .success(fd)
    }

    /// The outcome of a non-blocking connect, once the socket reports writable: 0 when connected.
    static func pendingError(_ fd: Int32) -> Int32 { Sys.socketError(fd) }

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

    static func close(_ fd: Int32) { Sys.close(fd) }
}
