import Glibc

/// A fresh path under /tmp for one test's database; tests run in parallel, so each has its own.
func temporaryDatabasePath() -> String {
    "/tmp/parley-store-test-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).db"
}

/// The database and the WAL and shared-memory files SQLite keeps beside it.
func removeDatabase(_ path: String) {
    for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + suffix) }
}

func writeFile(_ path: String, _ text: String) {
    guard let file = fopen(path, "w") else { return }
    fputs(text, file)
    fclose(file)
}
