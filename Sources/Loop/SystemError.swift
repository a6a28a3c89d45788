#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: which call, and the `errno` it left.
public struct SystemError: Error, CustomStringConvertible, Equatable {
    public let call: String
    public let errno: Int32

    public init(_ call: String, errno: Int32 = Glibc.errno) {
        self.call = call
        self.errno = errno
    }

    public var description: String { "\(call): \(Self.reason(errno)) (errno \(errno))" }

    /// strerror(3)'s text for an errno value.
    public static func reason(_ errno: Int32) -> String { String(cString: strerror(errno)) }

    var wouldBlock: Bool { errno == EAGAIN || errno == EWOULDBLOCK }
}
