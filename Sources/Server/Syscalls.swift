import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// One thin wrapper per system call the server makes. Each retries on EINTR and throws
/// `SystemError` on failure, so the rest of the module never reads a raw return code.
enum Sys {
    @inline(__always)
    static func retrying<T: BinaryInteger>(_ call: String, _ body: () -> T) throws(SystemError) -> T {
        while true {
            let result = body()
            if result >= 0 { return result }
            if errno == EINTR { continue }
            throw SystemError(call)
        }
    }

    /// Outcome of a non-blocking read or write.
    enum IOResult: Equatable {
        case transferred(Int)
        case wouldBlock
        case endOfFile
    }

    /// read(2) on a non-blocking descriptor.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n > 0 { return .transferred(n) }
            if n == 0 { return buffer.isEmpty ? .transferred(0) : .endOfFile }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
            throw SystemError("read")
        }
    }

    /// writev(2) on a non-blocking descriptor.
    static func writev(_ fd: Int32, _ iov: UnsafePointer<iovec>, count: Int) throws(SystemError) -> IOResult {
        while true {
            let n = Glibc.writev(fd, iov, Int32(count))
            if n >= 0 { return .transferred(n) }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
            throw SystemError("writev")
        }
    }

    /// accept4(2) with SOCK_NONBLOCK | SOCK_CLOEXEC; nil when no connection is pending.
    static func accept(_ fd: Int32) throws(SystemError) -> Int32? {
        while true {
            let client = parley_accept(fd)
            if client >= 0 { return client }
            switch errno {
            case EINTR, ECONNABORTED: continue
            case EAGAIN, EWOULDBLOCK: return nil
            default: throw SystemError("accept4")
            }
        }
    }

    static func close(_ fd: Int32) {
        // Linux releases the descriptor even when close(2) reports EINTR: never retry.
        _ = Glibc.close(fd)
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) throws(SystemError) {
        var v = value
        _ = try retrying("setsockopt") {
            setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    static func eventfd() throws(SystemError) -> Int32 {
        try retrying("eventfd") { CLinux.eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
    }

    /// Adds one to an eventfd counter, waking whoever polls it.
    static func signal(eventfd fd: Int32) {
        var one: UInt64 = 1
        _ = Glibc.write(fd, &one, 8)
    }

    /// Resets an eventfd counter after a wake-up.
    static func drain(eventfd fd: Int32) {
        var value: UInt64 = 0
        _ = Glibc.read(fd, &value, 8)
    }
}
