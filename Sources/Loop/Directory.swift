#if canImport(Glibc)
import Glibc
#endif

/// The few directory operations the server, the supervisor and the load harness need.
public enum Directory {
    /// The names in `path`, without "." and ".."; empty if it cannot be read.
    public static func names(in path: String) -> [String] {
        guard let handle = opendir(path) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Removes `path` and the files in it (not subdirectories: none of Parley's have any).
    public static func removeFlat(_ path: String) {
        for name in names(in: path) { unlink("\(path)/\(name)") }
        rmdir(path)
    }
}
