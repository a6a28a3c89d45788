/// The instruction-set extensions this machine's CPU has, as the kernel lists them (the `flags` line
/// of /proc/cpuinfo): what a prebuilt library compiled for newer CPUs needs is checked before it is
/// loaded, since one that meets an instruction the CPU lacks dies of SIGILL, which no caller can
/// catch (moonshine-cpp 0.1.4's libmoonshine.so on an AMD EPYC without AVX-512, seen here).
public enum CPUFeatures {
    /// Those of `wanted` the CPU does not have, in their order; none where /proc/cpuinfo cannot
    /// be read or names no flags (another architecture: nothing is known, so nothing is refused).
    public static func missing(_ wanted: [String]) -> [String] {
        guard let flags = flags(), !flags.isEmpty else { return [] }
        return wanted.filter { !flags.contains($0) }
    }

    private static func flags() -> Set<String>? {
        guard let bytes = Sys.readFile("/proc/cpuinfo", maxBytes: 4 << 20) else { return nil }
        for line in bytes.split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("flags".utf8)) {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            return Set(line[(colon + 1)...].split(separator: UInt8(ascii: " ")).map { String(decoding: $0, as: UTF8.self) })
        }
        return nil
    }
}
