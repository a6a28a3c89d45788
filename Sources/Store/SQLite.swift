internal import CSQLite

/// What SQLite said when a call failed: its (extended) result code and its message.
public struct SQLiteError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The extended result code (`sqlite3_extended_errcode`), e.g. 14 (SQLITE_CANTOPEN), 26 (SQLITE_NOTADB).
    public var code: Int32
    public var message: String

    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    /// The primary result code (the low byte of the extended one).
    public var primaryCode: Int32 { code & 0xff }
    public var description: String { "\(message) (sqlite code \(code))" }
}

/// A value bound to a statement's `?` parameter.
enum SQLiteValue {
    case int(Int)
    case text(String)
}

/// One row of a result, valid only inside the callback it is passed to.
struct SQLiteRow {
    fileprivate let statement: OpaquePointer

    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(statement, column)) }

    func text(_ column: Int32) -> String {
        // column_text before column_bytes: the order SQLite documents for a UTF-8 result.
        guard let bytes = sqlite3_column_text(statement, column) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }
}

/// One connection to a SQLite database, and the only Swift that touches the SQLite C API: every
/// call's result code becomes an `SQLiteError` here, and nothing outside this file sees a pointer.
///
/// Why the C API and not GRDB (or SQLite.swift): GRDB needs Foundation, which Parley's binaries do
/// not link, and brings its own concurrency (database queues and pools, their own threads); the
/// store needs a handful of fixed statements run on the loop's own thread, which is a hundred lines.
///
/// A connection belongs to one thread (opened with SQLITE_OPEN_NOMUTEX: SQLite takes no lock of its
/// own around it); several connections, in this process or others, share the file.
final class SQLiteDatabase {
    let path: String
    private var db: OpaquePointer?
    /// Prepared statements by their SQL: the store runs the same few statements for its whole
    /// life, so each is parsed once per connection.
    private var statements: [String: OpaquePointer] = [:]

    /// How long a statement waits for another connection's write lock before failing with
    /// SQLITE_BUSY. Several worker processes share the file and SQLite lets one write at a time;
    /// a write takes well under a millisecond, so waiting only happens behind a checkpoint, and
    /// two seconds is long enough for one but still bounds how long a loop can be held.
    static let busyTimeoutMilliseconds: Int32 = 2000

    var isOpen: Bool { db != nil }

    /// Opens (creating it if missing) the database at `path` in WAL mode.
    ///
    /// `synchronous=NORMAL` in WAL mode: a commit appends to the write-ahead log with write(2) but
    /// does not fsync it; the log is synced only at checkpoints. What `write` returned is in the
    /// kernel's page cache, which outlives the process, so a commit survives the process being
    /// killed (kill -9, a crash, the OOM killer): the next connection reads the log and finds it.
    /// It does not survive the machine losing power or the kernel crashing before the page cache
    /// is written back: the last commits (since the last checkpoint's fsync) can be lost, though
    /// the file stays consistent (WAL frames are checksummed, a torn tail is ignored). FULL would
    /// fsync every commit, a disk flush per finished item on the loop thread, for a guarantee a
    /// conversation store does not need (a resumed session after a power cut is already lost).
    init(path: String) throws(SQLiteError) {
        self.path = path
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let error = SQLiteError(code: rc, message: "cannot open \(path): \(handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory")")
            sqlite3_close_v2(handle)
            throw error
        }
        db = handle
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, Self.busyTimeoutMilliseconds)
        do throws(SQLiteError) {
            // The first statement reads the header: a file that is not a database fails here
            // (SQLITE_NOTADB), not at open.
            var mode = ""
            try query("PRAGMA journal_mode=WAL", []) { mode = $0.text(0) }
            guard mode.lowercased() == "wal" || path == ":memory:" else {
                throw SQLiteError(code: SQLITE_ERROR, message: "\(path): journal_mode is \(mode), WAL could not be set")
            }
            try execute("PRAGMA synchronous=NORMAL")
        } catch {
            close()
            throw SQLiteError(code: error.code, message: "cannot open \(path): \(error.message)")
        }
    }

    deinit { close() }

    /// Finalizes every statement and closes the connection; the last connection to close
    /// checkpoints the log into the database and removes it.
    func close() {
        for statement in statements.values { sqlite3_finalize(statement) }
        statements = [:]
        if let db { sqlite3_close_v2(db) }
        db = nil
    }

    /// Runs SQL without parameters or results, possibly several statements (the schema).
    func execute(_ sql: String) throws(SQLiteError) {
        guard let db else { throw closed() }
        let rc = sqlite3_exec(db, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc) }
    }

    /// Runs one statement to completion; returns how many rows it changed.
    @discardableResult
    func run(_ sql: String, _ values: [SQLiteValue]) throws(SQLiteError) -> Int {
        try query(sql, values) { _ in }
        return db.map { Int(sqlite3_changes64($0)) } ?? 0
    }

    /// Runs one statement, calling `row` for each row it returns.
    func query(_ sql: String, _ values: [SQLiteValue], _ row: (SQLiteRow) -> Void) throws(SQLiteError) {
        let statement = try prepared(sql)
        // Reset whatever happens, so the statement holds no read lock and no bound copy after.
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (i, value) in values.enumerated() {
            let index = Int32(i + 1)
            let rc: Int32
            switch value {
            case .int(let n):
                rc = sqlite3_bind_int64(statement, index, sqlite3_int64(n))
            case .text(let text):
                // TRANSIENT: SQLite copies the bytes, since the C string Swift passes lives only
                // for the call.
                rc = sqlite3_bind_text(statement, index, text, Int32(text.utf8.count), parley_sqlite_transient())
            }
            guard rc == SQLITE_OK else { throw error(rc) }
        }
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_ROW { row(SQLiteRow(statement: statement)); continue }
            if rc == SQLITE_DONE { return }
            throw error(rc)
        }
    }

    /// Runs `body` in one transaction: all of its statements commit together, or none does.
    /// IMMEDIATE takes the write lock at BEGIN, so a transaction that will write waits for it
    /// (busy_timeout) there rather than failing half-way when it upgrades from reading.
    func transaction(immediate: Bool = true, _ body: () throws(SQLiteError) -> Void) throws(SQLiteError) {
        try run(immediate ? "BEGIN IMMEDIATE" : "BEGIN", [])
        do throws(SQLiteError) {
            try body()
            try run("COMMIT", [])
        } catch {
            _ = try? run("ROLLBACK", [])
            throw error
        }
    }

    private func prepared(_ sql: String) throws(SQLiteError) -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        guard let db else { throw closed() }
        var statement: OpaquePointer?
        // PERSISTENT: the statement is kept for the connection's life, so SQLite need not take it
        // from its small lookaside pool.
        let rc = sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw error(rc) }
        statements[sql] = statement
        return statement
    }

    private func error(_ rc: Int32) -> SQLiteError {
        guard let db else { return closed() }
        return SQLiteError(code: sqlite3_extended_errcode(db), message: String(cString: sqlite3_errmsg(db)))
    }

    private func closed() -> SQLiteError { SQLiteError(code: SQLITE_MISUSE, message: "\(path): the connection is closed") }
}
