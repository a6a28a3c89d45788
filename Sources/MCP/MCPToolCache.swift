/// The tools each MCP server listed, kept for a while, so that a `session.update` that names the
/// same servers again (or another session naming the same server with the same credentials) does
/// not list them again. A value: the time is passed in (`now`, monotonic nanoseconds); one cache per
/// event loop, as the clients are.
///
/// Keyed by the server and a hash of everything sent with it (the URL with its path and query, the
/// authorization, the headers): two sessions with different tokens may see different tools, so
/// they do not share an entry. The hash is Swift's `Hasher`, SipHash with a seed drawn at random for
/// each process, so a key that reaches a log or a metric reveals nothing of the credentials, not
/// even to a guess checked offline.
public struct MCPToolCache {
    public struct Key: Hashable, Sendable, CustomStringConvertible {
        /// Scheme, host and port: what a log may show.
        public let server: String
        private let digest: (UInt64, UInt64)

        public init(_ endpoint: MCPEndpoint) {
            server = endpoint.description
            func hash(_ domain: UInt8) -> UInt64 {
                var hasher = Hasher()
                hasher.combine(domain)
                hasher.combine(endpoint.url.description)
                hasher.combine(endpoint.authorization)
                // The headers' order means nothing to the server; a name's case neither.
                for (name, value) in endpoint.headers.sorted(by: { $0.0.lowercased() < $1.0.lowercased() }) {
                    hasher.combine(name.lowercased())
                    hasher.combine(value)
                }
                return UInt64(bitPattern: Int64(hasher.finalize()))
            }
            // Two seeded hashes: 128 bits, so two credentials meet on one entry by chance never.
            digest = (hash(1), hash(2))
        }

        public static func == (a: Key, b: Key) -> Bool { a.server == b.server && a.digest == b.digest }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(server)
            hasher.combine(digest.0)
            hasher.combine(digest.1)
        }

        public var description: String { "\(server)#\(String(digest.0, radix: 16))" }
    }

    private struct Entry {
        let tools: [MCPTool]
        let storedAt: UInt64
    }

    /// How long a list is trusted: a server's tools change rarely, and a change reaches sessions
    /// that start after this.
    public let lifetime: Duration
    /// The most servers kept; the oldest entry goes first.
    public let capacity: Int
    private var entries: [Key: Entry] = [:]

    public init(lifetime: Duration = .seconds(300), capacity: Int = 256) {
        self.lifetime = lifetime
        self.capacity = max(1, capacity)
    }

    public var count: Int { entries.count }

    /// The tools listed for `key` within the lifetime, if any; an expired entry is dropped.
    public mutating func tools(for key: Key, now: UInt64) -> [MCPTool]? {
        guard let entry = entries[key] else { return nil }
        guard now &- entry.storedAt < Self.nanoseconds(lifetime), now >= entry.storedAt else {
            entries[key] = nil
            return nil
        }
        return entry.tools
    }

    public mutating func store(_ tools: [MCPTool], for key: Key, now: UInt64) {
        if entries[key] == nil, entries.count >= capacity,
           let oldest = entries.min(by: { $0.value.storedAt < $1.value.storedAt })?.key {
            entries[oldest] = nil
        }
        entries[key] = Entry(tools: tools, storedAt: now)
    }

    /// Forgets `key`'s list: after a call found the server changed, say.
    public mutating func remove(_ key: Key) {
        entries[key] = nil
    }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole &+ UInt64(attoseconds / 1_000_000_000)
    }
}
