#if canImport(Glibc)
import Glibc
#endif

/// Flag defaults taken from environment variables, so every `--flag` has a `PARLEY_FLAG` twin.
enum Environment {
    static func string(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    static func int(_ name: String) -> Int? { string(name).flatMap { Int($0) } }
    static func double(_ name: String) -> Double? { string(name).flatMap { Double($0) } }
}


/// Writes a line for the operator to standard error (no Foundation in this binary).
func printError(_ text: String) {
    var line = text + "\n"
    line.withUTF8 { _ = Glibc.write(2, $0.baseAddress, $0.count) }
}
