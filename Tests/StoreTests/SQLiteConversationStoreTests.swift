import Glibc
import Loop
import Testing
@testable import Store

@Suite struct SQLiteConversationStoreTests {
    /// `load`, which calls back at once on an embedded store, as a value.
    func load(_ store: SQLiteConversationStore, _ hash: String, on loop: EventLoop) throws -> StoredConversation? {
        var result: Result<StoredConversation?, StoreError>?
        store.load(tokenHash: hash, on: loop) { result = $0 }
        return try #require(result).get()
    }

    @Test func sessionItemsAndTokenRotationRoundTrip() throws {
        let path = temporaryDatabasePath()
        defer { removeDatabase(path) }
        let store = try SQLiteConversationStore.open(path: path)
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        let session = StoredSession(sessionID: "sess_1", tenant: "acme", tokenHash: "h1", settings: "{\"voice\":\"a\"}", lastSeq: 2, expiresAt: 0)
        store.sessionStarted(session, on: loop)
        store.itemCompleted(sessionID: "sess_1", seq: 7, itemID: "item_b", item: "{\"id\":\"item_b\"}", event: "{\"event_id\":7}", on: loop)
        store.itemCompleted(sessionID: "sess_1", seq: 4, itemID: "item_a", item: "{\"id\":\"item_a\",\"text\":\"é 🎙\"}", event: "{\"event_id\":4}", on: loop)
        store.settingsChanged(sessionID: "sess_1", settings: "{\"voice\":\"b\"}", on: loop)

        let loaded = try #require(try load(store, "h1", on: loop))
        #expect(loaded.session == StoredSession(sessionID: "sess_1", tenant: "acme", tokenHash: "h1", settings: "{\"voice\":\"b\"}", lastSeq: 2))
        #expect(loaded.items == [
            .init(seq: 4, itemID: "item_a", item: "{\"id\":\"item_a\",\"text\":\"é 🎙\"}", event: "{\"event_id\":4}"),
            .init(seq: 7, itemID: "item_b", item: "{\"id\":\"item_b\"}", event: "{\"event_id\":7}"),
        ])

        var rotation: TokenRotation?
        store.tokenRotated(sessionID: "sess_1", from: "h1", to: "h2", lastSeq: 9, on: loop) { rotation = $0 }
        #expect(rotation == .stored)
        #expect(try load(store, "h1", on: loop) == nil)
        let rotated = try #require(try load(store, "h2", on: loop))
        #expect(rotated.session.lastSeq == 9 && rotated.session.tokenHash == "h2" && rotated.items.count == 2)

        store.sessionEnded(sessionID: "sess_1", tokenHash: "h2", on: loop)
        #expect(try load(store, "h2", on: loop) == nil)
        // Its items went with it: the same session started again has none.
        store.sessionStarted(StoredSession(sessionID: "sess_1", tenant: "acme", tokenHash: "h3", settings: "{}", lastSeq: 0), on: loop)
        #expect(try load(store, "h3", on: loop)?.items == [])
        #expect(store.isAvailable(on: loop))
        #expect(store.renderMetrics().contains("parley_store_writes_total{store=\"sqlite\",result=\"ok\"} 7"))
        #expect(store.renderMetrics().contains("parley_store_writes_total{store=\"sqlite\",result=\"error\"} 0"))
        #expect(store.renderMetrics().contains("parley_store_write_seconds_count{store=\"sqlite\"} 7"))
    }

    /// Reports and stored Live sessions by id, each kind apart; written again, replaced; past its
    /// retention, gone.
    @Test func keptDocumentsAreReadBackByKindAndIdUntilTheyExpire() throws {
        let path = temporaryDatabasePath()
        defer { removeDatabase(path) }
        let store = try SQLiteConversationStore.open(path: path)
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        func kept(_ kind: KeptKind, _ id: String) throws -> String? {
            var result: Result<String?, StoreError>?
            store.kept(kind, id: id, on: loop) { result = $0 }
            return try #require(result).get()
        }
        store.keep(.report, id: "sess_k", text: "{\"report\":1}", keepSeconds: 60, on: loop)
        store.keep(.liveSession, id: "sess_k", text: "{\"live\":1}", keepSeconds: 60, on: loop)
        #expect(try kept(.report, "sess_k") == "{\"report\":1}" && kept(.liveSession, "sess_k") == "{\"live\":1}")
        store.keep(.liveSession, id: "sess_k", text: "{\"live\":2}", keepSeconds: 60, on: loop)
        #expect(try kept(.liveSession, "sess_k") == "{\"live\":2}" && kept(.liveSession, "sess_other") == nil)
        let db = try SQLiteDatabase(path: path)
        try db.run("UPDATE kept SET expires_at = 1 WHERE kind = 'report'", [])
        #expect(try kept(.report, "sess_k") == nil && kept(.liveSession, "sess_k") == "{\"live\":2}")
    }

    @Test func anEndedSessionIsNotLoaded() throws {
        let path = temporaryDatabasePath()
        defer { removeDatabase(path) }
        let store = try SQLiteConversationStore.open(path: path)
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        store.sessionStarted(StoredSession(sessionID: "sess_e", tenant: "", tokenHash: "he", settings: "{}", lastSeq: 0), on: loop)
        #expect(try load(store, "he", on: loop) != nil)
        let db = try SQLiteDatabase(path: path)
        try db.run("UPDATE sessions SET ended = 1 WHERE session_id = ?1", [.text("sess_e")])
        #expect(try load(store, "he", on: loop) == nil)
    }

    /// A spoken reply truncated to what was heard: its JSON changes, its seq and event stay, and
    /// the store says it kept it before the call returns (nothing is held for an embedded store).
    @Test func aChangedItemKeepsItsSeqAndEvent() throws {
        let path = temporaryDatabasePath()
        defer { removeDatabase(path) }
        let store = try SQLiteConversationStore.open(path: path)
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        store.sessionStarted(StoredSession(sessionID: "sess_t", tenant: "", tokenHash: "ht", settings: "{}", lastSeq: 0), on: loop)
        store.itemCompleted(sessionID: "sess_t", seq: 5, itemID: "item_reply", item: #"{"transcript":"one two three"}"#, event: "e5", on: loop)
        var kept: Bool?
        store.itemChanged(sessionID: "sess_t", itemID: "item_reply", item: #"{"transcript":"one"}"#, on: loop) { kept = $0 }
        #expect(kept == true)
        #expect(try load(store, "ht", on: loop)?.items == [.init(seq: 5, itemID: "item_reply", item: #"{"transcript":"one"}"#, event: "e5")])
    }

    @Test func anItemCompletedAgainReplacesItsRowUnderTheNewSeq() throws {
        let path = temporaryDatabasePath()
        defer { removeDatabase(path) }
        let store = try SQLiteConversationStore.open(path: path)
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        store.sessionStarted(StoredSession(sessionID: "sess_r", tenant: "", tokenHash: "hr", settings: "{}", lastSeq: 0), on: loop)
        store.itemCompleted(sessionID: "sess_r", seq: 3, itemID: "item_user", item: "{\"transcript\":null}", event: "e3", on: loop)
        store.itemCompleted(sessionID: "sess_r", seq: 5, itemID: "item_reply", item: "{\"text\":\"hi\"}", event: "e5", on: loop)
        store.itemCompleted(sessionID: "sess_r", seq: 8, itemID: "item_user", item: "{\"transcript\":\"hello\"}", event: "e8", on: loop)
        // The same item id in another session is another item.
        store.itemCompleted(sessionID: "sess_other", seq: 3, itemID: "item_user", item: "{}", event: "x", on: loop)
        #expect(try load(store, "hr", on: loop)?.items == [
            .init(seq: 5, itemID: "item_reply", item: "{\"text\":\"hi\"}", event: "e5"),
            .init(seq: 8, itemID: "item_user", item: "{\"transcript\":\"hello\"}", event: "e8"),
        ])
        // Settings, then each item and its event.
        let written: [String] = ["{}", "{\"transcript\":null}", "e3", "{\"text\":\"hi\"}", "e5", "{\"transcript\":\"hello\"}", "e8", "{}", "x"]
        let bytes = written.reduce(0) { $0 + $1.utf8.count }
        #expect(store.renderMetrics().contains("parley_store_bytes_written_total{store=\"sqlite\"} \(bytes)"))
    }

    @Test func writesAreCommittedWhenTheMethodReturns() throws {
        // Another connection (another loop's), opened while the writer's is still open, sees every
        // write: nothing waits in a transaction or a buffer of ours.
        let path = temporaryDatabasePath()
        defer { removeDatabase(path) }
        let store = try SQLiteConversationStore.open(path: path)
        let writer = try EventLoop(handle: LoopHandle(index: 0))
        let reader = try EventLoop(handle: LoopHandle(index: 1))
        store.sessionStarted(StoredSession(sessionID: "sess_c", tenant: "t", tokenHash: "hc", settings: "{}", lastSeq: 0), on: writer)
        for seq in 1...20 {
            store.itemCompleted(sessionID: "sess_c", seq: seq, itemID: "item_\(seq)", item: "{}", event: "{}", on: writer)
            #expect(try load(store, "hc", on: reader)?.items.count == seq)
        }
    }

    /// Two processes on one file rotating the same token: the compare-and-set lets exactly one
    /// through, and the other learns the session was taken (issue 27).
    @Test func ofTwoRotationsFromOneTokenOnlyOneIsStored() throws {
        let path = temporaryDatabasePath()
        defer { removeDatabase(path) }
        let nodeA = try SQLiteConversationStore.open(path: path)
        let nodeB = try SQLiteConversationStore.open(path: path)
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        nodeA.sessionStarted(StoredSession(sessionID: "sess_r", tenant: "", tokenHash: "t0", settings: "{}", lastSeq: 0), on: loop)
        for round in 1...100 {
            var a: TokenRotation?, b: TokenRotation?
            let used = "t\(round - 1)"
            nodeA.tokenRotated(sessionID: "sess_r", from: used, to: "a\(round)", lastSeq: round, on: loop) { a = $0 }
            nodeB.tokenRotated(sessionID: "sess_r", from: used, to: "b\(round)", lastSeq: round, on: loop) { b = $0 }
            #expect(a == .stored && b == .taken, "round \(round): \(String(describing: a)), \(String(describing: b))")
            // The winner's token is the session's; the loser's leads nowhere. Then the next round.
            #expect(try load(nodeA, "a\(round)", on: loop)?.session.sessionID == "sess_r")
            #expect(try load(nodeA, "b\(round)", on: loop) == nil)
            var next: TokenRotation?
            nodeB.tokenRotated(sessionID: "sess_r", from: "a\(round)", to: "t\(round)", lastSeq: round, on: loop) { next = $0 }
            #expect(next == .stored)
        }
        // An ended session cannot be rotated into again.
        // The loser's end (a parked copy expiring) leaves the winner's session alone; the winner's ends it.
        nodeA.sessionEnded(sessionID: "sess_r", tokenHash: "t99", on: loop)
        #expect(try load(nodeA, "t100", on: loop)?.session.sessionID == "sess_r")
        nodeA.sessionEnded(sessionID: "sess_r", tokenHash: "t100", on: loop)
        #expect(try load(nodeA, "t100", on: loop) == nil)
        var late: TokenRotation?
        nodeB.tokenRotated(sessionID: "sess_r", from: "t100", to: "z", lastSeq: 101, on: loop) { late = $0 }
        #expect(late == .taken)
    }

    @Test func aFailedWriteIsCountedNotThrown() throws {
        let path = temporaryDatabasePath()
        defer { removeDatabase(path) }
        let store = try SQLiteConversationStore.open(path: path)
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        store.sessionStarted(StoredSession(sessionID: "sess_a", tenant: "", tokenHash: "ha", settings: "{}", lastSeq: 0), on: loop)
        store.sessionStarted(StoredSession(sessionID: "sess_b", tenant: "", tokenHash: "hb", settings: "{}", lastSeq: 0), on: loop)
        // token_hash is unique: b cannot take a's token.
        var rotations: [TokenRotation] = []
        store.tokenRotated(sessionID: "sess_b", from: "hb", to: "ha", lastSeq: 1, on: loop) { rotations.append($0) }
        store.tokenRotated(sessionID: "sess_b", from: "hb", to: "ha", lastSeq: 2, on: loop) { rotations.append($0) }
        #expect(rotations == [.unavailable, .unavailable])
        #expect(store.renderMetrics().contains("parley_store_writes_total{store=\"sqlite\",result=\"error\"} 2"))
        #expect(try load(store, "ha", on: loop)?.session.sessionID == "sess_a")
        #expect(try load(store, "hb", on: loop)?.session.sessionID == "sess_b")
    }

    @Test func aMissingDirectoryIsATypedError() {
        #expect {
            try SQLiteConversationStore.open(path: "/nonexistent-parley-dir/sessions.db")
        } throws: { error in
            guard let error = error as? SQLiteError else { return false }
            return error.primaryCode == 14 && error.message.contains("/nonexistent-parley-dir/sessions.db")  // SQLITE_CANTOPEN
        }
    }

    @Test func aFileThatIsNotADatabaseIsATypedError() {
        let path = temporaryDatabasePath()
        defer { removeDatabase(path) }
        writeFile(path, String(repeating: "this is not a SQLite database, only text. ", count: 100))
        #expect {
            try SQLiteConversationStore.open(path: path)
        } throws: { error in
            (error as? SQLiteError)?.primaryCode == 26  // SQLITE_NOTADB
        }
    }

    @Test func aCorruptedDatabaseIsATypedErrorOrRefusedLoadNotACrash() throws {
        // A real database whose pages after the header are overwritten: opening may succeed (the
        // header is intact), but reading must fail with an error, not bring the process down.
        let path = temporaryDatabasePath()
        defer { removeDatabase(path) }
        do {
            let store = try SQLiteConversationStore.open(path: path)
            let loop = try EventLoop(handle: LoopHandle(index: 0))
            for i in 0..<50 {
                store.sessionStarted(StoredSession(sessionID: "s\(i)", tenant: "", tokenHash: "h\(i)",
                                                   settings: String(repeating: "x", count: 500), lastSeq: 0), on: loop)
            }
        }
        // The loop and its connection are gone, so the WAL has been checkpointed into the file.
        guard let file = fopen(path, "r+") else { Issue.record("cannot open \(path)"); return }
        fseek(file, 4096, SEEK_SET)
        let garbage = [UInt8](repeating: 0xA5, count: 16384)
        fwrite(garbage, 1, garbage.count, file)
        fclose(file)
        do {
            let store = try SQLiteConversationStore.open(path: path)
            let loop = try EventLoop(handle: LoopHandle(index: 0))
            var result: Result<StoredConversation?, StoreError>?
            store.load(tokenHash: "h1", on: loop) { result = $0 }
            guard case .failure = try #require(result) else { Issue.record("a corrupted page was read as data"); return }
        } catch let error as SQLiteError {
            #expect(error.primaryCode == 11 || error.primaryCode == 26)  // SQLITE_CORRUPT, SQLITE_NOTADB
        }
    }
}
