import JSON
#if canImport(Glibc)
import Glibc
#endif

/// A worker's side of the reporting: one JSON object per line on stdout, written with write(2) so
/// that each line leaves at once, whole, with no stdio buffer holding it back.
enum ReportWriter {
    static func emit(_ report: JSON) {
        let bytes = Array((report.description + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
            if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }  // parent gone
        }
    }
}
