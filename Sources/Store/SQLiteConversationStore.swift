import Logging
import Loop
import Metrics
import Synchronization

let storeLog = Logger(label: "parley.store")

/// Conversations kept in one SQLite file on this machine: every worker process and every loop
/// opens its own connection to it, and the file's locks let one write at a time.
///
/// Each loop has its own connection (a `SQLiteDatabase` is one thread's), so nothing here takes a
/// lock. A write runs on the calling loop and is committed when the method returns (each
/// statement commits on its own; the two that must go together share a transaction), so an item
/// is in the file before the event that says it is done is sent. A failed write is counted, logged
/// at most once a minute, and never reaches the session.
public final class SQLiteConversationStore: ConversationStore {
    public let kind = "sqlite"
    public let path: String
    public let metrics: StoreMetrics<SQLiteWriteResult>
    /// Names this store's connection among a loop's (tests open several stores in one process).
    private let id: Int
    private static let lastID = Atomic<Int>(0)
    /// When a failure was last logged (monotonic ns, 0: never), and how many were not since.
    private let lastLogged = Atomic<UInt64>(0)
    private let unlogged = Atomic<Int>(0)
    static let logInterval: UInt64 = 60_000_000_000

    /// `items_by_item_id` makes `INSERT OR REPLACE` replace an item stored earlier under another
    /// seq (a transcript filled in later) in one statement: REPLACE deletes every row that a new
    /// row conflicts with on any unique index, so the old version and the new are never both, or
    /// neither, in the file.
    static let schema = """
        CREATE TABLE IF NOT EXISTS sessions(session_id TEXT PRIMARY KEY, tenant TEXT, token_hash TEXT UNIQUE, settings TEXT,
                                            last_seq INTEGER, expires_at INTEGER, ended INTEGER DEFAULT 0, updated_at INTEGER);
        CREATE TABLE IF NOT EXISTS items(session_id TEXT, seq INTEGER, item_id TEXT, item TEXT, event TEXT,
                                         PRIMARY KEY(session_id, seq));
        CREATE UNIQUE INDEX IF NOT EXISTS items_by_item_id ON items(session_id, item_id);
        CREATE TABLE IF NOT EXISTS kept(kind TEXT, id TEXT, expires_at INTEGER, text TEXT, PRIMARY KEY(kind, id));
        CREATE INDEX IF NOT EXISTS kept_by_expiry ON kept(expires_at);
        """

    private init(path: String, metrics: StoreMetrics<SQLiteWriteResult>) {
        self.path = path
        self.metrics = metrics
        id = Self.lastID.add(1, ordering: .relaxed).newValue
    }

    /// Opens (creating it if missing) the database at `path` and its schema, on the calling
    /// thread, so a bad path fails at start-up: a missing directory (SQLITE_CANTOPEN), a file that
    /// is not a database (SQLITE_NOTADB). The loops then open their own connections on first use.
    public static func open(path: String) throws(SQLiteError) -> SQLiteConversationStore {
        let db = try SQLiteDatabase(path: path)
        defer { db.close() }
        do throws(SQLiteError) {
            try db.execute(schema)
        } catch {
            throw SQLiteError(code: error.code, message: "cannot create the schema in \(path): \(error.message)")
        }
        return SQLiteConversationStore(path: path, metrics: StoreMetrics(store: .sqlite))
    }

    /// The store's series (`parley_store_*{store="sqlite"}`) for /metrics.
    public var metricsRegistry: MetricsRegistry { metrics.registry }

    // MARK: ConversationStore

    public func sessionStarted(_ session: StoredSession, on loop: EventLoop) {
        write("session start", bytes: session.settings.utf8.count, on: loop) { db throws(SQLiteError) in
            // A session resumed here from another process is already in the file: take it over.
            try db.run("""
                INSERT INTO sessions(session_id, tenant, token_hash, settings, last_seq, expires_at, ended, updated_at)
                VALUES(?1, ?2, ?3, ?4, ?5, ?6, 0, ?7)
                ON CONFLICT(session_id) DO UPDATE SET tenant = ?2, token_hash = ?3, settings = ?4, last_seq = ?5,
                                                      expires_at = ?6, ended = 0, updated_at = ?7
                """, [.text(session.sessionID), .text(session.tenant), .text(session.tokenHash), .text(session.settings),
                      .int(session.lastSeq), .int(session.expiresAt), .int(WallClock.seconds())])
        }
    }

