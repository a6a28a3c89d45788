#if canImport(Glibc)
import Glibc
#endif

/// The process's environment variables, which the `--config` file's lines join (without
/// overriding). Options read theirs through their `Setting`, which judges the text; what reads
/// here directly is a variable that is not an option's twin (a key, a secret, the supervisor's pid).
enum Environment {
    static func string(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}


/// Writes a line for the operator to standard error (no Foundation in this binary).
func printError(_ text: String) {
    var line = text + "\n"
    line.withUTF8 { _ = Glibc.write(2, $0.baseAddress, $0.count) }
}
