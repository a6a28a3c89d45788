import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// This process's memory and CPU, from /proc and getrusage(2): what /metrics reports beside the
/// accounted bytes, so that the accounting can be checked against what the kernel sees.
public enum ProcessMemory {
    /// PSS from /proc/self/smaps_rollup ("Pss:  N kB"); 0 where the kernel has no such file.
    public static func proportionalBytes() -> Int {
        guard let text = readProcFile("/proc/self/smaps_rollup") else { return 0 }
        for line in text.split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("Pss:".utf8)) {
            let digits = line.drop { !(48...57).contains($0) }.prefix { (48...57).contains($0) }
            return (Int(String(decoding: digits, as: UTF8.self)) ?? 0) * 1024
        }
        return 0
    }

    /// User plus system CPU seconds of the whole process, every thread, from getrusage(2).
    public static func cpuSeconds() -> Double { Sys.processCPUSeconds() }

    /// The heap's bytes in use (`Sys.heapInUseBytes`): what sessions hold, where the resident size
    /// also counts what was freed and kept, and fills freed memory before it grows.
    public static func heapInUseBytes() -> Int { Sys.heapInUseBytes() }

    /// Resident bytes from /proc/self/statm (its second field, in pages).
    public static func residentBytes() -> Int {
        guard let text = readProcFile("/proc/self/statm") else { return 0 }
        let fields = text.split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// A /proc file: these are small. nil if unreadable (at the descriptor limit, say).
    private static func readProcFile(_ path: String) -> ArraySlice<UInt8>? {
        Sys.readFile(path, maxBytes: 64 * 1024).map { $0[...] }
    }
}

/// Resident memory once the server had started, before any connection: the base that per-connection
/// figures are measured from.
public final class ResidentBaseline: Sendable {
    private let value = Atomic<Int>(0)
    public init() {}
    public var bytes: Int { value.load(ordering: .relaxed) }
    public func record() { value.store(ProcessMemory.residentBytes(), ordering: .relaxed) }
}
