import Loop
import Store
import Synchronization

/// Documents about sessions that have ended, by session id, of one kind (reports, stored Live
/// sessions): in the store when there is one (SQLite or Redis, so a document outlives its process
/// and is read on any node), else in this process's memory, the last `memoryLimit` of them.
public final class KeptDocuments: Sendable {
    let kind: KeptKind
    private let store: (any ConversationStore)?
    let keepSeconds: Int
    private let memoryLimit: Int
    /// Without a store: the documents by id, and their order, oldest first.
    private let memory = Mutex<(documents: [String: String], order: [String])>(([:], []))

    init(_ kind: KeptKind, store: (any ConversationStore)?, keepSeconds: Int, memoryLimit: Int) {
        self.kind = kind
        self.store = store
        self.keepSeconds = keepSeconds
        self.memoryLimit = memoryLimit
    }

    func write(id: String, text: String, on loop: EventLoop) {
        guard keepSeconds > 0 else { return }
        if let store { return store.keep(kind, id: id, text: text, keepSeconds: keepSeconds, on: loop) }
        memory.withLock { memory in
            if memory.documents.updateValue(text, forKey: id) == nil { memory.order.append(id) }
            if memory.order.count > memoryLimit { memory.documents[memory.order.removeFirst()] = nil }
        }
    }

    func read(id: String, on loop: EventLoop, _ done: @escaping (Result<String?, StoreError>) -> Void) {
        if let store { return store.kept(kind, id: id, on: loop, done) }
        done(.success(memory.withLock { $0.documents[id] }))
    }
}
