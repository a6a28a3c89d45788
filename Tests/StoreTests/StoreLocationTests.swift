import Testing
@testable import Store

@Suite struct StoreLocationTests {
    @Test(arguments: [
        ("none", StoreLocation.none),
        ("sqlite:/var/lib/parley/sessions.db", .sqlite(path: "/var/lib/parley/sessions.db")),
        ("sqlite:sessions.db", .sqlite(path: "sessions.db")),
        ("redis://cache.internal:6380", .redis(host: "cache.internal", port: 6380)),
        ("redis://127.0.0.1", .redis(host: "127.0.0.1", port: 6379)),
        ("redis://127.0.0.1/", .redis(host: "127.0.0.1", port: 6379)),
        ("redis://[::1]:7000", .redis(host: "::1", port: 7000)),
        ("redis://[::1]", .redis(host: "::1", port: 6379)),
    ])
    func parsesEachForm(_ text: String, _ expected: StoreLocation) throws {
        #expect(try StoreLocation.parse(text) == expected)
    }

    @Test(arguments: [
        ("", "expected none, sqlite:PATH or redis://HOST[:PORT]"),
        ("None", "expected none"),
        ("sqlite:", "needs a file path"),
        ("sqlite://tmp/x.db", "not a URL"),
        ("postgres://db", "expected none"),
        ("redis://", "needs a host"),
        ("redis://:6379", "needs a host"),
        ("redis://h:0", "port '0' is not a number from 1 to 65535"),
        ("redis://h:65536", "from 1 to 65535"),
        ("redis://h:port", "port 'port'"),
        ("redis://h:", "port ''"),
        ("redis://h:6379/2", "takes no path"),
        ("redis://user:pw@h:6379", "no path, database or credentials"),
        ("redis://[::1", "unclosed ["),
        ("redis://[::1]6379", "expected :PORT"),
    ])
    func refusesAnythingElseSayingWhy(_ text: String, _ message: String) {
        #expect {
            try StoreLocation.parse(text)
        } throws: { error in
            (error as? StoreError)?.message.contains(message) == true
        }
    }

    @Test func noneOpensNoStoreAndRedisOpensARedisStore() throws {
        #expect(try StoreLocation.none.open() == nil)
        // Connections are made per loop on first use: naming a Redis that is not up is no error.
        #expect(try StoreLocation.redis(host: "127.0.0.1", port: 1).open()?.kind == "redis")
    }

    @Test func sqliteOpensTheStoreOrSaysWhyNot() throws {
        let path = temporaryDatabasePath()
        defer { removeDatabase(path) }
        #expect(try StoreLocation.sqlite(path: path).open()?.kind == "sqlite")
        #expect {
            try StoreLocation.sqlite(path: "/nonexistent-parley-dir/x.db").open()
        } throws: { error in
            (error as? StoreError)?.message.contains("/nonexistent-parley-dir/x.db") == true
        }
    }
}
