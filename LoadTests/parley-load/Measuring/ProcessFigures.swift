import Loop
#if canImport(Glibc)
import Glibc
#endif

/// A server's memory read from /proc/PID, for servers that have no Parley `/metrics` (the
/// Python peers of `parley-load compare`). The figures come out as a `ServerMetrics` with Parley's
/// series names, so that every report reads them the same way.
struct ProcessFigures {
    let pid: Int32

    /// Resident bytes (/proc/PID/statm's second field).
    var residentBytes: Double? {
        guard let text = read("statm"), let pages = text.split(separator: " ").dropFirst().first.flatMap({ Double($0) }) else { return nil }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// PSS (/proc/PID/smaps_rollup).
    var proportionalBytes: Double? {
        guard let text = read("smaps_rollup") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("Pss:") {
            return Double(line.dropFirst(4).filter(\.isNumber)).map { $0 * 1024 }
        }
        return nil
    }

    /// User plus system CPU seconds (/proc/PID/stat's fields 14 and 15, in clock ticks).
    var cpuSeconds: Double? {
        // The command name (field 2) may hold spaces; the fields after it start past its ')'.
        guard let text = read("stat"), let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// CPU seconds of this process and of its descendants running now (a server's speech helper).
    var treeCPUSeconds: Double? {
        guard let own = cpuSeconds else { return nil }
        return children.reduce(own) { $0 + (ProcessFigures(pid: $1).treeCPUSeconds ?? 0) }
    }

    /// Its children, from each thread's /proc/PID/task/TID/children.
    var children: [Int32] {
        Directory.names(in: "/proc/\(pid)/task").flatMap { task in
            (read("task/\(task)/children") ?? "").split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int32($0) }
        }
    }

    /// Parley's series for this process: `sessions` is what the client counts as open, and
    /// `startupResident` the resident memory measured before the run.
    func metrics(sessions: Int, startupResident: Double) throws(ServerMetrics.Unreachable) -> ServerMetrics {
        guard let resident = residentBytes else { throw ServerMetrics.Unreachable(description: "no process \(pid) to read /proc/\(pid) from") }
        var text = "parley_process_resident_memory_bytes \(resident)\n"
        text += "parley_process_startup_resident_memory_bytes \(startupResident)\n"
        text += "parley_connections_open{endpoint=\"echo\"} \(sessions)\n"
        if let proportional = proportionalBytes { text += "parley_process_proportional_memory_bytes \(proportional)\n" }
        if let cpu = cpuSeconds { text += "parley_process_cpu_seconds_total \(cpu)\n" }
        if sessions > 0 { text += "parley_resident_bytes_per_connection \(((resident - startupResident) / Double(sessions)).rounded(.down))\n" }
        return ServerMetrics(parsing: text)
    }

    private func read(_ file: String) -> String? { try? TextFile.read("/proc/\(pid)/\(file)") }
}
