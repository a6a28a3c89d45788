import JSON
@testable import MCP
import Testing

/// A tool entry's server: what is checked before anything is sent, the secrets kept out of every
/// message, and the cache of tool lists keyed without them.
@Suite struct MCPEndpointTests {
    @Test func aTokenIsSentAsABearerAuthorization() throws {
        #expect(try MCPEndpoint(url: "http://127.0.0.1:9/mcp", authorization: "abc123").authorization == "Bearer abc123")
        #expect(try MCPEndpoint(url: "http://127.0.0.1:9/mcp", authorization: "Bearer abc123").authorization == "Bearer abc123")
    }

    @Test func aHeaderThatCouldInjectOrOverrideIsRefusedWithoutQuotingItsValue() throws {
        #expect(throws: MCPEndpoint.Invalid.headerValue(name: "X-Key")) { try MCPEndpoint(url: "http://a/mcp", headers: [("X-Key", "v\r\nHost: evil")]) }
        #expect(throws: MCPEndpoint.Invalid.headerName("X Key")) { try MCPEndpoint(url: "http://a/mcp", headers: [("X Key", "v")]) }
        #expect(throws: MCPEndpoint.Invalid.headerName("X??Host")) { try MCPEndpoint(url: "http://a/mcp", headers: [("X\r\nHost", "v")]) }
        #expect(throws: MCPEndpoint.Invalid.reservedHeader("Mcp-Session-Id")) { try MCPEndpoint(url: "http://a/mcp", headers: [("Mcp-Session-Id", "s")]) }
        #expect(throws: MCPEndpoint.Invalid.reservedHeader("authorization")) {
            try MCPEndpoint(url: "http://a/mcp", authorization: "t", headers: [("authorization", "Bearer u")])
        }
        #expect(throws: MCPEndpoint.Invalid.authorization) { try MCPEndpoint(url: "http://a/mcp", authorization: "t\n") }
        #expect(throws: MCPEndpoint.Invalid.url) { try MCPEndpoint(url: "ftp://a/mcp") }
        let error = MCPEndpoint.Invalid.headerValue(name: "X-Key")
        #expect(!error.description.contains("evil"))
    }

    @Test func anEndpointNamesItsServerWithoutPathOrSecrets() throws {
        let endpoint = try MCPEndpoint(url: "https://tools.example.com/mcp?token=abcdef", authorization: "tok-1234567", headers: [("X-Key", "hdr-secret")])
        #expect(endpoint.description == "https://tools.example.com:443")
    }

    @Test func redactionScrubsTheSecretsFromEveryKindOfError() {
        let redaction = MCPRedaction(["Bearer tok-1234567", "tok-1234567", "hdr-secret", "no"])
        let leaked = "you sent Bearer tok-1234567 and hdr-secret, no more"
        #expect(redaction.scrub(leaked) == "you sent [redacted] and [redacted], no more")
        for error in [MCPError.jsonRPC(code: 1, message: leaked), .toolFailed(leaked), .status(401, leaked), .malformed(leaked)] {
            let scrubbed = redaction.scrub(error)
            #expect(!scrubbed.description.contains("tok-1234567") && !scrubbed.description.contains("hdr-secret"), "\(scrubbed)")
            #expect(!scrubbed.json.description.contains("tok-1234567"))
        }
    }

    @Test func aQuotedServerMessageIsCut() {
        let redaction = MCPRedaction()
        let long = String(repeating: "é", count: 2000)
        let quoted = redaction.quote(long)
        #expect(quoted.utf8.count <= MCPRedaction.maxQuotedBytes + 3)
        #expect(quoted.hasSuffix("…"))
    }

    // MARK: The cache

    func tool(_ name: String) -> MCPTool { MCPTool(name: name, inputSchema: MCPTool.emptySchema) }

    @Test func anUnchangedEntryFindsItsListUntilItExpires() throws {
        var cache = MCPToolCache(lifetime: .seconds(10))
        let key = MCPToolCache.Key(try MCPEndpoint(url: "http://127.0.0.1:9/mcp", authorization: "tok-1234567"))
        cache.store([tool("add")], for: key, now: 1_000)
        let again = MCPToolCache.Key(try MCPEndpoint(url: "http://127.0.0.1:9/mcp", authorization: "tok-1234567"))
        #expect(cache.tools(for: again, now: 9_000_000_000) == [tool("add")])
        #expect(cache.tools(for: again, now: 10_000_001_000) == nil)
        #expect(cache.count == 0)
    }

    @Test func otherCredentialsOrAnotherURLAreAnotherEntry() throws {
        var cache = MCPToolCache()
        let base = MCPToolCache.Key(try MCPEndpoint(url: "http://127.0.0.1:9/mcp", authorization: "tok-1234567", headers: [("A", "1"), ("B", "2")]))
        cache.store([tool("add")], for: base, now: 0)
        let reordered = MCPToolCache.Key(try MCPEndpoint(url: "http://127.0.0.1:9/mcp", authorization: "tok-1234567", headers: [("b", "2"), ("A", "1")]))
        #expect(cache.tools(for: reordered, now: 1) != nil, "header order and case mean nothing")
        for other in [try MCPEndpoint(url: "http://127.0.0.1:9/mcp", authorization: "tok-7654321", headers: [("A", "1"), ("B", "2")]),
                      try MCPEndpoint(url: "http://127.0.0.1:9/mcp", authorization: "tok-1234567", headers: [("A", "1"), ("B", "3")]),
                      try MCPEndpoint(url: "http://127.0.0.1:9/other", authorization: "tok-1234567", headers: [("A", "1"), ("B", "2")])] {
            #expect(cache.tools(for: MCPToolCache.Key(other), now: 1) == nil)
        }
    }

    @Test func aKeyNeverShowsTheCredentials() throws {
        let key = MCPToolCache.Key(try MCPEndpoint(url: "http://127.0.0.1:9/mcp?token=abcd", authorization: "tok-1234567", headers: [("X-Key", "hdr-secret")]))
        let shown = "\(key) \(String(reflecting: key))"
        for secret in ["tok-1234567", "hdr-secret", "abcd", "/mcp"] { #expect(!shown.contains(secret), "\(shown)") }
        #expect(key.server == "http://127.0.0.1:9")
    }

    @Test func aFullCacheDropsItsOldestEntry() throws {
        var cache = MCPToolCache(capacity: 2)
        let keys = try (1...3).map { MCPToolCache.Key(try MCPEndpoint(url: "http://127.0.0.1:\($0)/mcp")) }
        for (i, key) in keys.enumerated() { cache.store([tool("t\(i)")], for: key, now: UInt64(i)) }
        #expect(cache.count == 2)
        #expect(cache.tools(for: keys[0], now: 3) == nil)
        #expect(cache.tools(for: keys[2], now: 3) == [tool("t2")])
    }
}
