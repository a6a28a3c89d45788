#if canImport(Glibc)
import Glibc
#endif

/// `--config FILE` (or PARLEY_CONFIG): lines of `PARLEY_NAME=value` that stand in for the
/// environment. Loaded before the options are parsed; the real environment and flags win.
enum ConfigFile {
    static func load(arguments: [String]) -> String? {
        var path = Environment.string("PARLEY_CONFIG")
        if let i = arguments.firstIndex(of: "--config"), i + 1 < arguments.count { path = arguments[i + 1] }
        guard let path else { return nil }
        guard let file = fopen(path, "r") else { return "cannot read the config file \(path)" }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 4096)
        var number = 0
        while fgets(&line, Int32(line.count), file) != nil {
            number += 1
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let trimmed = Substring(text).trimmingCharacters
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let parts = trimmed.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].hasPrefix("PARLEY_") else { return "\(path):\(number): expected PARLEY_NAME=value" }
            setenv(String(parts[0].trimmingCharacters), String(parts[1].trimmingCharacters), 0)
        }
        return nil
    }

    /// The arguments without `--config FILE`, which only this loader reads.
    static func strip(_ arguments: [String]) -> [String] {
        guard let i = arguments.firstIndex(of: "--config") else { return arguments }
        return Array(arguments[..<i] + arguments[min(arguments.count, i + 2)...])
    }
}

private extension Substring {
    var trimmingCharacters: Substring {
        var s = self
        while let f = s.first, f == " " || f == "\t" || f == "\n" || f == "\r" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\n" || l == "\r" { s.removeLast() }
        return s
    }
}