    public func settingsChanged(sessionID: String, settings: String, on loop: EventLoop) {
        write("settings", bytes: settings.utf8.count, on: loop) { db throws(SQLiteError) in
            try db.run("UPDATE sessions SET settings = ?1, updated_at = ?2 WHERE session_id = ?3",
                       [.text(settings), .int(WallClock.seconds()), .text(sessionID)])
        }
    }

    public func itemCompleted(sessionID: String, seq: Int, itemID: String, item: String, event: String, on loop: EventLoop,
                              _ kept: @escaping (Bool) -> Void) {
        kept(write("item", bytes: item.utf8.count + event.utf8.count, on: loop) { db throws(SQLiteError) in
            try db.run("INSERT OR REPLACE INTO items(session_id, seq, item_id, item, event) VALUES(?1, ?2, ?3, ?4, ?5)",
                       [.text(sessionID), .int(seq), .text(itemID), .text(item), .text(event)])
        })
    }

    public func itemChanged(sessionID: String, itemID: String, item: String, on loop: EventLoop, _ kept: @escaping (Bool) -> Void) {
        kept(write("item", bytes: item.utf8.count, on: loop) { db throws(SQLiteError) in
            try db.run("UPDATE items SET item = ?1 WHERE session_id = ?2 AND item_id = ?3", [.text(item), .text(sessionID), .text(itemID)])
        })
    }

    public func tokenRotated(sessionID: String, from previous: String, to tokenHash: String, lastSeq: Int, on loop: EventLoop,
                             _ done: @escaping (TokenRotation) -> Void) {
        var changed = 0
        let written = write("token", bytes: 0, on: loop) { db throws(SQLiteError) in
            // Compare-and-set in one statement: SQLite's write lock makes it atomic across every
            // process on the file, and the row count says whether this one won.
            changed = try db.run("""
                UPDATE sessions SET token_hash = ?1, last_seq = ?2, updated_at = ?3
                WHERE session_id = ?4 AND token_hash = ?5 AND ended = 0
                """, [.text(tokenHash), .int(lastSeq), .int(WallClock.seconds()), .text(sessionID), .text(previous)])
        }
        done(!written ? .unavailable : changed == 1 ? .stored : .taken)
    }

    public func sessionEnded(sessionID: String, tokenHash: String, on loop: EventLoop) {
        write("session end", bytes: 0, on: loop) { db throws(SQLiteError) in
            // Together, so a crash between the two leaves neither a session without its items
            // nor items nobody can load; the items only if the session was still this token's.
            try db.transaction { () throws(SQLiteError) in
                guard try db.run("DELETE FROM sessions WHERE session_id = ?1 AND token_hash = ?2", [.text(sessionID), .text(tokenHash)]) == 1 else { return }
                try db.run("DELETE FROM items WHERE session_id = ?1", [.text(sessionID)])
            }
        }
    }

    public func load(tokenHash: String, on loop: EventLoop, _ done: @escaping (Result<StoredConversation?, StoreError>) -> Void) {
        guard let db = connection(on: loop) else {
            done(.failure(StoreError("sqlite store \(path) cannot be opened")))
            return
        }
        var found: StoredConversation?
        do throws(SQLiteError) {
            // One read transaction: the session and its items from the same snapshot, even while
            // another process writes.
            try db.transaction(immediate: false) { () throws(SQLiteError) in
                var session: StoredSession?
                try db.query("""
                    SELECT session_id, tenant, token_hash, settings, last_seq, expires_at FROM sessions
                    WHERE token_hash = ?1 AND ended = 0
                    """, [.text(tokenHash)]) { row in
                    session = StoredSession(sessionID: row.text(0), tenant: row.text(1), tokenHash: row.text(2),
                                            settings: row.text(3), lastSeq: row.int(4), expiresAt: row.int(5))
                }
                guard let session else { return }
                var items: [StoredConversation.Item] = []
                try db.query("SELECT seq, item_id, item, event FROM items WHERE session_id = ?1 ORDER BY seq",
                             [.text(session.sessionID)]) { row in
                    items.append(.init(seq: row.int(0), itemID: row.text(1), item: row.text(2), event: row.text(3)))
                }
                found = StoredConversation(session: session, items: items)
            }
        } catch {
            report(error, "load")
            done(.failure(StoreError("sqlite store: load failed: \(error)")))
            return
        }
        done(.success(found))
    }

