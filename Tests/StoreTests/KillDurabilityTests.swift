import Glibc
import Loop
import Testing
import TestSupport
@testable import Store

/// A write that returned is in the file even if the process dies the next instant: the promise
/// `ConversationStore` makes for an embedded store (committed before it returns), checked with
/// WAL and synchronous=NORMAL, where a commit is a write(2) into the log and no fsync.
@Suite struct KillDurabilityTests {
    @Test func everyItemWhoseWriteReturnedSurvivesKill9() throws {
        let path = temporaryDatabasePath()
        defer { removeDatabase(path) }
        let child = try WriterProcess(path: path, tokenHash: "hk")
        // Let it write a few hundred items, then kill it wherever it is: mid-write, or just after
        // one returned and before the next began.
        var acknowledged = child.readSeqs(atLeast: 300)
        kill(child.pid, SIGKILL)
        var status: Int32 = 0
        waitpid(child.pid, &status, 0)
        acknowledged += child.readSeqs(atLeast: Int.max)  // what it printed before it died
        child.close()
        #expect(status & 0x7f == SIGKILL, "the writer ended on its own (status \(status))")
        try #require(acknowledged.count >= 300)

        let store = try SQLiteConversationStore.open(path: path)
        let loop = try EventLoop(handle: LoopHandle(index: 0))
        var result: Result<StoredConversation?, StoreError>?
        store.load(tokenHash: "hk", on: loop) { result = $0 }
        let conversation = try #require(result).get()
        let stored = Set(try #require(conversation).items.map(\.seq))
        let lost = acknowledged.filter { !stored.contains($0) }
        #expect(lost.isEmpty, "writes that had returned but are not in the file: \(lost.prefix(10))")
        #expect(acknowledged == Array(1...acknowledged.count))
    }
}

/// `store-writer` (built beside the test bundle) with its standard output on a pipe: it prints
/// each item's seq once that item's write has returned.
private final class WriterProcess {
    let pid: pid_t
    private let output: Int32
    private var pending: [UInt8] = []

    static var path: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let exe = String(decoding: buffer[0..<max(0, n)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return exe[..<(exe.lastIndex(of: "/") ?? exe.endIndex)] + "/store-writer"
    }

    init(path: String, tokenHash: String) throws {
        (pid, output) = try Subprocess.startPiped([Self.path, path, tokenHash])
    }

    /// Reads whole lines until `atLeast` seqs have come, or the pipe ends.
    func readSeqs(atLeast wanted: Int) -> [Int] {
        var seqs: [Int] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while seqs.count < wanted {
            let n = read(output, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            pending += buffer[..<n]
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                if let seq = Int(String(decoding: pending[..<newline], as: UTF8.self)) { seqs.append(seq) }
                pending.removeSubrange(...newline)
            }
        }
        return seqs
    }

    func close() { Glibc.close(output) }
}
