import Glibc

/// A directory for one test's files, removed with it.
public final class TemporaryDirectory {
    public struct Failure: Error {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    public let root: String

    public init() throws {
        var template = Array("/tmp/parley-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw TemporaryDirectory.Failure("mkdtemp failed") }
        root = String(cString: made)
    }

    deinit {
        _ = try? Subprocess.run(["rm", "-rf", root], quiet: true)
    }

    public func path(_ name: String) -> String { root + "/" + name }
}
