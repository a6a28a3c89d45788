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
