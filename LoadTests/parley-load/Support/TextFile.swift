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

    static func read(_ path: String) throws(LoadFailure) -> String {
        guard let file = fopen(path, "r") else { throw LoadFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while case let n = fread(&chunk, 1, chunk.count, file), n > 0 { bytes += chunk[0..<n] }
        return String(decoding: bytes, as: UTF8.self)
    }
}
