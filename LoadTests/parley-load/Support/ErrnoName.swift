#if canImport(Glibc)
import Glibc
#endif

/// Symbolic names for the errno values a client socket can meet. Failures are counted by these
/// names because "ECONNREFUSED x 19000" is what a reader searches for, not "Connection refused".
enum ErrnoName {
    static func of(_ code: Int32) -> String {
        switch code {
        case ECONNREFUSED: "ECONNREFUSED"
        case ECONNRESET: "ECONNRESET"
        case ECONNABORTED: "ECONNABORTED"
        case ETIMEDOUT: "ETIMEDOUT"
        case EADDRNOTAVAIL: "EADDRNOTAVAIL"
        case EADDRINUSE: "EADDRINUSE"
        case EMFILE: "EMFILE"
        case ENFILE: "ENFILE"
        case ENOBUFS: "ENOBUFS"
        case ENOMEM: "ENOMEM"
        case EPIPE: "EPIPE"
        case ENETUNREACH: "ENETUNREACH"
        case EHOSTUNREACH: "EHOSTUNREACH"
        case EAGAIN: "EAGAIN"
        case EINVAL: "EINVAL"
        case EACCES: "EACCES"
        case EPERM: "EPERM"
        default: "errno \(code)"
        }
    }
}
