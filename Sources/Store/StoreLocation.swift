
/// Where conversations are kept, as the command line names it: `none`, `sqlite:PATH` (one node),
/// `redis://HOST[:PORT]` (many nodes).
public enum StoreLocation: Equatable, Sendable {
    case none
    case sqlite(path: String)
    case redis(host: String, port: Int)

    public static let defaultRedisPort = 6379
    static let usage = "expected none, sqlite:PATH or redis://HOST[:PORT]"

    public static func parse(_ text: String) throws(StoreError) -> StoreLocation {
        if text == "none" { return .none }
        if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else { throw StoreError("store '\(text)': sqlite: needs a file path (sqlite:/var/lib/parley/sessions.db)") }
            // sqlite://x would be read as the path "//x": say what was meant instead of guessing.
            guard !path.hasPrefix("//") else { throw StoreError("store '\(text)': write sqlite:PATH (sqlite:/var/lib/parley/sessions.db), not a URL") }
            return .sqlite(path: path)
        }
        if text.hasPrefix("redis://") {
            return try parseRedis(text, String(text.dropFirst("redis://".count)))
        }
        throw StoreError("store '\(text)': \(usage)")
    }

    /// HOST, HOST:PORT, [IPv6] or [IPv6]:PORT; a trailing "/" is allowed, a path or credentials are not.
    private static func parseRedis(_ text: String, _ authority: String) throws(StoreError) -> StoreLocation {
        var rest = Substring(authority)
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/"), !rest.contains("@") else {
            throw StoreError("store '\(text)': redis://HOST[:PORT] takes no path, database or credentials")
        }
        let host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw StoreError("store '\(text)': unclosed [ in the IPv6 address") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw StoreError("store '\(text)': expected :PORT after ]") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.firstIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw StoreError("store '\(text)': redis:// needs a host (redis://127.0.0.1:6379)") }
        var port = defaultRedisPort
        if let portText {
            guard let n = Int(portText), (1...65535).contains(n) else {
                throw StoreError("store '\(text)': port '\(portText)' is not a number from 1 to 65535")
            }
            port = n
        }
        return .redis(host: String(host), port: port)
    }

    /// The store this names, opened: nil for `none`.
    public func open() throws(StoreError) -> (any ConversationStore)? {
        switch self {
        case .none:
            return nil
        case .sqlite(let path):
            do throws(SQLiteError) {
                return try SQLiteConversationStore.open(path: path)
            } catch {
                throw StoreError("sqlite store: \(error)")
            }
        case .redis(let host, let port): return RedisConversationStore(host: host, port: port)
        }
    }
}
