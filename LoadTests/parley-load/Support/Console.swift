#if canImport(Glibc)
import Glibc
#endif

/// Writing to stderr, and flushing stdout, without touching C's global FILE pointers (which Swift 6
/// rightly treats as shared mutable state).
enum Console {
    /// Unbuffered, straight to descriptor 2: progress must show at once, whatever stdout does.
    static func error(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
            if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
        }
    }

    /// Pushes out what `print` buffered: stdout is block-buffered into a pipe or file, and the
    /// first part of a summary should appear before a long hold, not after it.
    static func flush() { fflush(nil) }
}
