import Metrics
import Loop
#if canImport(Glibc)
import Glibc
#endif

/// Where the processes of `parley serve --workers N` leave their metrics for each other: a
/// directory the supervisor makes, with one `NAME.prom` file per process, rewritten every
/// `interval` seconds (write, then rename, so a reader never sees half a file). The `/metrics`
/// route of whichever worker a scrape reaches renders its own series live and merges the others'.
public struct WorkerGroupMembership: Sendable {
    public let directory: String
    /// This process's file name, without `.prom`: "worker-0", ..., or "supervisor".
    public let name: String
    public static let interval = 0.25

    public init(directory: String, name: String) {
        self.directory = directory
        self.name = name
    }

    var path: String { "\(directory)/\(name).prom" }

    /// Replaces this process's file with `text`.
    public func publish(_ text: String) {
        let temporary = path + ".tmp"
        guard let file = fopen(temporary, "w") else { return }
        let written = text.utf8CString.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count - 1, file) }
        fclose(file)
        if written == text.utf8.count { rename(temporary, path) } else { unlink(temporary) }
    }

    /// The other processes' latest files, by name.
    func others() -> [MetricsMerge.Source] {
        let names = Directory.names(in: directory).filter { $0.hasSuffix(".prom") && $0 != "\(name).prom" }.map { String($0.dropLast(5)) }
        return names.sorted().compactMap { name in
            read("\(self.directory)/\(name).prom").map { MetricsMerge.Source(worker: label(name), text: $0) }
        }
    }

    /// "worker-3" → "3"; other names as they are.
    func label(_ name: String) -> String { name.hasPrefix("worker-") ? String(name.dropFirst(7)) : name }

    private func read(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while case let n = fread(&chunk, 1, chunk.count, file), n > 0 { bytes += chunk[0..<n] }
        return String(decoding: bytes, as: UTF8.self)
    }
}
