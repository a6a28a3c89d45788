#if canImport(Glibc)
import Glibc
#endif

/// Writing a report file, with a clear error when it cannot be.
enum TextFile {
    static func write(_ text: String, to path: String) throws(LoadFailure) {
        guard let file = fopen(path, "w") else {
            throw LoadFailure("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        let ok = fputs(text, file) >= 0
        guard fclose(file) == 0, ok else { throw LoadFailure("cannot write \(path): \(String(cString: strerror(errno)))") }
    }
}