    public func keep(_ kind: KeptKind, id: String, text: String, keepSeconds: Int, on loop: EventLoop) {
        let now = WallClock.seconds()
        write(kind.rawValue, bytes: text.utf8.count, on: loop) { db throws(SQLiteError) in
            // Documents past their retention go as new ones come (by the index, a few rows a time).
            try db.run("DELETE FROM kept WHERE expires_at < ?1", [.int(now)])
            try db.run("INSERT OR REPLACE INTO kept(kind, id, expires_at, text) VALUES(?1, ?2, ?3, ?4)",
                       [.text(kind.rawValue), .text(id), .int(now + keepSeconds), .text(text)])
        }
    }

    public func kept(_ kind: KeptKind, id: String, on loop: EventLoop, _ done: @escaping (Result<String?, StoreError>) -> Void) {
        guard let db = connection(on: loop) else { return done(.failure(StoreError("sqlite store \(path) cannot be opened"))) }
        var found: String?
        do throws(SQLiteError) {
            try db.query("SELECT text FROM kept WHERE kind = ?1 AND id = ?2 AND expires_at >= ?3",
                         [.text(kind.rawValue), .text(id), .int(WallClock.seconds())]) { found = $0.text(0) }
        } catch {
            report(error, "\(kind.rawValue) read")
            return done(.failure(StoreError("sqlite store: \(kind.rawValue) read failed: \(error)")))
        }
        done(.success(found))
    }

    public func isAvailable(on loop: EventLoop) -> Bool { connection(on: loop) != nil }

    // MARK: Connections and failures

    /// This loop's connection to the file, opened on first use; nil (and logged) if it cannot be
    /// opened, tried again at the next call.
    private func connection(on loop: EventLoop) -> SQLiteDatabase? {
        let connections = loop.local { SQLiteConnections() }
        if let db = connections.byStore[id] { return db }
        do throws(SQLiteError) {
            let db = try SQLiteDatabase(path: path)
            connections.byStore[id] = db
            return db
        } catch {
            report(error, "open")
            return nil
        }
    }

    /// Runs one write, times it and counts it; a failure is reported, never thrown.
    /// Whether the write was committed.
    @discardableResult
    private func write(_ what: String, bytes: Int, on loop: EventLoop, _ body: (SQLiteDatabase) throws(SQLiteError) -> Void) -> Bool {
        let start = MonotonicClock.nanoseconds()
        guard let db = connection(on: loop) else {
            metrics.recordWrite(.error, bytes: 0, nanoseconds: MonotonicClock.nanoseconds() &- start)
            return false
        }
        do throws(SQLiteError) {
            try body(db)
            metrics.recordWrite(.ok, bytes: bytes, nanoseconds: MonotonicClock.nanoseconds() &- start)
            return true
        } catch {
            metrics.recordWrite(.error, bytes: 0, nanoseconds: MonotonicClock.nanoseconds() &- start)
            report(error, what)
            return false
        }
    }

    /// Logs a failure unless one was logged in the last minute: a full disk fails every write of
    /// every session, and the log must not grow with them (the counter says how many).
    private func report(_ error: SQLiteError, _ what: String) {
        let now = MonotonicClock.nanoseconds()
        let last = lastLogged.load(ordering: .relaxed)
        guard last == 0 || now &- last >= Self.logInterval,
              lastLogged.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged else {
            unlogged.add(1, ordering: .relaxed)
            return
        }
        let skipped = unlogged.exchange(0, ordering: .relaxed)
        storeLog.error("sqlite store \(what) failed", metadata: [
            "path": "\(path)", "error": "\(error)", "code": "\(error.code)", "unlogged_since_last": "\(skipped)",
        ])
    }
}

/// A loop's connections, one per store (`EventLoop.local` keeps one object per type, so this
/// holds them all).
final class SQLiteConnections {
    var byStore: [Int: SQLiteDatabase] = [:]
}
